//! `reports/conformance.md` from `reports/conformance.json`, the conformance matrix `listsync
//! matrix` writes ([`Conformance`], the harness's schema of it): one row per implementation ×
//! version × role × era × variant with a cell per property, the harness's own validation against
//! core's known-bad strategies, what the matrix says about the SDK facts, and every run. A cell or
//! row that rests on a corpus trace links that trace's sequence diagram and its JSON; runs that
//! left a message log link it.

use crate::md::cell_escape;
use listsync_core::property::{Property, Verdict};
use listsync_harness::adapters::Role;
use listsync_harness::findings::{ClaimStatus, Finding};
use listsync_harness::matrix::{CellState, Row};
use listsync_harness::outcome::{Outcome, RunReport, RunStatus, Target};
pub use listsync_harness::report::{Conformance, FORMAT};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Links for a corpus trace file name: its diagram (if rendered) and its JSON.
fn trace_links(name: &str, diagram: &dyn Fn(&str) -> Option<String>) -> String {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    match diagram(name) {
        Some(d) => format!("[{stem}]({d}) ([json](../traces/{name}))"),
        None => format!("[{stem}](../traces/{name})"),
    }
}

/// What a run ran, linked.
fn run_target(run: &RunReport, diagram: &dyn Fn(&str) -> Option<String>) -> String {
    let target = match &run.target {
        Target::Trace { name, .. } => trace_links(name, diagram),
        Target::Exercise { name } => crate::properties::scenario(name),
    };
    match &run.log {
        Some(l) => format!("{target} [log]({l})"),
        None => target,
    }
}

/// Runs by id.
type Runs<'a> = BTreeMap<&'a str, &'a RunReport>;

/// Whether a row ran: some run of it was carried out to a judgement (completed or diverged),
/// not only refused as out of scope or failed.
pub fn row_ran(row: &Row, runs: &BTreeMap<&str, &RunReport>) -> bool {
    row.runs.iter().any(|id| {
        runs.get(id.as_str())
            .is_some_and(|r| matches!(r.status, RunStatus::Completed | RunStatus::Diverged))
    })
}

/// The matrix's verdict line (also the index's headline): reference rows violating a property,
/// third-party rows that ran and violate one (rows that did not run counted apart), and the
/// known-bad corpus traces caught among those the harness can replay.
pub fn headline(v: &Conformance) -> String {
    let runs: Runs = v.runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let violated = |r: &Row| r.cells.values().any(|c| c.state == CellState::Violated);
    let is_ref = |r: &Row| r.key.imp == "reference";
    let refs: Vec<&Row> = v.rows.iter().filter(|r| is_ref(r)).collect();
    let refs_bad = refs.iter().filter(|r| violated(r)).count();
    let others: Vec<&Row> = v.rows.iter().filter(|r| !is_ref(r)).collect();
    let ran: Vec<&&Row> = others.iter().filter(|r| row_ran(r, &runs)).collect();
    let others_bad = ran.iter().filter(|r| violated(r)).count();
    let (caught, replayable, out_of_scope) = validation_counts(v, &runs);
    format!(
        "{}: reference rows violating a property: {refs_bad} of {}; third-party rows violating \
         at least one: {others_bad} of {} that ran ({} did not run); known-bad traces caught: \
         {caught} of {replayable} replayable, {out_of_scope} out of the harness's scope",
        if refs_bad == 0 && caught == replayable {
            "**Pass**"
        } else {
            "**FAIL**"
        },
        refs.len(),
        ran.len(),
        others.len() - ran.len(),
    )
}

/// The validation's counts: (caught, replayable, out of scope). A trace whose run the harness
/// refused as unsupported is out of scope; every other one is replayable.
fn validation_counts(v: &Conformance, runs: &Runs) -> (usize, usize, usize) {
    let shown: Vec<_> = v.validation.iter().filter(|x| x.shows.is_some()).collect();
    let unsupported = |x: &&listsync_harness::matrix::Validation| {
        runs.get(x.run.as_str())
            .is_some_and(|r| r.status == RunStatus::Unsupported)
    };
    let out = shown.iter().filter(|x| unsupported(x)).count();
    let caught = shown.iter().filter(|x| !unsupported(x) && x.caught).count();
    (caught, shown.len() - out, out)
}

/// Renders `conformance.md` from the JSON, or a page saying how to produce it. `diagram` maps
/// a corpus trace's file name (`naive.json`) to its diagram's path relative to `reports/`.
pub fn render(json: Option<&Conformance>, diagram: &dyn Fn(&str) -> Option<String>) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Conformance matrix\n");
    let Some(v) = json else {
        let _ = writeln!(
            s,
            "_No `reports/conformance.json` yet: run `listsync matrix` (it replays the `traces/` \
             corpus and the generated scenarios against every implementation and writes it), \
             then `listsync report`._"
        );
        return s;
    };
    let runs: Runs = v.runs.iter().map(|r| (r.id.as_str(), r)).collect();
    let props = &v.properties;
    let _ = writeln!(s, "{}.\n", headline(v));
    let _ = writeln!(
        s,
        "Generated by `listsync report` from `conformance.json`, written by `listsync matrix` \
         ({} runs; their time: [timings](timings.md#conformance-matrix)). Each row is one \
         implementation × exact package version × role × era × variant, run against our \
         reference runtime in the other role over stdio, with the harness proxy holding and \
         releasing JSON-RPC messages. Cells aggregate the row's runs: the `traces/` corpus posed \
         adaptively (the trace's adversary, the implementation's own choices: \
         docs/trace-format.md) and the generated [scenarios]({page}#scenarios-of-the-conformance-matrix) \
         of its role. **violated** links the run that shows it — a corpus trace (its sequence \
         diagram, then its JSON) or a scenario — and its message log; **holds**: no run violated \
         it and a run that ran to its end judged it; **not judged**: the harness cannot see it on \
         the wire (each property's section of [the definitions]({page}) says why), so a run's \
         verdict on it means nothing; **n/a**: the role cannot violate it, the era has no such \
         thing, or it needs HTTP authorization contexts (the harness runs stdio); **not run**: \
         no run of the row was carried out (the reason is given). Columns: {}.\n",
        runs.len(),
        props
            .iter()
            .map(|p| format!("{} = {}", p.short(), crate::properties::property(*p)))
            .collect::<Vec<_>>()
            .join(", "),
        page = crate::properties::PAGE,
    );
    matrix(&mut s, v, props, &runs, diagram);
    validation(&mut s, v, &runs, diagram);
    findings(&mut s, v, &runs);
    races(&mut s, &runs, diagram);
    run_table(&mut s, &runs, props, diagram);
    s
}

fn matrix(
    s: &mut String,
    v: &Conformance,
    props: &[Property],
    runs: &Runs,
    diagram: &dyn Fn(&str) -> Option<String>,
) {
    let _ = write!(s, "| implementation | version | role | era | variant |");
    for p in props {
        let _ = write!(s, " {} |", crate::properties::property_short(*p));
    }
    let _ = writeln!(s);
    let _ = writeln!(s, "|---|---|---|---|---|{}", "---|".repeat(props.len()));
    for row in &v.rows {
        let _ = write!(
            s,
            "| {} | {} | {} | {} | {} |",
            row.key.imp,
            cell_escape(&row.version),
            row.key.role,
            row.key.era,
            row.key.variant
        );
        let not_run = match &row.note {
            Some(note) if row.runs.is_empty() => Some(note.clone()),
            _ if !row_ran(row, runs) => Some(format!(
                "every run out of the harness's scope{}",
                row.runs
                    .first()
                    .and_then(|id| runs.get(id.as_str()))
                    .and_then(|r| r.detail.as_deref())
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            )),
            _ => None,
        };
        if let Some(note) = not_run {
            let _ = writeln!(
                s,
                " not run: {} |{}",
                cell_escape(&note),
                "|".repeat(props.len().saturating_sub(1))
            );
            continue;
        }
        for p in props {
            let cell = row.cells.get(p);
            let text = match cell.map(|c| c.state) {
                Some(CellState::Violated) => {
                    let run = cell
                        .and_then(|c| c.run.as_deref())
                        .and_then(|id| runs.get(id));
                    match run {
                        Some(r) => format!("**violated** {}", run_target(r, diagram)),
                        None => "**violated**".into(),
                    }
                }
                Some(CellState::NotRun) => "not run".into(),
                // A property the harness cannot see is not judged, whatever the runs say of it
                // (their verdict on it is n/a; older reports said "holds", which meant nothing).
                Some(CellState::Holds | CellState::NotApplicable)
                    if listsync_harness::outcome::not_judged(*p).is_some() =>
                {
                    "not judged".into()
                }
                Some(CellState::Holds) => "holds".into(),
                Some(CellState::NotApplicable) => "n/a".into(),
                Some(CellState::Diverged) => "diverged".into(),
                None => "–".into(),
            };
            let _ = write!(s, " {text} |");
        }
        let _ = writeln!(s);
    }
}

fn validation(
    s: &mut String,
    v: &Conformance,
    runs: &Runs,
    diagram: &dyn Fn(&str) -> Option<String>,
) {
    let rows = &v.validation;
    let _ = writeln!(
        s,
        "\n## Harness validation: each known-bad strategy of core, run as a variant of our runtime\n"
    );
    let (caught, replayable, out_of_scope) = validation_counts(v, runs);
    let _ = writeln!(
        s,
        "**Caught {caught} of {replayable} replayable known-bad traces; {out_of_scope} out of \
         the harness's scope** (what they show is not on the wire, or needs several servers or \
         nodes: each row says why; the model and the simulator judge them). Every trace of \
         `traces/` replayed against our runtime running the trace's own strategies. *Caught*: \
         the replay judged the trace's property violated from what the real processes did; \
         *agrees*: every judged verdict equals the model's for the same (drained) schedule.\n"
    );
    let _ = writeln!(
        s,
        "| trace (diagram) | role | strategy | shows | caught | agrees with the model | run |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    for val in rows {
        let run = runs.get(val.run.as_str()).copied();
        let status = run.map(|r| r.status);
        let strategy = run
            .map(|r| match val.role {
                Some(Role::Server) => r.server.as_str(),
                _ => r.client.as_str(),
            })
            .unwrap_or("");
        let caught = match status {
            Some(RunStatus::Unsupported) => "out of scope".to_owned(),
            None | Some(RunStatus::Failed) => "failed".to_owned(),
            _ if val.caught => "**yes**".into(),
            _ => "NO".into(),
        };
        let agrees = if status == Some(RunStatus::Unsupported) {
            "-"
        } else if val.agrees {
            "yes"
        } else {
            "no"
        };
        let mut detail = run
            .and_then(|r| r.detail.as_deref())
            .map(cell_escape)
            .unwrap_or_default();
        if let Some(l) = run.and_then(|r| r.log.as_deref()) {
            detail = format!("[log]({l}) {detail}");
        }
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {caught} | {agrees} | {} |",
            trace_links(&val.trace, diagram),
            val.role.map_or("-", Role::as_str),
            cell_escape(strategy),
            val.shows.map_or("-", Property::as_str),
            detail.trim()
        );
    }
}

fn findings(s: &mut String, v: &Conformance, runs: &Runs) {
    let found = &v.findings;
    let _ = writeln!(
        s,
        "\n## docs/sdk-facts.md, \"Observed\": what the matrix says\n"
    );
    let _ = writeln!(
        s,
        "Each line of evidence names its row and the scenario or corpus trace it ran (`NAME.json` is \
         `traces/NAME.json`) and links the run's message log. A corpus trace replays against the \
         same row with `listsync replay traces/NAME.json --against IMPL:ROLE@VARIANT`; a scenario \
         reruns with `listsync matrix --only IMPL` (the proxy's holds and releases give every run \
         the same schedule).\n"
    );
    let _ = writeln!(s, "| section | claim | verdict | evidence |");
    let _ = writeln!(s, "|---|---|---|---|");
    for f in found {
        let evidence: Vec<String> = f
            .evidence
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let e = cell_escape(e);
                let log = f
                    .runs
                    .get(i)
                    .and_then(|id| runs.get(id.as_str()))
                    .and_then(|r| r.log.as_deref());
                match log {
                    Some(l) => format!("{e} ([log]({l}))"),
                    None => e,
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | **{}** | {} |",
            cell_escape(&f.section),
            cell_escape(&f.claim),
            f.status.as_str(),
            evidence.join("<br>")
        );
    }
    let _ = writeln!(
        s,
        "\n### Where the matrix disagrees with docs/sdk-facts.md\n"
    );
    let disagree: Vec<&Finding> = found
        .iter()
        .filter(|f| matches!(f.status, ClaimStatus::Refuted | ClaimStatus::Partly))
        .collect();
    let extra = &v.not_in_sdk_facts;
    if disagree.is_empty() && extra.is_empty() {
        let _ = writeln!(s, "Nowhere: every claim tested was confirmed.");
    }
    for f in disagree {
        let _ = writeln!(
            s,
            "- {} ({}): **{}** — {}",
            f.claim,
            f.section,
            f.status.as_str(),
            f.evidence.join("; ")
        );
    }
    for e in extra {
        let _ = writeln!(s, "- {e}");
    }
    let checks = &v.source_checks;
    if !checks.is_empty() {
        let _ = writeln!(
            s,
            "\n### Checked in the released source of the pinned versions\n\n\
             Questions no run answers, read in the artifacts the adapters install (the Go module \
             zips, the Java jar).\n"
        );
        let _ = writeln!(s, "| SDK | question | answer | where |");
        let _ = writeln!(s, "|---|---|---|---|");
        for c in checks {
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} |",
                cell_escape(&c.sdk),
                cell_escape(&c.question),
                cell_escape(&c.answer),
                cell_escape(&c.place)
            );
        }
    }
}

/// What the corpus replays against the rows came to, per trace: in how many rows its race was
/// posed and every property held, in how many a property was violated, and in which rows the
/// race was not posed, with the first reason (docs/trace-format.md, "Adaptive replay").
fn races(s: &mut String, runs: &Runs, diagram: &dyn Fn(&str) -> Option<String>) {
    let replays: Vec<&RunReport> = runs
        .iter()
        .filter(|(id, r)| {
            !id.starts_with("validation.")
                && matches!(r.target, Target::Trace { .. })
                && r.status != RunStatus::Unsupported
        })
        .map(|(_, r)| *r)
        .collect();
    let mut by_trace: BTreeMap<&str, Vec<&RunReport>> = BTreeMap::new();
    for r in &replays {
        by_trace.entry(r.target.name()).or_default().push(r);
    }
    let _ = writeln!(s, "\n## Corpus replays: was the race posed?\n");
    let _ = writeln!(
        s,
        "{} corpus replays ran against the rows. A trace is the adversary's schedule (batches, \
         deliveries, losses) plus a known-bad strategy's choices; each row's implementation is \
         posed the adversary and makes its own choices. **posed, holds**: the run reached the \
         trace's race as the wire shows it and every property held; **violated**: a property \
         was violated (the cells above link it); **not posed**: the implementation's path never \
         gave the adversary its opening, so the run proves nothing about that race; \
         **error**: the harness or the adapter failed.\n",
        replays.len()
    );
    if by_trace.is_empty() {
        return;
    }
    let _ = writeln!(
        s,
        "| trace | posed, holds | violated | not posed | error | first reason not posed (row) |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|");
    for (trace, rs) in by_trace {
        let count = |o: Outcome| rs.iter().filter(|r| r.outcome() == o).count();
        let not_posed = rs.iter().find(|r| r.outcome() == Outcome::RaceNotPosed);
        let reason = not_posed
            .map(|r| {
                format!(
                    "{} ({} {} {} {})",
                    r.race
                        .as_ref()
                        .and_then(|x| x.why.clone())
                        .unwrap_or_default(),
                    r.imp,
                    r.role,
                    r.variant,
                    r.era
                )
            })
            .unwrap_or_default();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} |",
            trace_links(trace, diagram),
            count(Outcome::Holds),
            count(Outcome::Violated),
            count(Outcome::RaceNotPosed),
            count(Outcome::Error),
            cell_escape(&reason)
        );
    }
}

fn run_table(
    s: &mut String,
    runs: &Runs,
    props: &[Property],
    diagram: &dyn Fn(&str) -> Option<String>,
) {
    if runs.is_empty() {
        return;
    }
    let _ = writeln!(s, "\n## Runs\n");
    let _ = writeln!(
        s,
        "| run | target | server | client | status | violated | notes |"
    );
    let _ = writeln!(s, "|---|---|---|---|---|---|---|");
    let verdict = |v: Option<&Verdict>| v.map_or_else(|| "-".to_owned(), Verdict::to_string);
    for (id, r) in runs {
        let violated: Vec<&str> = props
            .iter()
            .filter(|p| r.judged.get(*p) == Some(&Verdict::Violated))
            .map(|p| p.short())
            .collect();
        let mut notes = r.detail.clone().unwrap_or_default();
        // Only a run with a model verdict (a replay of a model trace) can differ from it.
        if r.status == RunStatus::Completed
            && let Some(m) = &r.model
        {
            let model = |p: &Property| m.get(p);
            let diff: Vec<String> = props
                .iter()
                .filter(|p| r.judged.get(*p) != model(p))
                .map(|p| {
                    format!(
                        "{} judged {} / model {}",
                        p.short(),
                        verdict(r.judged.get(p)),
                        verdict(model(p))
                    )
                })
                .collect();
            if !diff.is_empty() {
                notes = format!("{notes} differs from the model: {}", diff.join(", "));
            }
        }
        let _ = writeln!(
            s,
            "| {id} | {} | {} | {} | {} | {} | {} |",
            run_target(r, diagram),
            cell_escape(&r.server),
            cell_escape(&r.client),
            r.status.as_str(),
            violated.join(" "),
            cell_escape(notes.trim())
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run as the harness writes it.
    fn run() -> serde_json::Value {
        serde_json::json!({"id": "r1", "target": {"type": "trace", "name": "naive.json", "shows": null},
                  "imp": "ts-v2", "role": "client", "variant": "listchanged", "era": "2025-11-25",
                  "status": "completed", "server": "reference", "client": "ts-v2", "detail": null,
                  "log": "conformance/r1.log",
                  "judged": {"no_stale_overwrite": "violated"},
                  "model": {"no_stale_overwrite": "violated"},
                  "expected": null, "violations": [], "notes": [], "duration_ms": 5,
                  "observations": {"server_sdk": null, "client_sdk": null, "negotiated": null,
                                   "tools_list_changed_advertised": null,
                                   "notifications_per_batch": [], "relists": 0,
                                   "max_concurrent_lists": 0, "calls": [], "published": 0,
                                   "paginated": false, "cursor_relists": 0, "bad": []}})
    }

    fn json() -> serde_json::Value {
        serde_json::json!({
            "format": FORMAT,
            "seconds": 12.0,
            "properties": ["no_stale_overwrite", "notify_after_commit"],
            "rows": [
                {"imp": "ts-v2", "role": "client", "era": "2025-11-25", "variant": "listchanged",
                 "version": "2.4.0", "note": null, "runs": ["r1"],
                 "cells": {"no_stale_overwrite": {"state": "violated", "run": "r1"},
                           "notify_after_commit": {"state": "n/a", "run": null}}},
                {"imp": "ts-v1", "role": "client", "era": "2026-07-28", "variant": "x",
                 "version": "1.32.2", "note": "does not speak 2026-07-28", "runs": [],
                 "cells": {}}
            ],
            "validation": [{"trace": "naive.json", "role": "client", "strategy": "trace",
                            "shows": "no_stale_overwrite", "caught": true, "agrees": true,
                            "run": "r1"}],
            "findings": [{"section": "Java", "claim": "an older list can win", "status": "confirmed",
                          "evidence": ["java client (sync) 2025-11-25 `naive.json`: violated"],
                          "runs": ["r1"]}],
            "not_in_sdk_facts": [],
            "source_checks": [{"sdk": "io.modelcontextprotocol.sdk:mcp 2.1.0",
                               "question": "a generation counter?", "answer": "no",
                               "place": "McpAsyncClient"}],
            "runs": [run()]
        })
    }

    fn doc() -> Conformance {
        Conformance::parse(&json().to_string()).expect("the writer's shape parses")
    }

    #[test]
    fn a_renamed_or_missing_field_or_another_format_is_an_error_naming_it() {
        let mut renamed = json();
        let row = &mut renamed["rows"][0];
        row["notes"] = row["note"].take();
        row.as_object_mut().unwrap().remove("note");
        let e = Conformance::parse(&renamed.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `notes`"), "{e}");

        let mut missing = json();
        missing["runs"][0].as_object_mut().unwrap().remove("status");
        let e = Conformance::parse(&missing.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("missing field `status`"), "{e}");

        let mut renamed_run = json();
        renamed_run["runs"][0]["message_log"] = renamed_run["runs"][0]["log"].take();
        let e = Conformance::parse(&renamed_run.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `message_log`"), "{e}");

        let mut other = json();
        other["format"] = "listsync-conformance/2".into();
        let e = Conformance::parse(&other.to_string())
            .unwrap_err()
            .to_string();
        assert!(e.contains("listsync-conformance/2"), "{e}");
    }

    #[test]
    fn the_writer_s_document_reads_back_as_written() {
        let d = doc();
        let again = serde_json::to_value(&d).unwrap();
        assert_eq!(
            Conformance::parse(&again.to_string()).unwrap().rows[0]
                .key
                .imp,
            "ts-v2"
        );
        assert_eq!(again["rows"][1]["note"], "does not speak 2026-07-28");
        assert_eq!(again["rows"][0]["imp"], "ts-v2");
    }

    #[test]
    fn violated_cells_link_the_trace_diagram_and_the_log() {
        let d = |f: &str| {
            Some(format!(
                "diagrams/corpus/{}.svg",
                f.trim_end_matches(".json")
            ))
        };
        let page = render(Some(&doc()), &d);
        assert!(page.contains(
            "| ts-v2 | 2.4.0 | client | 2025-11-25 | listchanged | **violated** \
             [naive](diagrams/corpus/naive.svg) ([json](../traces/naive.json)) \
             [log](conformance/r1.log) | n/a |"
        ));
        assert!(page.contains(
            "| ts-v1 | 1.32.2 | client | 2026-07-28 | x | not run: does not speak 2026-07-28 ||"
        ));
        assert!(page.contains("| [naive](diagrams/corpus/naive.svg) ([json](../traces/naive.json)) | client | ts-v2 | no_stale_overwrite | **yes** | yes |"));
    }

    #[test]
    fn findings_link_their_runs_and_the_source_checks_are_listed() {
        let page = render(Some(&doc()), &|_| None);
        assert!(page.contains(
            "| Java | an older list can win | **confirmed** | java client (sync) 2025-11-25 `naive.json`: violated ([log](conformance/r1.log)) |"
        ));
        assert!(page.contains("### Checked in the released source of the pinned versions"));
        assert!(page.contains("| io.modelcontextprotocol.sdk:mcp 2.1.0 | a generation counter? | no | McpAsyncClient |"));
        assert!(page.contains("Nowhere: every claim tested was confirmed."));
    }

    #[test]
    fn only_a_run_with_a_model_verdict_can_differ_from_the_model() {
        let mut v = json();
        v["runs"][0]["judged"]["notify_after_commit"] = "holds".into();
        let d = |v: &serde_json::Value| Conformance::parse(&v.to_string()).unwrap();
        let page = render(Some(&d(&v)), &|_| None);
        assert!(
            page.contains("differs from the model: commit judged holds / model -"),
            "{page}"
        );
        v["runs"][0]["model"] = serde_json::Value::Null;
        let page = render(Some(&d(&v)), &|_| None);
        assert!(!page.contains("differs from the model"), "{page}");
    }

    #[test]
    fn missing_json_says_how_to_produce_it() {
        assert!(render(None, &|_| None).contains("run `listsync matrix`"));
    }
}
