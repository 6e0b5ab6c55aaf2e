//! Multi-instance failure behaviour, each against real `listsync serve --redis --node` processes
//! and a Redis of the test's own: two administrators committing on two nodes at once (both
//! batches land, versions strictly increase), a node partitioned from Redis (it keeps serving
//! its last version, says it is stale in its log, its health and its control channel, and
//! catches up when the partition heals), cursors carrying the cluster-wide version (a cursor
//! from one node is served by another at the same version and refused with -32602 at another
//! version), and the known-bad `cluster-notify-before-visible` and `lying-registry` nodes caught
//! by the checkers (the lying one for both of its lies, whatever it claims).

mod cluster_support;

use cluster_support::{Forward, NodeSpec, Rig, within};
use listsync_core::property::Property;
use listsync_core::vocab::{Era, Kind};
use rmcp::model::{PaginatedRequestParams, ProtocolVersion};
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, ServiceExt};
use serde_json::{Value, json};

fn add(name: &str) -> Value {
    json!({"op": "add", "kind": "tools", "name": name, "description": format!("{name} v1")})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_admins_on_two_nodes_both_land_with_increasing_versions() {
    let mut rig = Rig::start(Era::V2025_11_25, "admins").await;
    for name in ["a", "b", "c"] {
        rig.add_node(name, NodeSpec::default()).await;
    }
    for node in 0..3 {
        rig.add_client(node).await;
    }
    rig.quiesce().await;
    const EACH: usize = 20;
    // Both admins also rewrite the same tool, so their batches truly contend.
    let admin = |tag: &'static str| {
        move |i: usize| {
            json!([add(&format!("{tag}{i}")),
                   {"op": "update", "kind": "tools", "name": "t0", "description": format!("t0 by {tag}{i}")}])
        }
    };
    let (first, rest) = rig.nodes.split_at_mut(1);
    let (na, nb) = (&mut first[0], &mut rest[0]);
    let run = async |node: &mut cluster_support::Node, make: &dyn Fn(usize) -> Value| {
        let mut versions = Vec::new();
        for i in 0..EACH {
            versions.push(node.mutate(&make(i)).await);
        }
        versions
    };
    let (make_a, make_b) = (admin("a"), admin("b"));
    let (va, vb) = tokio::join!(run(na, &make_a), run(nb, &make_b));
    for (who, v) in [("a", &va), ("b", &vb)] {
        assert!(
            v.windows(2).all(|w| w[0] < w[1]),
            "admin {who}'s versions must strictly increase: {v:?}"
        );
    }
    let mut all: Vec<u64> = va.iter().chain(&vb).copied().collect();
    all.sort();
    let want: Vec<u64> = (2..=1 + 2 * EACH as u64).collect();
    assert_eq!(
        all, want,
        "one distinct version per batch, every batch landed"
    );

    let v = rig.quiesce().await;
    assert_eq!(v, 1 + 2 * EACH as u64);
    let (_, stored) = rig.truth().await;
    let tools = stored.visible(Kind::Tools, Default::default());
    for tag in ["a", "b"] {
        for i in 0..EACH {
            let name = format!("{tag}{i}");
            assert!(tools.iter().any(|t| *t.name == *name), "{name} is missing");
        }
    }
    // t0 holds the batch that got the last version.
    let last_by = if va.last() == Some(&v) { "a" } else { "b" };
    let t0 = tools.iter().find(|t| &*t.name == "t0").expect("t0");
    assert!(
        t0.def.contains(&format!("t0 by {last_by}{}", EACH - 1)),
        "{}",
        t0.def
    );
    rig.judge().await;
    rig.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_partitioned_node_keeps_its_version_and_says_it_is_stale() {
    let mut rig = Rig::start(Era::V2025_11_25, "partition").await;
    let redis_addr: std::net::SocketAddr = rig
        .redis
        .url()
        .trim_start_matches("redis://")
        .trim_end_matches('/')
        .parse()
        .expect("redis address");
    let path = Forward::start(redis_addr).await;
    rig.add_node("a", NodeSpec::default()).await;
    rig.add_node("b", NodeSpec::default()).await;
    let c = rig
        .add_node(
            "c",
            NodeSpec {
                redis_via: Some(path.addr()),
                ..NodeSpec::default()
            },
        )
        .await;
    for node in 0..3 {
        rig.add_client(node).await;
    }
    for i in 0..3 {
        rig.mutate(i % 3, &json!([add(&format!("x{i}"))])).await;
    }
    let before = rig.quiesce().await;
    rig.nodes[c]
        .wait_health("current", |h| h["state"] == "current")
        .await;

    path.partition();
    let h = rig.nodes[c]
        .wait_health("stale", |h| h["state"] == "stale")
        .await;
    assert_eq!(h["version"], before, "{h}");
    let (code, body) = rig.nodes[c].http_health().await;
    assert_eq!(code, 503, "{body}");
    assert_eq!(
        (&body["state"], &body["version"]),
        (&json!("stale"), &json!(before))
    );

    // The others go on; the partitioned node serves what it had and invents nothing.
    for i in 3..8 {
        rig.mutate(i % 2, &json!([add(&format!("x{i}"))])).await;
    }
    let (after, _) = rig.truth().await;
    assert_eq!(after, before + 5);
    rig.wait_clients(&[0, 1], after).await;
    assert_eq!(rig.nodes[c].version().await, before);
    let listed = within("c2 lists", rig.clients[2].catalog.refresh(Kind::Tools))
        .await
        .expect("client alive");
    assert_eq!(
        listed.view.version,
        Some(before),
        "node c serves its last version"
    );
    let refused = rig.nodes[c]
        .cmd(json!({"cmd": "mutate", "ops": [add("never")]}))
        .await;
    assert_eq!(refused["ok"], false, "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("shared catalog store failed")),
        "{refused}"
    );
    assert_eq!(rig.nodes[c].version().await, before);
    assert!(
        rig.nodes[c].log().contains("STALE, still serving v"),
        "{}",
        rig.nodes[c].log()
    );

    // Healed: the node catches up and its client converges.
    path.switch(redis_addr);
    rig.nodes[c]
        .wait_health("current again", |h| h["state"] == "current")
        .await;
    let v = rig.quiesce().await;
    assert_eq!(v, after, "the refused batch was not committed");
    assert_eq!(rig.nodes[c].version().await, after);
    let (code, _) = rig.nodes[c].http_health().await;
    assert_eq!(code, 200);
    rig.judge().await;
    rig.shutdown().await;
}

async fn connect(url: &str, era: Era) -> RunningService<RoleClient, ()> {
    let transport = StreamableHttpClientTransport::from_uri(url);
    let client = match era {
        Era::V2025_11_25 => ().serve(transport).await,
        Era::V2026_07_28 => {
            ().serve_with_lifecycle(
                transport,
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
        }
    };
    client.expect("connect")
}

async fn page(
    client: &RunningService<RoleClient, ()>,
    cursor: Option<String>,
) -> Result<rmcp::model::ListToolsResult, rmcp::ServiceError> {
    within(
        "tools/list",
        client.list_tools(Some(PaginatedRequestParams::default().with_cursor(cursor))),
    )
    .await
}

fn version_of(r: &rmcp::model::ListToolsResult) -> Option<u64> {
    r.meta
        .as_ref()
        .and_then(|m| m.0.get(listsync_rt::server::VERSION_KEY))
        .and_then(Value::as_u64)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_carry_the_cluster_version_across_nodes() {
    for era in [Era::V2025_11_25, Era::V2026_07_28] {
        let mut rig = Rig::start(era, "cursor").await;
        // a keeps the walk versions a commit overtakes (the default); c keeps none.
        let a = rig.add_node("a", NodeSpec::default()).await;
        let c = rig
            .add_node(
                "c",
                NodeSpec {
                    retain_versions: Some(0),
                    ..NodeSpec::default()
                },
            )
            .await;
        let url = |n: usize| format!("http://{}/mcp", rig.nodes[n].addr);
        let on_a = connect(&url(a), era).await;
        let on_c = connect(&url(c), era).await;

        let first = page(&on_a, None).await.expect("page 1 on a");
        assert_eq!(version_of(&first), Some(1));
        let cursor = first
            .next_cursor
            .clone()
            .expect("more pages (6 tools, 2 per page)");
        // Another node at the same cluster version serves the cursor.
        let second = page(&on_c, Some(cursor.clone()))
            .await
            .expect("page 2 on c");
        assert_eq!(version_of(&second), Some(1));
        assert_eq!(second.tools.len(), 2);

        // A commit on a; once c serves it, the old cursor is refused there with -32602, while a,
        // which keeps the overtaken walk version, serves it to its end, still at v1
        // (version-bound cursors: never a page of another version).
        let v = rig.mutate(a, &json!([add("new")])).await;
        cluster_support::eventually("node c to take the batch", async || {
            (rig.nodes[c].version().await == v).then_some(())
        })
        .await;
        let kept = page(&on_a, Some(cursor.clone()))
            .await
            .expect("a serves the overtaken walk");
        assert_eq!(version_of(&kept), Some(1));
        assert_eq!(kept.tools.len(), 2);
        match page(&on_c, Some(cursor)).await {
            Err(rmcp::ServiceError::McpError(e)) => {
                assert_eq!(e.code.0, -32602, "{e:?}")
            }
            other => panic!("a cursor from v1 was accepted at v{v}: {other:?}"),
        }
        let fresh = page(&on_c, None).await.expect("a new walk on c");
        assert_eq!(version_of(&fresh), Some(v));
        let _ = on_a.cancel().await;
        let _ = on_c.cancel().await;
        rig.shutdown().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_that_notifies_before_it_loads_is_caught() {
    let mut rig = Rig::start(Era::V2025_11_25, "bad-node").await;
    let good = rig.add_node("a", NodeSpec::default()).await;
    let bad = rig
        .add_node(
            "b",
            NodeSpec {
                strategy: Some("cluster-notify-before-visible".into()),
                ..NodeSpec::default()
            },
        )
        .await;
    rig.add_client(good).await;
    rig.add_client(bad).await;
    rig.wait_clients(&[0, 1], 1).await;
    let mut v = 1;
    for i in 0..3 {
        v = rig.mutate(good, &json!([add(&format!("x{i}"))])).await;
    }
    cluster_support::eventually("node b to take the batches", async || {
        (rig.nodes[bad].version().await == v).then_some(())
    })
    .await;
    let j = listsync_core::monitor::judge(&rig.merged());
    let caught: Vec<_> = j
        .violations
        .iter()
        .filter(|x| x.property == Property::NotifyAfterCommit)
        .collect();
    assert!(!caught.is_empty(), "not caught: {:?}", j.violations);
    // Node b's sessions are renamed into 2_000_000.. (node index 1); node a's are clean.
    for x in &caught {
        let session: u32 = x
            .detail
            .split("to c")
            .nth(1)
            .and_then(|r| r.split(' ').next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no session in {:?}", x.detail));
        assert!(
            (2_000_000..3_000_000).contains(&session),
            "not node b's: {}",
            x.detail
        );
    }
    assert!(rig.notifications_of(good) > 0);
    rig.shutdown().await;
}

/// A node running the lying registry announces each version before loading it and runs tools
/// from the table its session started with, while claiming the announced version is visible
/// and every tool it runs present. The nodes report what their observers saw (the store's
/// versions, each notification probed as it leaves, each tool result against the version
/// the node read from the store), never those claims: both lies are caught, on node b only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_node_is_caught_for_both_lies() {
    let mut rig = Rig::start(Era::V2025_11_25, "lying-node").await;
    let good = rig.add_node("a", NodeSpec::default()).await;
    let bad = rig
        .add_node(
            "b",
            NodeSpec {
                strategy: Some("lying-registry".into()),
                ..NodeSpec::default()
            },
        )
        .await;
    rig.add_client(good).await;
    rig.add_client(bad).await;
    rig.wait_clients(&[0, 1], 1).await;
    // Node b's load of the next version is held: its client re-lists and sees v1 again.
    let gate = rig.nodes[bad].cmd(json!({"cmd": "gate_commit"})).await["gate"].clone();
    let heard = rig.clients[1].catalog.status().borrow().notifications;
    let v = rig
        .mutate(
            good,
            &json!([{"op": "remove", "kind": "tools", "name": "t0"}]),
        )
        .await;
    cluster_support::eventually("c1 to re-list after node b's notification", async || {
        let s = rig.clients[1].catalog.status().borrow().clone();
        (s.notifications > heard && s.idle).then_some(())
    })
    .await;
    // c1 still lists t0 and calls it; node b runs it although the store removed it.
    let call = within("c1 calls t0", rig.clients[1].catalog.call("t0")).await;
    assert!(call.is_ok(), "node b runs t0: {call:?}");
    rig.nodes[bad]
        .cmd(json!({"cmd": "release", "gate": gate}))
        .await;
    cluster_support::eventually("node b to take the batch", async || {
        (rig.nodes[bad].version().await == v).then_some(())
    })
    .await;
    let j = listsync_core::monitor::judge(&rig.merged());
    for p in [Property::NotifyAfterCommit, Property::NoCallToRemoved] {
        let caught: Vec<_> = j.violations.iter().filter(|x| x.property == p).collect();
        assert!(!caught.is_empty(), "{p} not caught: {:?}", j.violations);
        // Node b's sessions are renamed into 2_000_000.. (node index 1); node a's are clean.
        for x in caught {
            let sessions: Vec<u32> = x
                .detail
                .split_whitespace()
                .filter_map(|w| w.strip_prefix('c')?.parse().ok())
                .collect();
            assert!(
                !sessions.is_empty() && sessions.iter().all(|s| (2_000_000..3_000_000).contains(s)),
                "not node b's: {}",
                x.detail
            );
        }
    }
    rig.shutdown().await;
}
