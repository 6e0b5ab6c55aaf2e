//! Bench (6), cluster fan-out: one logical server on three `listsync serve --redis --node`
//! processes (nodes A, B, C) and a Redis of the bench's own, N reference clients on node C over
//! Streamable HTTP; beside it, in the same run, one `listsync serve` process without Redis with N
//! clients of its own, so the cluster's own cost is the difference. Each change is one batch sent
//! to a control channel (node A's; the single node's); two times are taken: until the reply
//! (the commit made, the committing node's own sessions notified) and until every client holds
//! the new version (for the cluster: the commit in Redis, node C hearing of it and installing
//! it, C's notifications, each client's list). Each iteration makes one change of each setup,
//! in alternating order, so both see the same machine load. A separate pass counts the Redis
//! work of a change: `INFO commandstats` before and after K back-to-back changes.
//!
//! Writes `target/listsync-bench/cluster_convergence.json` (the bench file's
//! `cluster_convergence` group: `listsync_render::bench::ClusterRow`s, two per N).

mod support;

#[path = "../tests/cluster_support/mod.rs"]
mod cluster_support;

use cluster_support::{NodeSpec, Rig};
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_core::client::Pacing;
use listsync_core::history::ClientId;
use listsync_core::vocab::Era;
use listsync_render::bench::{BenchFile, ClusterRow, Dist, Group, Setup};
use serde_json::json;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const GROUP: &str = "cluster_convergence";
const DEADLINE: Duration = Duration::from_secs(30);
/// Commands the store's Lua scripts run inside Redis (not round trips of their own).
const IN_SCRIPT: [&str; 3] = ["get", "mset", "publish"];

/// Node indices in the rig: the cluster's A and C, and the single node.
const A: usize = 0;
const C: usize = 2;
const SINGLE: usize = 3;

/// One change through node `via`; returns the time to its reply and the time until every client
/// in `clients` holds it (None if one did not within the deadline).
async fn change(
    rig: &mut Rig,
    via: usize,
    clients: &[ClientId],
    rev: &mut u32,
) -> Option<(Duration, Duration)> {
    *rev += 1;
    let ops = json!([{"op": "update", "kind": "tools", "name": "t0", "description": format!("t0 v{rev}")}]);
    let t0 = Instant::now();
    let v = rig.mutate(via, &ops).await;
    let committed = t0.elapsed();
    for &c in clients {
        let client = &rig.clients[c as usize].catalog;
        let mut changes = client.changes();
        let held = tokio::time::timeout(DEADLINE, async {
            while client.tools().version.is_none_or(|x| x < v) {
                if changes.changed().await.is_err() {
                    return false;
                }
            }
            true
        })
        .await;
        if held != Ok(true) {
            return None;
        }
    }
    Some((committed, t0.elapsed()))
}

/// Redis commands per change by name, and their total and round trips, over `k` back-to-back
/// changes through node A.
async fn redis_work(
    rig: &mut Rig,
    on_c: &[ClientId],
    rev: &mut u32,
    k: u32,
) -> (BTreeMap<String, f64>, f64, f64) {
    let before = rig.store.command_stats().await.expect("INFO commandstats");
    for _ in 0..k {
        change(rig, A, on_c, rev).await.expect("converged");
    }
    let after = rig.store.command_stats().await.expect("INFO commandstats");
    let mut per: BTreeMap<String, f64> = BTreeMap::new();
    for (name, calls) in &after {
        let d = calls - before.get(name).copied().unwrap_or(0);
        if name != "info" && d > 0 {
            per.insert(name.clone(), d as f64 / f64::from(k));
        }
    }
    let total: f64 = per.values().sum();
    let round_trips: f64 = per
        .iter()
        .filter(|(n, _)| !IN_SCRIPT.contains(&n.as_str()))
        .map(|(_, v)| v)
        .sum();
    (per, total, round_trips)
}

/// Samples of one setup at one client count.
#[derive(Default)]
struct Samples {
    iterations: u64,
    commit_ms: Vec<f64>,
    converge_ms: Vec<f64>,
}

impl Samples {
    fn take(&mut self, measured: Option<(Duration, Duration)>) -> Duration {
        self.iterations += 1;
        match measured {
            Some((commit, converge)) => {
                self.commit_ms.push(commit.as_secs_f64() * 1e3);
                self.converge_ms.push(converge.as_secs_f64() * 1e3);
                converge
            }
            None => DEADLINE,
        }
    }

    fn row(mut self, setup: Setup, nodes: u32, clients: usize) -> ClusterRow {
        ClusterRow {
            setup,
            nodes,
            clients: clients as u32,
            iterations: self.iterations,
            converged: self.converge_ms.len() as u64,
            commit_ms: Dist::of(&mut self.commit_ms),
            converge_ms: Dist::of(&mut self.converge_ms),
            redis_commands_per_change: 0.0,
            redis_round_trips_per_change: 0.0,
            redis_commands: BTreeMap::new(),
        }
    }
}

/// Adds clients on `node` until `ids` has `n`, then waits until they hold `version`.
async fn clients_on(rig: &mut Rig, node: usize, ids: &mut Vec<ClientId>, n: usize, version: u64) {
    while ids.len() < n {
        ids.push(rig.add_client(node).await);
    }
    rig.wait_clients(ids, version).await;
}

/// The cluster (nodes A, B, C on a Redis of the bench's own) and the single node, no clients yet.
async fn start_rig() -> Rig {
    let mut rig = Rig::start(Era::V2025_11_25, "bench").await;
    // The changes come back to back, a few ms apart: the reference client's coalescing gap
    // would pace them as a burst (bench 1 measures that). This bench measures the fan-out.
    rig.client_pacing = Pacing::OFF;
    for name in ["a", "b", "c"] {
        rig.add_node(name, NodeSpec::default()).await;
    }
    let single = NodeSpec {
        standalone: true,
        ..NodeSpec::default()
    };
    assert_eq!(rig.add_node("single", single).await, SINGLE);
    rig
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let quick = support::quick();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // Started by the first benchmark that runs, so that a run whose filter leaves none of this
    // group starts no Redis and no node.
    let mut rig: Option<Rig> = None;
    let sizes: &[usize] = if quick { &[1, 10] } else { &[1, 10, 50] };
    let k: u32 = if quick { 20 } else { 100 };
    let mut rev = 0u32;
    let mut rows = Vec::new();
    let (mut on_c, mut on_single) = (Vec::new(), Vec::new());
    let mut group = c.benchmark_group(GROUP);
    group.sampling_mode(SamplingMode::Flat);
    // Enough changes per setup for a p99 that is more than the largest of a few dozen.
    group.measurement_time(if quick {
        Duration::from_secs(5)
    } else {
        Duration::from_secs(15)
    });
    for &n in sizes {
        let (mut cluster, mut single) = (Samples::default(), Samples::default());
        let mut turn = 0u64;
        let mut connected = false;
        group.bench_function(BenchmarkId::new("cluster_then_single_node", n), |b| {
            let rig = rig.get_or_insert_with(|| rt.block_on(start_rig()));
            if !connected {
                rt.block_on(async {
                    let (v, _) = rig.truth().await;
                    clients_on(rig, C, &mut on_c, n, v).await;
                    let v = rig.nodes[SINGLE].version().await;
                    clients_on(rig, SINGLE, &mut on_single, n, v).await;
                });
                connected = true;
            }
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    turn += 1;
                    rt.block_on(async {
                        // Alternate which goes first, so neither always follows the other.
                        for first in [turn.is_multiple_of(2), !turn.is_multiple_of(2)] {
                            if first {
                                let m = change(rig, A, &on_c, &mut rev).await;
                                total += cluster.take(m);
                            } else {
                                let m = change(rig, SINGLE, &on_single, &mut rev).await;
                                total += single.take(m);
                            }
                        }
                    });
                }
                total
            })
        });
        let Some(rig) = rig.as_mut().filter(|_| cluster.iterations > 0) else {
            continue; // filtered out
        };
        let (per, total, round_trips) = rt.block_on(redis_work(rig, &on_c, &mut rev, k));
        let cluster = ClusterRow {
            redis_commands_per_change: total,
            redis_round_trips_per_change: round_trips,
            redis_commands: per,
            ..cluster.row(Setup::Cluster, 3, n)
        };
        let single = single.row(Setup::SingleNode, 1, n);
        eprintln!(
            "cluster_convergence: {n} client(s): cluster p50 {:.2} ms, p99 {:.2} ms; single node \
             p50 {:.2} ms, p99 {:.2} ms; {total:.2} Redis commands ({round_trips:.2} round \
             trips) per change",
            cluster.converge_ms.p50,
            cluster.converge_ms.p99,
            single.converge_ms.p50,
            single.converge_ms.p99,
        );
        rows.push(cluster);
        rows.push(single);
    }
    group.finish();
    if let Some(rig) = rig {
        rt.block_on(rig.shutdown());
    }
    let notes = vec![
        "One change = one batch (one tool updated) sent to a control channel: node A's for the \
         cluster (clients on node C; nodes A and B have none), the single node's for the single \
         node (its own clients). Each iteration makes one change of each, in alternating order. \
         The clients stay connected across iterations; their coalescing gap is off, since \
         changes this close together would otherwise be paced as a burst (bench 1 measures \
         the pacing, this one the fan-out). Every change timed is in the percentiles \
         (criterion's warm-up included); with a few dozen changes, p99 is close to the largest."
            .to_owned(),
        "Where the cluster's time goes: the commit reply includes node A's one Redis round trip \
         (a compare-and-set script from the version A serves; it publishes the new version with \
         its catalog); node C installs the version from the event itself, without a read, then \
         notifies its clients, which list as on a single node. So the cluster adds about one \
         Redis round trip and one pub/sub hop to the single node's path."
            .to_owned(),
        format!(
            "Redis work counted with INFO commandstats over {k} back-to-back changes through \
             node A (INFO itself excluded). Commands include those the store's commit script \
             runs (get, mset, publish); round trips are the rest (evalsha: node A's \
             compare-and-set), plus the nodes' once-a-second safety polls that fell in the \
             window (one get each, counted among the commands, not the round trips). Pub/sub \
             deliveries to the three nodes are not commands and are not counted."
        ),
    ];
    let mut file = BenchFile::new();
    file.cluster = Some(Group {
        run: clock.info(),
        driver: "three `listsync serve --http --redis --node` processes and one `listsync serve \
                 --http` process (release build), redis-server on 127.0.0.1, listsync-rt \
                 reference clients (2025-11-25, Streamable HTTP, page size 2, 6 tools) in the \
                 bench process, tokio with 2 workers"
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
