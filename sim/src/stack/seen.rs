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
//! | `call_refused_as_gone` | a -32602 answering a `tools/call` that says the tool is unknown (`data.reason`) |
//! | `call_failed_otherwise` | any other error answering a `tools/call` but a `schema_changed` refusal (an internal error the network injects, among others) |
//!
//! Responses cannot overtake one another on a byte stream; the environment's removals, schema
//! changes and a client's approvals and held calls are not on the wire; so the other situations
//! are not counted at this level (`call_refused_as_gone` is counted for every unknown-tool
//! refusal: whether the client's list still shows the tool is not on the wire either).

use listsync_core::situation::Situation;
use listsync_core::vocab::Kind;
use serde::Deserialize;
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

/// What an unanswered request asked: a page of a list, or a tool call.
#[derive(Debug)]
enum Ask {
    List(Asking),
    Call,
}

/// What the network has seen, per connection.
#[derive(Debug, Default)]
pub(crate) struct Seen {
    asking: HashMap<(u32, String), Ask>,
    /// The situations reached.
    pub(crate) reached: BTreeSet<Situation>,
}

/// The members of a JSON-RPC line the network looks at, each as `Value::get` finds it (a
/// member set to `null` is present); the rest (a page's items, a call's result) is skipped
/// unread.
#[derive(Deserialize)]
struct Line {
    #[serde(default, deserialize_with = "present")]
    method: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    params: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    error: Option<Value>,
}

/// A member that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// The line's members, if it is a JSON object (a derived struct would also read an array).
fn parse(line: &[u8]) -> Option<Line> {
    let object = line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'{');
    object.then(|| serde_json::from_slice(line).ok()).flatten()
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
        let (Some(method), Some(id)) = (v.method.as_ref().and_then(Value::as_str), v.id.as_ref())
        else {
            return;
        };
        if method == "tools/call" {
            self.asking.insert((conn, id.to_string()), Ask::Call);
            return;
        }
        let Some(kind) = list_kind(method) else {
            return;
        };
        let cursor = v
            .params
            .as_ref()
            .and_then(|p| p.get("cursor"))
            .is_some_and(|c| !c.is_null());
        self.asking.insert(
            (conn, id.to_string()),
            Ask::List(Asking {
                kind,
                cursor,
                told: 0,
            }),
        );
    }

    /// A `list_changed` the network will deliver twice.
    pub(crate) fn duplicated(&mut self) {
        self.reached
            .insert(Situation::DuplicateNotificationInFlight);
    }

    /// A line delivered on connection `conn` to the client (`!up`) or the server.
    pub(crate) fn delivered(&mut self, conn: u32, up: bool, line: &[u8]) {
        // With nothing asked on the connection, no line delivered to it counts: it is not read.
        if up || !self.asking.keys().any(|(c, _)| *c == conn) {
            return;
        }
        let Some(v) = parse(line) else { return };
        if let Some(method) = v.method.as_ref().and_then(Value::as_str) {
            let group = Kind::covered_by_notification(method);
            if group.is_empty() {
                return;
            }
            for ((c, _), a) in self.asking.iter_mut() {
                let Ask::List(a) = a else { continue };
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
        let Some(id) = v.id.as_ref() else { return };
        let Some(error) = v.error.as_ref() else {
            self.asking.remove(&(conn, id.to_string()));
            return;
        };
        let code = error.get("code").and_then(Value::as_i64);
        match self.asking.remove(&(conn, id.to_string())) {
            Some(Ask::List(a)) if a.cursor && code == Some(-32602) => {
                self.reached.insert(Situation::CursorRefusedAfterChange);
            }
            Some(Ask::Call) => {
                let reason = error
                    .get("data")
                    .and_then(|d| d.get("reason"))
                    .and_then(Value::as_str);
                match (code, reason) {
                    (Some(-32602), Some("unknown_tool")) => {
                        self.reached.insert(Situation::CallRefusedAsGone);
                    }
                    // News of a change too, but not the one these situations are about.
                    (Some(-32602), Some("schema_changed")) => {}
                    _ => {
                        self.reached.insert(Situation::CallFailedOtherwise);
                    }
                }
            }
            _ => {}
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

    #[test]
    fn refused_and_failed_calls_are_told_apart() {
        let call = |id: u32| {
            serde_json::to_vec(&serde_json::json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "a"}
            }))
            .unwrap()
        };
        let error = |id: u32, code: i64, reason: Option<&str>| {
            let data = reason.map(|r| serde_json::json!({ "reason": r }));
            serde_json::to_vec(&serde_json::json!({
                "jsonrpc": "2.0", "id": id,
                "error": {"code": code, "message": "no", "data": data}
            }))
            .unwrap()
        };
        let mut s = Seen::default();
        s.sent(0, true, &call(1));
        s.delivered(0, false, &error(1, -32602, Some("schema_changed")));
        assert!(
            s.reached.is_empty(),
            "a schema change is news, not a failure"
        );
        s.sent(0, true, &call(3));
        s.delivered(0, false, &error(3, -32603, None));
        assert_eq!(s.reached, BTreeSet::from([Situation::CallFailedOtherwise]));
        s.sent(0, true, &call(2));
        s.delivered(0, false, &error(2, -32602, Some("unknown_tool")));
        assert!(s.reached.contains(&Situation::CallRefusedAsGone));
        // An answer to no call we saw counts nothing.
        let mut s = Seen::default();
        s.delivered(0, false, &error(9, -32603, None));
        assert!(s.reached.is_empty());
    }
}
