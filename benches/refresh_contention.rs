//! Bench (1), refresh contention: a burst of K `list_changed` notifications (K = 10, 100, 1000)
//! lands while the client's refresh of a P-page list (P = 1, 10) is in flight, the server either
//! holding every further list request until the burst is in (*parked*) or answering new walks
//! during it (*served*). For each strategy — the reference client at each coalescing setting,
//! the naive client, and trailing debounces of 0, 50 and 300 ms — in the same run: list round
//! trips per burst (walks, and page requests) against the time from the burst's last mutation
//! to the final list being what readers see: the coalescing frontier. Each iteration runs
//! beside a neighbouring session in the same process (`support::rig::Neighbour`), so that every
//! strategy meets the burst in an equally busy process; the served P = 1 cells run once more
//! without it (*quiet*), to show what the neighbour takes out.
//!
//! The client and server are the shipped runtime (`listsync-rt` over rmcp, in-process pipes);
//! see `support/rig.rs` for the tap between them and for the two strategies the project does not
//! ship (trailing debounce, mutex-guarded single flight), which run rt's `naive` client behind
//! what they add.
//!
//! The strategies of a cell run interleaved (see `run_cells`): criterion's iteration is one
//! round of every strategy, its measured time the sum of the round's convergence times (for an
//! iteration whose client settled on another list than the server's: the time until it
//! settled); the figures per strategy are collected from the same iterations and written for
//! `listsync report`. A filter names cells (`-- parked/P1/`), not strategies.

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_render::bench::{BenchFile, Dist, Group, RefreshRow};
use std::sync::Arc;
use std::time::Duration;
use support::rig::{
    Counters, FinalAnswer, Neighbour, PAGE_SIZE, Strategy, Subject, TappedServer, spawn_readers,
};

/// Longest wait for any one phase of an iteration.
const DEADLINE: Duration = Duration::from_secs(30);

/// One iteration's figures.
struct Sample {
    walks: f64,
    requests: f64,
    converge: Option<Duration>,
    /// Which request's answer first carried the final list to the client.
    final_answer: Option<FinalAnswer>,
    /// Last mutation until the client settled (whatever it then held).
    settled: Duration,
    reads: Vec<f64>,
}

/// How the burst meets the client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    /// The burst lands while a refresh is in flight (its last page request parked), and every
    /// list request the client sends meanwhile waits with it.
    Parked,
    /// The same, but the server answers the client's new walks during the burst.
    Served,
    /// No refresh in flight: the burst's commits come this many ms apart, and the server
    /// answers everything at once.
    Spaced(u32),
}

impl Scenario {
    fn name(self) -> &'static str {
        match self {
            Scenario::Parked => "parked",
            Scenario::Served => "served",
            Scenario::Spaced(_) => "spaced",
        }
    }
}

/// One iteration (beside a [`Neighbour`] if `neighbour`).
async fn one_burst(
    strategy: Strategy,
    k: u32,
    pages: u32,
    readers: u32,
    sc: Scenario,
    neighbour: bool,
) -> Sample {
    let neighbour = if neighbour {
        Some(Neighbour::start(strategy, DEADLINE).await)
    } else {
        None
    };
    let rig = TappedServer::new(pages * u32::from(PAGE_SIZE));
    let client = Arc::new(Subject::connect(&rig, 0, strategy, DEADLINE).await);
    let (stop, _) = tokio::sync::watch::channel(false);
    let reader_tasks = spawn_readers(&client, readers, &stop);
    let mut gate = None;
    if !matches!(sc, Scenario::Spaced(_)) {
        // A refresh in flight: its last page request parked at the server.
        let g = rig.park_list(pages);
        client.refresh();
        let parked = tokio::time::timeout(DEADLINE, rig.server.gates().parked(g)).await;
        assert!(
            matches!(parked, Ok(true)),
            "{}: the refresh's last page request is parked",
            strategy.name()
        );
        gate = Some(g);
    }
    rig.counters.reset();
    if sc == Scenario::Parked {
        rig.hold_lists();
    }
    let before = client.notifications();
    let spacing = match sc {
        Scenario::Spaced(ms) => Duration::from_millis(u64::from(ms)),
        _ => Duration::ZERO,
    };
    let (target, last_mutation) = rig.burst_spaced(k, spacing).await;
    let all_in = client
        .wait(DEADLINE, || client.heard(before + u64::from(k)))
        .await;
    assert!(all_in, "{}: burst delivered", strategy.name());
    if let Some(g) = gate {
        rig.server.gates().release(g);
    }
    rig.release_lists();
    let converged = client.converged(target, DEADLINE).await;
    let settled = last_mutation.elapsed();
    if converged.is_none() && std::env::var_os("LISTSYNC_BENCH_DEBUG").is_some() {
        eprintln!("not converged to v{target}: {}", client.describe());
    }
    let _ = stop.send(true);
    let mut reads = Vec::new();
    for t in reader_tasks {
        reads.extend(t.await.unwrap_or_default());
    }
    client.shutdown();
    drop(neighbour);
    Sample {
        walks: Counters::get(&rig.counters.walks) as f64,
        requests: Counters::get(&rig.counters.requests) as f64,
        converge: converged.map(|t| t.saturating_duration_since(last_mutation)),
        final_answer: rig.counters.final_answer(target),
        settled,
        reads,
    }
}

/// Rounds per cell (criterion's samples, one round each at this bench's round length).
const ROUNDS: usize = 20;

/// How long each strategy runs in turn within one round of a cell (at least one iteration).
fn slice() -> Duration {
    if support::quick() {
        Duration::from_millis(25)
    } else {
        Duration::from_millis(100)
    }
}

/// Every strategy for one (scenario, K, P, M, neighbour) cell, interleaved: one criterion
/// iteration is a *round* in which each strategy in turn runs iterations for one slice (at
/// least one), the round starting one strategy further on each time. Machine drift over the
/// cell (frequency, page cache, allocator, the other core's load) then falls on every strategy
/// alike, so the points of one cell compare side by side.
#[allow(clippy::too_many_arguments)]
fn run_cells(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    group_name: &str,
    k: u32,
    pages: u32,
    readers: u32,
    sc: Scenario,
    neighbour: bool,
    rows: &mut Vec<RefreshRow>,
) {
    let strategies = Strategy::FRONTIER;
    let mut samples: Vec<Vec<Sample>> = strategies.iter().map(|_| Vec::new()).collect();
    let mut warm: Vec<Vec<Sample>> = strategies.iter().map(|_| Vec::new()).collect();
    let mut started: Option<std::time::Instant> = None;
    let mut round = 0usize;
    let mut group = c.benchmark_group(group_name);
    group.sampling_mode(SamplingMode::Flat);
    // At least 20 rounds, quick mode too: the slowest strategy (debounce-300ms) gets one
    // iteration per round, and a median's confidence interval needs them.
    group.sample_size(ROUNDS);
    group.bench_function(BenchmarkId::new("interleaved", k), |b| {
        b.iter_custom(|iters| {
            let began = *started.get_or_insert_with(std::time::Instant::now);
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                for turn in 0..strategies.len() {
                    let i = (round + turn) % strategies.len();
                    let slice_began = std::time::Instant::now();
                    loop {
                        let s =
                            rt.block_on(one_burst(strategies[i], k, pages, readers, sc, neighbour));
                        total += s.converge.unwrap_or(s.settled);
                        // Criterion's warm-up rounds stay out of the figures.
                        if began.elapsed() <= support::runs_warm_up() {
                            warm[i].push(s);
                        } else {
                            samples[i].push(s);
                        }
                        if slice_began.elapsed() >= slice() {
                            break;
                        }
                    }
                }
                round += 1;
            }
            total
        })
    });
    group.finish();
    for ((strategy, mut samples), warm) in strategies.into_iter().zip(samples).zip(warm) {
        if samples.is_empty() {
            samples = warm;
        }
        if samples.is_empty() {
            continue; // filtered out
        }
        let mut walks: Vec<f64> = samples.iter().map(|s| s.walks).collect();
        let mut requests: Vec<f64> = samples.iter().map(|s| s.requests).collect();
        let mut conv: Vec<f64> = samples
            .iter()
            .filter_map(|s| s.converge)
            .map(|d| d.as_secs_f64() * 1e3)
            .collect();
        let mut reads: Vec<f64> = samples
            .iter()
            .flat_map(|s| s.reads.iter().copied())
            .collect();
        rows.push(RefreshRow {
            strategy: strategy.name(),
            k,
            pages,
            readers,
            served_during_burst: sc != Scenario::Parked,
            spacing_ms: match sc {
                Scenario::Spaced(ms) => ms,
                _ => 0,
            },
            neighbour,
            iterations: samples.len() as u64,
            converged: conv.len() as u64,
            final_from_in_flight: Some(
                samples
                    .iter()
                    .filter(|s| {
                        s.converge.is_some() && s.final_answer == Some(FinalAnswer::InFlight)
                    })
                    .count() as u64,
            ),
            walks: Dist::of(&mut walks),
            requests: Dist::of(&mut requests),
            converge_ms: Dist::of(&mut conv),
            read_ns: Dist::of(&mut reads),
        });
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
    // The frontier: every strategy in every (scenario, P, K) cell, beside a neighbour.
    for sc in [Scenario::Parked, Scenario::Served] {
        for pages in [1u32, 10] {
            let name = format!("refresh_contention/{}/P{pages}", sc.name());
            for k in [10u32, 100, 1000] {
                run_cells(c, &rt, &name, k, pages, 0, sc, true, &mut rows);
            }
        }
    }
    // The served P = 1 cells again in a quiet process (no neighbour): there every strategy
    // takes the final list from the one answer in flight, and what differs is how warm the
    // process is when it comes.
    for k in [10u32, 100, 1000] {
        let name = "refresh_contention/served-quiet/P1";
        run_cells(c, &rt, name, k, 1, 0, Scenario::Served, false, &mut rows);
    }
    // Notifications 1 ms apart reaching an idle client: what the coalescing gap is for.
    for pages in [1u32, 10] {
        let name = format!("refresh_contention/spaced/P{pages}");
        for k in [10u32, 100] {
            run_cells(
                c,
                &rt,
                &name,
                k,
                pages,
                0,
                Scenario::Spaced(1),
                true,
                &mut rows,
            );
        }
    }
    let mut file = BenchFile::new();
    file.refresh = Some(Group {
        run: clock.info(),
        driver: "listsync-rt's reference server and client (core's machines on tokio over rmcp \
                 3.11.0, 2025-11-25), newline-delimited JSON-RPC over in-process duplex pipes, \
                 tokio with 2 workers"
            .into(),
        notes: vec![
            "Round trips count the `tools/list` requests the server received from the burst's \
             first mutation until the client was settled again; the request of the walk in \
             flight (parked at the server when the burst starts) is not counted."
                .into(),
            format!(
                "A list of P pages holds {PAGE_SIZE}·P tools; each burst is K one-update \
                 batches, so the server sends K notifications. The server is the reference \
                 server: its cursors are version-bound and declared so, and it keeps serving a \
                 walk at its own version after later commits."
            ),
            "The strategies of a cell run interleaved: rounds in which each strategy in turn \
             runs for a slice (25 ms in quick mode, 100 ms otherwise, at least one iteration), \
             each round starting one strategy further on, so that drift over the cell falls on \
             every strategy alike. Every iteration is included but those of criterion's \
             warm-up rounds; each iteration starts a fresh server and client."
                .into(),
            "In the *parked* cells every list request the client sends during the burst waits \
             with the request in flight (a server busy with that refresh), so the whole burst \
             lands while one refresh is in flight. In the *served* cells the server answers \
             the client's new walks while the burst is still arriving. In the *spaced* cells \
             no refresh is in flight: the K commits come 1 ms apart (a tokio sleep between \
             them, so at least 1 ms) and everything is answered at once."
                .into(),
            "Every cell but those marked *quiet* runs beside a neighbour: another client of \
             the same strategy in the same process, walking another server's one-page list \
             and pausing 1 ms, over and over, for the whole iteration (its requests are not \
             counted; its server never changes, so it gets no notifications). An \
             MCP host with more than one session is seldom quiet; without the neighbour a \
             strategy that walks on every notification (debounce-0ms) meets the last answer in \
             a process its own walks keep warm, and one that waits for that answer in a cold \
             one, so the time would say how busy each strategy keeps the process, not how it \
             coalesces. The *quiet* cells (served, P = 1, no neighbour) show that difference."
                .into(),
            "Strategies: `reference` is the shipped client (core's reference machine in rt, \
             default pacing: adaptive coalescing gap of at most 100 ms); `reference-gap-off`, \
             `reference-gap-5ms` and `reference-gap-50ms` are the same client with the \
             coalescing gap off or fixed; `naive` is rt's client running core's `naive` \
             machine; `debounce-Dms` is a trailing debounce of D ms in front of the naive \
             client (like the TypeScript SDK's `listChanged` debounce), run where an SDK runs \
             it: after each notification is parsed (as rmcp's client parses it) and handed to \
             a handler task of its own (as rmcp runs one per notification)."
                .into(),
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

criterion_main!(benches);
