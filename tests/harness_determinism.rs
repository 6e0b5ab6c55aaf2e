//! Determinism of the harness: replaying the same trace against the same implementation 20
//! times gives the same outcome 20 times — for our reference runtime (in both verdict shapes:
//! the reference, where everything holds, and the trace's own known-bad strategy, where the
//! trace's property is violated) and for a third-party SDK adapter (TypeScript SDK v2's client
//! with `debounceMs: 0`, replaying the `naive` trace it follows step by step).
//!
//! The third-party adapter is installed on first use by the project's own provisioning
//! (`harness/adapters/provision.sh`, into `.cache/adapters/` or `$LISTSYNC_CACHE`). Without
//! `node` on PATH the test fails and says so; `LISTSYNC_HARNESS_SKIP_SDKS=1` skips the
//! third-party half explicitly, saying so on the terminal (that test then reports `ok`).

mod harness_support;

use harness_support::{REPLAY_LIMIT, paths, repo, sdks_skipped};
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::trace::Trace;
use listsync_harness::adapters::{Paths, Subject, provision};
use listsync_harness::outcome::{RunReport, RunStatus};
use listsync_harness::replay::{plan, replay};
use listsync_harness::run::Bounds;

const RUNS: usize = 20;

fn trace(name: &str) -> Trace {
    let text = std::fs::read_to_string(repo().join("traces").join(name)).unwrap();
    Trace::from_json(&text).unwrap()
}

/// What must not vary between runs.
#[derive(Debug, PartialEq, Eq)]
struct RunDigest {
    status: RunStatus,
    detail: Option<String>,
    judged: Verdicts,
    violated: Vec<Property>,
    published: usize,
}

fn outcome(r: &RunReport) -> RunDigest {
    RunDigest {
        status: r.status,
        detail: r.detail.clone(),
        judged: r.judged.clone(),
        violated: r.violations.iter().map(|v| v.property).collect(),
        published: r.observations.published,
    }
}

/// Replays `name` against `against` RUNS times; returns the single outcome they all had.
async fn same_every_time(name: &str, against: &str, paths: &Paths) -> RunDigest {
    let t = trace(name);
    let subject: Subject = against.parse().unwrap();
    let p = plan(&t, name, &subject, None).unwrap();
    let mut first: Option<RunDigest> = None;
    for i in 0..RUNS {
        let r = tokio::time::timeout(REPLAY_LIMIT, replay(&p, paths, Bounds::default()))
            .await
            .unwrap_or_else(|_| panic!("{name} against {against}: run {i} hung"));
        let o = outcome(&r);
        match &first {
            None => first = Some(o),
            Some(f) => assert_eq!(
                f,
                &o,
                "{name} against {against}: run {i} differs from run 0\n{}",
                listsync_harness::msglog::render(
                    &r,
                    listsync_core::vocab::KindSet::only(listsync_core::vocab::Kind::Tools),
                    listsync_harness::msglog::Stamps::Shown,
                )
            ),
        }
    }
    first.expect("at least one run")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reference_gives_the_same_verdicts_20_times() {
    let (paths, _pin) = paths();
    // Our runtime as the client (the reference strategy): everything holds, every time.
    let o = same_every_time("naive.json", "reference", &paths).await;
    assert_eq!(o.status, RunStatus::Completed);
    assert!(o.violated.is_empty(), "{o:?}");
    // Our runtime running the trace's known-bad strategy: caught, every time.
    let o = same_every_time("naive.json", "reference@trace", &paths).await;
    assert_eq!(o.status, RunStatus::Completed);
    assert_eq!(
        o.judged[&Property::NoStaleOverwrite],
        Verdict::Violated,
        "{o:?}"
    );
    // A server-side trace: a parked commit released by a trace step.
    let o = same_every_time("notify-before-commit.json", "reference@trace", &paths).await;
    assert_eq!(
        o.judged[&Property::NotifyAfterCommit],
        Verdict::Violated,
        "{o:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_third_party_sdk_gives_the_same_verdicts_20_times() {
    if sdks_skipped("the TypeScript SDK's verdicts 20 times") {
        return;
    }
    let (paths, _pin) = paths();
    // First use installs the pinned packages (progress on stderr); a missing `node` is an
    // error naming it.
    let installed = provision(&paths, &listsync_harness::manifest::find("ts-v2").expect("ts-v2 is built in")).unwrap_or_else(|e| {
        panic!(
            "cannot provision the ts-v2 adapter: {e}\n\
             (install Node.js >= 20 and npm, or set LISTSYNC_HARNESS_SKIP_SDKS=1 to skip this check)"
        )
    });
    assert!(
        installed.sdk.contains_key("@modelcontextprotocol/client"),
        "{installed:?}"
    );
    let o = same_every_time("naive.json", "ts-v2:client@listchanged-debounce0", &paths).await;
    // The SDK takes the trace's path (one refresh per notification, last response wins) and
    // shows the trace's violation.
    assert_eq!(o.status, RunStatus::Completed, "{o:?}");
    assert_eq!(
        o.judged[&Property::NoStaleOverwrite],
        Verdict::Violated,
        "{o:?}"
    );
}
