//! The harness replaying the committed trace corpus (`traces/`) against real processes:
//!
//! - every trace, replayed against our reference runtime in the role the trace is about, holds
//!   with its race posed (or every adversary move carried out);
//! - each known-bad strategy of core, run as a variant of our runtime following the trace
//!   exactly (`reference@trace`, lockstep), is caught by the replay of its own counterexample
//!   trace (`traces/<strategy>.json`);
//! - each of them also caught when it makes its own choices under the trace's adversary
//!   (`reference@STRATEGY`, an adaptive replay);
//! - an implementation that takes another path than the trace's (it sends what the trace's
//!   client did not, or never sends what it did) is judged on what it did, in bounded time
//!   (docs/trace-format.md, "Adaptive replay");
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
use listsync_harness::outcome::{Outcome, RunReport, RunStatus};
use listsync_harness::replay::{agrees, plan, replay, trace_role};
use listsync_harness::run::Bounds;

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
        listsync_harness::msglog::Stamps::Shown,
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
        let violated: Vec<Property> = Property::ALL
            .into_iter()
            .filter(|p| r.verdict(*p) == Verdict::Violated)
            .collect();
        if r.outcome() != Outcome::Holds {
            failures.push(format!(
                "{name}: {} — {:?} (violated: {violated:?}; race: {:?})\n{}",
                r.outcome().as_str(),
                r.detail,
                r.race,
                log(&r)
            ));
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

/// Each known-bad strategy of core, run as a variant of our runtime that makes its own choices
/// (`reference@STRATEGY`, an adaptive replay: the trace's adversary posed, the strategy's own
/// path taken), is caught by the property its own trace shows, as a buggy third-party
/// implementation would be.
#[tokio::test(flavor = "multi_thread")]
async fn each_known_bad_strategy_making_its_own_choices_is_caught_by_its_trace() {
    let (paths, _pin) = paths();
    let mut failures = Vec::new();
    let mut caught = 0;
    for (file, t) in corpus() {
        let Some(shows) = t.shows else { continue };
        if out_of_scope(&t) {
            continue;
        }
        let Some(role) = trace_role(&t.scenario) else {
            continue;
        };
        let strategy = match role {
            Role::Server => t.scenario.server.strategy.as_str().to_owned(),
            Role::Client => t.scenario.client_strategy().as_str().to_owned(),
        };
        let r = run(
            &t,
            &file,
            &subject(&format!("reference@{strategy}")),
            &paths,
        )
        .await;
        if r.status == RunStatus::Unsupported {
            continue;
        }
        if r.outcome() != Outcome::Violated || r.verdict(shows) != Verdict::Violated {
            failures.push(format!(
                "{file} against reference@{strategy}: {}; {shows} judged {}\n{}",
                listsync_harness::replay::headline(&r),
                r.verdict(shows),
                log(&r)
            ));
        } else {
            caught += 1;
        }
    }
    assert!(caught >= 10, "only {caught} known-bad strategies ran");
    assert!(
        failures.is_empty(),
        "not caught:\n{}",
        failures.join("\n\n")
    );
}

/// The rmcp client walks every page where the `first-page-only` trace's client stops after
/// the first: it takes another path, and the replay judges what it did (it holds) instead of
/// calling it a divergence; the message log shows the cursor request it made.
#[tokio::test(flavor = "multi_thread")]
async fn an_implementation_on_another_path_is_judged_on_what_it_did() {
    let (paths, _pin) = paths();
    let text = std::fs::read_to_string(repo().join("traces/first-page-only.json")).unwrap();
    let t = Trace::from_json(&text).unwrap();
    let r = run(&t, "first-page-only.json", &subject("rmcp:client"), &paths).await;
    assert_eq!(
        r.status,
        RunStatus::Completed,
        "{:?}\n{}",
        r.detail,
        log(&r)
    );
    assert_eq!(r.outcome(), Outcome::Holds, "{}", log(&r));
    let text = log(&r);
    assert!(
        text.contains("\"cursor\""),
        "the log lacks the cursor request:\n{text}"
    );
    assert!(Property::ALL.iter().all(|p| r.judged.contains_key(p)));
}

/// The example adapter's coalescing client never sends the second `tools/list` the naive
/// trace's client sends on the change notification: the move that hands it to the server, and
/// the one that hands back its answer, are skipped and said (the second at once: its request
/// was never sent), in bounded time, and the race (a notification during a refresh) was posed.
#[tokio::test(flavor = "multi_thread")]
async fn a_message_that_never_comes_is_skipped_not_waited_for() {
    let (paths, _pin) = paths();
    let text = std::fs::read_to_string(repo().join("traces/naive.json")).unwrap();
    let t = Trace::from_json(&text).unwrap();
    let manifest = repo().join("harness/adapters/example/adapter.toml");
    let example =
        Subject::parse(&format!("{}:client@coalescing", manifest.display()), true).unwrap();
    let r = run(&t, "naive.json", &example, &paths).await;
    assert_eq!(r.outcome(), Outcome::Holds, "{:?}\n{}", r.notes, log(&r));
    let skipped: Vec<&String> = r.notes.iter().filter(|n| n.contains("skipped")).collect();
    assert_eq!(skipped.len(), 2, "{:?}\n{}", r.notes, log(&r));
    assert!(
        skipped[0].contains("the client's 2nd tools/list"),
        "{skipped:?}"
    );
    assert!(
        skipped[1].contains("the implementation did not send the client's 2nd tools/list"),
        "{skipped:?}"
    );
    let race = r.race.clone().expect("an adaptive replay");
    assert!(race.posed && !race.reached.is_empty(), "{race:?}");
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
