//! Bench (4), model-checking throughput: unique states per second of an exhaustive check of
//! the reference configurations, breadth-first and depth-first with symmetry reduction, on 1
//! and 2 checker threads.
//!
//! Runs stateright directly on `listsync_model::ListModel` (the model `listsync check` runs)
//! and waits with `join`, so the time is the checker's own. Quick mode keeps the three smallest
//! reference configurations; the full run adds the HTTP, 2026 and multi-client ones. Both time
//! `reference-large` breadth-first on one thread (what `listsync check --threads 1
//! reference-large` explores, without its situation counts and progress pass). In the same
//! run, the same checker explores a textbook two-phase commit model (`support/two_phase.rs`),
//! the classic example model checkers are timed on, so that the ratio of our states/s to its
//! holds on a noisy machine: with 7 resource managers (about 3·10^5 states) and with 8 (about
//! 1.7·10^6, the size of `reference-large`), to see how fast the checker itself explores, and
//! how its threads scale, at the size our large configurations have.
//! `LISTSYNC_BENCH_TWO_PHASE_RMS=<n>[,<n>…]` times it at other sizes instead (9: about 10^7
//! states, minutes per exploration).

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_model::configs;
use listsync_model::{ListModel, symmetry};
use listsync_render::bench::{BenchFile, Dist, Group, ModelRow};
use stateright::{Checker, Model};
use std::time::{Duration, Instant};

/// Resource managers of the two-phase commit examples timed (about 3·10^5 and 1.7·10^6
/// states), unless `LISTSYNC_BENCH_TWO_PHASE_RMS` says otherwise.
const TWO_PHASE_RMS: [u8; 2] = [7, 8];

fn two_phase_rms() -> Vec<u8> {
    let Ok(v) = std::env::var("LISTSYNC_BENCH_TWO_PHASE_RMS") else {
        return TWO_PHASE_RMS.to_vec();
    };
    let max = support::two_phase::MAX_RMS;
    let sizes: Option<Vec<u8>> = v
        .split(',')
        .map(|n| {
            n.trim()
                .parse::<u8>()
                .ok()
                .filter(|n| (1..=max).contains(&usize::from(*n)))
        })
        .collect();
    let Some(mut sizes) = sizes else {
        eprintln!(
            "model_throughput: LISTSYNC_BENCH_TWO_PHASE_RMS={v:?} is not a comma-separated list \
             of numbers from 1 to {max}; timing the example with {TWO_PHASE_RMS:?} resource \
             managers"
        );
        return TWO_PHASE_RMS.to_vec();
    };
    // Each size once: criterion refuses two benchmarks of the same name.
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

fn explore_two_phase(rms: u8, threads: usize) -> (Duration, usize) {
    let t = Instant::now();
    let n = support::two_phase::TwoPhase { rms }
        .checker()
        .threads(threads)
        .spawn_bfs()
        .join()
        .unique_state_count();
    (t.elapsed(), n)
}

fn explore(model: ListModel, dfs_symmetric: bool, threads: usize) -> (Duration, usize) {
    let t = Instant::now();
    let builder = model.checker().threads(threads);
    let n = if dfs_symmetric {
        let c = builder
            .symmetry_fn(symmetry::representative)
            .spawn_dfs()
            .join();
        c.unique_state_count()
    } else {
        builder.spawn_bfs().join().unique_state_count()
    };
    (t.elapsed(), n)
}

/// Times `explore` (one exhaustive check: its time and unique states) under criterion as
/// `config/search` on `threads` threads; None when the benchmark is filtered out.
fn measure(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    config: &str,
    search: &str,
    threads: usize,
    mut explore: impl FnMut() -> (Duration, usize),
) -> Option<ModelRow> {
    let mut secs = Vec::new();
    let mut states = 0;
    let id = BenchmarkId::new(format!("{config}/{search}"), format!("{threads}t"));
    group.bench_function(id, |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (d, n) = explore();
                states = n;
                secs.push(d.as_secs_f64());
                total += d;
            }
            total
        })
    });
    if secs.is_empty() {
        return None;
    }
    let seconds = Dist::of(&mut secs);
    Some(ModelRow {
        config: config.to_owned(),
        search: search.to_owned(),
        threads: threads as u32,
        unique_states: states as u64,
        states_per_sec: states as f64 / seconds.mean.max(1e-9),
        seconds,
    })
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let names: &[&str] = if support::quick() {
        &["reference", "reference-faults", "reference-auth"]
    } else {
        &[
            "reference",
            "reference-faults",
            "reference-auth",
            "reference-http",
            "reference-2026",
            "reference-multi-client",
        ]
    };
    let all = configs::all();
    let mut rows = Vec::new();
    let mut group = c.benchmark_group("model_throughput");
    group.sampling_mode(SamplingMode::Flat);
    for name in names {
        let Some(cfg) = all.iter().find(|c| c.name() == *name) else {
            eprintln!("model_throughput: no configuration {name}");
            continue;
        };
        for (search, dfs) in [("bfs", false), ("dfs_symmetric", true)] {
            for threads in [1usize, 2] {
                rows.extend(measure(&mut group, name, search, threads, || {
                    explore(ListModel::first_only(cfg.scenario.clone()), dfs, threads)
                }));
            }
        }
    }
    // `listsync check --threads 1 reference-large`'s exploration: the largest reference
    // configuration, breadth-first on one thread, beside the example of about its size.
    if let Some(cfg) = all.iter().find(|c| c.name() == "reference-large") {
        rows.extend(measure(&mut group, "reference-large", "bfs", 1, || {
            explore(ListModel::first_only(cfg.scenario.clone()), false, 1)
        }));
    }
    let sizes = two_phase_rms();
    for &rms in &sizes {
        let example = format!("two-phase-commit-{rms}rm");
        for threads in [1usize, 2] {
            rows.extend(measure(&mut group, &example, "bfs", threads, || {
                explore_two_phase(rms, threads)
            }));
        }
    }
    group.finish();
    let mut file = BenchFile::new();
    file.model = Some(Group {
        run: clock.info(),
        driver: "stateright checker on listsync_model::ListModel (first violation per property \
                 latched), joined"
            .into(),
        notes: vec![
            "Unique states differ between BFS and DFS with symmetry: symmetry reduction visits \
             one representative per class of states that differ only in client numbering."
                .into(),
            format!(
                "`two-phase-commit-<n>rm` is not ours: a textbook two-phase commit (one \
                 transaction manager, n resource managers, compact state; n = {}) explored by \
                 the same checker in the same run, the yardstick for our states/s on this \
                 machine. Its unique states are in the table; 8 resource managers give about \
                 as many as `reference-large` (about 1.5·10^6), the largest reference \
                 configuration `listsync check` runs.",
                sizes
                    .iter()
                    .map(u8::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        ],
        rows,
    });
    support::write_figures("model", &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

criterion_main!(benches);
