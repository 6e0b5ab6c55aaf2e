//! The schema-change race (docs/design.md, "The schema-change race"): a call whose arguments were
//! built against a tool's old input schema reaches the server after the schema changed. The
//! reference server refuses it with -32602 naming the change and the client lists tools once;
//! `unvalidated-dispatch` runs it, and `no_stale_arguments`, judged by the world from the call's
//! schema fingerprint on the wire and its own catalog, catches that. A reworded description
//! (same input schema) does not stop a call.

mod common;

use common::{one_client, settle};
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::record::Log;
use listsync_core::scenario::Scenario;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{Kind, Op, schema_fingerprint};
use listsync_core::wire::{ErrorReason, Request, Response, ServerMsg};
use listsync_core::world::{Link, Step, World};

const A_X: &str = r#"{"description":"a","inputSchema":{"properties":{"x":{}}}}"#;
const A_X_REWORDED: &str = r#"{"description":"a, reworded","inputSchema":{"properties":{"x":{}}}}"#;
const A_Y: &str = r#"{"description":"a","inputSchema":{"properties":{"y":{}}}}"#;

/// One stdio client of tool `a` (argument `x`); one batch changing `a` to `to`; one call of `a`.
fn scenario(server: ServerStrategy, to: &str) -> Scenario {
    let mut scn = one_client(
        "schema-change",
        ClientStrategy::Reference,
        vec![Op::add(Kind::Tools, "a", A_X)],
        vec![vec![Op::update(Kind::Tools, "a", to)]],
        &["a"],
    );
    scn.server.strategy = server;
    scn
}

fn deliver(w: &mut World, scn: &Scenario, link: Link, log: &mut Log) {
    let step = Step::Deliver {
        client: 0,
        link,
        index: 0,
    };
    w.apply(scn, &step, log).unwrap();
}

/// Listed; the application calls `a` (arguments built for `x`); the change to `a` is committed
/// while the call is on its way; then the server takes the call. Returns the server's answer and
/// the log of everything after the call was taken.
fn race(server: ServerStrategy, to: &str) -> (World, Response, Log) {
    let scn = scenario(server, to);
    let mut w = World::new(&scn);
    settle(&mut w, &scn, &mut Log::default());
    let mut log = Log::default();
    w.apply(&scn, &Step::Call { call: 0 }, &mut log).unwrap();
    let Request::CallTool { schema, .. } = &w.links[0].up[0].req else {
        panic!("no call on the wire");
    };
    assert_eq!(
        *schema,
        schema_fingerprint(A_X),
        "built for the listed definition"
    );
    w.apply(&scn, &Step::Mutate { batch: 0 }, &mut log).unwrap();
    deliver(&mut w, &scn, Link::Up, &mut log);
    let answer = w.links[0]
        .down
        .iter()
        .find_map(|m| match m {
            ServerMsg::Response { resp, .. } => Some(resp.clone()),
            ServerMsg::Notification(_) => None,
        })
        .expect("an answer");
    let mut log = Log::default();
    settle(&mut w, &scn, &mut log);
    (w, answer, log)
}

#[test]
fn the_reference_server_refuses_arguments_built_for_an_old_schema() {
    let (w, answer, log) = race(ServerStrategy::Reference, A_Y);
    let Response::Error(e) = answer else {
        panic!("ran: {answer:?}");
    };
    assert_eq!(e.reason, ErrorReason::SchemaChanged);
    assert_eq!(e.code, listsync_core::wire::INVALID_PARAMS);
    // The refusal is news of a change (here the change's own notification arrived first, and
    // the walk it started is in flight: the refusal starts no second one); the client ends up
    // listing the new schema.
    let failures: Vec<_> = log
        .events
        .iter()
        .filter_map(|e| match e {
            Event::CallFailed { gone, relisted, .. } => Some((*gone, relisted.is_empty())),
            _ => None,
        })
        .collect();
    assert_eq!(failures, [(true, true)]);
    let listed = w.clients[0].snapshot(Kind::Tools).unwrap();
    assert_eq!(&*listed.items[0].def, A_Y);
    assert!(!w.monitor.violated(Property::NoStaleArguments));
    assert!(!w.monitor.violated(Property::ErrorsNotChanges));
}

#[test]
fn a_reworded_description_keeps_the_schema_and_the_call_runs() {
    let (w, answer, _) = race(ServerStrategy::Reference, A_X_REWORDED);
    assert!(matches!(answer, Response::ToolResult { .. }), "{answer:?}");
    assert!(!w.monitor.violated(Property::NoStaleArguments));
}

#[test]
fn unvalidated_dispatch_runs_stale_arguments_and_is_caught() {
    let (w, answer, _) = race(ServerStrategy::UnvalidatedDispatch, A_Y);
    assert!(matches!(answer, Response::ToolResult { .. }), "{answer:?}");
    let why = w
        .monitor
        .first_violation(Property::NoStaleArguments)
        .expect("caught");
    assert!(why.contains("input schema it no longer has"), "{why}");
}
