//! The messages of one connection, in order, as the client and the server exchanged them: list
//! walks (a first-page list request starts one, a request for the cursor its last page gave
//! continues it, the pages answer it), `tools/call`s and their answers, the notifications the
//! server sent and the listen requests they acknowledge. [`ConnObserver::see`] says what each
//! message was as it comes ([`Sighting`]); [`ConnObserver::finish`] gives what the connection
//! showed ([`Observed`]).

use crate::items::NamedItem;
use crate::items::{listed_kind, notified_kind, page_items, subscription_id};
use crate::jsonrpc::{self, Frame, IdKey};
use listsync_core::vocab::Kind;
use serde_json::Value;
use std::collections::HashMap;

/// Which way a message went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Toward {
    /// Client to server.
    Server,
    /// Server to client.
    Client,
}

/// How a walk ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalkFate {
    /// Its last page (no `nextCursor`) arrived.
    Complete,
    /// A request of it was answered with an error (code) or a result without the kind's items,
    /// or the client cancelled it.
    Failed(Option<i64>),
    /// A page with a `nextCursor` arrived and the client never asked for that cursor.
    Abandoned,
    /// A request of it was still unanswered when the connection's messages ended.
    Open,
}

/// One walk over the pages of a list.
#[derive(Clone, Debug)]
pub struct ListWalk {
    /// Connection.
    pub conn: u32,
    /// Kind listed.
    pub kind: Kind,
    /// Seq of each request (the first is the first-page request).
    pub requests: Vec<u64>,
    /// Seq and items of each page received.
    pub pages: Vec<(u64, Vec<NamedItem>)>,
    /// How it ended.
    pub fate: WalkFate,
    /// The cursor the last page gave, if any.
    pub next_cursor: Option<String>,
    /// Seq where it ended (last response, or the cancellation), if it did.
    pub ended_at: Option<u64>,
}

impl ListWalk {
    /// Seq of the first-page request.
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
pub struct ToolCall {
    /// Connection.
    pub conn: u32,
    /// Tool name.
    pub tool: String,
    /// Seq of the request.
    pub request: u64,
    /// Seq of the response and whether it was a success (a result without `isError`).
    pub answer: Option<(u64, bool)>,
}

/// A server-to-client notification (a `list_changed`, a listen acknowledgement...).
#[derive(Clone, Debug)]
pub struct Received {
    /// Connection.
    pub conn: u32,
    /// Seq.
    pub seq: u64,
    /// The message.
    pub json: Value,
}

/// What one message was.
#[derive(Clone, Debug, PartialEq)]
pub enum Sighting {
    /// A list request: a first page (a new walk), the next page of walk `walk`, or (`walk`
    /// `None`) a cursor no walk was given.
    ListRequest {
        /// Kind listed.
        kind: Kind,
        /// The walk it belongs to (index in [`Observed::walks`]).
        walk: Option<usize>,
    },
    /// A result answering a list request: `items` of the kind's (none if the result has no such
    /// field), `more` when it gives a `nextCursor`. `walk` is `None` for the answer to a cursor
    /// no walk was given or to a cancelled request.
    ListPage {
        /// Kind listed.
        kind: Kind,
        /// The walk it belongs to.
        walk: Option<usize>,
        /// The items of the kind's field.
        items: Option<Vec<NamedItem>>,
        /// Whether it gives a `nextCursor`.
        more: bool,
    },
    /// A `list_changed` the server sent, with the subscription id of its listen stream if any.
    ListChanged {
        /// The kind it announces.
        kind: Kind,
        /// Its `_meta` subscription id.
        subscription: Option<Value>,
    },
    /// Anything else.
    Other,
}

/// What one connection showed.
#[derive(Clone, Debug, Default)]
pub struct Observed {
    /// Walks, by first-page request order.
    pub walks: Vec<ListWalk>,
    /// Tool calls.
    pub calls: Vec<ToolCall>,
    /// Server-to-client notifications.
    pub received: Vec<Received>,
    /// Whether the client sent `subscriptions/listen` (2026-07-28).
    pub listened: bool,
    /// Requests unanswered at the end.
    pub unanswered: usize,
    /// Caveats, each with the seq of the message it is about (messages that are not JSON-RPC,
    /// cursor requests of no walk).
    pub notes: Vec<(u64, String)>,
}

/// A request waiting for its answer.
enum Req {
    /// A list request of a walk (or of none: a cursor no walk was given).
    List(Kind, Option<usize>),
    /// A `tools/call`.
    Call(usize),
    /// A `subscriptions/listen`: its stream stays open by design, so its acknowledgement
    /// answers it.
    Listen,
    /// A request the client cancelled (a list request's kind): no answer is expected.
    Cancelled(Option<Kind>),
    Other,
}

/// Follows the messages of one connection.
pub struct ConnObserver {
    conn: u32,
    seen: Observed,
    pending: HashMap<IdKey, Req>,
}

impl ConnObserver {
    /// An observer of connection `conn` (the number its walks, calls and notifications carry).
    pub fn new(conn: u32) -> Self {
        ConnObserver {
            conn,
            seen: Observed::default(),
            pending: HashMap::new(),
        }
    }

    /// What has been observed so far.
    pub fn observed(&self) -> &Observed {
        &self.seen
    }

    /// The next message, `seq` naming it (a log line, a timeline record).
    pub fn see(&mut self, seq: u64, toward: Toward, v: &Value) -> Sighting {
        match (toward, jsonrpc::classify(v)) {
            (Toward::Server, Frame::Request { id, method }) => self.request(seq, id, method, v),
            (Toward::Client, Frame::Response { id, error }) => self.response(seq, &id, error, v),
            (
                Toward::Server,
                Frame::Notification {
                    method: "notifications/cancelled",
                },
            ) => {
                self.cancelled(seq, v);
                Sighting::Other
            }
            (Toward::Client, Frame::Notification { method }) => self.notification(seq, method, v),
            (_, Frame::Invalid(why)) => {
                self.seen
                    .notes
                    .push((seq, format!("JSON but not JSON-RPC ({why})")));
                Sighting::Other
            }
            _ => Sighting::Other,
        }
    }

    fn request(&mut self, seq: u64, id: IdKey, method: &str, v: &Value) -> Sighting {
        let (req, sighting) = if let Some(kind) = listed_kind(method) {
            let walk = self.list_request(seq, kind, v);
            (Req::List(kind, walk), Sighting::ListRequest { kind, walk })
        } else if method == "tools/call" {
            let tool = jsonrpc::params(v)
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned();
            self.seen.calls.push(ToolCall {
                conn: self.conn,
                tool,
                request: seq,
                answer: None,
            });
            (Req::Call(self.seen.calls.len() - 1), Sighting::Other)
        } else if method == "subscriptions/listen" {
            self.seen.listened = true;
            (Req::Listen, Sighting::Other)
        } else {
            (Req::Other, Sighting::Other)
        };
        self.pending.insert(id, req);
        sighting
    }

    /// The walk a list request starts or continues.
    fn list_request(&mut self, seq: u64, kind: Kind, v: &Value) -> Option<usize> {
        let cursor = jsonrpc::params(v)
            .get("cursor")
            .filter(|c| !c.is_null())
            .map(cursor_text);
        let walks = &mut self.seen.walks;
        let Some(c) = cursor else {
            walks.push(ListWalk {
                conn: self.conn,
                kind,
                requests: vec![seq],
                pages: Vec::new(),
                fate: WalkFate::Open,
                next_cursor: None,
                ended_at: None,
            });
            return Some(walks.len() - 1);
        };
        let found = walks.iter().rposition(|x| {
            x.kind == kind
                && x.fate == WalkFate::Open
                && x.next_cursor.as_deref() == Some(c.as_str())
        });
        match found {
            Some(i) => {
                walks[i].requests.push(seq);
                walks[i].next_cursor = None;
            }
            None => self
                .seen
                .notes
                .push((seq, format!("{kind} list with a cursor no walk was given"))),
        }
        found
    }

    fn response(&mut self, seq: u64, id: &IdKey, error: Option<i64>, v: &Value) -> Sighting {
        match self.pending.remove(id) {
            Some(Req::List(kind, walk)) => {
                let result = jsonrpc::result(v);
                let items = page_items(kind, result);
                let next_cursor = result
                    .get("nextCursor")
                    .filter(|c| !c.is_null())
                    .map(cursor_text);
                if let Some(i) = walk {
                    let walk = &mut self.seen.walks[i];
                    match (error, &items) {
                        (None, Some(items)) => {
                            walk.pages.push((seq, items.clone()));
                            walk.next_cursor.clone_from(&next_cursor);
                            if walk.next_cursor.is_none() {
                                walk.fate = WalkFate::Complete;
                                walk.ended_at = Some(seq);
                            }
                        }
                        (code, _) => {
                            walk.fate = WalkFate::Failed(code);
                            walk.ended_at = Some(seq);
                        }
                    }
                }
                page(v, kind, walk, items, next_cursor.is_some())
            }
            Some(Req::Cancelled(Some(kind))) => {
                let result = jsonrpc::result(v);
                let more = result.get("nextCursor").is_some_and(|c| !c.is_null());
                page(v, kind, None, page_items(kind, result), more)
            }
            Some(Req::Call(i)) => {
                let r = jsonrpc::result(v);
                let ok = error.is_none()
                    && !r.is_null()
                    && r.get("isError").and_then(Value::as_bool) != Some(true);
                self.seen.calls[i].answer = Some((seq, ok));
                Sighting::Other
            }
            Some(Req::Listen | Req::Cancelled(None) | Req::Other) | None => Sighting::Other,
        }
    }

    /// A cancelled request gets no response: its walk ends there.
    fn cancelled(&mut self, seq: u64, v: &Value) {
        let Some(id) = jsonrpc::params(v).get("requestId").map(jsonrpc::id_key) else {
            return;
        };
        let Some(req) = self.pending.get_mut(&id) else {
            return;
        };
        let kind = match req {
            Req::List(kind, walk) => {
                if let Some(i) = walk {
                    self.seen.walks[*i].fate = WalkFate::Failed(None);
                    self.seen.walks[*i].ended_at = Some(seq);
                }
                Some(*kind)
            }
            _ => None,
        };
        *req = Req::Cancelled(kind);
    }

    fn notification(&mut self, seq: u64, method: &str, v: &Value) -> Sighting {
        if method == "notifications/subscriptions/acknowledged" {
            // The listen it acknowledges (named by its subscription id, else every listen of
            // the connection) is answered: its open stream is not an unanswered request.
            let sub = subscription_id(v).map(jsonrpc::id_key);
            self.pending.retain(|id, req| {
                !(matches!(req, Req::Listen) && sub.as_ref().is_none_or(|s| s == id))
            });
        }
        self.seen.received.push(Received {
            conn: self.conn,
            seq,
            json: v.clone(),
        });
        match notified_kind(method) {
            Some(kind) => Sighting::ListChanged {
                kind,
                subscription: subscription_id(v).cloned(),
            },
            None => Sighting::Other,
        }
    }

    /// What the connection showed: walks left waiting for a cursor the client never asked
    /// for are abandoned; requests still pending (cancelled ones aside) are unanswered.
    pub fn finish(self) -> Observed {
        let mut seen = self.seen;
        for walk in &mut seen.walks {
            if walk.fate == WalkFate::Open && walk.next_cursor.is_some() {
                walk.fate = WalkFate::Abandoned;
                walk.ended_at = walk.pages.last().map(|(s, _)| *s);
            }
        }
        seen.unanswered = self
            .pending
            .values()
            .filter(|r| !matches!(r, Req::Cancelled(_)))
            .count();
        seen
    }
}

/// The page a result answering a list request is (none for an error response).
fn page(
    v: &Value,
    kind: Kind,
    walk: Option<usize>,
    items: Option<Vec<NamedItem>>,
    more: bool,
) -> Sighting {
    if v.get("result").is_none() {
        return Sighting::Other;
    }
    Sighting::ListPage {
        kind,
        walk,
        items,
        more,
    }
}

/// A cursor as text (a string cursor as itself, any other JSON as its text).
fn cursor_text(c: &Value) -> String {
    c.as_str().map_or_else(|| c.to_string(), str::to_owned)
}
