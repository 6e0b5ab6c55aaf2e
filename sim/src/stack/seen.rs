//! The stack level's situations (`core::situation`), as the simulated network sees them: the
//! runtime's machines are not inspected between steps there, so a situation is counted when the
//! network delivers the line that makes it happen, judged from the lines themselves (JSON-RPC ids
//! pair a list request with its answer):
//!
//! | situation | counted when the network delivers |
//! |---|---|
//! | `notify_during_refresh` | a `list_changed` to a client with a list request of that group unanswered (sent, its answer not delivered) |
//! | `notify_mid_walk` | such a `list_changed` while the unanswered request carries a cursor (the walk holds a page) |
//! | `burst_during_refresh` | a second `list_changed` of a group during one unanswered list request of it |
//! | `cursor_refused_after_change` | a -32602 error answering a list request that carried a cursor |
//! | `duplicate_notification_in_flight` | (on sending) a `list_changed` the network is about to deliver twice |
//!
//! Responses cannot overtake one another on a byte stream, and the environment's removals are
//! not on the wire, so the other situations are not counted at this level.

use listsync_core::situation::Situation;
use listsync_core::vocab::Kind;
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};

/// One unanswered list request: its kind, whether it carried a cursor, and the `list_changed`
/// of its group delivered while it was unanswered.
#[derive(Debug)]
struct Asking {
    kind: Kind,
    cursor: bool,
    told: u32,
}

/// What the network has seen, per connection.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    asking: HashMap<(u32, String), Asking>,
    /// The situations reached.
    pub(crate) reached: BTreeSet<Situation>,
}

fn parse(line: &[u8]) -> Option<Value> {
    serde_json::from_slice(line).ok()
}

fn list_kind(method: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.list_method() == method)
}

impl Seen {
    /// A line written on connection `conn` by the client (`up`) or the server.
    pub(crate) fn sent(&mut self, conn: u32, up: bool, line: &[u8]) {
        if !up {
            return;
        }
        let Some(v) = parse(line) else { return };
        let (Some(kind), Some(id)) = (
            v.get("method").and_then(Value::as_str).and_then(list_kind),
            v.get("id"),
        ) else {
            return;
        };
        let cursor = v
            .get("params")
            .and_then(|p| p.get("cursor"))
            .is_some_and(|c| !c.is_null());
        self.asking.insert(
            (conn, id.to_string()),
            Asking {
                kind,
                cursor,
                told: 0,
            },
        );
    }

    /// A `list_changed` the network will deliver twice.
    pub(crate) fn duplicated(&mut self) {
        self.reached
            .insert(Situation::DuplicateNotificationInFlight);
    }

    /// A line delivered on connection `conn` to the client (`!up`) or the server.
    pub(crate) fn delivered(&mut self, conn: u32, up: bool, line: &[u8]) {
        if up {
            return;
        }
        let Some(v) = parse(line) else { return };
        if let Some(method) = v.get("method").and_then(Value::as_str) {
            let group = Kind::covered_by_notification(method);
            if group.is_empty() {
                return;
            }
            for ((c, _), a) in self.asking.iter_mut() {
                if *c != conn || !group.contains(&a.kind) {
                    continue;
                }
                a.told += 1;
                self.reached.insert(Situation::NotifyDuringRefresh);
                if a.cursor {
                    self.reached.insert(Situation::NotifyMidWalk);
                }
                if a.told >= 2 {
                    self.reached.insert(Situation::BurstDuringRefresh);
                }
            }
            return;
        }
        let Some(id) = v.get("id") else { return };
        if let Some(a) = self.asking.remove(&(conn, id.to_string()))
            && a.cursor
            && v.get("error")
                .and_then(|e| e.get("code"))
                .and_then(Value::as_i64)
                == Some(-32602)
        {
            self.reached.insert(Situation::CursorRefusedAfterChange);
        }
    }

    /// Connection `conn` was cut: its unanswered requests never will be.
    pub(crate) fn cut(&mut self, conn: u32) {
        self.asking.retain(|(c, _), _| *c != conn);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(id: u32, cursor: Option<&str>) -> Vec<u8> {
        let params = cursor.map_or(
            serde_json::json!({}),
            |c| serde_json::json!({ "cursor": c }),
        );
        serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params
        }))
        .unwrap()
    }

    fn changed(method: &str) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({"jsonrpc": "2.0", "method": method})).unwrap()
    }

    #[test]
    fn notifications_during_a_walk_and_a_refused_cursor_are_seen() {
        let mut s = Seen::default();
        s.sent(0, true, &list(1, None));
        s.delivered(0, false, &changed("notifications/prompts/list_changed"));
        assert!(s.reached.is_empty(), "another group");
        s.delivered(0, false, &changed("notifications/tools/list_changed"));
        assert_eq!(s.reached, BTreeSet::from([Situation::NotifyDuringRefresh]));
        s.sent(1, true, &list(2, Some("c")));
        s.delivered(1, false, &changed("notifications/tools/list_changed"));
        assert!(s.reached.contains(&Situation::NotifyMidWalk));
        s.delivered(0, false, &changed("notifications/tools/list_changed"));
        assert!(s.reached.contains(&Situation::BurstDuringRefresh));
        let refused = serde_json::to_vec(&serde_json::json!({
            "jsonrpc": "2.0", "id": 2, "error": {"code": -32602, "message": "stale cursor"}
        }))
        .unwrap();
        s.delivered(1, false, &refused);
        assert!(s.reached.contains(&Situation::CursorRefusedAfterChange));
        s.cut(0);
        assert!(s.asking.is_empty());
    }
}
