//! Writes the conformance matrix as `reports/conformance.json` (read by tools and by the report
//! crate, which renders `reports/conformance.md` from it), with a message log under
//! `reports/conformance/` for every run that violated a property, diverged or failed (the cells
//! and findings link them). Paths of the generating machine are written as placeholders
//! ([`crate::portable`]).

use crate::findings::{self, Finding};
use crate::matrix::{Matrix, Row};
use crate::msglog;
use crate::outcome::{RunReport, RunStatus};
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::{Kind, KindSet};
use serde::Serialize;
use std::path::Path;

/// Directory (under the reports directory) holding the message logs.
pub const LOG_DIR: &str = "conformance";

fn worth_a_log(r: &RunReport) -> bool {
    r.status != RunStatus::Completed
        || r.judged.values().any(|v| *v == Verdict::Violated)
        || r.model
            .as_ref()
            .is_some_and(|m| !crate::replay::agrees(&r.judged, m))
}

#[derive(Serialize)]
struct Json<'a> {
    format: &'static str,
    seconds: f64,
    properties: Vec<&'static str>,
    rows: &'a [Row],
    validation: &'a [crate::matrix::Validation],
    findings: &'a [Finding],
    not_in_sdk_facts: &'a [String],
    source_checks: &'a [findings::SourceCheck],
    runs: &'a [RunReport],
}

/// Writes `conformance.json` and the message logs; returns the path of the JSON. The page for
/// people, `conformance.md`, is rendered from that JSON by the report crate (one renderer for
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
            msglog::write(&reports.join(&rel), r, KindSet::only(Kind::Tools))?;
            r.log = Some(rel);
        }
    }
    let found = findings::findings(&m.runs);
    let extra = findings::extra(&m.runs);
    let checks = findings::source_checks();
    let json = Json {
        format: "listsync-conformance/1",
        seconds: m.seconds,
        properties: Property::ALL.iter().map(|p| p.as_str()).collect(),
        rows: &m.rows,
        validation: &m.validation,
        findings: &found,
        not_in_sdk_facts: &extra,
        source_checks: &checks,
        runs: &m.runs,
    };
    let text = serde_json::to_string_pretty(&json).map_err(std::io::Error::other)?;
    let text = crate::portable::portable(&text);
    let path = reports.join("conformance.json");
    std::fs::write(&path, text + "\n")?;
    Ok(path)
}
