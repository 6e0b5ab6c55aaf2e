//! The message log of a run as a readable text file: every timeline record on one line
//! (sequence number, milliseconds since start, what), then the reconstructed history that was
//! judged and the violations with the records they point at. Paths of the generating machine
//! are written as placeholders ([`crate::portable`]). The copies committed under `reports/`
//! leave the milliseconds out ([`Stamps::Left`]): they change on every run, and a reviewer
//! of a regenerated report should see only what changed in what happened.

use crate::history::reconstruct;
use crate::outcome::RunReport;
use crate::timeline::{Body, Dir, Fact, Record};
use listsync_core::vocab::KindSet;
use serde_json::Value;
use std::fmt::Write as _;
use std::path::Path;

const MAX_JSON: usize = 1500;

fn compact(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(MAX_JSON) {
        Some((i, _)) => format!("{}… ({} bytes)", &s[..i], s.len()),
        None => s,
    }
}

/// Whether a log shows each record's time since the run started.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stamps {
    /// Shown (a run's own log, under `--out`).
    Shown,
    /// Left out (the copies committed under `reports/`).
    Left,
}

fn line(r: &Record, stamps: Stamps) -> String {
    let what = match &r.body {
        Body::Msg {
            dir,
            json,
            text,
            fate,
            len,
        } => {
            let arrow = match dir {
                Dir::Up => "client→server",
                Dir::Down => "server→client",
            };
            let payload = match (json, text) {
                (Some(v), _) => compact(v),
                (None, Some(t)) => format!("(not JSON, {len} bytes) {t}"),
                (None, None) => format!("({len} bytes)"),
            };
            format!(
                "{arrow} {:<11} {payload}",
                format!("{fate:?}").to_lowercase()
            )
        }
        Body::Release { of, action, .. } => {
            format!("{} #{of}", format!("{action:?}").to_lowercase())
        }
        Body::Inject { json, .. } => format!("probe→server {}", compact(json)),
        Body::Event { from, event } => format!("event {:<6} {}", from.as_str(), compact(event)),
        Body::Command { to, cmd } => format!("cmd→{} {}", to.as_str(), compact(cmd)),
        Body::Reply { from, reply } => format!("reply←{} {}", from.as_str(), compact(reply)),
        Body::Fact(f) => match f {
            Fact::Step { index, step, model } => format!(
                "STEP {}: {step}{}",
                index.map(|i| i.to_string()).unwrap_or_else(|| "-".into()),
                if model.is_empty() {
                    String::new()
                } else {
                    format!(
                        "\n{}",
                        model
                            .iter()
                            .map(|l| format!("                      model: {l}"))
                            .collect::<Vec<_>>()
                            .join("\n")
                    )
                }
            ),
            Fact::Skipped {
                index,
                step,
                reason,
            } => format!("SKIPPED step {index} ({step}): {reason}"),
            Fact::Divergence { step, reason } => format!(
                "DIVERGENCE{}: {reason}",
                step.map(|s| format!(" at step {s}")).unwrap_or_default()
            ),
            Fact::MutateIssued { batch, ops } => format!(
                "MUTATE batch {batch}: {}",
                ops.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Fact::Catalog { after, kinds, .. } => format!(
                "GROUND TRUTH ({after}): {}",
                kinds
                    .iter()
                    .map(|(k, items)| format!(
                        "{k} [{}]",
                        items
                            .iter()
                            .map(|i| format!("{}={}", i.name, i.description))
                            .collect::<Vec<_>>()
                            .join(",")
                    ))
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            Fact::Probe {
                notification,
                kind,
                items,
                error,
            } => match items {
                Some(items) => format!(
                    "PROBE after #{notification}: {kind} [{}]",
                    items
                        .iter()
                        .map(|i| format!("{}={}", i.name, i.description))
                        .collect::<Vec<_>>()
                        .join(",")
                ),
                None => format!(
                    "PROBE after #{notification}: {kind} failed: {}",
                    error.as_deref().unwrap_or("?")
                ),
            },
            Fact::Quiescent { .. } => "QUIESCENT: everything released, the run settled".into(),
        },
        Body::Bad { from, what } => format!("BAD {from}: {what}"),
        Body::Note { text } => format!("note: {text}"),
    };
    match stamps {
        Stamps::Shown => format!("{:>6} {:>10.1}ms  {what}", r.seq, r.micros as f64 / 1000.0),
        Stamps::Left => format!("{:>6}  {what}", r.seq),
    }
}

/// Renders a run's message log, with this machine's paths as placeholders.
pub fn render(report: &RunReport, kinds: KindSet, stamps: Stamps) -> String {
    crate::portable::portable(&render_raw(report, kinds, stamps))
}

fn render_raw(report: &RunReport, kinds: KindSet, stamps: Stamps) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# listsync message log: {} against {} {} ({}) — {}",
        report.target.name(),
        report.imp,
        report.role,
        report.variant,
        report.era
    );
    let _ = writeln!(s, "# server: {}; client: {}", report.server, report.client);
    let _ = writeln!(
        s,
        "# status: {}{}",
        report.status.as_str(),
        report
            .detail
            .as_deref()
            .map(|d| format!(" — {d}"))
            .unwrap_or_default()
    );
    if matches!(report.target, crate::outcome::Target::Trace { .. }) {
        let _ = writeln!(s, "# outcome: {}", crate::replay::headline(report));
    }
    let columns = match stamps {
        Stamps::Shown => "record, time since start, what",
        Stamps::Left => "record, what (times left out of this committed copy)",
    };
    let _ = writeln!(s, "# columns: {columns}\n");
    for r in &report.records {
        let _ = writeln!(s, "{}", line(r, stamps));
    }
    let h = reconstruct(&report.records, kinds);
    let _ = writeln!(s, "\n# history judged by core's checkers (record → event)");
    for (at, e) in &h.events {
        let _ = writeln!(s, "{at:>6}  {e}");
    }
    for n in &h.notes {
        let _ = writeln!(s, "# note: {n}");
    }
    let _ = writeln!(s, "\n# verdicts");
    for (p, v) in &report.judged {
        let _ = writeln!(s, "{:<22} {v}", p.as_str());
    }
    for f in &report.violations {
        let _ = writeln!(
            s,
            "# VIOLATION {} at record {}: {}",
            f.property, f.record, f.detail
        );
    }
    s
}

/// Writes a run's message log to `path`.
pub fn write(
    path: &Path,
    report: &RunReport,
    kinds: KindSet,
    stamps: Stamps,
) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    std::fs::write(path, render(report, kinds, stamps))
}
