//! The harness replaying the committed trace corpus (`traces/`) against real processes:
//!
//! - every trace, replayed against our reference runtime in the role the trace is about, runs
//!   in lockstep and gives the reference's expected verdicts (every property holds, and each
//!   judged verdict equals the shadow model's for the same schedule);
//! - each known-bad strategy of core, run as a variant of our runtime, is caught by the replay
//!   of its own counterexample trace (`traces/<strategy>.json`);
//! - an implementation that takes a path the trace did not predict (either direction: it sends
//!   something unpredicted, or never sends what was predicted) is reported as a divergence with
//!   the message log, in bounded time, and its run is still judged;
//! - a malformed or impossible trace file is refused with a clear error.
//!
//! These use `listsync serve|watch` and `listsync adapter rmcp` from the binary under test (no
//! Node or Python needed).

mod harness_support;

use harness_support::{REPLAY_LIMIT, listsync, paths, repo};
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::trace::Trace;
use listsync_harness::adapters::{Paths, Role, Subject};
use listsync_harness::outcome::{RunReport, RunStatus};
use listsync_harness::replay::{agrees, plan, replay, trace_role};
use listsync_harness::run::Bounds;
use listsync_harness::timeline::{Body, Fact};

fn corpus() -> Vec<(String, Trace)> {
    let (traces, errors) = listsync_harness::matrix::corpus(&repo().join("traces"));
    assert!(
        errors.is_empty(),
        "unreadable traces in traces/: {errors:?}"
    );
    assert!(!traces.is_empty(), "traces/ is empty");
    traces
}

fn subject(s: &str) -> Subject {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

async fn run(t: &Trace, name: &str, against: &Subject, paths: &Paths) -> RunReport {
    let p = plan(t, name, against, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    tokio::time::timeout(REPLAY_LIMIT, replay(&p, paths, Bounds::default()))
        .await
        .unwrap_or_else(|_| panic!("{name} against {against}: the replay hung"))
}

/// The run's message log, for failure messages.
fn log(r: &RunReport) -> String {
    listsync_harness::msglog::render(
        r,
        listsync_core::vocab::KindSet::only(listsync_core::vocab::Kind::Tools),
    )
}

fn show(v: &Verdicts) -> String {
    v.iter()
        .map(|(p, v)| format!("{p}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a corpus trace may be out of the harness's reach: several server nodes (the harness
/// runs one server process) or one application with several servers (it runs one client); tools the application preloads, user approvals, or a property the
/// harness does not judge (`outcome::judges`: it does not see why a client listed, nor its
/// router, nor its user, nor what a call's arguments were built for). Anything else unsupported
/// is a failure.
fn out_of_scope(t: &Trace) -> bool {
    t.scenario.cluster.is_some()
        || t.scenario.aggregate.is_some()
        || t.scenario
            .clients
            .iter()
            .any(|c| !c.known.is_empty() || c.ask_approval)
        || t.shows
            .is_some_and(|p| !listsync_harness::outcome::judges(&t.scenario, p))
}

#[tokio::test(flavor = "multi_thread")]
async fn every_corpus_trace_against_the_reference_gives_the_expected_verdicts() {
    let (paths, _pin) = paths();
    let reference = subject("reference");
    let mut failures = Vec::new();
    let mut ran = 0;
    for (name, t) in corpus() {
        let r = run(&t, &name, &reference, &paths).await;
        if out_of_scope(&t) {
            assert_eq!(r.status, RunStatus::Unsupported, "{name}: {:?}", r.detail);
            continue;
        }
        ran += 1;
        let role = trace_role(&t.scenario).expect("a corpus trace is about one role");
        assert_eq!(r.role, role, "{name}: replayed in the wrong role");
        if r.status != RunStatus::Completed {
            failures.push(format!(
                "{name}: {} — {:?}\n{}",
                r.status.as_str(),
                r.detail,
                log(&r)
            ));
            continue;
        }
        let model = r
            .model
            .clone()
            .expect("a replay has the shadow model's verdicts");
        let violated: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| r.verdict(*p) == Verdict::Violated)
            .collect();
        if !violated.is_empty() || !agrees(&r.judged, &model) {
            failures.push(format!(
                "{name}: judged {} / model {} (violated: {violated:?})\n{}",
                show(&r.judged),
                show(&model),
                log(&r)
            ));
        }
        // The reference holds everything the scenario can judge.
        for (p, v) in &model {
            if listsync_harness::outcome::judges(&t.scenario, *p) && *p != Property::AuthIsolation {
                assert_eq!(
                    *v,
                    Verdict::Holds,
                    "{name}: the model says the reference violates {p}"
                );
            }
        }
    }
    assert!(ran >= 10, "only {ran} corpus traces ran");
    assert!(
        failures.is_empty(),
        "unexpected verdicts:\n{}",
        failures.join("\n\n")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn each_known_bad_strategy_is_caught_by_its_own_trace() {
    let (paths, _pin) = paths();
    let traces = corpus();
    let bad: Vec<String> = ClientStrategy::ALL
        .iter()
        .filter(|s| **s != ClientStrategy::Reference)
        .map(|s| s.as_str().to_owned())
        .chain(
            ServerStrategy::ALL
                .iter()
                .filter(|s| **s != ServerStrategy::Reference)
                .map(|s| s.as_str().to_owned()),
        )
        .collect();
    let mut failures = Vec::new();
    for strategy in &bad {
        let file = format!("{strategy}.json");
        let (_, t) = traces
            .iter()
            .find(|(n, _)| *n == file)
            .unwrap_or_else(|| panic!("traces/{file} is missing"));
        let shows = t
            .shows
            .unwrap_or_else(|| panic!("{file} names no property it shows"));
        let role = trace_role(&t.scenario).expect("a counterexample is about one role");
        let r = run(t, &file, &subject("reference@trace"), &paths).await;
        // The variant really is the known-bad strategy, in the role the trace is about.
        let side = if role == Role::Server {
            &r.server
        } else {
            &r.client
        };
        assert!(
            side.contains(strategy.as_str()),
            "{file}: {role} side runs {side}, not {strategy}"
        );
        if out_of_scope(t) {
            assert_eq!(r.status, RunStatus::Unsupported, "{file}: {:?}", r.detail);
            continue;
        }
        let model = r.model.clone().unwrap_or_default();
        if r.status != RunStatus::Completed
            || r.verdict(shows) != Verdict::Violated
            || !agrees(&r.judged, &model)
        {
            failures.push(format!(
                "{file}: {} {:?}; {shows} judged {}; judged {} / model {}\n{}",
                r.status.as_str(),
                r.detail,
                r.verdict(shows),
                show(&r.judged),
                show(&model),
                log(&r)
            ));
            continue;
        }
        // The violation points at the real message log.
        let found = r
            .violations
            .iter()
            .find(|f| f.property == shows)
            .expect("a violation record");
        assert!(
            r.records.iter().any(|rec| rec.seq == found.record),
            "{file}: the violation points at record {}, which the log does not have",
            found.record
        );
    }
    assert!(
        failures.is_empty(),
        "known-bad strategies not caught:\n{}",
        failures.join("\n\n")
    );
}

fn divergence_fact(r: &RunReport) -> Option<String> {
    r.records.iter().find_map(|rec| match &rec.body {
        Body::Fact(Fact::Divergence { reason, .. }) => Some(reason.clone()),
        _ => None,
    })
}

/// The rmcp client walks every page; the `first-page-only` trace predicts a client that does
/// not. The first unpredicted message (the cursor request of page 2) is a divergence.
#[tokio::test(flavor = "multi_thread")]
async fn an_unpredicted_message_is_reported_as_a_divergence_with_the_log() {
    let (paths, _pin) = paths();
    let text = std::fs::read_to_string(repo().join("traces/first-page-only.json")).unwrap();
    let t = Trace::from_json(&text).unwrap();
    let r = run(&t, "first-page-only.json", &subject("rmcp:client"), &paths).await;
    assert_eq!(r.status, RunStatus::Diverged, "{:?}\n{}", r.detail, log(&r));
    let detail = r.detail.clone().unwrap_or_default();
    assert!(
        detail.contains("tools/list") && detail.contains("which the trace does not have in flight"),
        "{detail}"
    );
    let reason = divergence_fact(&r).expect("the log records the divergence");
    let text = log(&r);
    assert!(text.contains("DIVERGENCE at step"), "{text}");
    assert!(text.contains(&reason));
    // The message log shows the offending request, with its cursor.
    assert!(
        text.contains("\"cursor\""),
        "the log lacks the cursor request:\n{text}"
    );
    // After the divergence the run went on freely and its history was judged.
    assert!(!r.judged.is_empty());
    assert!(Property::ALL.iter().all(|p| r.judged.contains_key(p)));
}

/// rmcp's `ToolRouter` does not notify on `add_route`/`remove_route`; the
/// `notify-per-mutation` trace predicts notifications. A predicted message that never comes is
/// a divergence (after the step bound), not a hang.
#[tokio::test(flavor = "multi_thread")]
async fn a_predicted_message_that_never_comes_is_a_divergence_not_a_hang() {
    let (paths, _pin) = paths();
    let text = std::fs::read_to_string(repo().join("traces/notify-per-mutation.json")).unwrap();
    let t = Trace::from_json(&text).unwrap();
    let r = run(
        &t,
        "notify-per-mutation.json",
        &subject("rmcp:server"),
        &paths,
    )
    .await;
    assert_eq!(r.status, RunStatus::Diverged, "{:?}\n{}", r.detail, log(&r));
    let detail = r.detail.clone().unwrap_or_default();
    assert!(
        detail.contains("never sent notifications/tools/list_changed"),
        "{detail}"
    );
    assert!(divergence_fact(&r).is_some());
    assert!(r.server.starts_with("rmcp"), "{}", r.server);
}

#[test]
fn malformed_trace_files_are_refused_clearly() {
    let dir = std::env::temp_dir().join(format!("listsync-harness-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = std::fs::read_to_string(repo().join("traces/naive.json")).unwrap();
    let mut impossible: serde_json::Value = serde_json::from_str(&good).unwrap();
    // Deliver a response before any request was sent.
    impossible["steps"] =
        serde_json::json!([{"step": "deliver", "client": 0, "link": "down", "index": 0}]);
    let mut v99: serde_json::Value = serde_json::from_str(&good).unwrap();
    v99["version"] = 99.into();
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "truncated.json",
            good[..good.len() / 2].to_owned(),
            "not a valid trace",
        ),
        (
            "other.json",
            r#"{"format":"something-else","version":1}"#.into(),
            "not a listsync trace",
        ),
        (
            "v99.json",
            v99.to_string(),
            "schema version 99 is not supported",
        ),
        ("impossible.json", impossible.to_string(), "step 0 (deliver"),
        ("empty.json", String::new(), "not a valid trace"),
    ];
    for (file, text, want) in &cases {
        let path = dir.join(file);
        std::fs::write(&path, text).unwrap();
        let (code, out, err) = listsync(&[
            "replay",
            path.to_str().unwrap(),
            "--against",
            "reference",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 2, "{file}: exit {code}\nstdout: {out}\nstderr: {err}");
        assert!(
            err.contains(file),
            "{file}: the error does not name the file: {err}"
        );
        assert!(err.contains(want), "{file}: expected '{want}' in: {err}");
        assert!(!err.contains("panicked"), "{file}: {err}");
    }
    let (code, _, err) = listsync(&[
        "replay",
        dir.join("missing.json").to_str().unwrap(),
        "--against",
        "reference",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("missing.json"), "{err}");
    // The matrix's corpus reader reports each bad file and keeps the good ones.
    std::fs::write(dir.join("naive.json"), &good).unwrap();
    let (traces, errors) = listsync_harness::matrix::corpus(&dir);
    assert_eq!(traces.len(), 1, "{errors:?}");
    assert_eq!(errors.len(), cases.len(), "{errors:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_subject_the_harness_does_not_know_is_refused_clearly() {
    let (code, _, err) = listsync(&["replay", "traces/naive.json", "--against", "cobol:client"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown implementation 'cobol'"), "{err}");
    let (code, _, err) = listsync(&[
        "replay",
        "traces/naive.json",
        "--against",
        "python:client@nope",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no client variant 'nope'"), "{err}");
}

/// The lying registry claims every version it announces is visible and every tool it runs is
/// present. Replayed against `listsync serve --strategy lying-registry`, the harness judges
/// what it observed — the proxy's probe of the list a notification announces, and the tool
/// result against the server's ground truth — and catches both lies: the corpus trace shows
/// `notify_after_commit`, the model's counterexample of `no_call_to_removed` (committed under
/// reports/traces/) shows the other, each agreeing with the model.
#[tokio::test(flavor = "multi_thread")]
async fn the_lying_registry_is_caught_for_both_lies() {
    let (paths, _pin) = paths();
    for (file, shows) in [
        ("traces/lying-registry.json", Property::NotifyAfterCommit),
        (
            "reports/traces/lying-registry.no_call_to_removed.json",
            Property::NoCallToRemoved,
        ),
    ] {
        let text = std::fs::read_to_string(repo().join(file)).expect("read trace");
        let t = Trace::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(t.shows, Some(shows), "{file}");
        let r = run(&t, file, &subject("reference@trace"), &paths).await;
        assert!(r.server.contains("lying-registry"), "{file}: {}", r.server);
        let model = r.model.clone().unwrap_or_default();
        assert!(
            r.status == RunStatus::Completed
                && r.verdict(shows) == Verdict::Violated
                && agrees(&r.judged, &model),
            "{file}: {} {:?}; {shows} judged {}; judged {} / model {}\n{}",
            r.status.as_str(),
            r.detail,
            r.verdict(shows),
            show(&r.judged),
            show(&model),
            log(&r)
        );
    }
}
