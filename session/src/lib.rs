//! listsync session logs: `listsync record` puts an interposing proxy between a real MCP client
//! and server and logs every JSON-RPC message with its time, direction and connection
//! ([`log`], format in docs/session-log.md; [`record`]); `listsync audit` judges such a log per
//! property with the project's checkers as far as the wire allows ([`wire`], [`audit`]) and
//! draws each violation's evidence as a sequence diagram ([`diagram`]). [`record`] is the
//! stdio proxy, [`http`] the Streamable HTTP reverse proxy.
//!
//! A crate of its own because it stands on both the harness (runs turned into session logs,
//! [`from_run`]) and the render crate (the sequence-diagram renderer), and the render crate
//! already depends on the harness. The wire itself (JSON-RPC framing, list kinds and items, walks
//! per connection, the events a delivered message is) is read by `listsync-observe`, as the
//! replay's reconstruction and the host judge read it.

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod audit;
pub mod diagram;
pub mod from_run;
pub mod http;
pub mod log;
pub mod record;
pub mod wire;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// One log audited, with the diagrams written for its violations.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Audited {
    /// The log file.
    pub file: PathBuf,
    /// Its audit.
    #[serde(flatten)]
    pub audit: audit::Audit,
    /// The SVG written per violated property, next to the log (`LOG.PROPERTY.svg`).
    pub diagrams: Vec<PathBuf>,
}

/// Reads and judges `file`, writing one SVG per violated property next to it.
pub fn audit_file(file: &Path) -> Result<Audited, String> {
    let log = log::read(file).map_err(|e| e.to_string())?;
    let a = audit::audit(&log);
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut diagrams = Vec::new();
    for v in a
        .verdicts
        .iter()
        .filter(|v| v.status == audit::Status::Violated)
    {
        let path = file.with_file_name(format!("{name}.{}.svg", v.property));
        std::fs::write(&path, diagram::svg(&log, v, &name))
            .map_err(|e| format!("{}: {e}", path.display()))?;
        diagrams.push(path);
    }
    Ok(Audited {
        file: file.to_path_buf(),
        audit: a,
        diagrams,
    })
}

/// The JUnit testsuite of audited logs: one testcase per log × property (class `audit.LOG`);
/// a violation fails with its detail and the diagram's path, a property the wire cannot show or
/// that never happened is skipped, saying which.
pub fn junit(audited: &[Audited]) -> listsync_render::junit::Suite {
    use listsync_render::junit::{Suite, TestCase, TestOutcome};
    let mut cases = Vec::new();
    for a in audited {
        let log = a.file.display().to_string();
        for v in &a.audit.verdicts {
            let outcome = match v.status {
                audit::Status::Violated => {
                    let diagram = a
                        .diagrams
                        .iter()
                        .find(|d| {
                            d.to_string_lossy()
                                .ends_with(&format!(".{}.svg", v.property))
                        })
                        .map(|d| format!(" (diagram {})", d.display()))
                        .unwrap_or_default();
                    TestOutcome::Failed {
                        message: format!("{} violated in {log}{diagram}", v.property),
                        detail: v.detail.clone(),
                    }
                }
                audit::Status::HoldsAsObserved => TestOutcome::Passed,
                audit::Status::NotObserved | audit::Status::NotApplicable => TestOutcome::Skipped {
                    message: format!("{}: {}", v.status.as_str(), v.detail),
                },
            };
            cases.push(TestCase {
                class: format!("audit.{log}"),
                name: v.property.as_str().to_owned(),
                seconds: 0.0,
                outcome,
            });
        }
    }
    Suite {
        name: "listsync audit".into(),
        cases,
    }
}

/// The audit as text: one line per property, the evidence of each violation, the caveats.
pub fn render(a: &Audited) -> String {
    let mut s = String::new();
    let x = &a.audit;
    let _ = writeln!(
        s,
        "{}: {} entries, {} connection(s), {} walk(s)",
        a.file.display(),
        x.entries,
        x.connections,
        x.walks
    );
    for v in &x.verdicts {
        let _ = writeln!(
            s,
            "  {:<20} {:<17} {}",
            v.property.as_str(),
            v.status.as_str(),
            v.detail
        );
        if !v.evidence.is_empty() {
            let lines: Vec<String> = v.evidence.iter().map(u64::to_string).collect();
            let _ = writeln!(s, "  {:<20} evidence: lines {}", "", lines.join(", "));
        }
    }
    for d in &a.diagrams {
        let _ = writeln!(s, "  diagram: {}", d.display());
    }
    for n in &x.notes {
        let _ = writeln!(s, "  note: {n}");
    }
    s
}
