//! Small histories for the checkers' unit tests: commits, publications, refreshes, and the
//! properties a history violates.

use super::judge;
use crate::history::{Cause, ClientId, Event, RefreshOutcome};
use crate::property::{Property, Verdict};
use crate::vocab::{AuthCtx, Catalog, Item, ItemList, Kind, KindSet, Op, Scope};
use std::sync::Arc;

pub(super) fn commit(version: u64, ops: &[Op]) -> Event {
    Event::Committed {
        version,
        catalog: Arc::new(Catalog::from_ops(ops)),
    }
}

/// Client `client` publishes its tool list under context 0.
pub(super) fn publish(client: ClientId, names: &[(&str, &str)]) -> Event {
    let items: ItemList = names.iter().map(|(n, d)| Item::new(n, d)).collect();
    Event::Published {
        client,
        kind: Kind::Tools,
        auth: AuthCtx(0),
        items,
        version: None,
    }
}

pub(super) fn started(client: ClientId, refresh: u32) -> Event {
    Event::RefreshStarted {
        client,
        kind: Kind::Tools,
        auth: AuthCtx(0),
        refresh,
    }
}

pub(super) fn ended(client: ClientId, refresh: u32) -> Event {
    Event::RefreshEnded {
        client,
        kind: Kind::Tools,
        auth: AuthCtx(0),
        refresh,
        outcome: RefreshOutcome::Published,
    }
}

pub(super) fn wake(client: ClientId) -> Event {
    Event::Woken {
        client,
        kinds: KindSet::only(Kind::Tools),
        cause: Cause::ListChanged,
    }
}

pub(super) fn quiescent(client: ClientId) -> Event {
    Event::Quiescent {
        expect: vec![(client, Kind::Tools, AuthCtx(0))],
    }
}

/// Tools a and b.
pub(super) fn v1() -> Event {
    commit(
        1,
        &[
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "b", "b1"),
        ],
    )
}

/// Tools a, b and c.
pub(super) fn v2() -> Event {
    commit(
        2,
        &[
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "b", "b1"),
            Op::add(Kind::Tools, "c", "c1"),
        ],
    )
}

pub(super) fn serve(client: ClientId, auth: u8, version: u64) -> Event {
    Event::Served {
        client,
        kind: Kind::Tools,
        auth: AuthCtx(auth),
        version,
        items: 0,
        more: false,
    }
}

pub(super) fn notify(client: ClientId, announces: u64) -> Event {
    Event::Notified {
        client,
        kind: Kind::Tools,
        announces,
        visible: announces,
    }
}

/// A tool visible only under context `auth`.
pub(super) fn scoped(name: &str, def: &str, auth: u8) -> Op {
    Op::Add {
        kind: Kind::Tools,
        name: name.into(),
        def: def.into(),
        scope: Scope::Only(AuthCtx(auth)),
    }
}

/// Client `client`'s router sent (or refused) a call of `tool` under context 0.
pub(super) fn route(client: ClientId, tool: &str, sent: bool, approval: bool) -> Event {
    Event::Routed {
        client,
        tool: tool.into(),
        auth: AuthCtx(0),
        sent,
        approval,
    }
}

/// The properties a history violates, in report order.
pub(super) fn violated(events: &[Event]) -> Vec<Property> {
    let j = judge(events);
    Property::ALL
        .into_iter()
        .filter(|p| j.verdicts[p] == Verdict::Violated)
        .collect()
}
