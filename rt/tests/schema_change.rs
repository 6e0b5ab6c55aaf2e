//! The schema-change race (docs/design.md, "The schema-change race"), against our server over
//! rmcp's JSON-RPC transport: the client's call says, in `_meta`, which input schema its
//! arguments were built for; the call is held by a server gate while the tool's schema changes.
//! The reference server refuses it with -32602 `schema_changed`; `unvalidated-dispatch` runs it,
//! and the recorded history is judged violating `no_stale_arguments`.

mod common;

use common::*;
use listsync_core::client::CallError;
use listsync_core::property::Property;
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::{Era, Kind, KindSet, Op, Scope};
use listsync_core::wire::ErrorReason;
use listsync_rt::canon::canonical;
use listsync_rt::gate::{GateTarget, Phase};
use listsync_rt::history::SharedHistory;
use listsync_rt::items::build;
use listsync_rt::server::ServerSettings;

/// Tool `a`'s definition taking one argument named `arg`.
fn taking(arg: &str) -> String {
    let mut v = build(Kind::Tools, "a", "a", Scope::Public);
    v["inputSchema"] = serde_json::json!({
        "type": "object",
        "properties": { arg: { "type": "string" } },
    });
    canonical(&v)
}

/// Calls `a` (arguments built for `x`) while the server changes its schema to `y` before it
/// takes the call; returns how the call ended and what was judged violated.
async fn race(strategy: ServerStrategy) -> (Result<(), CallError>, Vec<Property>) {
    let history = SharedHistory::new();
    let mut settings = ServerSettings::new(Era::V2025_11_25, 0);
    settings.core.strategy = strategy;
    let server = server(
        settings,
        &[Op::add(Kind::Tools, "a", &taking("x"))],
        &history,
    );
    let client = duplex_client(
        &server,
        client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, &history),
    );
    settle(&server, &[&client]).await;
    let call_gate = server.gates().arm(
        GateTarget::Request {
            method: "tools/call".into(),
            phase: Phase::Before,
        },
        1,
    );
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call("a").await.map(|_| ()) })
    };
    assert!(within("call parked", server.gates().parked(call_gate)).await);
    within(
        "schema change",
        server.apply(&[Op::update(Kind::Tools, "a", &taking("y"))]),
    )
    .await;
    server.gates().release(call_gate);
    let ended = within("call", call).await.unwrap();
    settle(&server, &[&client]).await;
    quiescent(&history, &[(0, KindSet::only(Kind::Tools))]);
    (ended, violated_set(&history))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reference_server_refuses_arguments_for_an_old_schema() {
    let (ended, violated) = race(ServerStrategy::Reference).await;
    match ended {
        Err(CallError::Rpc(e)) => assert_eq!(e.reason, ErrorReason::SchemaChanged, "{e}"),
        other => panic!("expected a schema_changed refusal, got {other:?}"),
    }
    assert!(violated.is_empty(), "{violated:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unvalidated_dispatch_is_judged() {
    let (ended, violated) = race(ServerStrategy::UnvalidatedDispatch).await;
    assert!(ended.is_ok(), "{ended:?}");
    assert_eq!(violated, [Property::NoStaleArguments]);
}
