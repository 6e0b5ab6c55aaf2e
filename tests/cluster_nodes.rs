//! One logical server on three `listsync serve --redis --node` processes (acceptance 1 and 2 of
//! the multi-instance work): Redis of the test's own, two reference clients per node over
//! Streamable HTTP, 100 batches committed through the nodes in turn, and the whole run's history
//! judged with core's checkers — every client converged at each quiescence point, none published
//! a torn or older snapshot, and every node announced only versions it had already made visible.
//! Variants: Redis restarted mid-run (nodes reconnect and catch up; no version is lost or
//! reused), and one node killed mid-run with its clients moved to the other nodes (and later to a
//! node that joins late). Every wait is on a condition, with a generous limit.

mod cluster_support;

use cluster_support::{Batches, NodeSpec, Rig, names_of};
use listsync_core::history::{Cause, Event};
use listsync_core::vocab::{Era, Kind};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    None,
    RedisRestart,
    NodeKilled,
}

const BATCHES: usize = 100;

async fn hundred_batches(era: Era, fault: Fault) {
    let tag = format!("{fault:?}").to_lowercase();
    let mut rig = Rig::start(era, &tag).await;
    for name in ["a", "b", "c"] {
        rig.add_node(name, NodeSpec::default()).await;
    }
    for node in 0..3 {
        for _ in 0..2 {
            rig.add_client(node).await;
        }
    }
    assert_eq!(
        rig.quiesce().await,
        1,
        "every client starts at the seeded v1"
    );

    let mut batches = Batches::new(0x5eed ^ era.as_str().len() as u64);
    let mut through = vec![0, 1, 2];
    let mut last = 1;
    for i in 0..BATCHES {
        if i == BATCHES / 2 {
            match fault {
                Fault::None => {}
                Fault::RedisRestart => {
                    tokio::task::block_in_place(|| rig.redis.restart()).expect("redis restarts");
                }
                Fault::NodeKilled => {
                    rig.nodes[2].kill().await;
                    rig.move_client(4, 0).await;
                    rig.move_client(5, 1).await;
                    through = vec![0, 1];
                }
            }
        }
        if fault == Fault::NodeKilled && i == BATCHES * 3 / 4 {
            // A replacement node joins at the current version; the moved clients move again.
            let d = rig.add_node("d", NodeSpec::default()).await;
            rig.move_client(4, d).await;
            rig.move_client(5, d).await;
            through = vec![0, 1, d];
        }
        let node = through[i % through.len()];
        let ops = batches.next_batch();
        let v = rig.mutate(node, &ops).await;
        assert!(v > last, "batch {i} landed at v{v}, after v{last}");
        last = v;
        if i % 25 == 24 {
            rig.quiesce().await;
        }
    }

    let v = rig.quiesce().await;
    assert_eq!(
        v,
        1 + BATCHES as u64,
        "exactly one version per batch, none lost"
    );
    let (_, stored) = rig.truth().await;
    assert_eq!(names_of(&stored), batches.names());
    for c in &rig.clients {
        let mut have: Vec<String> = c.catalog.list(Kind::Tools).names();
        have.sort();
        assert_eq!(have, batches.names(), "c{} (node {})", c.id, c.node);
        let status = c.catalog.status().borrow().clone();
        assert!(status.notifications > 0, "c{} was never notified", c.id);
    }
    let events = rig.judge().await;
    for n in &rig.nodes {
        assert!(
            rig.notifications_of(n.index) > 0,
            "node {} notified nobody",
            n.name
        );
    }

    match fault {
        Fault::None => {}
        Fault::RedisRestart => {
            // Every node lost Redis, said so, and came back to the latest version.
            for n in rig.nodes.iter_mut() {
                assert!(
                    n.log().contains("STALE"),
                    "node {} did not log its stale spell:\n{}",
                    n.name,
                    n.log()
                );
                n.wait_health("current again", |h| h["state"] == "current")
                    .await;
                let node = &*n;
                let body = cluster_support::eventually(
                    "GET /health: current at the last version",
                    async || {
                        let (code, body) = node.http_health().await;
                        (code == 200 && body["state"] == "current" && body["version"] == v)
                            .then_some(body)
                    },
                )
                .await;
                assert_eq!(body["node"], n.name.as_str());
            }
        }
        Fault::NodeKilled => {
            // Each move cost the client its session (2025-11-25) or its listen stream
            // (2026-07-28), and each time it listed everything again on the new node.
            for c in [4u32, 5] {
                let relisted = events
                    .iter()
                    .filter(|e| match (era, e) {
                        (Era::V2025_11_25, Event::Woken { client, cause, .. }) => {
                            *client == c && *cause == Cause::Startup
                        }
                        (Era::V2026_07_28, Event::ListenAcked { client, .. }) => *client == c,
                        _ => false,
                    })
                    .count();
                assert!(
                    relisted >= 3,
                    "c{c} should have started over on a, on its second node, then on d: {relisted}"
                );
            }
        }
    }
    rig.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_hundred_batches_2025() {
    hundred_batches(Era::V2025_11_25, Fault::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_nodes_hundred_batches_2026() {
    hundred_batches(Era::V2026_07_28, Fault::None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run_2025() {
    hundred_batches(Era::V2025_11_25, Fault::RedisRestart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_restarted_mid_run_2026() {
    hundred_batches(Era::V2026_07_28, Fault::RedisRestart).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_killed_mid_run_clients_move_2025() {
    hundred_batches(Era::V2025_11_25, Fault::NodeKilled).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn node_killed_mid_run_clients_move_2026() {
    hundred_batches(Era::V2026_07_28, Fault::NodeKilled).await;
}
