//! What a session log shows on the wire, before any judging: per connection, the list walks
//! (a first-page request of a kind and the cursor requests that follow its `nextCursor`s, with
//! each page's items), the `tools/call`s and how they were answered, the `list_changed`
//! notifications and listen acknowledgements the client received, and the requests left
//! unanswered. Framing and item extraction are the harness's ([`listsync_harness::jsonrpc`],
//! [`listsync_harness::proxy`]), so a message means the same here as in a replay.

use crate::log::{LogDir, LogEntry, What};
use listsync_core::vocab::Kind;
use listsync_harness::jsonrpc::{self, Frame, IdKey};
use listsync_harness::proxy::{listed_kind, page_items};
use listsync_harness::timeline::NamedItem;
use serde_json::Value;
use std::collections::HashMap;

/// How a walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Its last page (no `nextCursor`) arrived.
    Complete,
    /// A request of it was answered with an error (code) or a result without the kind's items.
    Failed(Option<i64>),
    /// A page with a `nextCursor` arrived and the client never asked for that cursor.
    Abandoned,
    /// A request of it was still unanswered when the log ended.
    Open,
}

/// One walk over the pages of a list.
#[derive(Clone, Debug)]
pub struct Walk {
    /// Connection.
    pub conn: u32,
    /// Kind listed.
    pub kind: Kind,
    /// Entry seq of each request (the first is the first-page request).
    pub requests: Vec<u64>,
    /// Entry seq and items of each page received.
    pub pages: Vec<(u64, Vec<NamedItem>)>,
    /// How it ended.
    pub fate: Fate,
    /// The cursor the last page gave, if any.
    pub next_cursor: Option<String>,
    /// Entry seq where it ended (last response), if it did.
    pub ended_at: Option<u64>,
}

impl Walk {
    /// Entry seq of the first-page request.
    pub fn start(&self) -> u64 {
        self.requests[0]
    }

    /// All items received, in order.
    pub fn items(&self) -> Vec<NamedItem> {
        self.pages
            .iter()
            .flat_map(|(_, i)| i.iter().cloned())
            .collect()
    }

    /// A name that appears more than once across its pages.
    pub fn duplicate(&self) -> Option<String> {
        let mut seen = std::collections::HashSet::new();
        self.pages
            .iter()
            .flat_map(|(_, i)| i.iter())
            .find(|i| !seen.insert(i.name.as_str()))
            .map(|i| i.name.clone())
    }
}

/// A `tools/call` and its answer.
#[derive(Clone, Debug)]
pub struct Call {
    /// Connection.
    pub conn: u32,
    /// Tool name.
    pub tool: String,
    /// Entry seq of the request.
    pub request: u64,
    /// Entry seq of the response and whether it was a success (a result without `isError`).
    pub answer: Option<(u64, bool)>,
}

/// A server-to-client notification or acknowledgement the client received.
#[derive(Clone, Debug)]
pub struct Delivered {
    /// Connection.
    pub conn: u32,
    /// Entry seq.
    pub seq: u64,
    /// The message.
    pub json: Value,
}

/// Everything the audit reads off the wire.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    /// Walks, by first-page request order.
    pub walks: Vec<Walk>,
    /// Tool calls.
    pub calls: Vec<Call>,
    /// Server notifications delivered to a client.
    pub delivered: Vec<Delivered>,
    /// Connections that sent `subscriptions/listen` (2026-07-28).
    pub listened: Vec<u32>,
    /// Per connection: the entry seq it closed at, if it did.
    pub closed: HashMap<u32, u64>,
    /// Per connection: requests unanswered at the end of the log.
    pub unanswered: HashMap<u32, usize>,
    /// Connections in order of their first entry.
    pub conns: Vec<u32>,
    /// Caveats (entries that are not JSON-RPC, cursor requests of no walk...).
    pub notes: Vec<String>,
}

enum Req {
    List(usize),
    Call(usize),
    /// A `subscriptions/listen`: its stream stays open by design, so its acknowledgement
    /// answers it.
    Listen,
    Other,
}

/// Reads the wire out of a log's entries.
pub fn observe(entries: &[LogEntry]) -> Wire {
    let mut w = Wire::default();
    let mut pending: HashMap<(u32, IdKey), Req> = HashMap::new();
    for e in entries {
        if !w.conns.contains(&e.conn) {
            w.conns.push(e.conn);
        }
        let (dir, v) = match &e.what {
            What::Msg { dir, json } => (*dir, json),
            What::Close { .. } => {
                w.closed.insert(e.conn, e.seq);
                continue;
            }
            What::Invalid { why, .. } => {
                w.notes.push(format!(
                    "line {}: not a message ({why})",
                    crate::log::line_of(e.seq)
                ));
                continue;
            }
            What::Open { .. } => continue,
        };
        match (dir, jsonrpc::classify(v)) {
            (LogDir::ClientToServer, Frame::Request { id, method }) => {
                let req = if let Some(kind) = listed_kind(method) {
                    let cursor = jsonrpc::params(v)
                        .get("cursor")
                        .filter(|c| !c.is_null())
                        .map(cursor_text);
                    match cursor {
                        None => {
                            w.walks.push(Walk {
                                conn: e.conn,
                                kind,
                                requests: vec![e.seq],
                                pages: Vec::new(),
                                fate: Fate::Open,
                                next_cursor: None,
                                ended_at: None,
                            });
                            Req::List(w.walks.len() - 1)
                        }
                        Some(c) => match w.walks.iter().rposition(|x| {
                            x.conn == e.conn
                                && x.kind == kind
                                && x.fate == Fate::Open
                                && x.next_cursor.as_deref() == Some(c.as_str())
                        }) {
                            Some(i) => {
                                w.walks[i].requests.push(e.seq);
                                w.walks[i].next_cursor = None;
                                Req::List(i)
                            }
                            None => {
                                w.notes.push(format!(
                                    "line {}: {kind} list with a cursor no walk was given",
                                    crate::log::line_of(e.seq)
                                ));
                                Req::Other
                            }
                        },
                    }
                } else if method == "tools/call" {
                    let tool = jsonrpc::params(v)
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned();
                    w.calls.push(Call {
                        conn: e.conn,
                        tool,
                        request: e.seq,
                        answer: None,
                    });
                    Req::Call(w.calls.len() - 1)
                } else if method == "subscriptions/listen" {
                    if !w.listened.contains(&e.conn) {
                        w.listened.push(e.conn);
                    }
                    Req::Listen
                } else {
                    Req::Other
                };
                pending.insert((e.conn, id), req);
            }
            (LogDir::ServerToClient, Frame::Response { id, error }) => {
                match pending.remove(&(e.conn, id)) {
                    Some(Req::List(i)) => {
                        let walk = &mut w.walks[i];
                        let result = jsonrpc::result(v);
                        match (error, page_items(walk.kind, result)) {
                            (None, Some(items)) => {
                                walk.pages.push((e.seq, items));
                                walk.next_cursor = result
                                    .get("nextCursor")
                                    .filter(|c| !c.is_null())
                                    .map(cursor_text);
                                if walk.next_cursor.is_none() {
                                    walk.fate = Fate::Complete;
                                    walk.ended_at = Some(e.seq);
                                }
                            }
                            (code, _) => {
                                walk.fate = Fate::Failed(code);
                                walk.ended_at = Some(e.seq);
                            }
                        }
                    }
                    Some(Req::Call(i)) => {
                        let r = jsonrpc::result(v);
                        let ok = error.is_none()
                            && !r.is_null()
                            && r.get("isError").and_then(Value::as_bool) != Some(true);
                        w.calls[i].answer = Some((e.seq, ok));
                    }
                    Some(Req::Listen | Req::Other) | None => {}
                }
            }
            (
                LogDir::ClientToServer,
                Frame::Notification {
                    method: "notifications/cancelled",
                },
            ) => {
                // A cancelled request gets no response: its walk ends there.
                let id = jsonrpc::params(v).get("requestId").map(jsonrpc::id_key);
                if let Some(Req::List(i)) = id.and_then(|id| pending.remove(&(e.conn, id))) {
                    w.walks[i].fate = Fate::Failed(None);
                    w.walks[i].ended_at = Some(e.seq);
                }
            }
            (LogDir::ServerToClient, Frame::Notification { method }) => {
                if method == "notifications/subscriptions/acknowledged" {
                    // The listen it acknowledges (named by its subscription id, else every
                    // listen of the connection) is answered: its open stream is not an
                    // unanswered request.
                    let sub = jsonrpc::params(v)
                        .get("_meta")
                        .and_then(|m| m.get("io.modelcontextprotocol/subscriptionId"))
                        .map(jsonrpc::id_key);
                    pending.retain(|(conn, id), req| {
                        !(*conn == e.conn
                            && matches!(req, Req::Listen)
                            && sub.as_ref().is_none_or(|s| s == id))
                    });
                }
                w.delivered.push(Delivered {
                    conn: e.conn,
                    seq: e.seq,
                    json: v.clone(),
                });
            }
            (_, Frame::Invalid(why)) => w.notes.push(format!(
                "line {}: JSON but not JSON-RPC ({why})",
                crate::log::line_of(e.seq)
            )),
            _ => {}
        }
    }
    for walk in &mut w.walks {
        if walk.fate == Fate::Open && walk.next_cursor.is_some() {
            walk.fate = Fate::Abandoned;
            walk.ended_at = walk.pages.last().map(|(s, _)| *s);
        }
    }
    for (conn, _) in pending.keys() {
        *w.unanswered.entry(*conn).or_default() += 1;
    }
    w
}

/// A cursor as text (a string cursor as itself, any other JSON as its text).
fn cursor_text(c: &Value) -> String {
    c.as_str().map_or_else(|| c.to_string(), str::to_owned)
}
