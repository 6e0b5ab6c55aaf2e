//! Writes the conformance matrix as `reports/conformance.json` (read by tools and by the render
//! crate, which renders `reports/conformance.md` from it), with a message log under
//! `reports/conformance/` for every run that violated a property, diverged or failed (the cells
//! and findings link them). Paths of the generating machine are written as placeholders
//! ([`crate::portable`]).
//!
//! [`Conformance`] is the document's one schema: the writer serializes it and the render crate
//! deserializes it ([`Conformance::parse`]), so a field renamed on one side is a compile error,
//! and a committed file of another format or with an unknown field is a parse error naming it.

use crate::findings::{self, Finding, SourceCheck};
use crate::matrix::{Matrix, Row, Validation};
use crate::msglog;
use crate::outcome::{RunReport, RunStatus};
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::{Kind, KindSet};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The format tag of `conformance.json` this crate writes and reads.
pub const FORMAT: &str = "listsync-conformance/1";

/// Directory (under the reports directory) holding the message logs.
pub const LOG_DIR: &str = "conformance";

fn worth_a_log(r: &RunReport) -> bool {
    r.status != RunStatus::Completed
        || r.judged.values().any(|v| *v == Verdict::Violated)
        || r.model
            .as_ref()
            .is_some_and(|m| !crate::replay::agrees(&r.judged, m))
}

/// `conformance.json`: the matrix, its validation, the findings about the SDK facts and every
/// run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Conformance {
    /// [`FORMAT`].
    pub format: String,
    /// Wall time of the matrix run.
    pub seconds: f64,
    /// The properties, in column order.
    pub properties: Vec<Property>,
    /// One row per implementation × role × era × variant.
    pub rows: Vec<Row>,
    /// Core's known-bad strategies replayed against our runtime.
    pub validation: Vec<Validation>,
    /// What the runs say about each claim of `docs/sdk-facts.md`.
    pub findings: Vec<Finding>,
    /// What the runs show that `docs/sdk-facts.md` does not say.
    pub not_in_sdk_facts: Vec<String>,
    /// Questions answered from the released source of the pinned versions.
    pub source_checks: Vec<SourceCheck>,
    /// Every run.
    pub runs: Vec<RunReport>,
}

/// Why a `conformance.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    /// Written by another version of the harness.
    #[error(
        "format {found:?}, this build reads {FORMAT:?}: run `listsync matrix` to write it again"
    )]
    Format {
        /// The document's format tag.
        found: String,
    },
    /// Not JSON, or a field missing, unknown or of the wrong type.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
}

impl Conformance {
    /// Reads a `conformance.json`: its format tag first (so a document of another format says
    /// so), then every field.
    pub fn parse(text: &str) -> Result<Conformance, ParseError> {
        #[derive(Deserialize)]
        struct Tag {
            format: String,
        }
        let tag: Tag = serde_json::from_str(text)?;
        if tag.format != FORMAT {
            return Err(ParseError::Format { found: tag.format });
        }
        Ok(serde_json::from_str(text)?)
    }
}

/// Writes `conformance.json` and the message logs; returns the path of the JSON. The page for
/// people, `conformance.md`, is rendered from that JSON by the render crate (one renderer for
/// `listsync matrix` and `listsync report`).
pub fn write(reports: &Path, m: &mut Matrix) -> std::io::Result<std::path::PathBuf> {
    let logs = reports.join(LOG_DIR);
    if logs.is_dir() {
        std::fs::remove_dir_all(&logs)?;
    }
    std::fs::create_dir_all(&logs)?;
    // Every run a finding rests on gets its log too, so each piece of evidence links one.
    let cited: std::collections::BTreeSet<String> = findings::findings(&m.runs)
        .into_iter()
        .flat_map(|f| f.runs)
        .filter(|id| !id.is_empty())
        .collect();
    for r in &mut m.runs {
        if (worth_a_log(r) || cited.contains(&r.id)) && r.status != RunStatus::Unsupported {
            let rel = format!("{LOG_DIR}/{}.log", r.id);
            msglog::write(
                &reports.join(&rel),
                r,
                KindSet::only(Kind::Tools),
                msglog::Stamps::Left,
            )?;
            r.log = Some(rel);
        }
    }
    let found = findings::findings(&m.runs);
    let extra = findings::extra(&m.runs);
    let checks = findings::source_checks();
    let json = Conformance {
        format: FORMAT.into(),
        seconds: m.seconds,
        properties: Property::ALL.to_vec(),
        rows: m.rows.clone(),
        validation: m.validation.clone(),
        findings: found,
        not_in_sdk_facts: extra,
        source_checks: checks,
        runs: m.runs.clone(),
    };
    let text = serde_json::to_string_pretty(&json).map_err(std::io::Error::other)?;
    let text = crate::portable::portable(&text);
    let path = reports.join("conformance.json");
    std::fs::write(&path, text + "\n")?;
    Ok(path)
}
