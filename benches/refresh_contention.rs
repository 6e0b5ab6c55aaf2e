//! Bench (1), refresh contention: a burst of K `list_changed` notifications (K = 1, 10, 100,
//! 1000) lands while the client's refresh of a P-page list (P = 1, 10) is in flight, with M
//! concurrent readers (M = 0, 4). For each strategy, in the same run: list round trips per
//! burst (walks, and pages), the time from the burst's last mutation to the final list being
//! published, and each reader's read latency.
//!
//! Driven by the bench-local in-process driver over core's machines (`support/driver.rs`), not
//! by `rt/`: see that module for what it does and does not include, and for the two bench-local
//! strategies (trailing debounce, mutex-guarded single flight).
//!
//! Criterion's measured time per iteration is the convergence time; the other figures are
//! collected from the same iterations and written for `listsync report`.

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group};
use listsync_report::bench::{BenchFile, Dist, Group, RefreshRow};
use std::sync::Arc;
use std::time::Duration;
use support::driver::{Client, Server, Strategy, burst, catalog_ops};

/// Longest wait for convergence after the parked request is released.
const DEADLINE: Duration = Duration::from_secs(10);

/// One iteration's figures.
struct Sample {
    walks: f64,
    requests: f64,
    converge: Option<Duration>,
    reads: Vec<f64>,
}

async fn one_burst(strategy: Strategy, k: u32, pages: u32, readers: u32) -> Sample {
    let server = Server::spawn(&catalog_ops(pages * u32::from(support::driver::PAGE_SIZE)));
    let client = Arc::new(Client::spawn(0, strategy, &server));
    // Initial list.
    assert!(
        client.converged(1, DEADLINE).await.is_some(),
        "{strategy:?}: initial list"
    );
    client.sync_guarded().await;
    let (stop, _) = tokio::sync::watch::channel(false);
    let stop = Arc::new(stop);
    let reader_tasks = support::driver::spawn_readers(&client, readers, &stop);
    // A refresh in flight: its last page request parked at the server.
    let parked = server.hold(0, pages);
    client.refresh();
    parked.await.expect("the refresh's last page request is parked");
    server.counters.reset();
    let (target, last_mutation) = server.burst(burst(k)).await;
    let before = client.notifications();
    let all_in = client
        .wait(DEADLINE, |_, _, n| n >= before + u64::from(k))
        .await;
    assert!(all_in, "{strategy:?}: burst delivered");
    server.release();
    let converged = client.converged(target, DEADLINE).await;
    // Count round trips only once everything has settled.
    client.wait(DEADLINE, |idle, _, _| idle).await;
    let _ = stop.send(true);
    let mut reads = Vec::new();
    for t in reader_tasks {
        reads.extend(t.await.unwrap_or_default());
    }
    Sample {
        walks: server
            .counters
            .walks
            .load(std::sync::atomic::Ordering::SeqCst) as f64,
        requests: server
            .counters
            .requests
            .load(std::sync::atomic::Ordering::SeqCst) as f64,
        converge: converged.map(|t| t.saturating_duration_since(last_mutation)),
        reads,
    }
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rows = Vec::new();
    for pages in [1u32, 10] {
        for readers in [0u32, 4] {
            let mut group = c.benchmark_group(format!("refresh_contention/P{pages}/M{readers}"));
            group.sampling_mode(SamplingMode::Flat);
            for k in [1u32, 10, 100, 1000] {
                for strategy in Strategy::ALL {
                    let mut samples: Vec<Sample> = Vec::new();
                    group.bench_function(BenchmarkId::new(strategy.name(), k), |b| {
                        b.iter_custom(|iters| {
                            let mut total = Duration::ZERO;
                            for _ in 0..iters {
                                let s = rt.block_on(one_burst(strategy, k, pages, readers));
                                total += s.converge.unwrap_or(DEADLINE);
                                samples.push(s);
                            }
                            total
                        })
                    });
                    let mut walks: Vec<f64> = samples.iter().map(|s| s.walks).collect();
                    let mut requests: Vec<f64> = samples.iter().map(|s| s.requests).collect();
                    let mut conv: Vec<f64> = samples
                        .iter()
                        .filter_map(|s| s.converge)
                        .map(|d| d.as_secs_f64() * 1e3)
                        .collect();
                    let mut reads: Vec<f64> =
                        samples.iter().flat_map(|s| s.reads.iter().copied()).collect();
                    rows.push(RefreshRow {
                        strategy: strategy.name(),
                        k,
                        pages,
                        readers,
                        iterations: samples.len() as u64,
                        converged: conv.len() as u64,
                        walks: Dist::of(&mut walks),
                        requests: Dist::of(&mut requests),
                        converge_ms: Dist::of(&mut conv),
                        read_ns: Dist::of(&mut reads),
                    });
                }
            }
            group.finish();
        }
    }
    let mut file = BenchFile::new();
    file.refresh = Some(Group {
        run: clock.info(),
        driver: "bench-local in-process driver: core's Registry and CatalogClient machines on \
                 tokio (2 workers), channels for the transport; not rt/"
            .into(),
        notes: vec![
            "Round trips count the list requests the server received from the burst's first \
             mutation until the client was idle again; the request of the walk in flight (parked \
             at the server when the burst starts) is not counted."
                .into(),
            "Every iteration criterion ran is included (warm-up too).".into(),
        ],
        rows,
    });
    support::write_figures("refresh", &file);
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
