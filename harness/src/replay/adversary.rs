//! Adaptive replay: a trace as the adversary's schedule, posed to an implementation that makes
//! its own choices.
//!
//! A counterexample mixes two kinds of steps: the **adversary's** (the administrator's batches,
//! the moments the network hands a message on, duplicates and losses, scripted tool calls) and
//! the **implementation's** (which requests a client sends in reply, when; which notifications a
//! server sends). Replaying it against another implementation keeps the first and lets the
//! implementation make the second. So every message a trace step moves is named by *identity*
//! instead of by its position on a link ([`Id`]): "the client's 2nd `tools/list` without a
//! cursor", "the answer to it", "the server's 1st `notifications/tools/list_changed`", the same
//! names on the model's links (labelled here by running the trace in its own world) and on the
//! wire (labelled from the proxy's records in arrival order). A [`Move`] releases, duplicates or
//! drops the held message of its identity; when the implementation never sends it (it took
//! another path), the move is skipped and said so, and every later move about its answer is
//! skipped with it. After the last move everything still held is released and the run settles.
//!
//! The race is **posed** when the run reached, as seen on the wire, one of the situations the
//! trace reached in its own world (a `list_changed` held while the client's list request is
//! unanswered, and so on: [`observed`]); a trace whose situations the wire cannot show is posed
//! when every adversary move was carried out. docs/trace-format.md, "Adaptive replay", is the
//! user's account of this.

use crate::jsonrpc::{self, Frame};
use crate::proxy::{listed_kind, notified_kind};
use crate::timeline::{Action, Body, Dir, HubState, LineFate};
use listsync_core::history::Event;
use listsync_core::machine::ClientMachine;
use listsync_core::record::Log;
use listsync_core::situation::Situation;
use listsync_core::tape::TapedClient;
use listsync_core::trace::Trace;
use listsync_core::vocab::Kind;
use listsync_core::wire::{ClientMsg, Notification, ReqId, Request, ServerMsg};
use listsync_core::world::{Link, Step, World};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

/// A message named by what it is rather than where it sits on a link.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// The client's `n`-th request (1-based) of a shape (method, cursor or not, tool name).
    Request {
        /// The shape, as text (`tools/list`, `tools/list (with cursor)`, `tools/call t1`).
        shape: String,
        /// Its rank among the client's requests of that shape.
        n: u32,
    },
    /// The answer to a request.
    Response {
        /// The request.
        to: Box<Id>,
    },
    /// A notification of a method: two of one method carry the same (a `list_changed` says
    /// only that a list changed), so a move takes the oldest held one.
    Notification {
        /// JSON-RPC method.
        method: String,
    },
}

impl Id {
    /// The request this is, or answers.
    pub fn request(&self) -> Option<&Id> {
        match self {
            Id::Request { .. } => Some(self),
            Id::Response { to } => Some(to),
            Id::Notification { .. } => None,
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let nth = |n: u32| match n {
            1 => "1st".to_owned(),
            2 => "2nd".to_owned(),
            3 => "3rd".to_owned(),
            n => format!("{n}th"),
        };
        match self {
            Id::Request { shape, n } => write!(f, "the client's {} {shape}", nth(*n)),
            Id::Response { to } => write!(f, "the answer to {to}"),
            Id::Notification { method } => write!(f, "the oldest {method} held"),
        }
    }
}

/// One step of the adversary's schedule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Move {
    /// Hand the held message on (a request to the server, an answer or notification to the
    /// client).
    Release(Id),
    /// The network delivers a held notification twice.
    Duplicate(Id),
    /// The network loses a held notification.
    Drop(Id),
    /// A step that moves no message: a batch, a parked commit's release, a tool call.
    Act(Step),
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Move::Release(id) => write!(f, "release {id}"),
            Move::Duplicate(id) => write!(f, "duplicate {id}"),
            Move::Drop(id) => write!(f, "lose {id}"),
            Move::Act(step) => write!(f, "{step}"),
        }
    }
}

/// What the trace's client did in reply to a move (in the trace's world, at once): the
/// implementation is given the time to do the same, or to show that it does not.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reaction {
    /// The requests it sent.
    pub requests: Vec<Id>,
    /// Whether it published a list.
    pub publishes: bool,
    /// (a batch or a commit) The notifications the trace's server sent because of it: the
    /// replay waits for the implementation's to reach the proxy before the next move, so that
    /// a notification the trace holds during a walk is held during the walk on the wire too.
    pub notifications: usize,
}

/// A trace as the adversary's schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    /// Per trace step (by index): its move and the trace's client's reaction to it.
    pub moves: Vec<(usize, Move, Reaction)>,
    /// The situations the trace's own world reached.
    pub situations: BTreeSet<Situation>,
}

/// The situations the wire can show ([`observed`]).
pub const OBSERVABLE: [Situation; 5] = [
    Situation::NotifyDuringRefresh,
    Situation::NotifyMidWalk,
    Situation::BurstDuringRefresh,
    Situation::CursorRefusedAfterChange,
    Situation::DuplicateNotificationInFlight,
];

/// The shape of a request as text, from the model's message.
fn model_shape(m: &ClientMsg) -> String {
    let cursor = matches!(
        &m.req,
        Request::List {
            cursor: Some(_),
            ..
        }
    );
    let tool = match &m.req {
        Request::CallTool { name, .. } => Some(name.to_string()),
        _ => None,
    };
    shape_text(m.req.method(), cursor, tool.as_deref())
}

/// The shape of a request as text, from the wire.
fn wire_shape(v: &Value, method: &str) -> String {
    let tool = (method == "tools/call")
        .then(|| jsonrpc::params(v).get("name").and_then(Value::as_str))
        .flatten();
    shape_text(method, jsonrpc::has_cursor(v), tool)
}

fn shape_text(method: &str, cursor: bool, tool: Option<&str>) -> String {
    let mut s = method.to_owned();
    if cursor {
        s.push_str(" (with cursor)");
    }
    if let Some(t) = tool {
        s.push(' ');
        s.push_str(t);
    }
    s
}

fn model_method(n: &Notification) -> String {
    match n {
        Notification::ListChanged { kind, .. } => kind.list_changed_method().to_owned(),
        other => other.method().to_owned(),
    }
}

/// The identities of the client's requests, by the model's request id, ranked as sent.
#[derive(Default)]
struct Labeller {
    requests: HashMap<String, u32>,
    by_req: HashMap<ReqId, Id>,
}

impl Labeller {
    /// Labels the requests that appeared on the request link since the last call (the link
    /// keeps the order they were sent in).
    fn catch_up<C: ClientMachine>(&mut self, w: &World<C>) {
        for m in &w.links[0].up {
            if !self.by_req.contains_key(&m.id) {
                let shape = model_shape(m);
                let rank = self.requests.entry(shape.clone()).or_default();
                *rank += 1;
                self.by_req.insert(m.id, Id::Request { shape, n: *rank });
            }
        }
    }

    fn server_label(&self, m: &ServerMsg) -> Result<Id, String> {
        match m {
            ServerMsg::Response { id, .. } => {
                let to = self
                    .by_req
                    .get(id)
                    .cloned()
                    .ok_or_else(|| format!("an answer to a request never seen ({id:?})"))?;
                Ok(Id::Response { to: Box::new(to) })
            }
            ServerMsg::Notification(n) => Ok(Id::Notification {
                method: model_method(n),
            }),
        }
    }

    /// The identity of the message at `index` of `link`.
    fn at<C: ClientMachine>(&self, w: &World<C>, link: Link, index: usize) -> Result<Id, String> {
        let l = &w.links[0];
        match link {
            Link::Up => l.up.get(index).map(|m| self.by_req[&m.id].clone()),
            Link::Down => l
                .down
                .get(index)
                .map(|m| self.server_label(m))
                .transpose()?,
            Link::Stream => l
                .stream
                .get(index)
                .map(|m| self.server_label(m))
                .transpose()?,
        }
        .ok_or_else(|| format!("nothing at {link:?}[{index}]"))
    }
}

/// The adversary's schedule of `trace`: its steps run in the trace's own world, each message
/// step named by the identity of the message it moves. Err: a step the adaptive replay cannot
/// name (then the trace is replayed in lockstep or not at all). A trace of a client machine
/// written outside listsync runs with its clients playing their tapes ([`TapedClient`]).
pub fn schedule(trace: &Trace) -> Result<Schedule, String> {
    match &trace.machine {
        None => schedule_in(trace, World::new(&trace.scenario), |_| None),
        Some(_) => {
            let w = trace
                .taped_world(&mut Log::default())
                .map_err(|e| e.to_string())?;
            let diverged = |w: &World<TapedClient>| w.clients.iter().find_map(|c| c.divergence());
            schedule_in(trace, w, diverged)
        }
    }
}

fn schedule_in<C: ClientMachine>(
    trace: &Trace,
    mut w: World<C>,
    diverged: impl Fn(&World<C>) -> Option<String>,
) -> Result<Schedule, String> {
    let scn = &trace.scenario;
    let mut lab = Labeller::default();
    let mut moves = Vec::new();
    let mut situations = BTreeSet::new();
    let note = |w: &World<C>, s: &mut BTreeSet<Situation>| {
        for x in Situation::ALL {
            if x.holds(scn, w) {
                s.insert(x);
            }
        }
    };
    lab.catch_up(&w);
    note(&w, &mut situations);
    for (i, step) in trace.steps.iter().enumerate() {
        let at = |link, index| {
            lab.at(&w, link, index)
                .map_err(|e| format!("step {i}: {e}"))
        };
        let mv = match step {
            Step::Deliver {
                client: 0,
                link,
                index,
            } => Move::Release(at(*link, usize::from(*index))?),
            Step::Duplicate { client: 0, link } => Move::Duplicate(at(*link, 0)?),
            Step::Drop { client: 0, link } => Move::Drop(at(*link, 0)?),
            Step::Mutate { .. } | Step::Commit | Step::Call { .. } => Move::Act(step.clone()),
            other => return Err(format!("step {i} ({other}) is not replayed adaptively")),
        };
        let known: HashSet<ReqId> = lab.by_req.keys().copied().collect();
        let notes = |w: &World<C>| {
            let l = &w.links[0];
            l.down
                .iter()
                .chain(&l.stream)
                .filter(|m| matches!(m, ServerMsg::Notification(_)))
                .count()
        };
        let notes_before = notes(&w);
        let mut log = Log::default();
        w.apply(scn, step, &mut log)
            .and_then(|()| diverged(&w).map_or(Ok(()), Err))
            .map_err(|e| format!("step {i} ({step}): {e}"))?;
        lab.catch_up(&w);
        note(&w, &mut situations);
        let reaction = Reaction {
            requests: w.links[0]
                .up
                .iter()
                .filter(|m| !known.contains(&m.id))
                .map(|m| lab.by_req[&m.id].clone())
                .collect(),
            publishes: log
                .events
                .iter()
                .any(|e| matches!(e, Event::Published { client: 0, .. })),
            notifications: if matches!(mv, Move::Act(_)) {
                notes(&w).saturating_sub(notes_before)
            } else {
                0
            },
        };
        moves.push((i, mv, reaction));
    }
    Ok(Schedule { moves, situations })
}

/// Labels of the wire: the identity of each `Msg` (and duplicate) record of the run so far,
/// and whether each was handed on.
#[derive(Default)]
pub struct WireLabels {
    /// Record seq → identity.
    pub ids: HashMap<u64, Id>,
    /// Records handed on (passed at once, or released).
    pub delivered: HashSet<u64>,
    /// Records dropped.
    pub dropped: HashSet<u64>,
    /// Every request identity seen (the client sent it).
    pub sent: HashSet<Id>,
}

impl WireLabels {
    /// Labels every record of `st`.
    pub fn of(st: &HubState) -> WireLabels {
        let mut w = WireLabels::default();
        let mut requests: HashMap<String, u32> = HashMap::new();
        let mut by_id: HashMap<String, Id> = HashMap::new();
        for r in &st.records {
            match &r.body {
                Body::Msg {
                    dir,
                    json: Some(v),
                    fate,
                    ..
                } => {
                    if *fate == LineFate::Passed {
                        w.delivered.insert(r.seq);
                    }
                    let id = match (dir, jsonrpc::classify(v)) {
                        (Dir::Up, Frame::Request { id, method }) => {
                            let shape = wire_shape(v, method);
                            let rank = requests.entry(shape.clone()).or_default();
                            *rank += 1;
                            let label = Id::Request { shape, n: *rank };
                            by_id.insert(id, label.clone());
                            w.sent.insert(label.clone());
                            Some(label)
                        }
                        (Dir::Down, Frame::Response { id, .. }) => {
                            by_id.get(&id).map(|to| Id::Response {
                                to: Box::new(to.clone()),
                            })
                        }
                        (Dir::Down, Frame::Notification { method }) => Some(Id::Notification {
                            method: method.to_owned(),
                        }),
                        _ => None,
                    };
                    if let Some(id) = id {
                        w.ids.insert(r.seq, id);
                    }
                }
                Body::Release { of, action, .. } => match action {
                    Action::Deliver => {
                        w.delivered.insert(*of);
                    }
                    Action::Drop => {
                        w.dropped.insert(*of);
                    }
                    Action::Duplicate => {
                        if let Some(id) = w.ids.get(of).cloned() {
                            w.ids.insert(r.seq, id);
                        }
                    }
                },
                _ => {}
            }
        }
        w
    }

    /// The held record of identity `id`, if it is held.
    pub fn held(&self, st: &HubState, id: &Id) -> Option<u64> {
        st.held
            .iter()
            .find(|h| self.ids.get(&h.seq) == Some(id))
            .map(|h| h.seq)
    }

    /// Whether the message of identity `id` can no longer come: the request it is, or
    /// answers, was never sent while the client has gone quiet, or it was already handed on.
    pub fn gone(&self, id: &Id) -> bool {
        !matches!(id, Id::Notification { .. })
            && self.ids.iter().any(|(seq, x)| {
                x == id && (self.delivered.contains(seq) || self.dropped.contains(seq))
            })
    }

    /// Whether the request `id` is, or answers, has been sent.
    pub fn request_sent(&self, id: &Id) -> bool {
        id.request().is_none_or(|r| self.sent.contains(r))
    }
}

/// The list kind a request lists, if it is a list request.
fn listed(v: &Value) -> Option<Kind> {
    v.get("method")
        .and_then(Value::as_str)
        .and_then(listed_kind)
}

/// The situations of [`OBSERVABLE`] the run is in now, as the proxy sees it: what is held is
/// in flight, a request is unanswered until its answer is handed on.
pub fn observed(st: &HubState, wire: &WireLabels) -> BTreeSet<Situation> {
    let mut out = BTreeSet::new();
    // The client's list requests whose answer has not reached it, by kind.
    let mut answered: HashSet<String> = HashSet::new();
    for r in &st.records {
        if let Body::Msg {
            dir: Dir::Down,
            json: Some(v),
            ..
        } = &r.body
            && let Frame::Response { id, .. } = jsonrpc::classify(v)
            && wire.delivered.contains(&r.seq)
        {
            answered.insert(id);
        }
    }
    let mut pending: HashMap<Kind, usize> = HashMap::new();
    // Per kind: whether the latest page the client received asked for another.
    let mut mid_walk: HashMap<Kind, bool> = HashMap::new();
    let mut asked: HashMap<String, Kind> = HashMap::new();
    for r in &st.records {
        let Body::Msg {
            dir, json: Some(v), ..
        } = &r.body
        else {
            continue;
        };
        match (dir, jsonrpc::classify(v)) {
            (Dir::Up, Frame::Request { id, .. }) => {
                if let Some(k) = listed(v) {
                    asked.insert(id.clone(), k);
                    if !answered.contains(&id) {
                        *pending.entry(k).or_default() += 1;
                    }
                }
            }
            (Dir::Down, Frame::Response { id, .. }) if wire.delivered.contains(&r.seq) => {
                if let Some(k) = asked.get(&id) {
                    let more = jsonrpc::result(v)
                        .get("nextCursor")
                        .is_some_and(|c| !c.is_null());
                    mid_walk.insert(*k, more);
                }
            }
            _ => {}
        }
    }
    // What is held is on its way.
    let mut changes: HashMap<Kind, usize> = HashMap::new();
    for h in &st.held {
        match jsonrpc::classify(&h.json) {
            Frame::Notification { method } if h.dir == Dir::Down => {
                if let Some(kind) = notified_kind(method) {
                    for k in kind.notification_group() {
                        *changes.entry(*k).or_default() += 1;
                    }
                }
                if st
                    .held
                    .iter()
                    .any(|o| o.seq != h.seq && o.dir == Dir::Down && o.json == h.json)
                {
                    out.insert(Situation::DuplicateNotificationInFlight);
                }
            }
            Frame::Response {
                id,
                error: Some(-32602),
            } if h.dir == Dir::Down && asked.contains_key(&id) => {
                out.insert(Situation::CursorRefusedAfterChange);
            }
            _ => {}
        }
    }
    for (k, n) in &changes {
        if pending.get(k).copied().unwrap_or(0) > 0 {
            out.insert(Situation::NotifyDuringRefresh);
            if mid_walk.get(k).copied().unwrap_or(false) {
                out.insert(Situation::NotifyMidWalk);
            }
            if *n >= 2 {
                out.insert(Situation::BurstDuringRefresh);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus(name: &str) -> Trace {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../traces")
            .join(name);
        Trace::from_json(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    /// The naive trace, named by identity: the answer to the client's 2nd list request goes
    /// out before the answer to its 1st, after the change notification.
    #[test]
    fn the_naive_trace_as_the_adversarys_schedule() {
        let s = schedule(&corpus("naive.json")).unwrap();
        let moves: Vec<String> = s.moves.iter().map(|(_, m, _)| m.to_string()).collect();
        let list = |n| Id::Request {
            shape: "tools/list".into(),
            n,
        };
        assert_eq!(
            s.moves.last().unwrap().1,
            Move::Release(Id::Response {
                to: Box::new(list(1))
            }),
            "{moves:#?}"
        );
        let second = s
            .moves
            .iter()
            .position(|(_, m, _)| {
                *m == Move::Release(Id::Response {
                    to: Box::new(list(2)),
                })
            })
            .expect("the newer answer is released");
        let notified = s
            .moves
            .iter()
            .position(|(_, m, r)| {
                matches!(m, Move::Release(Id::Notification { .. }))
                    && r.requests
                        == [Id::Request {
                            shape: "tools/list".into(),
                            n: 2,
                        }]
            })
            .expect("the change notification is released");
        assert!(notified < second, "{moves:#?}");
        assert!(
            s.situations.contains(&Situation::NotifyDuringRefresh),
            "{:?}",
            s.situations
        );
    }
}
