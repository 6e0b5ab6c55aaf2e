//! Bench (3), fan-out: one server, N clients (N = 10, 100, 1000), one mutation. Measures the
//! time from the mutation until every client has published the new list, and the list
//! requests the server served for it (ideal: N, one page each).
//!
//! Driven by the bench-local in-process driver over core's machines (`support/driver.rs`), not
//! by `rt/`.

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group};
use listsync_report::bench::{BenchFile, Dist, FanoutRow, Group};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;
use support::driver::{Client, Server, Strategy, burst, catalog_ops};

const DEADLINE: Duration = Duration::from_secs(20);

async fn one_mutation(strategy: Strategy, n: u32) -> (Option<Duration>, f64) {
    let server = Server::spawn(&catalog_ops(u32::from(support::driver::PAGE_SIZE)));
    let clients: Vec<Arc<Client>> = (0..n)
        .map(|i| Arc::new(Client::spawn(i, strategy, &server)))
        .collect();
    for c in &clients {
        assert!(c.converged(1, DEADLINE).await.is_some(), "initial list");
    }
    server.counters.reset();
    let (target, t0) = server.burst(burst(1)).await;
    let mut last = Some(t0);
    for c in &clients {
        match (c.converged(target, DEADLINE).await, last) {
            (Some(t), Some(l)) => last = Some(l.max(t)),
            _ => last = None,
        }
    }
    let requests = server.counters.requests.load(Ordering::SeqCst) as f64;
    (last.map(|t| t.saturating_duration_since(t0)), requests)
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
        for strategy in [Strategy::Reference, Strategy::Naive, Strategy::Debounce(0)] {
            let mut conv = Vec::new();
            let mut reqs = Vec::new();
            let mut iterations = 0u64;
            group.bench_function(BenchmarkId::new(strategy.name(), n), |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let (t, r) = rt.block_on(one_mutation(strategy, n));
                        iterations += 1;
                        total += t.unwrap_or(DEADLINE);
                        if let Some(t) = t {
                            conv.push(t.as_secs_f64() * 1e3);
                        }
                        reqs.push(r);
                    }
                    total
                })
            });
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
        driver: "bench-local in-process driver: core's Registry and CatalogClient machines on \
                 tokio (2 workers), channels for the transport; not rt/"
            .into(),
        notes: vec!["The list is one page (4 tools); the mutation updates one tool.".into()],
        rows,
    });
    support::write_figures("fanout", &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

fn main() {
    benches();
    criterion::Criterion::default()
        .configure_from_args()
        .final_summary();
}
