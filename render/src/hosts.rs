//! The verdict table of `reports/hosts.md`, rendered from the host summaries under
//! `reports/hosts/*.json` (written by `listsync host HOST --report reports`,
//! [`listsync_harness::hosts::summary`]): one row per host version × plan, per property how
//! often each verdict came. The table sits between two markers in the page; the prose around it
//! (what each host does, the evidence) is kept as written.

use anyhow::{Context, Result};
use listsync_harness::hosts::summary::{HostSummary, PlanSummary, VerdictCounts};
use std::fmt::Write as _;
use std::path::Path;

/// The line before the generated table.
pub const BEGIN: &str =
    "<!-- verdicts: generated from hosts/*.json by `listsync host HOST --report reports` -->";
/// The line after it.
pub const END: &str = "<!-- end of verdicts -->";

/// The summaries in `dir/hosts/*.json`, by host name then version as found.
pub fn read_summaries(dir: &Path) -> Result<Vec<HostSummary>> {
    let hosts = dir.join("hosts");
    let mut files: Vec<_> = match std::fs::read_dir(&hosts) {
        Ok(d) => d
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).with_context(|| p.display().to_string())?;
            serde_json::from_str(&text).with_context(|| p.display().to_string())
        })
        .collect()
}

/// `violated 5/5`, `holds 3/5, violated 2/5`, `not observed 5/5`.
fn cell(v: &VerdictCounts, n: usize) -> String {
    let mut parts = Vec::new();
    for (k, what) in [
        (v.violated, "violated"),
        (v.holds, "holds"),
        (v.not_observed, "not observed"),
    ] {
        if k > 0 {
            parts.push(format!("{what} {k}/{n}"));
        }
    }
    if parts.is_empty() {
        "—".into()
    } else {
        parts.join(", ")
    }
}

/// The audit's column: the violated properties with how often, else `all hold`.
fn audit_cell(p: &PlanSummary) -> String {
    let bad: Vec<String> = p
        .audit
        .iter()
        .filter(|v| v.violated > 0)
        .map(|v| format!("`{}` violated {}/{}", v.property, v.violated, p.runs))
        .collect();
    if bad.is_empty() {
        "all hold".into()
    } else {
        bad.join(", ")
    }
}

/// The table: one row per host version × plan.
pub fn table(summaries: &[HostSummary]) -> String {
    let mut s = String::new();
    let names: Vec<String> = summaries
        .iter()
        .flat_map(|h| h.plans.iter())
        .flat_map(|p| p.host.iter().map(|v| v.property.clone()))
        .fold(Vec::new(), |mut acc, n| {
            if !acc.contains(&n) {
                acc.push(n);
            }
            acc
        });
    let _ = write!(s, "| host | plan | runs |");
    for n in &names {
        let _ = write!(s, " {n} |");
    }
    let _ = writeln!(s, " audit (MCP side) | host ended | seconds |");
    let _ = write!(s, "|---|---|---|");
    for _ in &names {
        s.push_str("---|");
    }
    s.push_str("---|---|---|\n");
    for h in summaries {
        for p in &h.plans {
            let _ = write!(s, "| {} | {} | {} |", h.label(), p.plan, p.runs);
            for n in &names {
                let c = p
                    .host
                    .iter()
                    .find(|v| &v.property == n)
                    .map_or_else(|| "—".into(), |v| cell(v, p.runs));
                let _ = write!(s, " {c} |");
            }
            let exits: Vec<String> = p
                .host_exits
                .iter()
                .map(|c| format!("{} ×{}", c.value, c.runs))
                .collect();
            let _ = writeln!(
                s,
                " {} | {} | {:.1}–{:.1} |",
                audit_cell(p),
                exits.join(", "),
                p.seconds.0,
                p.seconds.1
            );
        }
    }
    s
}

/// `page` with the text between [`BEGIN`] and [`END`] replaced by `table` (the markers and the
/// table appended at the end when the page has none).
pub fn splice(page: &str, table: &str) -> String {
    let block = format!("{BEGIN}\n\n{table}\n{END}");
    match (page.find(BEGIN), page.find(END)) {
        (Some(a), Some(b)) if a < b => {
            format!("{}{block}{}", &page[..a], &page[b + END.len()..])
        }
        _ => format!("{}\n{block}\n", page.trim_end()),
    }
}

/// Rewrites the table of `dir/hosts.md` from `dir/hosts/*.json`.
pub fn update_page(dir: &Path) -> Result<()> {
    let summaries = read_summaries(dir)?;
    let path = dir.join("hosts.md");
    let page = std::fs::read_to_string(&path).unwrap_or_else(|_| "# Hosts under test\n".into());
    let text = splice(&page, &table(&summaries));
    if text != page {
        std::fs::write(&path, text).with_context(|| path.display().to_string())?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use listsync_harness::hosts::summary::Count;

    fn summary() -> HostSummary {
        let v = |p: &str, violated, holds, not_observed| VerdictCounts {
            property: p.into(),
            violated,
            holds,
            not_observed,
            detail: String::new(),
        };
        HostSummary {
            name: "h".into(),
            version: "1.0".into(),
            description: "d".into(),
            era: "2025-11-25".into(),
            plans: vec![PlanSummary {
                plan: "in-call".into(),
                runs: 5,
                seconds: (1.0, 2.5),
                host_exits: vec![Count {
                    value: "exit status: 0".into(),
                    runs: 5,
                }],
                side_requests: 0,
                host: vec![
                    v("offered_catches_up", 2, 3, 0),
                    v("consumers_agree", 0, 0, 5),
                ],
                audit: vec![v("converges", 5, 0, 0), v("no_torn_snapshot", 0, 5, 0)],
            }],
        }
    }

    #[test]
    fn a_row_says_how_often_each_verdict_came() {
        let t = table(&[summary()]);
        let row = t.lines().nth(2).unwrap();
        assert!(row.starts_with("| h@1.0 | in-call | 5 |"), "{t}");
        assert!(row.contains("| violated 2/5, holds 3/5 |"), "{t}");
        assert!(row.contains("| not observed 5/5 |"), "{t}");
        assert!(row.contains("`converges` violated 5/5 |"), "{t}");
        assert!(!row.contains("no_torn_snapshot"), "{t}");
        assert!(row.ends_with("| exit status: 0 ×5 | 1.0–2.5 |"), "{t}");
    }

    #[test]
    fn splice_replaces_only_the_marked_block() {
        let page = format!("# P\nbefore\n{BEGIN}\nold\n{END}\nafter\n");
        let out = splice(&page, "new\n");
        assert_eq!(
            out,
            format!("# P\nbefore\n{BEGIN}\n\nnew\n\n{END}\nafter\n")
        );
        // Idempotent, and a page without markers gets them at its end.
        assert_eq!(splice(&out, "new\n"), out);
        assert!(splice("# P\n", "t\n").ends_with(&format!("{BEGIN}\n\nt\n\n{END}\n")));
    }
}
