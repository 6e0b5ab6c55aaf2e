//! One snapshot for every consumer (docs/design.md, "One snapshot for every consumer"), against
//! our server over rmcp's JSON-RPC transport: the client's listing, its per-list views and its
//! call router read the one published snapshot, so a preloaded ("known") tool the server does
//! not list is refused once the client has listed, and a tool added later is called as soon as
//! it is listed. The known-bad `known-tools-survive` client still sends calls of its preloaded
//! tool, and the recorded history (the server's commits and dispatches, the client's routing as
//! the wire shows it) is judged violating `no_call_to_removed` and `consumers_agree`.

mod common;

use common::*;
use listsync_core::client::CallError;
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::client::ClientHandle;
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};

fn setup(strategy: ClientStrategy, history: &SharedHistory) -> (Server, ClientHandle) {
    let server = server(
        ServerSettings::new(Era::V2025_11_25, 0),
        &initial(2),
        history,
    );
    let mut settings = client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, history);
    settings.client.strategy = strategy;
    settings.client.known = vec!["k".into()];
    let client = duplex_client(&server, settings);
    (server, client)
}

fn routed(history: &SharedHistory) -> Vec<(String, bool)> {
    history
        .events()
        .into_iter()
        .filter_map(|e| match e {
            Event::Routed { tool, sent, .. } => Some((tool.to_string(), sent)),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_router_reads_the_published_snapshot() {
    let history = SharedHistory::new();
    let (server, client) = setup(ClientStrategy::Reference, &history);
    settle(&server, &[&client]).await;
    // Listed: the server's list decides, and it has no k.
    let k = within("call k", client.call("k")).await;
    assert!(matches!(k, Err(CallError::NotInSnapshot)), "{k:?}");
    // A tool added later is called as soon as every view shows it.
    within("add", server.apply(&[Op::add(Kind::Tools, "c", "c v1")])).await;
    wait_view("c listed", &client, Kind::Tools, |v| {
        v.items.iter().any(|i| &*i.name == "c")
    })
    .await;
    assert!(client.tools().items.iter().any(|i| &*i.name == "c"));
    within("call c", client.call("c")).await.expect("c runs");
    settle(&server, &[&client]).await;
    quiescent(&history, &[(0, KindSet::only(Kind::Tools))]);
    assert_eq!(
        routed(&history),
        [("k".to_string(), false), ("c".to_string(), true)]
    );
    assert_holds(&history);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preloaded_tools_that_survive_are_judged() {
    let history = SharedHistory::new();
    let (server, client) = setup(ClientStrategy::KnownToolsSurvive, &history);
    settle(&server, &[&client]).await;
    let k = within("call k", client.call("k")).await;
    assert!(
        matches!(k, Err(CallError::Rpc(_))),
        "sent, and refused by the server: {k:?}"
    );
    settle(&server, &[&client]).await;
    let violated = violated_set(&history);
    for p in [Property::NoCallToRemoved, Property::ConsumersAgree] {
        assert!(
            violated.contains(&p),
            "{p}: {violated:?}\n{}",
            history.render()
        );
    }
}
