//! Approval is never inherited (docs/design.md, "Approval is never inherited"), against our
//! server over rmcp's JSON-RPC transport: a client that asks for approvals refuses a call of a
//! tool with side effects until the user approves the definition it lists, asks again once the
//! definition changed, calls a read-only tool freely, and holds a call while a change is
//! announced and its walk has not ended. The known-bad `approval-by-name` client runs the
//! changed tool under the old approval, and the recorded history (the user's approvals, the
//! deliveries, the calls as the wire shows them) is judged violating `approval_not_inherited`.

mod common;

use common::*;
use listsync_core::client::CallError;
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Kind, KindSet, Op, Scope};
use listsync_rt::canon::canonical;
use listsync_rt::client::ClientHandle;
use listsync_rt::gate::{GateTarget, Phase};
use listsync_rt::history::SharedHistory;
use listsync_rt::items::build;
use listsync_rt::server::{Server, ServerSettings};

/// Tool `r`'s definition: rmcp's `Tool` with `annotations.readOnlyHint: true`.
fn read_only(name: &str) -> String {
    let mut v = build(Kind::Tools, name, "reads only", Scope::Public);
    v["annotations"] = serde_json::json!({ "readOnlyHint": true });
    canonical(&v)
}

fn setup(strategy: ClientStrategy, history: &SharedHistory) -> (Server, ClientHandle) {
    let initial = [
        Op::add(Kind::Tools, "a", "writes v1"),
        Op::add(Kind::Tools, "r", &read_only("r")),
    ];
    let server = server(ServerSettings::new(Era::V2025_11_25, 0), &initial, history);
    let mut settings = client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, history);
    settings.client.strategy = strategy;
    settings.client.ask_approval = true;
    let client = duplex_client(&server, settings);
    (server, client)
}

/// Changes `a`'s definition and waits until the client lists it.
async fn change_a(server: &Server, client: &ClientHandle, to: &str) {
    within(
        "update a",
        server.apply(&[Op::update(Kind::Tools, "a", to)]),
    )
    .await;
    wait_view("a changed", client, Kind::Tools, |v| {
        v.items
            .iter()
            .any(|i| &*i.name == "a" && i.def.contains(to))
    })
    .await;
}

/// Calls of `tool` that went on the wire.
fn sent(history: &SharedHistory, tool: &str) -> usize {
    history
        .events()
        .into_iter()
        .filter(|e| matches!(e, Event::Routed { tool: t, sent: true, .. } if &**t == tool))
        .count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_go_out_under_an_approval_of_the_listed_definition() {
    let history = SharedHistory::new();
    let (server, client) = setup(ClientStrategy::Reference, &history);
    settle(&server, &[&client]).await;
    assert_eq!(client.needs_approval().await, ["a"]);
    let a = within("call a", client.call("a")).await;
    assert!(matches!(a, Err(CallError::NeedsApproval)), "{a:?}");
    within("call r", client.call("r"))
        .await
        .expect("r is read-only");
    assert!(within("approve a", client.approve("a")).await);
    assert!(client.needs_approval().await.is_empty());
    within("call a", client.call("a"))
        .await
        .expect("a runs approved");
    // The definition changes: the approval of the old one does not carry over.
    change_a(&server, &client, "writes v2").await;
    assert_eq!(client.needs_approval().await, ["a"]);
    let a = within("call a", client.call("a")).await;
    assert!(matches!(a, Err(CallError::NeedsApproval)), "{a:?}");
    assert!(within("approve a", client.approve("a")).await);
    within("call a", client.call("a"))
        .await
        .expect("a runs re-approved");
    assert!(
        !within("approve x", client.approve("x")).await,
        "not listed"
    );
    settle(&server, &[&client]).await;
    quiescent(&history, &[(0, KindSet::only(Kind::Tools))]);
    assert_eq!(sent(&history, "a"), 2);
    assert_holds(&history);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waits_while_a_change_is_announced() {
    let history = SharedHistory::new();
    let (server, client) = setup(ClientStrategy::Reference, &history);
    settle(&server, &[&client]).await;
    assert!(within("approve a", client.approve("a")).await);
    // The change is announced; the walk it starts is held before the server serves it.
    let walk = server.gates().arm(
        GateTarget::Request {
            method: "tools/list".into(),
            phase: Phase::Before,
        },
        1,
    );
    let change = apply_later(&server, vec![Op::update(Kind::Tools, "a", "writes v2")]);
    assert!(within("walk parked", server.gates().parked(walk)).await);
    // The delivery of the change's notice is observed (what the judge's "unsettled" rests on).
    assert!(
        history.events().iter().any(|e| matches!(
            e,
            Event::NoticeReceived {
                kind: Kind::Tools,
                ..
            }
        )),
        "no notice observed"
    );
    let mut call = Box::pin(client.call("a"));
    tokio::select! {
        biased;
        r = &mut call => panic!("the call ended while the list was unsettled: {r:?}"),
        () = std::future::ready(()) => {}
    }
    // Commands are handled in order: once this answers, the call has been decided.
    client.needs_approval().await;
    assert_eq!(
        sent(&history, "a"),
        0,
        "sent while the change was announced"
    );
    server.gates().release(walk);
    within("change", change).await.unwrap();
    // The walk ends with the new definition listed: the held call is decided afresh.
    let a = within("held call", call).await;
    assert!(matches!(a, Err(CallError::NeedsApproval)), "{a:?}");
    settle(&server, &[&client]).await;
    assert_eq!(sent(&history, "a"), 0);
    assert_holds(&history);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approvals_by_name_are_judged() {
    let history = SharedHistory::new();
    let (server, client) = setup(ClientStrategy::ApprovalByName, &history);
    settle(&server, &[&client]).await;
    assert!(within("approve a", client.approve("a")).await);
    change_a(&server, &client, "writes v2").await;
    within("call a", client.call("a"))
        .await
        .expect("sent under the old approval, and run");
    settle(&server, &[&client]).await;
    let violated = violated_set(&history);
    assert_eq!(
        violated,
        [Property::ApprovalNotInherited],
        "{}",
        history.render()
    );
}

/// The `schema-change` preset of `listsync serve --script` (`rt::script`), run against our
/// server in process from the moment the user has approved `echo`: half a second later `echo`
/// gets a new input schema under the same name. The reference client asks for `echo`'s approval
/// again once it lists the new definition (the preset's situation, approved_definition_changed,
/// as its user is asked) and refuses the call until then; its history holds. The
/// `approval-by-name` client does not ask again and sends the call under the old approval:
/// `approval_not_inherited`, the property the preset names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_schema_change_preset_asks_again_and_catches_approval_by_name() {
    use listsync_rt::fixtures::Fixtures;
    use listsync_rt::script::{self, Script, Start};
    for strategy in [ClientStrategy::Reference, ClientStrategy::ApprovalByName] {
        let history = SharedHistory::new();
        let server = server(
            ServerSettings::new(Era::V2025_11_25, 0),
            &Fixtures::Demo.catalog(),
            &history,
        );
        let mut settings =
            client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, &history);
        settings.client.strategy = strategy;
        settings.client.ask_approval = true;
        let client = duplex_client(&server, settings);
        settle(&server, &[&client]).await;
        assert!(
            client.needs_approval().await.iter().any(|t| t == "echo"),
            "{strategy}"
        );
        assert!(within("approve echo", client.approve("echo")).await);
        let mut preset = Script::load("schema-change").expect("the preset");
        preset.start = Start::Now;
        let (report, _said) = tokio::sync::mpsc::unbounded_channel();
        let stop = tokio_util::sync::CancellationToken::new();
        let schedule = tokio::spawn(script::run(
            server.clone(),
            std::sync::Arc::new(preset),
            report,
            stop.clone(),
        ));
        wait_view("echo's new schema", &client, Kind::Tools, |v| {
            v.items
                .iter()
                .any(|i| &*i.name == "echo" && i.def.contains("message"))
        })
        .await;
        stop.cancel();
        let _ = schedule.await;
        let asked = client.needs_approval().await.iter().any(|t| t == "echo");
        let call = within("call echo", client.call("echo")).await;
        settle(&server, &[&client]).await;
        if strategy == ClientStrategy::Reference {
            assert!(asked, "the reference asks for echo's approval again");
            assert!(matches!(call, Err(CallError::NeedsApproval)), "{call:?}");
            assert_eq!(sent(&history, "echo"), 0);
            assert_holds(&history);
        } else {
            assert!(!asked, "approval-by-name keeps the old approval");
            assert_eq!(sent(&history, "echo"), 1, "{call:?}");
            assert_eq!(
                violated_set(&history),
                [Property::ApprovalNotInherited],
                "{}",
                history.render()
            );
        }
    }
}
