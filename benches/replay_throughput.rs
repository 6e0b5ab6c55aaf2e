//! Bench (5), replay throughput: traces replayed per second by the harness against real
//! processes — our reference runtime (`listsync serve|watch`, both ends), and a third-party SDK
//! adapter (TypeScript SDK v2's client with `debounceMs: 0`, against our server).
//!
//! One iteration is one whole replay as `listsync replay` does it: both adapter processes
//! started, the trace carried out in lockstep through the proxy, the drain, the history judged,
//! the processes stopped. Rows:
//!
//! - `reference`, `corpus`: every replayable trace of `traces/` in turn (the CI job's work);
//!   traces/s counts traces, not corpus passes;
//! - `reference`, `naive.json`: one client trace, for comparison with the SDK row;
//! - `ts-v2:client@listchanged-debounce0`, `naive.json`: the same trace against the SDK. Its
//!   replays end with the harness's quiet period (600 ms with no traffic, to see whether the SDK
//!   acts on its own), which bounds this row's rate.
//!
//! The ts-v2 adapter is installed on first use (`harness/adapters/provision.sh`); without
//! `node` the row is left out and a note says why. Quick mode (`LISTSYNC_BENCH_QUICK=1`): 10
//! samples per row. Writes `target/listsync-bench/replay_throughput.json` (the bench file's
//! `replay_throughput` group: `listsync_render::bench::ReplayRow`s).

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_core::trace::Trace;
use listsync_harness::adapters::{Paths, Subject, provision};
use listsync_harness::outcome::RunStatus;
use listsync_harness::pin::PinnedExe;
use listsync_harness::replay::{ReplayPlan, plan, replay};
use listsync_harness::run::Bounds;
use listsync_render::bench::{BenchFile, Dist, Group, ReplayRow};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const GROUP: &str = "replay_throughput";
const THIRD_PARTY: &str = "ts-v2:client@listchanged-debounce0";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The plans of `names` (every trace when empty) against `against`, leaving out what the
/// harness cannot run (cluster traces).
fn plans(against: &str, names: &[&str]) -> Vec<ReplayPlan> {
    let subject: Subject = against.parse().expect("a valid subject");
    let (traces, errors) = listsync_harness::matrix::corpus(&repo().join("traces"));
    assert!(errors.is_empty(), "unreadable traces: {errors:?}");
    traces
        .iter()
        .filter(|(n, _)| names.is_empty() || names.contains(&n.as_str()))
        .filter_map(|(n, t): &(String, Trace)| plan(t, n, &subject, None).ok())
        .filter(|p| p.unsupported.is_none())
        .collect()
}

/// One row: replays `plans` (in turn) per iteration; seconds per trace.
fn row(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    rt: &tokio::runtime::Runtime,
    paths: &Paths,
    adapter: &str,
    label: &str,
    plans: &[ReplayPlan],
) -> Option<ReplayRow> {
    let mut per_trace = Vec::new();
    let mut diverged = 0usize;
    let mut replays = 0usize;
    group.bench_function(BenchmarkId::new(adapter, label), |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for p in plans {
                    let t = Instant::now();
                    let r = rt.block_on(replay(p, paths, Bounds::default()));
                    let d = t.elapsed();
                    total += d;
                    per_trace.push(d.as_secs_f64());
                    replays += 1;
                    if r.status != RunStatus::Completed {
                        diverged += 1;
                    }
                }
            }
            total
        })
    });
    if per_trace.is_empty() {
        return None; // filtered out
    }
    let d = Dist::of(&mut per_trace);
    Some(ReplayRow {
        adapter: adapter.to_owned(),
        traces: label.to_owned(),
        replays: replays as u64,
        not_completed: diverged as u64,
        traces_per_sec: 1.0 / d.mean.max(1e-9),
        seconds_mean: d.mean,
        seconds_p50: d.p50,
        seconds_p90: d.p90,
        seconds_max: d.max,
    })
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let pin = PinnedExe::new(Path::new(env!("CARGO_BIN_EXE_listsync"))).expect("pin listsync");
    let paths = Paths {
        listsync: pin.path().to_path_buf(),
        repo: repo(),
        cache: std::env::var_os("LISTSYNC_CACHE").map(PathBuf::from),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut rows = Vec::new();
    let mut notes = vec![
        "One replay = both adapter processes started, the trace in lockstep through the proxy, \
         the drain, the history judged, the processes stopped; one at a time."
            .to_owned(),
    ];
    let mut group = c.benchmark_group(GROUP);
    group.sampling_mode(SamplingMode::Flat);
    let corpus = plans("reference", &[]);
    notes.push(format!(
        "corpus: the {} replayable traces of traces/ (cluster traces are out of the harness's \
         scope), each counted as one trace",
        corpus.len()
    ));
    rows.extend(row(&mut group, &rt, &paths, "reference", "corpus", &corpus));
    let naive = plans("reference", &["naive.json"]);
    rows.extend(row(
        &mut group,
        &rt,
        &paths,
        "reference",
        "naive.json",
        &naive,
    ));
    match provision(
        &paths,
        &listsync_harness::manifest::find("ts-v2").expect("ts-v2 is built in"),
    ) {
        Ok(p) => {
            let versions: Vec<String> = p.sdk.iter().map(|(k, v)| format!("{k} {v}")).collect();
            notes.push(format!(
                "{THIRD_PARTY}: {} on {}; each replay ends with the harness's 600 ms quiet \
                 period (does the SDK act on its own?), which bounds its rate",
                versions.join(", "),
                p.runtime
            ));
            let sdk = plans(THIRD_PARTY, &["naive.json"]);
            rows.extend(row(
                &mut group,
                &rt,
                &paths,
                THIRD_PARTY,
                "naive.json",
                &sdk,
            ));
        }
        Err(e) => {
            eprintln!("replay_throughput: the third-party row is left out: {e}");
            notes.push(format!("{THIRD_PARTY}: not measured: {e}"));
        }
    }
    group.finish();
    let mut file = BenchFile::new();
    file.replay = Some(Group {
        run: clock.info(),
        driver: "listsync harness replay (proxy + control channels) of traces/ against real \
                 adapter processes"
            .into(),
        notes,
        rows,
    });
    support::write_figures(GROUP, &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

criterion_main!(benches);
