//! Every known-bad strategy of core runs as a runtime variant and its bug shows up in a real
//! run, caught by core's property checkers: the same violations the model checker reports for
//! that strategy (`listsync check`), reproduced deterministically over rmcp with gates that hold
//! a reply, a notification or a commit. Each test also runs the reference strategy through the
//! same steps where that makes the contrast clear.

mod common;

use common::*;
use listsync_core::property::Property;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Op, Scope};
use listsync_rt::client::ClientHandle;
use listsync_rt::gate::{GateTarget, Phase};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};

fn tools() -> KindSet {
    KindSet::only(Kind::Tools)
}

fn list_gate(phase: Phase) -> GateTarget {
    GateTarget::Request {
        method: "tools/list".into(),
        phase,
    }
}

fn tools_changed() -> GateTarget {
    GateTarget::Notification {
        method: "notifications/tools/list_changed".into(),
    }
}

struct Run {
    history: SharedHistory,
    server: Server,
    catalog: ClientHandle,
}

async fn start(
    server_strategy: ServerStrategy,
    client: ClientStrategy,
    page_size: u16,
    n: usize,
) -> Run {
    let history = SharedHistory::new();
    let mut ss = ServerSettings::new(Era::V2025_11_25, page_size);
    ss.core.strategy = server_strategy;
    let server = server(ss, &initial(n), &history);
    let mut cs = client_settings(Era::V2025_11_25, tools(), 0, &history);
    cs.client.strategy = client;
    let catalog = duplex_client(&server, cs);
    settle(&server, &[&catalog]).await;
    Run {
        history,
        server,
        catalog,
    }
}

impl Run {
    async fn finish(&self) -> Vec<Property> {
        settle(&self.server, &[&self.catalog]).await;
        quiescent(&self.history, &[(0, tools())]);
        violated_set(&self.history)
    }
}

/// A removal lands between two pages and the client learns of it only after the walk: an
/// offset cursor skips an item (torn); a version-bound cursor is refused and the walk restarts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn offset_cursor_tears_a_walk() {
    for (strategy, expected) in [
        (ServerStrategy::OffsetCursor, vec![Property::NoTornSnapshot]),
        (ServerStrategy::Reference, vec![]),
    ] {
        let r = start(strategy, ClientStrategy::Reference, 2, 5).await;
        let page2 = r.server.gates().arm(list_gate(Phase::Before), 2);
        within(
            "add",
            r.server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")]),
        )
        .await;
        assert!(within("page 2 parked", r.server.gates().parked(page2)).await);
        let note = r.server.gates().arm(tools_changed(), 1);
        let removal = apply_later(&r.server, vec![Op::remove(Kind::Tools, "t0")]);
        assert!(within("notification parked", r.server.gates().parked(note)).await);
        let published = r.catalog.status().borrow().publications;
        r.server.gates().release(page2);
        wait_status("walk over", &r.catalog, |s| s.publications > published).await;
        r.server.gates().release(note);
        within("removal", removal).await.unwrap();
        assert_eq!(
            r.finish().await,
            expected,
            "{strategy}\n{}",
            r.history.render()
        );
    }
}

/// The notification goes out before the batch is visible: the client re-lists, sees the old
/// list, and is never told again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_before_commit_loses_the_change() {
    let r = start(
        ServerStrategy::NotifyBeforeCommit,
        ClientStrategy::Reference,
        0,
        3,
    )
    .await;
    let commit = r.server.gates().arm(GateTarget::Commit, 1);
    let add = apply_later(&r.server, vec![Op::add(Kind::Tools, "t8", "t8 v1")]);
    assert!(within("commit parked", r.server.gates().parked(commit)).await);
    settle(&r.server, &[&r.catalog]).await; // the client re-listed and is idle again
    r.server.gates().release(commit);
    within("add", add).await.unwrap();
    assert_eq!(
        r.finish().await,
        // Not a lost wakeup: the client re-listed after the commit (the ground truth), it
        // was the server that served the old list (as the model finds).
        [Property::Converges, Property::NotifyAfterCommit]
    );
}

/// A batch that updates an item the held batch added is applied to the administrator's latest
/// catalog, not to the one list requests still see: the item keeps the scope it was added
/// with, and the catalog ends as the reference server's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_after_a_held_one_builds_on_it() {
    let added = Op::Add {
        kind: Kind::Tools,
        name: "t8".into(),
        def: "t8 v1".into(),
        scope: Scope::Only(AuthCtx(1)),
    };
    let update = Op::Update {
        kind: Kind::Tools,
        name: "t8".into(),
        def: "t8 v2".into(),
    };
    let mut catalogs = Vec::new();
    for strategy in [
        ServerStrategy::NotifyBeforeCommit,
        ServerStrategy::Reference,
    ] {
        let r = start(strategy, ClientStrategy::Reference, 0, 3).await;
        let commit = r.server.gates().arm(GateTarget::Commit, 1);
        let add = apply_later(&r.server, vec![added.clone()]);
        if strategy == ServerStrategy::NotifyBeforeCommit {
            // The addition is announced, not committed, when the update comes.
            assert!(within("commit parked", r.server.gates().parked(commit)).await);
            within("update", r.server.apply(std::slice::from_ref(&update))).await;
            r.server.gates().release(commit);
            within("add", add).await.unwrap();
        } else {
            within("add", add).await.unwrap();
            within("update", r.server.apply(std::slice::from_ref(&update))).await;
        }
        let t8 = r.server.catalog().get(Kind::Tools, "t8").cloned();
        assert_eq!(
            t8.as_ref().map(|e| e.scope),
            Some(Scope::Only(AuthCtx(1))),
            "{strategy}: {t8:?}"
        );
        catalogs.push(r.server.catalog());
    }
    assert_eq!(catalogs[0], catalogs[1]);
}

/// A batch of two mutations sends two notifications.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_per_mutation_double_notifies() {
    for (strategy, expected) in [
        (
            ServerStrategy::NotifyPerMutation,
            vec![Property::BoundedRefresh],
        ),
        (ServerStrategy::Reference, vec![]),
    ] {
        let r = start(strategy, ClientStrategy::Reference, 0, 3).await;
        let batch = [
            Op::add(Kind::Tools, "t8", "t8 v1"),
            Op::remove(Kind::Tools, "t0"),
        ];
        within("batch", r.server.apply(&batch)).await;
        assert_eq!(r.finish().await, expected, "{strategy}");
    }
}

/// A call to a tool removed a moment ago (the client has not heard yet): the stale-dispatch
/// server runs it from the session's captured table; the reference server refuses it (-32602).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_dispatch_runs_a_removed_tool() {
    for (strategy, expected) in [
        (
            ServerStrategy::StaleDispatch,
            vec![Property::NoCallToRemoved],
        ),
        (ServerStrategy::Reference, vec![]),
    ] {
        let r = start(strategy, ClientStrategy::Reference, 0, 3).await;
        let note = r.server.gates().arm(tools_changed(), 1);
        let removal = apply_later(&r.server, vec![Op::remove(Kind::Tools, "t0")]);
        assert!(within("notification parked", r.server.gates().parked(note)).await);
        let call = within("call", r.catalog.call("t0")).await;
        assert_eq!(
            call.is_ok(),
            strategy == ServerStrategy::StaleDispatch,
            "{call:?}"
        );
        r.server.gates().release(note);
        within("removal", removal).await.unwrap();
        assert_eq!(r.finish().await, expected, "{strategy}");
    }
}

/// One refresh per notification, last response wins: the older refresh's reply (held) lands
/// after the newer one and rolls the snapshot back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_client_rolls_back() {
    let r = start(ServerStrategy::Reference, ClientStrategy::Naive, 0, 3).await;
    let held = r.server.gates().arm(list_gate(Phase::After), 1);
    within("v2", r.server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")])).await;
    assert!(within("v2 reply parked", r.server.gates().parked(held)).await);
    within("v3", r.server.apply(&[Op::remove(Kind::Tools, "t0")])).await;
    wait_view("v3 published", &r.catalog, Kind::Tools, |v| {
        v.version == Some(3)
    })
    .await;
    r.server.gates().release(held);
    wait_view("v2 published again", &r.catalog, Kind::Tools, |v| {
        v.version == Some(2)
    })
    .await;
    assert_eq!(
        r.finish().await,
        [Property::NoStaleOverwrite, Property::Converges]
    );
}

/// Clearing the list when a notification arrives publishes an empty flash.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clear_then_fetch_flashes_empty() {
    let r = start(
        ServerStrategy::Reference,
        ClientStrategy::ClearThenFetch,
        0,
        3,
    )
    .await;
    within(
        "add",
        r.server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")]),
    )
    .await;
    assert_eq!(r.finish().await, [Property::NoTornSnapshot]);
}

/// A refresh that keeps only the first page publishes part of the list.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_page_only_publishes_part() {
    let r = start(
        ServerStrategy::Reference,
        ClientStrategy::FirstPageOnly,
        2,
        5,
    )
    .await;
    assert_eq!(
        r.finish().await,
        [Property::NoTornSnapshot, Property::Converges]
    );
}

/// Guarding by the client's own request counter: a later request served at an older version
/// (its reply held) wins over an earlier request served at the newer one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_id_guard_trusts_the_wrong_order() {
    let r = start(
        ServerStrategy::Reference,
        ClientStrategy::RequestIdGuard,
        0,
        3,
    )
    .await;
    let gates = r.server.gates();
    // Refresh A: its request waits unserved.
    let a = gates.arm(list_gate(Phase::Before), 1);
    within("v2", r.server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")])).await;
    assert!(within("A parked", gates.parked(a)).await);
    // Refresh B (a duplicate notification): served at v2, its reply held.
    let b = gates.arm(list_gate(Phase::After), 1);
    within("notify", r.server.notify(Kind::Tools, None)).await;
    assert!(within("B parked", gates.parked(b)).await);
    // Refresh C, after v3 commits: its request waits unserved.
    let c = gates.arm(list_gate(Phase::Before), 1);
    within("v3", r.server.apply(&[Op::remove(Kind::Tools, "t0")])).await;
    assert!(within("C parked", gates.parked(c)).await);
    // A is served at v3 and published; then B's older reply wins (its request id is later).
    gates.release(a);
    wait_view("A publishes v3", &r.catalog, Kind::Tools, |v| {
        v.version == Some(3)
    })
    .await;
    gates.release(b);
    wait_view("B publishes v2", &r.catalog, Kind::Tools, |v| {
        v.version == Some(2)
    })
    .await;
    gates.release(c);
    assert_eq!(
        r.finish().await,
        [Property::NoStaleOverwrite, Property::BoundedRefresh]
    );
}

/// A notification arrives while a refresh runs: the reference client refreshes once more; with
/// the dirty flag cleared after the await, the change is never fetched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flag_cleared_after_await_loses_a_wakeup() {
    for (strategy, expected) in [
        (
            ClientStrategy::FlagClearedAfterAwait,
            vec![Property::Converges, Property::NoLostWakeup],
        ),
        (ClientStrategy::Reference, vec![]),
    ] {
        let r = start(ServerStrategy::Reference, strategy, 0, 3).await;
        let held = r.server.gates().arm(list_gate(Phase::After), 1);
        within("v2", r.server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")])).await;
        assert!(within("reply parked", r.server.gates().parked(held)).await);
        within("v3", r.server.apply(&[Op::remove(Kind::Tools, "t0")])).await;
        // The v3 notification reaches the client while its refresh waits.
        wait_status("second notification", &r.catalog, |s| s.notifications >= 2).await;
        r.server.gates().release(held);
        assert_eq!(r.finish().await, expected, "{strategy}");
    }
}
