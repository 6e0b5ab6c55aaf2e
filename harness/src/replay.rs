//! Trace replay against real implementations, in lockstep with a *shadow* [`World`] of the
//! trace's scenario.
//!
//! The shadow world says, before each `deliver` step, which abstract message is meant (which
//! request of the walk, which response, which notification); the harness finds the real held
//! message of the same shape (method, cursor or not, tool name; a response through the
//! real-id ↔ abstract-id map built as requests are released; a notification by method) and
//! releases it. `mutate` becomes a control `mutate` to the server adapter, `call` a client
//! `call`, `duplicate` / `drop` act on the held notification, `commit` releases the parked
//! commit of our `notify-before-commit` server (other servers commit by themselves).
//!
//! After every step the harness waits (bounded) until every message the shadow world has in
//! flight has a real counterpart, and until the client published (and the server dispatched)
//! as often as the shadow world did. A real message of a tracked shape that the shadow world
//! does not have in flight, or a predicted one that never comes, is a **divergence**: reported
//! with the message log; the run then continues freely (everything released) and its history
//! is still judged.
//!
//! Messages the model does not track pass straight through: the `initialize` handshake's
//! `notifications/initialized`, `ping`, logging, `server/discover`, `notifications/cancelled`,
//! lists and notifications of kinds the scenario's client does not keep, and requests from the
//! server to the client. Tracked: `initialize`, `subscriptions/listen`, `tools/call`, list
//! requests of kept kinds and every response to them, `list_changed` of kept kinds and
//! `notifications/subscriptions/acknowledged`.
//!
//! After the trace's last step the harness *drains*: it delivers what is still in flight, head
//! first (and commits a staged batch), until the shadow world is quiescent, then declares the
//! run quiescent. The verdicts to compare with are the shadow world's after the same drained
//! schedule (equal to the trace's own when the drain has nothing to do).
//!
//! Strategy substitution: against `reference`, the shadow world runs the reference strategy in
//! the role under test (or the variant asked for: `reference@naive:client`; `reference@trace`
//! keeps the trace's strategies), and a trace step that is impossible for it is skipped with a
//! note. Against a third-party SDK the shadow world keeps the trace's strategies: the question
//! is whether the SDK takes the same path.

use crate::adapters::{
    ClientSetup, Impl, Paths, Role, ServerSetup, Subject, client_launch, server_launch,
};
use crate::control;
use crate::jsonrpc::{self, Frame};
use crate::outcome::{RunReport, RunStatus, Target};
use crate::proxy::{Policy, listed_kind, notified_kind};
use crate::run::{Bounds, Run, RunConfig};
use crate::timeline::{Action, Body, Dir, Fact, HubState, Side};
use listsync_core::history::Event;
use listsync_core::property::{Property, Verdicts};
use listsync_core::scenario::Scenario;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::trace::Trace;
use listsync_core::vocab::{Era, Kind, KindSet, Scope};
use listsync_core::wire::{ClientMsg, Notification, ReqId, Request, ServerMsg};
use listsync_core::world::{Link, Log, Step, World};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// A replay, resolved: who plays which role with which strategy.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    /// The trace.
    pub trace: Trace,
    /// Trace file name (for reports).
    pub trace_name: String,
    /// Implementation under test, with its role resolved.
    pub subject: Subject,
    /// Role under test.
    pub role: Role,
    /// The shadow world's scenario (strategies substituted).
    pub scenario: Scenario,
    /// Server side.
    pub server: ServerSetup,
    /// Client side.
    pub client: ClientSetup,
    /// Why it cannot run, if it cannot.
    pub unsupported: Option<String>,
}

/// The role a trace is about: the side whose strategy is not the reference.
pub fn trace_role(scn: &Scenario) -> Option<Role> {
    let server_bad = scn.server.strategy != ServerStrategy::Reference;
    let client_bad = scn.client_strategy() != ClientStrategy::Reference;
    match (server_bad, client_bad) {
        (true, false) => Some(Role::Server),
        (false, true) => Some(Role::Client),
        _ => None,
    }
}

/// Resolves a replay of `trace` against `subject`.
pub fn plan(
    trace: &Trace,
    trace_name: &str,
    subject: &Subject,
    era: Option<Era>,
) -> Result<ReplayPlan, String> {
    // A trace whose own strategies cannot take its steps is malformed, whatever is replayed.
    trace
        .replay()
        .map_err(|e| format!("the trace cannot be replayed: {e}"))?;
    let role = subject
        .role
        .or_else(|| trace_role(&trace.scenario))
        .unwrap_or(Role::Client);
    let mut scenario = trace.scenario.clone();
    if subject.imp == Impl::Reference {
        match subject.variant.as_deref() {
            Some("trace") => {}
            None | Some("reference") => match role {
                Role::Server => scenario.server.strategy = ServerStrategy::Reference,
                Role::Client => {
                    for c in &mut scenario.clients {
                        c.strategy = ClientStrategy::Reference;
                    }
                }
            },
            Some(v) => match role {
                Role::Server => scenario.server.strategy = v.parse()?,
                Role::Client => {
                    let s: ClientStrategy = v.parse()?;
                    for c in &mut scenario.clients {
                        c.strategy = s;
                    }
                }
            },
        }
    }
    let mut unsupported = unsupported(&trace.scenario, &trace.steps);
    if let Some(e) = era
        && e != scenario.era
    {
        unsupported.get_or_insert(format!(
            "the trace is a {} run; it cannot be replayed as {e}",
            scenario.era
        ));
    }
    if !subject.imp.eras().contains(&scenario.era) {
        unsupported.get_or_insert(format!("{} does not speak {}", subject.imp, scenario.era));
    }
    if subject.imp == Impl::Rmcp
        && scenario
            .clients
            .iter()
            .any(|c| c.kinds.iter().any(|k| k != Kind::Tools))
    {
        unsupported.get_or_insert("the rmcp adapter keeps tools only".into());
    }
    let default_variant = |imp: Impl, r: Role| imp.variants(r)[0].to_owned();
    let (server_imp, client_imp) = match role {
        Role::Server => (subject.imp, Impl::Reference),
        Role::Client => (Impl::Reference, subject.imp),
    };
    let server_variant = if server_imp == Impl::Reference {
        scenario.server.strategy.as_str().to_owned()
    } else {
        subject
            .variant
            .clone()
            .unwrap_or_else(|| default_variant(server_imp, Role::Server))
    };
    let client_variant = if client_imp == Impl::Reference {
        scenario.client_strategy().as_str().to_owned()
    } else {
        subject
            .variant
            .clone()
            .unwrap_or_else(|| default_variant(client_imp, Role::Client))
    };
    let kinds = scenario
        .clients
        .first()
        .map(|c| c.kinds)
        .unwrap_or_else(|| KindSet::only(Kind::Tools));
    Ok(ReplayPlan {
        trace: trace.clone(),
        trace_name: trace_name.to_owned(),
        subject: Subject {
            imp: subject.imp,
            role: Some(role),
            variant: subject.variant.clone(),
        },
        role,
        server: ServerSetup {
            imp: server_imp,
            variant: server_variant,
            era: scenario.era,
            page_size: scenario.server.page_size,
            initial: scenario.initial.clone(),
            ttl_ms: scenario.server.ttl_ms,
        },
        client: ClientSetup {
            imp: client_imp,
            variant: client_variant,
            era: scenario.era,
            kinds,
        },
        scenario,
        unsupported,
    })
}

fn unsupported(scn: &Scenario, steps: &[Step]) -> Option<String> {
    if scn.cluster.is_some() {
        return Some(
            "cluster scenarios (several server nodes) are out of the harness's scope".into(),
        );
    }
    if scn.clients.len() != 1 {
        return Some(format!(
            "{} clients: the harness runs one client per run",
            scn.clients.len()
        ));
    }
    if scn.clients.iter().any(|c| !c.watch.is_empty()) {
        return Some("resource content subscriptions are not replayed".into());
    }
    let scoped = scn
        .initial
        .iter()
        .chain(scn.script.iter().flatten())
        .any(|o| {
            matches!(
                o,
                listsync_core::vocab::Op::Add {
                    scope: Scope::Only(_),
                    ..
                }
            )
        });
    if scoped || !scn.auth_changes.is_empty() {
        return Some("authorization contexts need HTTP; the harness runs stdio".into());
    }
    steps.iter().find_map(|s| match s {
        Step::Disconnect { .. } | Step::Reconnect { .. } => {
            Some("disconnects are not replayed (the harness keeps one connection)".into())
        }
        Step::Retry { .. } => {
            Some("retry timers fire by themselves in real clients: not replayed".into())
        }
        Step::WalkDue { .. } => {
            Some("pacing timers fire by themselves in real clients: not replayed".into())
        }
        Step::SetAuth { .. } => Some("authorization changes need HTTP".into()),
        Step::BusDeliver { .. }
        | Step::BusDuplicate { .. }
        | Step::BusDrop { .. }
        | Step::Poll { .. }
        | Step::Load { .. }
        | Step::Migrate { .. } => Some("cluster steps are out of the harness's scope".into()),
        _ => None,
    })
}

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
enum Shape {
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
    fn describe(&self) -> String {
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
            Request::CallTool { name } => Some(name.to_string()),
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
struct Matching {
    /// (link, index in link) → seq of the real held line.
    pairs: HashMap<(Link, usize), u64>,
    /// Model messages with no real counterpart yet.
    missing: Vec<Shape>,
    /// Real held lines the model does not have in flight.
    unpredicted: Vec<(u64, String)>,
}

fn match_links(world: &World, st: &HubState, ids: &HashMap<ReqId, String>) -> Matching {
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

fn count_model(events: &[Event], kinds: KindSet) -> (usize, usize) {
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

fn count_real(st: &HubState, kinds: KindSet) -> (usize, usize) {
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
fn count_model_client_steps(events: &[Event]) -> usize {
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

fn count_real_client_steps(st: &HubState) -> usize {
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

/// `list_changed` notifications of kept kinds the client adapter reported handling.
fn count_real_notifications(st: &HubState, kinds: KindSet) -> usize {
    control::events(st, Side::Client, "notification")
        .filter(|(_, e)| {
            e.get("method")
                .and_then(Value::as_str)
                .and_then(notified_kind)
                .is_some_and(|k| k.notification_group().iter().any(|g| kinds.contains(*g)))
        })
        .count()
}

/// The lockstep state.
struct Lockstep<'a> {
    plan: &'a ReplayPlan,
    run: Run,
    world: World,
    model_events: Vec<Event>,
    ids: HashMap<ReqId, String>,
    kinds: KindSet,
    commit_gate: Option<(u64, tokio::sync::oneshot::Receiver<Value>)>,
    exact: bool,
    /// `list_changed` notifications delivered to the client by trace steps.
    notifications_delivered: usize,
}

enum Wait {
    Ok,
    Diverged(String),
}

impl Lockstep<'_> {
    /// Waits until the real side caught up with the shadow world (or diverged).
    async fn sync(&self, bound: Duration) -> Wait {
        let want = count_model(&self.model_events, self.kinds);
        let kinds = self.kinds;
        let steps_wanted = (self.plan.client.imp == Impl::Reference)
            .then(|| count_model_client_steps(&self.model_events));
        let check = |st: &HubState| -> Option<Result<(), String>> {
            let m = match_links(&self.world, st, &self.ids);
            if let Some((seq, s)) = m.unpredicted.first() {
                return Some(Err(format!(
                    "the implementation sent {s} (record {seq}), which the trace does not have in flight"
                )));
            }
            let got = count_real(st, kinds);
            if got.0 > want.0 {
                return Some(Err(format!(
                    "the client published {} snapshots; the trace predicts {}",
                    got.0, want.0
                )));
            }
            if got.1 > want.1 {
                return Some(Err(format!(
                    "the server ran {} tool calls; the trace predicts {}",
                    got.1, want.1
                )));
            }
            let steps_done = steps_wanted.is_none_or(|w| count_real_client_steps(st) >= w);
            if m.missing.is_empty() && got == want && steps_done {
                Some(Ok(()))
            } else {
                None
            }
        };
        match self.run.hub.wait_until(bound, check).await {
            Some(Ok(())) => Wait::Ok,
            Some(Err(e)) => Wait::Diverged(e),
            None => {
                let st = self.run.hub.lock();
                let m = match_links(&self.world, &st, &self.ids);
                let got = count_real(&st, kinds);
                let mut why = Vec::new();
                for s in &m.missing {
                    why.push(format!("never sent {}", s.describe()));
                }
                if got.0 < want.0 {
                    why.push(format!(
                        "the client published {} snapshots, the trace predicts {}",
                        got.0, want.0
                    ));
                }
                if got.1 < want.1 {
                    why.push(format!(
                        "the server ran {} tool calls, the trace predicts {}",
                        got.1, want.1
                    ));
                }
                if let Some(w) = steps_wanted {
                    let done = count_real_client_steps(&st);
                    if done < w {
                        why.push(format!(
                            "the client's machine woke or ended a refresh {done} times, the trace predicts {w}"
                        ));
                    }
                }
                // What the implementation sent that the trace's next step still holds back:
                // often what it is waiting on instead (a response, an acknowledgement).
                let held: Vec<String> = st
                    .held
                    .iter()
                    .map(|h| format!("{} (record {})", jsonrpc::summary(&h.json), h.seq))
                    .collect();
                if !held.is_empty() {
                    why.push(format!(
                        "held, as the trace prescribes: {}",
                        held.join(", ")
                    ));
                }
                Wait::Diverged(format!("within {bound:?}: {}", why.join("; ")))
            }
        }
    }

    fn apply_model(&mut self, step: &Step) -> Result<Vec<String>, String> {
        let mut log = Log::default();
        self.world.apply(&self.plan.scenario, step, &mut log)?;
        self.model_events.extend(log.events);
        Ok(log.lines)
    }

    /// Carries out one step on both sides. Err: a divergence (or a harness failure).
    async fn step(&mut self, index: Option<usize>, step: &Step) -> Result<(), String> {
        // The real counterpart of the message a delivery or fault concerns.
        let target = match step {
            Step::Deliver {
                client: 0,
                link,
                index,
            } => Some((*link, usize::from(*index))),
            Step::Duplicate { client: 0, link } | Step::Drop { client: 0, link } => {
                Some((*link, 0))
            }
            _ => None,
        };
        let real = match target {
            Some(key) => {
                let st = self.run.hub.lock();
                let m = match_links(&self.world, &st, &self.ids);
                m.pairs.get(&key).copied()
            }
            None => None,
        };
        let before_up: Option<ClientMsg> = match step {
            Step::Deliver {
                client: 0,
                link: Link::Up,
                index,
            } => self.world.links[0].up.get(usize::from(*index)).cloned(),
            _ => None,
        };
        // A list_changed of a kept kind delivered to the client: wait below until the client
        // reports handling it, so the next delivery cannot overtake it inside the client.
        let notification = match step {
            Step::Deliver {
                client: 0,
                link: link @ (Link::Down | Link::Stream),
                index,
            } => {
                let l = &self.world.links[0];
                let q = if *link == Link::Down {
                    &l.down
                } else {
                    &l.stream
                };
                match q.get(usize::from(*index)) {
                    Some(ServerMsg::Notification(Notification::ListChanged { kind, .. }))
                        if kind
                            .notification_group()
                            .iter()
                            .any(|g| self.kinds.contains(*g)) =>
                    {
                        Some(kind.list_changed_method())
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let lines = self.apply_model(step)?;
        self.run.fact(Fact::Step {
            index,
            step: step.to_string(),
            model: lines,
        });
        match step {
            Step::Deliver { .. } => {
                let seq = real.ok_or("the message to deliver has no real counterpart")?;
                if let Some(m) = before_up {
                    let id = self
                        .run
                        .hub
                        .lock()
                        .held
                        .iter()
                        .find(|h| h.seq == seq)
                        .and_then(|h| h.json.get("id").map(jsonrpc::id_key));
                    if let Some(id) = id {
                        self.ids.insert(m.id, id);
                    }
                }
                self.run.proxy.act(seq, Action::Deliver);
                if let Some(method) = notification {
                    self.notifications_delivered += 1;
                    let want = self.notifications_delivered;
                    let kinds = self.kinds;
                    let bound = self.run.bounds.step;
                    let handled = self
                        .run
                        .hub
                        .wait_until(bound, |st| {
                            (count_real_notifications(st, kinds) >= want).then_some(())
                        })
                        .await;
                    if handled.is_none() {
                        return Err(format!(
                            "the client did not report handling the delivered {method} within {bound:?}"
                        ));
                    }
                }
            }
            Step::Duplicate { .. } | Step::Drop { .. } => {
                let seq = real.ok_or("the notification has no real counterpart")?;
                let action = if matches!(step, Step::Drop { .. }) {
                    Action::Drop
                } else {
                    Action::Duplicate
                };
                self.run.proxy.act(seq, action);
            }
            Step::Mutate { batch } => {
                let ops = self
                    .plan
                    .scenario
                    .script
                    .get(usize::from(*batch))
                    .cloned()
                    .unwrap_or_default();
                if self.plan.server.imp == Impl::Reference
                    && self.plan.scenario.server.strategy == ServerStrategy::NotifyBeforeCommit
                {
                    self.mutate_parked(&ops).await?;
                } else {
                    self.run.mutate(&ops).await?;
                }
            }
            Step::Commit => self.release_commit().await?,
            Step::Call { call } => {
                let tool = self
                    .plan
                    .scenario
                    .calls
                    .get(usize::from(*call))
                    .map(|(_, t)| t.to_string())
                    .unwrap_or_default();
                self.run
                    .send(Side::Client, "call", json!({ "tool": tool }))
                    .await
                    .map_err(|e| format!("call: {e}"))?;
            }
            other => return Err(format!("step '{other}' is not supported by the harness")),
        }
        Ok(())
    }

    /// `notify-before-commit` on our runtime: park the late commit, mutate, wait for the park.
    async fn mutate_parked(&mut self, ops: &[listsync_core::vocab::Op]) -> Result<(), String> {
        let bound = self.run.bounds.command;
        let gate = self
            .run
            .server
            .cmd("gate_commit", json!({}), bound)
            .await
            .map_err(|e| format!("gate_commit: {e}"))?;
        let gate = gate
            .get("gate")
            .and_then(Value::as_u64)
            .ok_or("gate_commit gave no gate")?;
        let issued = self.run.hub.record(Body::Fact(Fact::MutateIssued {
            batch: 0,
            ops: ops.to_vec(),
        }));
        let ops_json: Vec<Value> = ops.iter().map(crate::adapters::op_json).collect();
        let reply = self
            .run
            .server
            .send("mutate", json!({ "ops": ops_json }))
            .await
            .map_err(|e| format!("mutate: {e}"))?;
        let parked = self
            .run
            .hub
            .wait_until(bound, |st| {
                control::events(st, Side::Server, "commit_parked")
                    .next()
                    .map(|_| ())
            })
            .await;
        if parked.is_none() {
            return Err("the server did not park its commit".into());
        }
        self.run
            .read_catalog("mutate (commit parked)", Some(issued))
            .await?;
        self.commit_gate = Some((gate, reply));
        Ok(())
    }

    async fn release_commit(&mut self) -> Result<(), String> {
        let Some((gate, reply)) = self.commit_gate.take() else {
            // Servers that commit by themselves: nothing to do.
            self.run.note("commit step: the server commits by itself");
            return Ok(());
        };
        let bound = self.run.bounds.command;
        let at = self.run.hub.record(Body::Note {
            text: format!("releasing the parked commit (gate {gate})"),
        });
        self.run
            .server
            .cmd("release", json!({ "gate": gate }), bound)
            .await
            .map_err(|e| format!("release commit: {e}"))?;
        let _ = tokio::time::timeout(bound, reply).await;
        self.run.read_catalog("commit released", Some(at)).await?;
        Ok(())
    }

    /// The next drain step: deliver the head of a link, or commit a staged batch.
    fn drain_step(&self) -> Option<Step> {
        let l = &self.world.links[0];
        let deliver = |link| Step::Deliver {
            client: 0,
            link,
            index: 0,
        };
        if !l.up.is_empty() {
            Some(deliver(Link::Up))
        } else if !l.down.is_empty() {
            Some(deliver(Link::Down))
        } else if !l.stream.is_empty() {
            Some(deliver(Link::Stream))
        } else if self.world.server().has_staged() {
            Some(Step::Commit)
        } else {
            None
        }
    }
}

/// Replays a planned trace. Never panics; failures become a `failed` report.
pub async fn replay(plan: &ReplayPlan, paths: &Paths, bounds: Bounds) -> RunReport {
    let started = std::time::Instant::now();
    let mut report = RunReport::new(
        Target::Trace {
            name: plan.trace_name.clone(),
            shows: plan.trace.shows,
        },
        &plan.subject,
        plan.role,
        plan.scenario.era,
    );
    report.expected = Some(plan.scenario.mask(&plan.trace.expected));
    report.server = format!("{} ({})", plan.server.imp, plan.server.variant);
    report.client = format!("{} ({})", plan.client.imp, plan.client.variant);
    if let Some(why) = &plan.unsupported {
        report.status = RunStatus::Unsupported;
        report.detail = Some(why.clone());
        return report;
    }
    let launches = server_launch(paths, &plan.server)
        .and_then(|s| Ok((s, client_launch(paths, &plan.client)?)));
    let (server, client) = match launches {
        Ok(l) => l,
        Err(e) => return report.failed(e, started),
    };
    let kinds = plan.client.kinds;
    let cfg = RunConfig {
        server,
        client,
        policy: tracked_policy(kinds),
        probe_kinds: kinds,
        kinds,
        bounds,
    };
    let run = match Run::start(cfg).await {
        Ok(r) => r,
        Err(e) => return report.failed(e, started),
    };
    if let Err(e) = run.read_catalog("initial", None).await {
        let records = run.finish().await;
        report.attach(records, kinds);
        return report.failed(e, started);
    }
    let mut log = Log::default();
    let world = World::new_recorded(&plan.scenario, &mut log);
    run.fact(Fact::Step {
        index: None,
        step: "start".into(),
        model: log.lines.clone(),
    });
    let mut ls = Lockstep {
        plan,
        run,
        world,
        model_events: log.events,
        ids: HashMap::new(),
        kinds,
        commit_gate: None,
        exact: plan.client.imp == Impl::Reference && plan.server.imp == Impl::Reference,
        notifications_delivered: 0,
    };
    let mut diverged: Option<(Option<usize>, String)> = None;
    // Start-up: the client process gets the start-up bound to show life (its first message);
    // from then on a predicted message gets the usual step bound, so a client that takes
    // another path at start-up is reported as quickly as one that does so later.
    let alive = ls
        .run
        .hub
        .wait_until(bounds.startup, |st| {
            st.records
                .iter()
                .any(|r| matches!(r.body, Body::Msg { dir: Dir::Up, .. }))
                .then_some(())
        })
        .await
        .is_some();
    let first = if alive { bounds.step } else { Duration::ZERO };
    if let Wait::Diverged(e) = ls.sync(first).await {
        let e = if alive {
            e
        } else {
            format!("the client sent nothing within {:?}; {e}", bounds.startup)
        };
        diverged = Some((None, format!("at start-up: {e}")));
    }
    let mut skipped = Vec::new();
    if diverged.is_none() {
        for (i, step) in plan.trace.steps.iter().enumerate() {
            // A step impossible for a substituted strategy is skipped (checked on a copy).
            let mut probe = ls.world.clone();
            if let Err(reason) = probe.apply(&plan.scenario, step, &mut ()) {
                ls.run.fact(Fact::Skipped {
                    index: i,
                    step: step.to_string(),
                    reason: reason.clone(),
                });
                skipped.push(format!("step {i} ({step}): {reason}"));
                continue;
            }
            if let Err(e) = ls.step(Some(i), step).await {
                diverged = Some((Some(i), e));
                break;
            }
            if let Wait::Diverged(e) = ls.sync(bounds.step).await {
                diverged = Some((Some(i), e));
                break;
            }
        }
    }
    if diverged.is_none() {
        for _ in 0..64 {
            let Some(step) = ls.drain_step() else { break };
            if let Err(e) = ls.step(None, &step).await {
                diverged = Some((None, format!("draining: {e}")));
                break;
            }
            if let Wait::Diverged(e) = ls.sync(bounds.step).await {
                diverged = Some((None, format!("draining: {e}")));
                break;
            }
        }
    }
    let model_quiescent = ls.world.quiescent();
    if diverged.is_none() && !ls.exact {
        // A third-party implementation may still act on its own (timers): give it a
        // quiet period to show an unpredicted message.
        let settled = ls.run.settle().await;
        let extra = {
            let st = ls.run.hub.lock();
            st.held.first().map(|h| (h.seq, jsonrpc::summary(&h.json)))
        };
        if let Some((seq, s)) = extra {
            diverged = Some((
                None,
                format!("after the last step the implementation sent {s} (record {seq})"),
            ));
        } else if !settled {
            ls.run
                .note("the run did not fall quiet within the settle bound");
        }
    }
    if let Some((step, reason)) = &diverged {
        ls.run.fact(Fact::Divergence {
            step: *step,
            reason: reason.clone(),
        });
        // Continue freely: release everything, let it settle, judge what happened.
        ls.run.proxy.set_policy(Policy::pass_all());
        ls.run.proxy.release_all();
        if let Some((gate, _)) = ls.commit_gate.take() {
            let _ = ls
                .run
                .server
                .cmd("release", json!({ "gate": gate }), bounds.command)
                .await;
        }
        let settled = ls.run.settle().await;
        if settled {
            ls.run.fact(Fact::Quiescent {
                kinds: kinds.iter().collect(),
            });
        }
        report.status = RunStatus::Diverged;
        report.detail = Some(match step {
            Some(i) => format!("step {i}: {reason}"),
            None => reason.clone(),
        });
    } else {
        if model_quiescent {
            ls.run.fact(Fact::Quiescent {
                kinds: kinds.iter().collect(),
            });
        }
        report.status = RunStatus::Completed;
    }
    report.model = Some(ls.world.verdicts(&plan.scenario));
    report.notes.extend(skipped);
    let Lockstep { run, .. } = ls;
    let records = run.finish().await;
    report.attach(records, kinds);
    report.mask(&plan.scenario);
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// Whether the judged verdicts equal the shadow world's (applicable properties only).
pub fn agrees(judged: &Verdicts, model: &Verdicts) -> bool {
    Property::ALL.iter().all(|p| judged.get(p) == model.get(p))
}
