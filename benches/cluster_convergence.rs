//! Bench (6), cluster convergence: one logical server on three `listsync serve --redis --node`
//! processes (nodes A, B, C) and a Redis of the bench's own; N reference clients on node C over
//! Streamable HTTP. Each change is one batch committed through node A's control channel; the
//! time measured runs from sending it to node A until every client on node C holds the new
//! version (the commit in Redis, node C's follower hearing of it and loading it, C's
//! notifications, each client's list). A separate pass counts the Redis work of a change:
//! `INFO commandstats` before and after K back-to-back changes.
//!
//! Writes `target/listsync-bench/cluster_convergence.json` (`listsync report`'s extra groups:
//! `{"cluster_convergence": {"run", "driver", "notes", "rows"}}`, one row per N).

mod support;

#[path = "../tests/cluster_support/mod.rs"]
mod cluster_support;

use cluster_support::{NodeSpec, Rig};
use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_core::history::ClientId;
use listsync_core::vocab::Era;
use listsync_report::bench::Dist;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

const GROUP: &str = "cluster_convergence";
const DEADLINE: Duration = Duration::from_secs(30);
/// Commands the store's Lua scripts run inside Redis (not round trips of their own).
const IN_SCRIPT: [&str; 4] = ["get", "set", "xadd", "publish"];

/// Node indices in the rig.
const A: usize = 0;
const C: usize = 2;

/// One change through node A; returns the time until every client in `on_c` holds it (None if
/// one did not within the deadline).
async fn change(rig: &mut Rig, on_c: &[ClientId], rev: &mut u32) -> Option<Duration> {
    *rev += 1;
    let ops = json!([{"op": "update", "kind": "tools", "name": "t0", "description": format!("t0 v{rev}")}]);
    let t0 = Instant::now();
    let v = rig.mutate(A, &ops).await;
    for &c in on_c {
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
    Some(t0.elapsed())
}

/// Redis commands (by name) and round trips per change over `k` back-to-back changes.
async fn redis_work(
    rig: &mut Rig,
    on_c: &[ClientId],
    rev: &mut u32,
    k: u32,
) -> (BTreeMap<String, f64>, f64, f64) {
    let before = rig.store.command_stats().await.expect("INFO commandstats");
    for _ in 0..k {
        change(rig, on_c, rev).await.expect("converged");
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

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let quick = support::quick();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    let mut rig = rt.block_on(async {
        let mut rig = Rig::start(Era::V2025_11_25, "bench").await;
        for name in ["a", "b", "c"] {
            rig.add_node(name, NodeSpec::default()).await;
        }
        rig
    });
    let sizes: &[usize] = if quick { &[1, 10] } else { &[1, 10, 50] };
    let k: u32 = if quick { 20 } else { 100 };
    let mut rev = 0u32;
    let mut rows = Vec::new();
    let mut breakdown = Vec::new();
    let mut group = c.benchmark_group(GROUP);
    group.sampling_mode(SamplingMode::Flat);
    for &n in sizes {
        let on_c: Vec<ClientId> = rt.block_on(async {
            while rig.clients.len() < n {
                rig.add_client(C).await;
            }
            let all: Vec<ClientId> = rig.clients.iter().map(|c| c.id).collect();
            let (v, _) = rig.truth().await;
            rig.wait_clients(&all, v).await;
            all
        });
        let mut ms = Vec::new();
        let mut iterations = 0u64;
        group.bench_function(BenchmarkId::new("commit_on_a_converged_on_c", n), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    iterations += 1;
                    match rt.block_on(change(&mut rig, &on_c, &mut rev)) {
                        Some(d) => {
                            ms.push(d.as_secs_f64() * 1e3);
                            total += d;
                        }
                        None => total += DEADLINE,
                    }
                }
                total
            })
        });
        let converged = ms.len() as u64;
        let dist = Dist::of(&mut ms);
        let (per, total, round_trips) = rt.block_on(redis_work(&mut rig, &on_c, &mut rev, k));
        rows.push(json!({
            "nodes": 3,
            "clients_on_c": n,
            "iterations": iterations,
            "converged": converged,
            "p50_ms": dist.p50,
            "p99_ms": dist.p99,
            "max_ms": dist.max,
            "mean_ms": dist.mean,
            "redis_commands_per_change": total,
            "redis_round_trips_per_change": round_trips,
        }));
        let cmds: Vec<String> = per.iter().map(|(k, v)| format!("{k} {v:.2}")).collect();
        breakdown.push(format!(
            "{n} client(s) on C: Redis commands per change by name: {}",
            cmds.join(", ")
        ));
        eprintln!(
            "cluster_convergence: {n} client(s) on C: p50 {:.2} ms, p99 {:.2} ms; {total:.2} Redis commands ({round_trips:.2} round trips) per change",
            dist.p50, dist.p99
        );
    }
    group.finish();
    rt.block_on(rig.shutdown());
    let mut notes = vec![
        "One change = one batch (one tool updated) sent to node A's control channel; timed \
         until every client on node C holds the new version. The clients stay connected \
         across iterations; nodes A and B have no clients. Every change timed is in the \
         percentiles (criterion's warm-up included); with a few dozen changes, p99 is close \
         to the largest."
            .to_owned(),
        format!(
            "Redis work counted with INFO commandstats over {k} back-to-back changes (INFO \
             itself excluded). Commands include those the store's Lua scripts run (get, set, \
             xadd, publish); round trips are the rest (evalsha: node A's load and \
             compare-and-set, and nodes B's and C's catch-up reads after the change event; node \
             A already holds the version it committed), plus the nodes' once-a-second safety \
             polls that fell in the window. Pub/sub deliveries to \
             the three nodes are not commands and are not counted."
        ),
    ];
    notes.extend(breakdown);
    support::write_extra(
        GROUP,
        json!({
            "run": clock.info(),
            "driver": "three `listsync serve --http --redis --node` processes (release build) and \
                       redis-server on 127.0.0.1, listsync-rt reference clients (2025-11-25, \
                       Streamable HTTP, page size 2, 6 tools) in the bench process, tokio with 2 \
                       workers",
            "notes": notes,
            "rows": Value::Array(rows),
        }),
    );
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

criterion_main!(benches);
