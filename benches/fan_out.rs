//! Bench (3), fan-out: one server, N clients (N = 10, 100, 1000), one mutation. Measures the
//! time from the mutation until every client's readers see the new list, and the `tools/list`
//! requests the server received for it (ideal: exactly N — one walk of one page per client).
//!
//! The server and clients are the shipped runtime (`listsync-rt` over rmcp, in-process pipes,
//! see `support/rig.rs`). The N clients connect once per strategy and size; each iteration is
//! one more mutation.

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_render::bench::{BenchFile, Dist, FanoutRow, Group};
use std::time::{Duration, Instant};
use support::rig::{Counters, PAGE_SIZE, Strategy, Subject, TappedServer};

const DEADLINE: Duration = Duration::from_secs(60);

/// One mutation; returns the time until every client converged (None if one did not), the
/// list requests served meanwhile, and the time until every client settled.
async fn one_mutation(
    rig: &TappedServer,
    clients: &[Subject],
) -> (Option<Duration>, f64, Duration) {
    rig.counters.reset();
    let before: Vec<u64> = clients.iter().map(Subject::notifications).collect();
    let t0 = Instant::now();
    let (target, _) = rig.burst(1).await;
    let mut last = Some(t0);
    for (c, n) in clients.iter().zip(before) {
        // The notification reaches each client through its tap; only then can it be settled.
        let heard = c.wait(DEADLINE, || c.heard(n + 1)).await;
        let at = if heard {
            c.converged(target, DEADLINE).await
        } else {
            None
        };
        match (at, last) {
            (Some(t), Some(l)) => last = Some(l.max(t)),
            _ => last = None,
        }
    }
    let requests = Counters::get(&rig.counters.requests) as f64;
    (
        last.map(|t| t.saturating_duration_since(t0)),
        requests,
        t0.elapsed(),
    )
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rows = Vec::new();
    let mut group = c.benchmark_group("fan_out");
    group.sampling_mode(SamplingMode::Flat);
    for n in [10u32, 100, 1000] {
        for strategy in Strategy::ALL {
            let mut conv = Vec::new();
            let mut reqs = Vec::new();
            let mut iterations = 0u64;
            // Connected on first use, so that a filtered run does not connect clients it skips.
            let mut setup: Option<(TappedServer, Vec<Subject>)> = None;
            group.bench_function(BenchmarkId::new(strategy.name(), n), |b| {
                b.iter_custom(|iters| {
                    let (rig, clients) = setup.get_or_insert_with(|| {
                        rt.block_on(async {
                            let rig = TappedServer::new(u32::from(PAGE_SIZE));
                            let mut clients = Vec::new();
                            for i in 0..n {
                                clients.push(Subject::connect(&rig, i, strategy, DEADLINE).await);
                            }
                            (rig, clients)
                        })
                    });
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (t, r, settled) = rt.block_on(one_mutation(rig, clients));
                        iterations += 1;
                        total += t.unwrap_or(settled);
                        if let Some(t) = t {
                            conv.push(t.as_secs_f64() * 1e3);
                        }
                        reqs.push(r);
                    }
                    total
                })
            });
            for c in setup.iter().flat_map(|(_, cs)| cs) {
                c.shutdown();
            }
            if iterations == 0 {
                continue; // filtered out
            }
            rows.push(FanoutRow {
                strategy: strategy.name(),
                clients: n,
                iterations,
                converged: conv.len() as u64,
                converge_ms: Dist::of(&mut conv),
                requests: Dist::of(&mut reqs),
            });
        }
    }
    group.finish();
    let mut file = BenchFile::new();
    file.fanout = Some(Group {
        run: clock.info(),
        driver: "listsync-rt's reference server and N clients (core's machines on tokio over \
                 rmcp 3.11.0, 2025-11-25), newline-delimited JSON-RPC over in-process duplex \
                 pipes, tokio with 2 workers"
            .into(),
        notes: vec![
            format!(
                "The list is one page ({PAGE_SIZE} tools); each mutation updates one tool. The \
                 clients stay connected across iterations."
            ),
            "The mutations come back to back: the next one as soon as every client has the \
             last. To each client that is a stream of changes as far apart as one fan-out \
             takes. The reference's default coalescing gap (adaptive) reads changes closer \
             together than its ceiling as a burst and spaces its walks by four smoothed \
             intervals; here the interval it measures is lengthened by its own gap (the next \
             change waits for its walk), so its walks can wait up to the ceiling. \
             `reference-gap-off` is the same client without the gap: what one mutation costs \
             the shipped machine when nothing is coalesced."
                .into(),
        ],
        rows,
    });
    support::write_figures("fanout", &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

criterion_main!(benches);
