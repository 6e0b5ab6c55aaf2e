//! Message matching: what the proxy holds during a replay (the messages the model tracks), the
//! *shape* that identifies a message across the model and the wire (method, cursor or not, tool
//! name; a response through the real-id map), and the greedy FIFO pairing of the shadow world's
//! in-flight messages with the real held ones, with what is missing and what was not predicted.

use crate::jsonrpc::{self, Frame};
use crate::proxy::{Policy, listed_kind, notified_kind};
use crate::timeline::{Dir, HubState};
use listsync_core::vocab::KindSet;
use listsync_core::wire::{ClientMsg, Notification, ReqId, Request, ServerMsg};
use listsync_core::world::{Link, World};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// The proxy policy of a replay: hold what the model tracks.
pub fn tracked_policy(kinds: KindSet) -> Policy {
    let tracked_request = move |v: &Value| -> bool {
        let m = v.get("method").and_then(Value::as_str).unwrap_or_default();
        match m {
            "initialize" | "subscriptions/listen" | "tools/call" => true,
            _ => listed_kind(m).is_some_and(|k| kinds.contains(k)),
        }
    };
    let tracked_notification = move |v: &Value| -> bool {
        let m = v.get("method").and_then(Value::as_str).unwrap_or_default();
        m == "notifications/subscriptions/acknowledged"
            || notified_kind(m)
                .is_some_and(|k| k.notification_group().iter().any(|g| kinds.contains(*g)))
    };
    let req = Arc::new(tracked_request);
    Policy {
        hold_request: req.clone(),
        hold_response: req,
        hold_notification: Arc::new(tracked_notification),
    }
}

/// The shape that identifies a message across the model and the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Shape {
    Request {
        method: &'static str,
        cursor: bool,
        tool: Option<String>,
    },
    Response {
        id: Option<String>,
    },
    Notification {
        method: &'static str,
    },
}

impl Shape {
    pub(super) fn describe(&self) -> String {
        match self {
            Shape::Request {
                method,
                cursor,
                tool,
            } => format!(
                "{method}{}{}",
                if *cursor { " (with cursor)" } else { "" },
                tool.as_deref().map(|t| format!(" {t}")).unwrap_or_default()
            ),
            Shape::Response { id: Some(id) } => format!("the response to request {id}"),
            Shape::Response { id: None } => "a response to a request the client never sent".into(),
            Shape::Notification { method } => (*method).to_owned(),
        }
    }

    fn matches(&self, v: &Value) -> bool {
        match (self, jsonrpc::classify(v)) {
            (
                Shape::Request {
                    method,
                    cursor,
                    tool,
                },
                Frame::Request { method: m, .. },
            ) => {
                *method == m
                    && jsonrpc::has_cursor(v) == *cursor
                    && tool.as_deref().is_none_or(|t| {
                        jsonrpc::params(v).get("name").and_then(Value::as_str) == Some(t)
                    })
            }
            (Shape::Response { id: Some(id) }, Frame::Response { id: r, .. }) => *id == r,
            (Shape::Notification { method }, Frame::Notification { method: m }) => *method == m,
            _ => false,
        }
    }
}

fn up_shape(m: &ClientMsg) -> Shape {
    Shape::Request {
        method: m.req.method(),
        cursor: matches!(
            &m.req,
            Request::List {
                cursor: Some(_),
                ..
            }
        ),
        tool: match &m.req {
            Request::CallTool { name, .. } => Some(name.to_string()),
            _ => None,
        },
    }
}

fn down_shape(m: &ServerMsg, ids: &HashMap<ReqId, String>) -> Shape {
    match m {
        ServerMsg::Response { id, .. } => Shape::Response {
            id: ids.get(id).cloned(),
        },
        ServerMsg::Notification(n) => Shape::Notification {
            method: match n {
                Notification::ListChanged { kind, .. } => kind.list_changed_method(),
                other => other.method(),
            },
        },
    }
}

/// The model's in-flight messages of one direction, with their shapes, in link order.
fn model_in_flight(
    world: &World,
    dir: Dir,
    ids: &HashMap<ReqId, String>,
) -> Vec<(Link, usize, Shape)> {
    let l = &world.links[0];
    match dir {
        Dir::Up => {
            l.up.iter()
                .enumerate()
                .map(|(i, m)| (Link::Up, i, up_shape(m)))
                .collect()
        }
        Dir::Down => l
            .down
            .iter()
            .enumerate()
            .map(|(i, m)| (Link::Down, i, down_shape(m, ids)))
            .chain(
                l.stream
                    .iter()
                    .enumerate()
                    .map(|(i, m)| (Link::Stream, i, down_shape(m, ids))),
            )
            .collect(),
    }
}

/// Greedy FIFO matching of model in-flight messages to real held ones.
pub(super) struct Matching {
    /// (link, index in link) → seq of the real held line.
    pub(super) pairs: HashMap<(Link, usize), u64>,
    /// Model messages with no real counterpart yet.
    pub(super) missing: Vec<Shape>,
    /// Real held lines the model does not have in flight.
    pub(super) unpredicted: Vec<(u64, String)>,
}

pub(super) fn match_links(world: &World, st: &HubState, ids: &HashMap<ReqId, String>) -> Matching {
    let mut m = Matching {
        pairs: HashMap::new(),
        missing: Vec::new(),
        unpredicted: Vec::new(),
    };
    for dir in [Dir::Up, Dir::Down] {
        let mut used = vec![false; st.held.len()];
        for (link, i, shape) in model_in_flight(world, dir, ids) {
            let found = st
                .held
                .iter()
                .enumerate()
                .find(|(j, h)| !used[*j] && h.dir == dir && shape.matches(&h.json));
            match found {
                Some((j, h)) => {
                    used[j] = true;
                    m.pairs.insert((link, i), h.seq);
                }
                None => m.missing.push(shape),
            }
        }
        for (j, h) in st.held.iter().enumerate() {
            if h.dir == dir && !used[j] {
                m.unpredicted.push((h.seq, jsonrpc::summary(&h.json)));
            }
        }
    }
    m
}
