//! The audit of a recorded session against the replay of the same run: every `traces/` corpus
//! trace is replayed (our runtime with the trace's own known-bad strategy, our reference, rmcp,
//! and the TypeScript v1 client and Python server adapters where the trace's role allows), the
//! wire of each run is turned into a session log as a recorder between the two processes would
//! have written it (`listsync_session::from_run`), and `listsync audit`'s judge reads it.
//!
//! - **The audit accuses no one the replay acquits**: a property the audit finds violated is
//!   violated in the replay of that run (the replay knows more: the server's catalog, probes of
//!   what a list saw when each notification went out; the audit has only the wire).
//! - **What the wire shows, the audit catches**: the known-bad strategies whose violation is on
//!   the wire (a walk stopped at its first page; a listen never followed by a list; a list under
//!   way when a list_changed arrived, kept last or never followed by another) are caught
//!   by the audit through the same property as the replay. The others are caught by the replay
//!   only, and the table below says why, so a change in the audit's reach shows up here.
//! - Each reference run's audit finds nothing.
//! - Every (trace, subject) pair has a replay plan: one that cannot be planned fails the test,
//!   never drops out of it (checked alone, without replaying, by `every_replayed_pair_has_a_plan`).

mod harness_support;

use harness_support::{REPLAY_LIMIT, paths};
use listsync_core::property::{Property, Verdict};
use listsync_core::trace::Trace;
use listsync_harness::adapters::{Paths, Role, Subject, provision};
use listsync_harness::outcome::{RunReport, RunStatus};
use listsync_harness::replay::{plan, replay, trace_role};
use listsync_harness::run::Bounds;
use listsync_session::audit::{Audit, Status, audit};
use listsync_session::from_run::session_log;

fn corpus() -> Vec<(String, Trace)> {
    let root = harness_support::repo().join("traces");
    let (traces, errors) = listsync_harness::matrix::corpus(&root);
    assert!(errors.is_empty(), "unreadable traces: {errors:?}");
    assert!(!traces.is_empty(), "traces/ is empty");
    traces
}

/// The replay of `t` against `against`, unless the subject reports it unsupported. A trace
/// that cannot be planned for a subject fails the test, naming both and why.
async fn run(t: &Trace, name: &str, against: &Subject, paths: &Paths) -> Option<RunReport> {
    let p = plan(t, name, against, None)
        .unwrap_or_else(|e| panic!("{name} against {against}: no replay plan: {e}"));
    let r = tokio::time::timeout(REPLAY_LIMIT, replay(&p, paths, Bounds::default()))
        .await
        .unwrap_or_else(|_| panic!("{name} against {against}: the replay hung"));
    (r.status != RunStatus::Unsupported).then_some(r)
}

/// The (trace, subject) pairs the audit test replays, as [`replays`] picks them.
fn pairs() -> Vec<(String, Trace, &'static str, Subject)> {
    let mut todo = Vec::new();
    for (name, t) in corpus() {
        if t.scenario.cluster.is_some() {
            continue;
        }
        let mut subjects = vec!["reference@trace", "reference", "rmcp"];
        match trace_role(&t.scenario) {
            Some(Role::Client) => subjects.push("ts-v1:client"),
            Some(Role::Server) => subjects.push("python:server"),
            None => {}
        }
        for s in subjects {
            todo.push((name.clone(), t.clone(), s, s.parse().unwrap()));
        }
    }
    todo
}

/// Every pair the audit test replays has a plan (planning needs no adapter installed): none
/// is left out of that test for want of one.
#[test]
fn every_replayed_pair_has_a_plan() {
    let todo = pairs();
    assert!(todo.len() >= 20, "only {} pairs", todo.len());
    let failed: Vec<String> = todo
        .iter()
        .filter_map(|(name, t, s, against)| {
            plan(t, name, against, None)
                .err()
                .map(|e| format!("{name} against {s}: {e}"))
        })
        .collect();
    assert!(failed.is_empty(), "no replay plan:\n{}", failed.join("\n"));
}

/// Every corpus trace but the clustered ones (several server nodes: one wire per node, out of
/// the harness's reach) replayed against our runtime with the trace's own strategy, our
/// reference, rmcp, and the TypeScript v1 client or Python server adapter where the trace's role
/// allows: (trace, subject, the run unless unsupported), in that order. The replays run as many
/// at a time as the matrix does by default (`default_jobs`): they mostly wait on the processes
/// they drive and on their windows.
async fn replays(paths: &Paths) -> Vec<(String, &'static str, Option<RunReport>)> {
    let jobs = listsync_harness::matrix::default_jobs();
    let slots = std::sync::Arc::new(tokio::sync::Semaphore::new(jobs));
    let todo = pairs();
    // Install the adapters first, one by one, as the matrix does: an install blocks its
    // thread, and no replay should wait on one mid-run.
    let mut installed = std::collections::BTreeSet::new();
    for (.., against) in &todo {
        if installed.insert(against.name().to_owned()) {
            provision(paths, &against.adapter).expect("provision the adapter");
        }
    }
    let mut set = tokio::task::JoinSet::new();
    for (n, (name, t, s, against)) in todo.into_iter().enumerate() {
        let (paths, slots) = (paths.clone(), slots.clone());
        set.spawn(async move {
            let _slot = slots.acquire_owned().await.expect("semaphore open");
            let r = run(&t, &name, &against, &paths).await;
            (n, name, s, r)
        });
    }
    let mut done = Vec::new();
    while let Some(j) = set.join_next().await {
        done.push(j.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
    }
    done.sort_by_key(|(i, ..)| *i);
    done.into_iter()
        .map(|(_, name, s, r)| (name, s, r))
        .collect()
}

fn violated_in_audit(a: &Audit) -> Vec<Property> {
    a.verdicts
        .iter()
        .filter(|v| v.status == Status::Violated)
        .map(|v| v.property)
        .collect()
}

/// What the audit of each known-bad trace's run catches, and why it catches no more.
const REACH: &[(&str, &[Property], &str)] = &[
    (
        "first-page-only",
        &[Property::NoTornSnapshot, Property::Converges],
        "the walk stops at a page with a nextCursor: on the wire",
    ),
    (
        "listen-without-relist",
        &[Property::ListenThenList],
        "no list follows the acknowledgement: on the wire",
    ),
    (
        "naive",
        &[Property::NoStaleOverwrite, Property::Converges],
        "the older list's walk was under way when the list_changed arrived and completed last: on the wire",
    ),
    (
        "request-id-guard",
        &[],
        "which response the client kept happens inside the client",
    ),
    (
        "clear-then-fetch",
        &[],
        "an empty list shown while fetching happens inside the client",
    ),
    (
        "flag-cleared-after-await",
        &[Property::Converges, Property::NoLostWakeup],
        "the list_changed arrives while a walk is under way, and no list follows it: on the wire",
    ),
    (
        "notify-before-commit",
        &[],
        "no list after the early list_changed shows the old content and a later one the new",
    ),
    (
        "lying-client",
        &[],
        "the wire shows walks that fetched the newest list; that its readers keep the older one happens inside the client",
    ),
    (
        "lying-registry",
        &[],
        "as notify-before-commit: the list the client made still agreed with what followed",
    ),
    (
        "notify-per-mutation",
        &[],
        "one list_changed per mutation of one batch: batches are not on the wire",
    ),
    (
        "offset-cursor",
        &[],
        "pages cut from two versions without a duplicate name: versions are not on the wire",
    ),
    (
        "notify-on-noop",
        &[],
        "the server's catalog is not on the wire: a list_changed followed by the same list may announce a change another context sees",
    ),
    (
        "two-registries",
        &[],
        "which consumer refused the call happens inside the client",
    ),
    (
        "known-tools-survive",
        &[],
        "a call the server refuses is on the wire, but whether the client's list still had the tool is not",
    ),
    (
        "refresh-on-any-error",
        &[],
        "why a client lists again is not on the wire: a list after a failed call may be the application's or a timer's",
    ),
    (
        "stale-dispatch",
        &[],
        "the call was sent before the removal was announced, so the wire cannot tell it was run after",
    ),
];

#[tokio::test(flavor = "multi_thread")]
async fn the_audit_of_a_replayed_session_agrees_with_the_replay() {
    let (paths, _pin) = paths();
    let mut failures = Vec::new();
    let mut caught = Vec::new();
    let mut runs = 0;
    for (name, s, r) in replays(&paths).await {
        let Some(r) = r else { continue };
        runs += 1;
        let a = audit(&session_log(&r));
        let accused = violated_in_audit(&a);
        for p in &accused {
            if r.judged.get(p) != Some(&Verdict::Violated) {
                failures.push(format!(
                    "{name} against {s}: the audit finds {p} violated ({}), the replay judged {:?}",
                    a.verdicts
                        .iter()
                        .find(|v| v.property == *p)
                        .map_or("", |v| v.detail.as_str()),
                    r.judged.get(p)
                ));
            }
        }
        if s == "reference" && !accused.is_empty() {
            failures.push(format!(
                "{name}: the reference's session is accused of {accused:?}"
            ));
        }
        if s == "reference@trace" {
            let stem = name.trim_end_matches(".json");
            caught.push((stem.to_owned(), accused));
        }
    }
    for (stem, accused) in &caught {
        match REACH.iter().find(|(n, _, _)| n == stem) {
            Some((_, want, why)) => {
                if accused.as_slice() != *want {
                    failures.push(format!(
                        "{stem}: the audit catches {accused:?}, expected {want:?} ({why})"
                    ));
                }
            }
            None => failures.push(format!(
                "{stem}: a known-bad trace with no entry in REACH (the audit catches {accused:?})"
            )),
        }
    }
    assert!(
        caught.iter().any(|(_, a)| !a.is_empty()),
        "no known-bad run was caught by the audit"
    );
    assert!(runs >= 20, "only {runs} runs");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
