//! The server's history is what its observer sees, never what the registry says about itself:
//! a registry that lies about both of its bugs (`lying-registry`: it notifies before it
//! commits, claiming the announced version is visible, and runs a removed tool, claiming it is
//! present) is caught for both, while its own claims, reported beside the history, say all is
//! well; every `list_changed` that leaves the server is judged, whichever path sent it (a
//! batch, the explicit `Server::notify`, a 2026-07-28 listen stream), including the ones sent
//! outside the registry.

mod common;

use common::*;
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::client::ClientNotice;
use listsync_rt::gate::GateTarget;
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{ServerNotice, ServerSettings};
use std::collections::BTreeMap;
use tokio::sync::mpsc;

fn tools() -> KindSet {
    KindSet::only(Kind::Tools)
}

/// Everything the server reported to an observer so far.
fn drain(rx: &mut mpsc::UnboundedReceiver<ServerNotice>) -> Vec<ServerNotice> {
    std::iter::from_fn(|| rx.try_recv().ok()).collect()
}

/// The `Notified` events of a history whose announced version was not visible.
fn early(history: &SharedHistory) -> Vec<Event> {
    history
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::Notified { announces, visible, .. } if announces > visible))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lying_registry_is_caught_for_both_lies() {
    let history = SharedHistory::new();
    let mut ss = ServerSettings::new(Era::V2025_11_25, 0);
    ss.core.strategy = ServerStrategy::LyingRegistry;
    let server = server(ss, &initial(3), &history);
    let (tx, mut rx) = mpsc::unbounded_channel();
    server.observe(tx);
    let catalog = duplex_client(
        &server,
        client_settings(Era::V2025_11_25, tools(), 0, &history),
    );
    settle(&server, &[&catalog]).await;
    // The removal is announced while the commit is held: the client re-lists and still sees t0.
    let commit = server.gates().arm(GateTarget::Commit, 1);
    let removal = apply_later(&server, vec![Op::remove(Kind::Tools, "t0")]);
    assert!(within("commit parked", server.gates().parked(commit)).await);
    settle(&server, &[&catalog]).await;
    server.gates().release(commit);
    within("removal", removal).await.unwrap();
    // The registry runs the removed tool from the table it captured when the session opened.
    let call = within("call", catalog.call("t0")).await;
    assert!(call.is_ok(), "the lying registry runs t0: {call:?}");
    settle(&server, &[&catalog]).await;
    quiescent(&history, &[(0, tools())]);

    let violated = violated_set(&history);
    for p in [Property::NotifyAfterCommit, Property::NoCallToRemoved] {
        assert!(
            violated.contains(&p),
            "{p} not caught: {violated:?}\n{}",
            history.render()
        );
    }
    // What the registry said about itself: the announced version visible, the tool present.
    let claims: Vec<Event> = drain(&mut rx)
        .into_iter()
        .filter_map(|n| match n {
            ServerNotice::Claim(e) => Some(e),
            _ => None,
        })
        .collect();
    assert!(
        claims.iter().any(|e| matches!(
            e,
            Event::Notified {
                announces: 2,
                visible: 2,
                ..
            }
        )),
        "{claims:?}"
    );
    assert!(
        claims
            .iter()
            .any(|e| matches!(e, Event::Dispatched { present: true, .. })),
        "{claims:?}"
    );
    // None of it reached the history.
    assert!(
        history
            .events()
            .iter()
            .all(|e| !matches!(e, Event::Dispatched { present: true, .. })),
        "{}",
        history.render()
    );
}

/// The explicit `Server::notify` does not go through the registry: what it sends is judged
/// all the same. While a `notify-before-commit` server holds a batch, a notify announces the
/// batch that list requests do not see yet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notification_sent_outside_the_registry_is_judged() {
    let history = SharedHistory::new();
    let mut ss = ServerSettings::new(Era::V2025_11_25, 0);
    ss.core.strategy = ServerStrategy::NotifyBeforeCommit;
    let server = server(ss, &initial(3), &history);
    let catalog = duplex_client(
        &server,
        client_settings(Era::V2025_11_25, tools(), 0, &history),
    );
    settle(&server, &[&catalog]).await;
    let commit = server.gates().arm(GateTarget::Commit, 1);
    let add = apply_later(&server, vec![Op::add(Kind::Tools, "t8", "t8 v1")]);
    assert!(within("commit parked", server.gates().parked(commit)).await);
    assert_eq!(early(&history).len(), 1, "{}", history.render());
    assert_eq!(within("notify", server.notify(Kind::Tools, None)).await, 1);
    assert_eq!(
        early(&history).len(),
        2,
        "the explicit notification is judged:\n{}",
        history.render()
    );
    server.gates().release(commit);
    within("add", add).await.unwrap();
    // Once committed, the same call announces what is visible.
    assert_eq!(within("notify", server.notify(Kind::Tools, None)).await, 1);
    assert_eq!(early(&history).len(), 2, "{}", history.render());
    settle(&server, &[&catalog]).await;
}

/// In both eras, over explicit notifications, then a run of batches (one of them changing no
/// list), the history holds one observed `Notified` for every `list_changed` a client read
/// from its connection, each judged sound for the reference server. The count to compare with
/// is the clients' own (what each read from the wire and reported to its observer), not a
/// record the server makes beside the observed one: a notification sent by a path that skips
/// the observer reaches a client all the same, and is counted there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_list_changed_on_the_wire_is_judged() {
    for era in [Era::V2025_11_25, Era::V2026_07_28] {
        let history = SharedHistory::new();
        let server = server(ServerSettings::new(era, 2), &initial(3), &history);
        let kinds = all_kinds();
        let (a_tx, mut a_rx) = mpsc::unbounded_channel();
        let (b_tx, mut b_rx) = mpsc::unbounded_channel();
        let mut a_settings = client_settings(era, kinds, 0, &history);
        a_settings.observer = Some(a_tx);
        let mut b_settings = client_settings(era, tools(), 1, &history);
        b_settings.observer = Some(b_tx);
        let a = duplex_client(&server, a_settings);
        let b = duplex_client(&server, b_settings);
        settle(&server, &[&a, &b]).await;
        let batches = [
            vec![Op::add(Kind::Tools, "t8", "t8 v1")],
            vec![
                Op::remove(Kind::Prompts, "p0"),
                Op::add(Kind::Resources, "mem://r2", "r2 v1"),
            ],
            vec![Op::SetContent {
                uri: "mem://r0".into(),
                text: "r0 v2".into(),
            }],
            vec![Op::remove(Kind::Tools, "t1")],
        ];
        // Explicit notifications first: a second one for a version already announced would
        // be a redundant list_changed (bounded_refresh), which is not what this test is about.
        // They announce the version the clients were served, which no_spurious_notify cannot
        // tell from a commit's notification handed over after the page, so it does not judge
        // them.
        within("notify tools", server.notify(Kind::Tools, None)).await;
        within("notify prompts", server.notify(Kind::Prompts, None)).await;
        within(
            "notify a resource",
            server.notify(Kind::Resources, Some("mem://r0")),
        )
        .await;
        for batch in &batches {
            within("batch", server.apply(batch)).await;
        }
        settle(&server, &[&a, &b]).await;
        quiescent(&history, &[(0, kinds), (1, tools())]);
        assert_holds(&history);

        // What each client read, one entry per list_changed (coalesced ones counted), and
        // what the history judged, per session. A server names its sessions in its own number
        // space, unrelated to the ids clients go by, so the two are compared as the collection
        // of each recipient's notifications: every client's must be some session's.
        let mut received: Vec<Vec<&str>> = Vec::new();
        for rx in [&mut a_rx, &mut b_rx] {
            let mut mine: Vec<&str> = Vec::new();
            for n in std::iter::from_fn(|| rx.try_recv().ok()) {
                if let ClientNotice::Notification { method, count, .. } = n
                    && method.ends_with("/list_changed")
                {
                    mine.extend(std::iter::repeat_n(method, count as usize));
                }
            }
            mine.sort();
            received.push(mine);
        }
        let mut per_session: BTreeMap<u32, Vec<&str>> = BTreeMap::new();
        for e in history.events() {
            if let Event::Notified { client, kind, .. } = e {
                per_session
                    .entry(client)
                    .or_default()
                    .push(kind.list_changed_method());
            }
        }
        let mut judged: Vec<Vec<&str>> = per_session
            .into_values()
            .map(|mut v| {
                v.sort();
                v
            })
            .collect();
        received.retain(|v| !v.is_empty());
        received.sort();
        judged.sort();
        // Batches of three kinds and two explicit notifications reached both clients.
        assert!(
            received.iter().map(Vec::len).sum::<usize>() >= 6,
            "{era}: {received:?}"
        );
        assert_eq!(
            judged,
            received,
            "{era}: judged per session (left) vs read by each client (right)\n{}",
            history.render()
        );
    }
}
