//! The closed world: one server registry machine, its client catalog machines, the links
//! between them, the administrator's script, the fault budgets, and the property monitor.
//!
//! A [`World`] moves by [`Step`]s — deliver this message, apply the next batch, fire that retry
//! timer, lose that notification. The model checker explores every enabled step from every
//! state; the machine-level simulator picks steps at random with a seed; a trace is a list of
//! steps, replayed here to validate it. The world adds only what the environment does: it never
//! decides protocol behaviour, which stays in the machines.

use crate::client::{CatalogClient, ClientInput, ClientOutput};
use crate::history::{ClientId, Event};
use crate::monitor::Monitor;
use crate::property::{Property, Verdict, Verdicts};
use crate::scenario::{Scenario, Transport};
use crate::server::{Registry, ServerInput, ServerOutput};
use crate::vocab::{AuthCtx, Catalog, Kind};
use crate::wire::{ClientMsg, Lane, Notification, ServerMsg};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

/// One direction-and-stream of a client's connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Link {
    /// Client to server (requests).
    Up,
    /// Server to client: responses (and, on stdio, notifications).
    Down,
    /// Server to client notification stream (HTTP only).
    Stream,
}

/// Messages in flight on one client's connection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Links {
    /// Requests on their way to the server.
    pub up: Vec<ClientMsg>,
    /// Responses (and stdio notifications) on their way to the client.
    pub down: Vec<ServerMsg>,
    /// Notifications on the HTTP stream.
    pub stream: Vec<ServerMsg>,
}

impl Links {
    fn is_empty(&self) -> bool {
        self.up.is_empty() && self.down.is_empty() && self.stream.is_empty()
    }

    fn down_link(&self, link: Link) -> &Vec<ServerMsg> {
        if link == Link::Stream {
            &self.stream
        } else {
            &self.down
        }
    }

    fn down_link_mut(&mut self, link: Link) -> &mut Vec<ServerMsg> {
        if link == Link::Stream {
            &mut self.stream
        } else {
            &mut self.down
        }
    }
}

/// One thing the environment (network, administrator, application, timers) does.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// The administrator applies scripted batch `batch` (batches go in order).
    Mutate {
        /// Index in the script.
        batch: u8,
    },
    /// The server makes its staged batch visible (`notify-before-commit` only).
    Commit,
    /// Deliver the message at `index` of a link (always 0 on an ordered link).
    Deliver {
        /// Whose connection.
        client: ClientId,
        /// Which link.
        link: Link,
        /// Position in the link.
        index: u8,
    },
    /// The network delivers the notification at the head of a link twice.
    Duplicate {
        /// Whose connection.
        client: ClientId,
        /// Which link.
        link: Link,
    },
    /// The network loses the notification at the head of a link.
    Drop {
        /// Whose connection.
        client: ClientId,
        /// Which link.
        link: Link,
    },
    /// The application switches authorization context (scripted change `change`).
    SetAuth {
        /// Index in the scenario's auth changes.
        change: u8,
    },
    /// The application calls a tool (scripted call `call`).
    Call {
        /// Index in the scenario's calls.
        call: u8,
    },
    /// A client's retry timer fires.
    Retry {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context.
        auth: AuthCtx,
    },
    /// A client's connection is cut: messages in flight are lost.
    Disconnect {
        /// Client.
        client: ClientId,
    },
    /// A cut client connects again.
    Reconnect {
        /// Client.
        client: ClientId,
    },
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Step::Mutate { batch } => write!(f, "admin applies batch {batch}"),
            Step::Commit => write!(f, "server commits the staged batch"),
            Step::Deliver {
                client,
                link,
                index,
            } => {
                write!(f, "deliver {link:?}[{index}] of c{client}")
            }
            Step::Duplicate { client, link } => {
                write!(f, "duplicate head of {link:?} of c{client}")
            }
            Step::Drop { client, link } => write!(f, "lose head of {link:?} of c{client}"),
            Step::SetAuth { change } => write!(f, "auth change {change}"),
            Step::Call { call } => write!(f, "tool call {call}"),
            Step::Retry { client, kind, auth } => {
                write!(f, "c{client} retry timer for {kind} ({auth})")
            }
            Step::Disconnect { client } => write!(f, "c{client} connection cut"),
            Step::Reconnect { client } => write!(f, "c{client} reconnects"),
        }
    }
}

/// The closed world's state.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World {
    /// The server.
    pub server: Registry,
    /// The clients, indexed by `ClientId`.
    pub clients: Vec<CatalogClient>,
    /// Messages in flight, per client.
    pub links: Vec<Links>,
    /// Next scripted batch.
    pub next_batch: u8,
    /// Next scripted auth change.
    pub next_auth: u8,
    /// Scripted calls made.
    pub calls_done: BTreeSet<u8>,
    /// Faults used: duplicates, drops, disconnects.
    pub used: [u32; 3],
    /// Clients whose connection is cut.
    pub cut: BTreeSet<ClientId>,
    /// The property checker.
    pub monitor: Monitor,
}

/// A sink for what happens during a step (history events and human-readable notes).
pub trait Recorder {
    /// A history event.
    fn event(&mut self, e: &Event);
    /// A note (a message sent, a timer armed...).
    fn note(&mut self, text: String);
    /// A message was put on `link` of `client`'s connection (schedulers use this to plan its
    /// delivery).
    fn sent(&mut self, _client: ClientId, _link: Link) {}
}

impl Recorder for () {
    fn event(&mut self, _: &Event) {}
    fn note(&mut self, _: String) {}
}

/// Records events and notes in order.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Events.
    pub events: Vec<Event>,
    /// Notes, interleaved with events as text.
    pub lines: Vec<String>,
}

impl Recorder for Log {
    fn event(&mut self, e: &Event) {
        self.events.push(e.clone());
        self.lines.push(e.to_string());
    }
    fn note(&mut self, text: String) {
        self.lines.push(text);
    }
}

impl World {
    /// The initial state of a scenario: the initial catalog committed, every client connected
    /// and started (its first request in flight).
    pub fn new(scn: &Scenario) -> World {
        Self::new_recorded(scn, &mut ())
    }

    /// [`World::new`], recording what happens.
    pub fn new_recorded(scn: &Scenario, rec: &mut dyn Recorder) -> World {
        let server = Registry::new(scn.server, Catalog::from_ops(&scn.initial));
        let clients = scn
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| CatalogClient::new(i as ClientId, Arc::new(c.clone())))
            .collect();
        let mut w = World {
            clients,
            links: vec![Links::default(); scn.clients.len()],
            next_batch: 0,
            next_auth: 0,
            calls_done: BTreeSet::new(),
            used: [0; 3],
            cut: BTreeSet::new(),
            monitor: Monitor::new(),
            server,
        };
        let first = w.server.initial_event();
        w.observe(&first, rec);
        for c in 0..scn.clients.len() as ClientId {
            w.connect(scn, c, rec);
        }
        w
    }

    fn observe(&mut self, e: &Event, rec: &mut dyn Recorder) {
        rec.event(e);
        for v in self.monitor.observe(e) {
            rec.note(format!("VIOLATION {}: {}", v.property, v.detail));
        }
    }

    fn connect(&mut self, scn: &Scenario, c: ClientId, rec: &mut dyn Recorder) {
        let mut out = Vec::new();
        self.server.step(ServerInput::Connect(c), &mut out);
        self.route_server(scn, out, rec);
        self.client_step(scn, c, ClientInput::Start, rec);
    }

    fn is_cut(&self, c: ClientId) -> bool {
        self.cut.contains(&c)
    }

    fn route_server(&mut self, scn: &Scenario, out: Vec<ServerOutput>, rec: &mut dyn Recorder) {
        for o in out {
            match o {
                ServerOutput::Event(e) => self.observe(&e, rec),
                ServerOutput::Send { to, lane, msg } => {
                    if self.is_cut(to) {
                        continue;
                    }
                    rec.note(format!("server -> c{to}: {}", msg.describe()));
                    let l = &mut self.links[to as usize];
                    let link = match (scn.transport, lane) {
                        (Transport::Http, Lane::Stream) => {
                            l.stream.push(msg);
                            Link::Stream
                        }
                        (Transport::Http, Lane::Rpc) => {
                            insert_sorted(&mut l.down, msg);
                            Link::Down
                        }
                        (Transport::Stdio, _) => {
                            l.down.push(msg);
                            Link::Down
                        }
                    };
                    rec.sent(to, link);
                }
            }
        }
    }

    fn client_step(
        &mut self,
        scn: &Scenario,
        c: ClientId,
        input: ClientInput,
        rec: &mut dyn Recorder,
    ) {
        let mut out = Vec::new();
        self.clients[c as usize].step(input, &mut out);
        for o in out {
            match o {
                ClientOutput::Event(e) => self.observe(&e, rec),
                ClientOutput::Send(msg) => {
                    rec.note(format!("c{c} -> server: {}", msg.describe()));
                    let up = &mut self.links[c as usize].up;
                    match scn.transport {
                        Transport::Stdio => up.push(msg),
                        Transport::Http => insert_sorted(up, msg),
                    }
                    rec.sent(c, Link::Up);
                }
                ClientOutput::ScheduleRetry {
                    kind,
                    attempt,
                    delay_ms,
                    ..
                } => rec.note(format!(
                    "c{c} arms retry {attempt} of {kind} in {delay_ms} ms"
                )),
                ClientOutput::Failed { kind, error } => {
                    rec.note(format!("c{c} refresh of {kind} failed: {error}"))
                }
                ClientOutput::CallDone { name, result } => {
                    rec.note(format!("c{c} call {name}: {result:?}"))
                }
                ClientOutput::Content { uri, text } => {
                    rec.note(format!("c{c} content {uri}={text}"))
                }
            }
        }
    }

    /// Whether nothing is pending: no message in flight, no staged batch, every client connected
    /// and idle (no refresh running, no retry armed).
    pub fn quiescent(&self) -> bool {
        self.cut.is_empty()
            && !self.server.has_staged()
            && self.links.iter().all(Links::is_empty)
            && self.clients.iter().all(|c| c.is_idle() && c.is_ready())
    }

    /// Every (client, kind, auth) snapshot expected to equal the server's at quiescence.
    pub fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        self.clients.iter().flat_map(|c| c.expectations()).collect()
    }

    /// Whether `p` holds in this state: event properties from the monitor; quiescence
    /// properties (`converges`, `no_lost_wakeup`, `listen_then_list`) checked when quiescent.
    pub fn holds(&self, p: Property) -> bool {
        if self.monitor.violated(p) {
            return false;
        }
        match p {
            Property::Converges | Property::NoLostWakeup | Property::ListenThenList => {
                !self.quiescent()
                    || self
                        .monitor
                        .check_quiescent(&self.expectations())
                        .iter()
                        .all(|(q, _)| *q != p)
            }
            _ => true,
        }
    }

    /// Verdicts in this state (as if the run ended here).
    pub fn verdicts(&self, scn: &Scenario) -> Verdicts {
        let v = Property::ALL
            .into_iter()
            .map(|p| {
                (
                    p,
                    if self.holds(p) {
                        Verdict::Holds
                    } else {
                        Verdict::Violated
                    },
                )
            })
            .collect();
        scn.mask(&v)
    }

    /// The canonical member of this state's symmetry class when clients are interchangeable
    /// (same configuration, no client-specific script): clients are renumbered in the order of
    /// a hash of everything about them except their id. Sound for any order; the better the
    /// order, the fewer states.
    pub fn canonical(&self) -> World {
        use std::hash::{Hash, Hasher};
        let n = self.clients.len();
        let mut keyed: Vec<(u64, usize)> = (0..n)
            .map(|i| {
                let c = i as ClientId;
                let mut h = crate::vocab::Fnv::default();
                self.clients[i].with_id(0).hash(&mut h);
                self.links[i].hash(&mut h);
                self.is_cut(c).hash(&mut h);
                self.server.hash_session(c, &mut h);
                self.monitor.hash_client(c, &mut h);
                (h.finish(), i)
            })
            .collect();
        keyed.sort();
        // map[old] = new
        let mut map: Vec<ClientId> = vec![0; n];
        for (new, (_, old)) in keyed.iter().enumerate() {
            map[*old] = new as ClientId;
        }
        if map.iter().enumerate().all(|(i, m)| *m as usize == i) {
            return self.clone();
        }
        let mut clients = self.clients.clone();
        let mut links = self.links.clone();
        let mut cut = BTreeSet::new();
        for (old, new) in map.iter().enumerate() {
            clients[*new as usize] = self.clients[old].with_id(*new);
            links[*new as usize] = self.links[old].clone();
            if self.is_cut(old as ClientId) {
                cut.insert(*new);
            }
        }
        World {
            server: self.server.relabel(&map),
            clients,
            links,
            next_batch: self.next_batch,
            next_auth: self.next_auth,
            calls_done: self.calls_done.clone(),
            used: self.used,
            cut,
            monitor: self.monitor.relabel(&map),
        }
    }

    /// Every step enabled in this state, in a fixed order.
    pub fn enabled(&self, scn: &Scenario, steps: &mut Vec<Step>) {
        if usize::from(self.next_batch) < scn.script.len() && !self.server.has_staged() {
            steps.push(Step::Mutate {
                batch: self.next_batch,
            });
        }
        if self.server.has_staged() {
            steps.push(Step::Commit);
        }
        let ordered_up = scn.transport == Transport::Stdio;
        for (ci, l) in self.links.iter().enumerate() {
            let client = ci as ClientId;
            push_deliveries(&l.up, ordered_up, client, Link::Up, steps);
            push_deliveries(&l.down, ordered_up, client, Link::Down, steps);
            push_deliveries(&l.stream, true, client, Link::Stream, steps);
            let notif_link = if scn.transport == Transport::Http {
                Link::Stream
            } else {
                Link::Down
            };
            if is_list_changed(l.down_link(notif_link).first()) {
                if self.used[0] < scn.faults.duplicate {
                    steps.push(Step::Duplicate {
                        client,
                        link: notif_link,
                    });
                }
                if self.used[1] < scn.faults.drop {
                    steps.push(Step::Drop {
                        client,
                        link: notif_link,
                    });
                }
            }
        }
        if usize::from(self.next_auth) < scn.auth_changes.len() {
            steps.push(Step::SetAuth {
                change: self.next_auth,
            });
        }
        for i in (0..scn.calls.len()).map(|i| i as u8) {
            if !self.calls_done.contains(&i) {
                steps.push(Step::Call { call: i });
            }
        }
        for (ci, c) in self.clients.iter().enumerate() {
            let client = ci as ClientId;
            for (kind, auth) in c.armed_retries() {
                steps.push(Step::Retry { client, kind, auth });
            }
            if self.is_cut(client) {
                steps.push(Step::Reconnect { client });
            } else if self.used[2] < scn.faults.disconnect {
                steps.push(Step::Disconnect { client });
            }
        }
    }

    /// Applies one step, or says why it is not possible in this state.
    pub fn apply(
        &mut self,
        scn: &Scenario,
        step: &Step,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let client_ok = |c: ClientId| {
            if (c as usize) < self.clients.len() {
                Ok(())
            } else {
                Err(format!("there is no client c{c}"))
            }
        };
        match *step {
            Step::Mutate { batch } => {
                if batch != self.next_batch {
                    return Err(format!(
                        "batch {batch} is not next (next is {})",
                        self.next_batch
                    ));
                }
                let ops = scn
                    .script
                    .get(usize::from(batch))
                    .ok_or_else(|| format!("the script has no batch {batch}"))?;
                if self.server.has_staged() {
                    return Err("a staged batch must be committed first".into());
                }
                self.next_batch += 1;
                rec.note(format!(
                    "admin applies batch {batch}: {}",
                    ops.iter()
                        .map(|o| o.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                ));
                let mut out = Vec::new();
                self.server
                    .step(ServerInput::Apply(ops.clone().into()), &mut out);
                self.route_server(scn, out, rec);
            }
            Step::Commit => {
                if !self.server.has_staged() {
                    return Err("nothing is staged".into());
                }
                let mut out = Vec::new();
                self.server.step(ServerInput::CommitStaged, &mut out);
                self.route_server(scn, out, rec);
            }
            Step::Deliver {
                client,
                link,
                index,
            } => {
                client_ok(client)?;
                let ordered = link == Link::Stream || scn.transport == Transport::Stdio;
                if ordered && index != 0 {
                    return Err(format!(
                        "{link:?} of c{client} is ordered: only its head can be delivered"
                    ));
                }
                let l = &mut self.links[client as usize];
                let i = usize::from(index);
                if link == Link::Up {
                    if i >= l.up.len() {
                        return Err(format!(
                            "no request at Up[{i}] of c{client} (in flight: {})",
                            l.up.len()
                        ));
                    }
                    let msg = l.up.remove(i);
                    rec.note(format!(
                        "server receives from c{client}: {}",
                        msg.describe()
                    ));
                    let mut out = Vec::new();
                    self.server
                        .step(ServerInput::Request(client, msg), &mut out);
                    self.route_server(scn, out, rec);
                } else {
                    let q = l.down_link_mut(link);
                    if i >= q.len() {
                        return Err(format!(
                            "no message at {link:?}[{i}] of c{client} (in flight: {})",
                            q.len()
                        ));
                    }
                    let msg = q.remove(i);
                    rec.note(format!("c{client} receives: {}", msg.describe()));
                    self.client_step(scn, client, ClientInput::Receive(msg), rec);
                }
            }
            Step::Duplicate { client, link } | Step::Drop { client, link } => {
                client_ok(client)?;
                let dup = matches!(step, Step::Duplicate { .. });
                let (slot, budget) = if dup {
                    (0, scn.faults.duplicate)
                } else {
                    (1, scn.faults.drop)
                };
                if self.used[slot] >= budget {
                    return Err(format!("the scenario allows {budget} such faults"));
                }
                let q = self.links[client as usize].down_link_mut(link);
                if !is_list_changed(q.first()) {
                    return Err(format!(
                        "the head of {link:?} of c{client} is not a list_changed notification"
                    ));
                }
                self.used[slot] += 1;
                if dup {
                    let m = q[0].clone();
                    q.insert(1, m);
                    rec.note(format!("network duplicates a notification to c{client}"));
                } else {
                    q.remove(0);
                    rec.note(format!("network loses a notification to c{client}"));
                }
            }
            Step::SetAuth { change } => {
                if change != self.next_auth {
                    return Err(format!("auth change {change} is not next"));
                }
                let (c, auth) = *scn
                    .auth_changes
                    .get(usize::from(change))
                    .ok_or_else(|| format!("the scenario has no auth change {change}"))?;
                client_ok(c)?;
                self.next_auth += 1;
                rec.note(format!("c{c} switches to {auth}"));
                self.client_step(scn, c, ClientInput::SetAuth(auth), rec);
            }
            Step::Call { call } => {
                let (c, name) = scn
                    .calls
                    .get(usize::from(call))
                    .cloned()
                    .ok_or_else(|| format!("the scenario has no call {call}"))?;
                client_ok(c)?;
                if !self.calls_done.insert(call) {
                    return Err(format!("call {call} was already made"));
                }
                rec.note(format!("c{c} application calls {name}"));
                self.client_step(scn, c, ClientInput::CallTool(name), rec);
            }
            Step::Retry { client, kind, auth } => {
                client_ok(client)?;
                if !self.clients[client as usize].retry_armed(kind, auth) {
                    return Err(format!("c{client} has no retry armed for {kind}"));
                }
                self.client_step(scn, client, ClientInput::RetryDue(kind, auth), rec);
            }
            Step::Disconnect { client } => {
                client_ok(client)?;
                if self.is_cut(client) || self.used[2] >= scn.faults.disconnect {
                    return Err(format!("c{client} cannot be cut now"));
                }
                self.used[2] += 1;
                self.cut.insert(client);
                self.links[client as usize] = Links::default();
                rec.note(format!("c{client} connection cut"));
                let mut out = Vec::new();
                self.server.step(ServerInput::Disconnect(client), &mut out);
                self.route_server(scn, out, rec);
                self.client_step(scn, client, ClientInput::Disconnected, rec);
            }
            Step::Reconnect { client } => {
                client_ok(client)?;
                if !self.is_cut(client) {
                    return Err(format!("c{client} is connected"));
                }
                self.cut.remove(&client);
                rec.note(format!("c{client} reconnects"));
                self.connect(scn, client, rec);
            }
        }
        Ok(())
    }
}

/// Unordered links are kept sorted, so two states that differ only in the arrival order of
/// messages that may overtake one another are one state.
fn insert_sorted<M: Ord>(q: &mut Vec<M>, m: M) {
    let at = q.partition_point(|x| *x <= m);
    q.insert(at, m);
}

fn is_list_changed(m: Option<&ServerMsg>) -> bool {
    matches!(
        m,
        Some(ServerMsg::Notification(Notification::ListChanged { .. }))
    )
}

/// Adds the deliveries of one link: its head if ordered, else every distinct message.
fn push_deliveries<M: PartialEq>(
    q: &[M],
    ordered: bool,
    client: ClientId,
    link: Link,
    steps: &mut Vec<Step>,
) {
    if ordered {
        if !q.is_empty() {
            steps.push(Step::Deliver {
                client,
                link,
                index: 0,
            });
        }
        return;
    }
    for (i, m) in q.iter().enumerate().take(usize::from(u8::MAX)) {
        if q[..i].contains(m) {
            continue; // the same message twice: delivering either gives the same state
        }
        steps.push(Step::Deliver {
            client,
            link,
            index: i as u8,
        });
    }
}
