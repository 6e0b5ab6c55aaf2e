//! The world's observers of a client (docs/design.md, "The client side is observed too"): the
//! walks its list requests show (`world::Watch`), the wake-ups its inputs give it
//! (`world::observe_input`) and the failed calls the wire carried (`world::observe_call_failure`),
//! judged on hand-made wires.

use listsync_core::client::{CallError, ClientConfig, ClientInput, ClientOutput};
use listsync_core::history::{Cause, Event, RefreshOutcome};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_core::wire::{
    ClientMsg, Cursor, ErrorReason, INTERNAL_ERROR, INVALID_PARAMS, METHOD_NOT_FOUND, Notification,
    Page, ReqId, Request, Response, RpcError, ServerMsg,
};
use listsync_core::world::{Watch, observe_call_failure, observe_input};
use std::sync::Arc;

const A: AuthCtx = AuthCtx(0);

fn list(id: ReqId, cursor: Option<&str>) -> ClientMsg {
    ClientMsg {
        id,
        auth: A,
        req: Request::List {
            kind: Kind::Tools,
            cursor: cursor.map(|c| Cursor(Arc::from(c))),
        },
    }
}

fn page(id: ReqId, next: Option<&str>) -> ServerMsg {
    ServerMsg::Response {
        id,
        resp: Response::Page(Page {
            kind: Kind::Tools,
            items: Default::default(),
            next: next.map(|c| Cursor(Arc::from(c))),
            version: None,
            catalog: None,
            ttl_ms: None,
            cache_scope: None,
            version_bound: false,
        }),
    }
}

fn started(e: Option<Event>) -> Option<u32> {
    match e {
        Some(Event::RefreshStarted { refresh, .. }) => Some(refresh),
        _ => None,
    }
}

#[test]
fn each_first_page_request_with_no_walk_answered_starts_a_walk_of_its_own() {
    let mut w = Watch::default();
    assert_eq!(started(w.asks(0, &list(1, None), None)), Some(0));
    assert_eq!(started(w.asks(0, &list(2, None), None)), Some(1));
    assert_eq!(started(w.asks(0, &list(3, None), None)), Some(2));
    assert!(!w.is_empty());
    // The last pages end the walks their requests began, by name.
    assert_eq!(w.answered(&page(2, None)), Some((Kind::Tools, A, 1)));
    assert_eq!(w.answered(&page(1, None)), Some((Kind::Tools, A, 0)));
    assert_eq!(w.answered(&page(3, None)), Some((Kind::Tools, A, 2)));
    assert!(w.is_empty());
}

#[test]
fn a_first_page_request_after_a_page_in_hand_begins_the_walk_again() {
    let mut w = Watch::default();
    assert_eq!(started(w.asks(0, &list(1, None), None)), Some(0));
    assert_eq!(w.answered(&page(1, Some("p2"))), None);
    // Nothing is asked, but a walk is in progress (a connection cut now ends it failed).
    assert!(!w.is_empty());
    // A cursor continues it.
    assert_eq!(w.asks(0, &list(2, Some("p2")), None), None);
    assert_eq!(w.answered(&page(2, Some("p3"))), None);
    // A first page again: the same walk, begun again.
    match w.asks(0, &list(3, None), None) {
        Some(Event::WalkRestarted { refresh: 0, .. }) => {}
        other => panic!("expected walk 0 begun again, got {other:?}"),
    }
    assert_eq!(w.answered(&page(3, None)), Some((Kind::Tools, A, 0)));
    assert!(w.is_empty());
    // The next first page starts walk 1.
    assert_eq!(started(w.asks(0, &list(4, None), None)), Some(1));
}

#[test]
fn an_answer_of_an_attempt_begun_again_since_ends_nothing() {
    let mut w = Watch::default();
    w.asks(0, &list(1, None), None);
    w.answered(&page(1, Some("p2")));
    w.asks(0, &list(2, Some("p2")), None);
    w.asks(0, &list(3, None), None); // begun again while page 2 is asked
    assert_eq!(w.answered(&page(2, None)), None, "a stale last page");
    assert_eq!(w.answered(&page(3, None)), Some((Kind::Tools, A, 0)));
    // An answer to nothing asked is nothing.
    assert_eq!(w.answered(&page(9, None)), None);
}

#[test]
fn a_cut_connection_ends_every_open_walk_failed() {
    let mut w = Watch::default();
    w.asks(0, &list(1, None), None);
    w.asks(0, &list(2, None), None);
    let ended = w.cut(0);
    assert_eq!(ended.len(), 2);
    assert!(ended.iter().all(|e| matches!(
        e,
        Event::RefreshEnded {
            outcome: RefreshOutcome::Failed,
            ..
        }
    )));
    assert!(w.is_empty());
    assert_eq!(w.answered(&page(1, None)), None);
}

#[test]
fn an_ended_walk_is_published_only_if_its_readers_read_another_list() {
    let published = [Event::Published {
        client: 0,
        kind: Kind::Tools,
        auth: A,
        items: Default::default(),
        version: None,
    }];
    let outcome = |e: Event| match e {
        Event::RefreshEnded { outcome, .. } => outcome,
        other => panic!("{other:?}"),
    };
    let end = (Kind::Tools, A, 0);
    assert_eq!(
        outcome(Watch::ended(0, end, &published)),
        RefreshOutcome::Published
    );
    assert_eq!(
        outcome(Watch::ended(0, end, &[])),
        RefreshOutcome::Discarded
    );
    let other = (Kind::Prompts, A, 0);
    assert_eq!(
        outcome(Watch::ended(0, other, &published)),
        RefreshOutcome::Discarded
    );
}

fn woken(cfg: &ClientConfig, input: ClientInput) -> Option<(KindSet, Cause)> {
    observe_input(0, cfg, &input)
        .into_iter()
        .find_map(|e| match e {
            Event::Woken { kinds, cause, .. } => Some((kinds, cause)),
            _ => None,
        })
}

#[test]
fn the_inputs_that_give_a_client_a_reason_to_list_are_wake_ups() {
    let mut cfg = ClientConfig::tools(ClientStrategy::Reference, Era::V2025_11_25);
    cfg.kinds = KindSet::only(Kind::Tools).with(Kind::Resources);
    let tools = KindSet::only(Kind::Tools);
    let changed = |kind| {
        ClientInput::Receive(ServerMsg::Notification(Notification::ListChanged {
            kind,
            sub: None,
        }))
    };
    assert_eq!(
        woken(&cfg, changed(Kind::Tools)),
        Some((tools, Cause::ListChanged))
    );
    // The resources group, of the kept kinds only; a group the client keeps none of, nothing.
    assert_eq!(
        woken(&cfg, changed(Kind::Resources)),
        Some((KindSet::only(Kind::Resources), Cause::ListChanged))
    );
    assert_eq!(woken(&cfg, changed(Kind::Prompts)), None);
    assert_eq!(
        woken(&cfg, ClientInput::TtlExpired(Kind::Tools)),
        Some((tools, Cause::TtlExpired))
    );
    assert_eq!(woken(&cfg, ClientInput::TtlExpired(Kind::Prompts)), None);
    assert_eq!(
        woken(&cfg, ClientInput::Refresh(Kind::Prompts)),
        Some((KindSet::only(Kind::Prompts), Cause::Requested))
    );
    assert_eq!(
        woken(&cfg, ClientInput::SetAuth(AuthCtx(1))),
        Some((cfg.kinds, Cause::AuthChanged))
    );
    // 2025-11-25: the handshake's answer, not the connection.
    assert_eq!(woken(&cfg, ClientInput::Start), None);
    let init = ServerMsg::Response {
        id: 0,
        resp: Response::Initialized {
            era: Era::V2025_11_25,
            caps: Default::default(),
        },
    };
    assert_eq!(
        woken(&cfg, ClientInput::Receive(init)),
        Some((cfg.kinds, Cause::Startup))
    );
    // A call's error saying the tool is gone wakes the tool list; an internal error does not.
    let error = |e: RpcError| {
        ClientInput::Receive(ServerMsg::Response {
            id: 5,
            resp: Response::Error(e),
        })
    };
    let gone = RpcError {
        code: INVALID_PARAMS,
        reason: ErrorReason::UnknownTool,
    };
    let internal = RpcError {
        code: INTERNAL_ERROR,
        reason: ErrorReason::Other("boom".into()),
    };
    assert_eq!(woken(&cfg, error(gone)), Some((tools, Cause::ItemGone)));
    assert_eq!(woken(&cfg, error(internal)), None);
    // A listen refused as unknown: the client lists instead.
    let refused = RpcError {
        code: METHOD_NOT_FOUND,
        reason: ErrorReason::Other("no listen".into()),
    };
    assert_eq!(
        woken(&cfg, error(refused)),
        Some((cfg.kinds, Cause::Startup))
    );
    assert_eq!(woken(&cfg, ClientInput::Disconnected), None);
    // 2026-07-28: the connection itself, and the listen's acknowledgement (with the kept kinds
    // it honours as an observed ListenAcked).
    let mut modern = cfg.clone();
    modern.era = Era::V2026_07_28;
    assert_eq!(
        woken(&modern, ClientInput::Start),
        Some((modern.kinds, Cause::Startup))
    );
    let ack = ClientInput::Receive(ServerMsg::Notification(Notification::Acknowledged {
        sub: 1,
        kinds: KindSet::only(Kind::Tools).with(Kind::Prompts),
    }));
    let seen = observe_input(0, &modern, &ack);
    assert!(seen.contains(&Event::ListenAcked {
        client: 0,
        kinds: tools
    }));
    assert_eq!(woken(&modern, ack), Some((modern.kinds, Cause::ListenAck)));
}

/// A call the wire carried and that failed is observed, with the lists the client asked for in
/// reaction; a call the client refused itself put nothing on the wire, so there is nothing to
/// judge, whatever the client listed in the same step.
#[test]
fn only_a_failed_call_the_wire_carried_is_observed() {
    let failed = |e: CallError| {
        let out = [
            ClientOutput::CallDone {
                name: "a".into(),
                auth: A,
                result: Err(e),
            },
            ClientOutput::Send(list(9, None)),
        ];
        observe_call_failure(0, &out)
    };
    let gone = RpcError {
        code: INVALID_PARAMS,
        reason: ErrorReason::UnknownTool,
    };
    assert_eq!(
        failed(CallError::Rpc(gone)),
        Some(Event::CallFailed {
            client: 0,
            tool: "a".into(),
            auth: A,
            gone: true,
            relisted: KindSet::only(Kind::Tools),
        })
    );
    assert!(matches!(
        failed(CallError::Transport("reset".into())),
        Some(Event::CallFailed { gone: false, .. })
    ));
    for local in [
        CallError::NotInSnapshot,
        CallError::NeedsApproval,
        CallError::ListOutOfDate,
    ] {
        assert_eq!(failed(local.clone()), None, "{local:?}");
    }
}
