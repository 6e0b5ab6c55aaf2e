//! Progress counts that tell whether the real side caught up with the shadow world: snapshots
//! published and tool calls dispatched (from the model's events and from the adapters' reported
//! events), the client machine's wake-ups and ended refreshes, and `list_changed`
//! notifications the client reported handling.

use crate::control;
use crate::proxy::notified_kind;
use crate::timeline::{HubState, Side};
use listsync_core::history::Event;
use listsync_core::vocab::{Kind, KindSet};
use serde_json::Value;

pub(super) fn count_model(events: &[Event], kinds: KindSet) -> (usize, usize) {
    let published = events
        .iter()
        .filter(|e| matches!(e, Event::Published { kind, .. } if kinds.contains(*kind)))
        .count();
    let dispatched = events
        .iter()
        .filter(|e| matches!(e, Event::Dispatched { .. }))
        .count();
    (published, dispatched)
}

pub(super) fn count_real(st: &HubState, kinds: KindSet) -> (usize, usize) {
    let published = control::events(st, Side::Client, "published")
        .filter(|(_, e)| {
            e.get("kind")
                .and_then(Value::as_str)
                .and_then(|k| k.parse::<Kind>().ok())
                .is_some_and(|k| kinds.contains(k))
        })
        .count();
    let dispatched = control::events(st, Side::Server, "dispatched").count();
    (published, dispatched)
}

/// The client machine's steps that may leave no message behind: wake-ups and ended refreshes
/// (a discarded page). For our runtime as the client, each step of the trace waits for them
/// too, so a delivery cannot overtake the client's handling of the one before.
pub(super) fn count_model_client_steps(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::Woken { client: 0, .. } | Event::RefreshEnded { client: 0, .. }
            )
        })
        .count()
}

pub(super) fn count_real_client_steps(st: &HubState) -> usize {
    control::events(st, Side::Client, "history")
        .filter(|(_, e)| {
            matches!(
                e.get("entry")
                    .and_then(|x| x.get("event"))
                    .and_then(Value::as_str),
                Some("woken" | "refresh_ended")
            )
        })
        .count()
}

/// `list_changed` notifications of kept kinds the client adapter reported handling (an event
/// with `"count": n` stands for n identical notifications the client coalesced).
pub(super) fn count_real_notifications(st: &HubState, kinds: KindSet) -> usize {
    control::events(st, Side::Client, "notification")
        .filter(|(_, e)| {
            e.get("method")
                .and_then(Value::as_str)
                .and_then(notified_kind)
                .is_some_and(|k| k.notification_group().iter().any(|g| kinds.contains(*g)))
        })
        .map(|(_, e)| {
            e.get("count")
                .and_then(Value::as_u64)
                .map_or(1, |n| n as usize)
        })
        .sum()
}
