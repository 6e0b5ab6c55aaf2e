//! The closed world: one server registry machine, its client catalog machines, the links
//! between them, the administrator's script, the fault budgets, and the property monitor.
//!
//! A [`World`] moves by [`Step`]s — deliver this message, apply the next batch, fire that retry
//! timer, lose that notification. The model checker explores every enabled step from every
//! state; the machine-level simulator picks steps at random with a seed; a trace is a list of
//! steps, replayed here to validate it. The world adds only what the environment does: it never
//! decides protocol behaviour, which stays in the machines.

use crate::aggregate;
use crate::client::{CallError, CatalogClient, ClientInput, ClientOutput};
use crate::history::{ClientId, Event, RefreshOutcome, Restart};
use crate::machine::ClientMachine;
use crate::monitor::Monitor;
use crate::property::{Property, Verdict, Verdicts};
use crate::record::{Note, Recorder, note};
use crate::scenario::{Scenario, Transport};
use crate::server::{Registry, ServerInput, ServerOutput};
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Catalog, Item, ItemList, Kind, KindSet, Name};
use crate::wire::{
    ClientMsg, ErrorReason, Lane, Notification, ReqId, Request, Response, RpcError, ServerMsg,
};
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

/// What the observer has seen of one client's list requests on the wire: the walks over a
/// list's pages are judged from these, never from what the client says it does. A first-page
/// request (no cursor) begins again the open walk of that list that already had an answer (a page
/// in hand, or an error), or else starts a walk of its own (walks may run side by side); a
/// request with a cursor continues the open walk that has pages in hand; the answer without a
/// next cursor that reaches the client ends the walk its request belonged to, unless the walk
/// began again since (that answer is stale).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Watch {
    /// List requests on the wire whose answer has not reached the client: (request id, kind,
    /// context, the first-page request of the walk's attempt it belongs to).
    asked: Vec<(ReqId, Kind, AuthCtx, ReqId)>,
    /// Walks begun and not ended.
    open: Vec<OpenWalk>,
    /// Walks seen to start so far (the next one's name).
    started: u32,
}

/// A walk the observer saw begin and not end.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct OpenWalk {
    kind: Kind,
    auth: AuthCtx,
    /// The walk's name: how many walks of the client's the observer saw start before it.
    refresh: u32,
    /// The first-page request of its current attempt (itself, or the one that began it again).
    head: ReqId,
    /// Whether an answer of the current attempt (a page, or an error) reached the client.
    answered: bool,
}

impl Watch {
    /// The latest open walk of (kind, auth) with an answer in hand, if any.
    fn answered_walk(&mut self, kind: Kind, auth: AuthCtx) -> Option<&mut OpenWalk> {
        self.open
            .iter_mut()
            .rev()
            .find(|w| w.kind == kind && w.auth == auth && w.answered)
    }

    /// Observes list request `msg` put on the wire; returns the walk event it shows (a walk
    /// started or begun again), if any. `reason`: the client's own word on why it began again,
    /// used as the event's label only.
    pub fn asks(
        &mut self,
        client: ClientId,
        msg: &ClientMsg,
        reason: Option<Restart>,
    ) -> Option<Event> {
        let Request::List { kind, cursor } = &msg.req else {
            return None;
        };
        let (kind, auth) = (*kind, msg.auth);
        let (head, e) = match (cursor, self.answered_walk(kind, auth)) {
            (Some(_), Some(w)) => (w.head, None),
            // A cursor of no walk the observer saw answered: it continues nothing.
            (Some(_), None) => (msg.id, None),
            (None, Some(w)) => {
                w.head = msg.id;
                w.answered = false;
                (
                    msg.id,
                    Some(Event::WalkRestarted {
                        client,
                        kind,
                        refresh: w.refresh,
                        reason: reason.unwrap_or(Restart::NotifiedMidWalk),
                    }),
                )
            }
            (None, None) => {
                let refresh = self.started;
                self.started += 1;
                self.open.push(OpenWalk {
                    kind,
                    auth,
                    refresh,
                    head: msg.id,
                    answered: false,
                });
                (
                    msg.id,
                    Some(Event::RefreshStarted {
                        client,
                        kind,
                        auth,
                        refresh,
                    }),
                )
            }
        };
        self.asked.push((msg.id, kind, auth, head));
        e
    }

    /// Observes answer `msg` reaching the client: the walk it ends (kind, context, name), if
    /// any: its request's walk, still on the same attempt, answered by a last page.
    pub fn answered(&mut self, msg: &ServerMsg) -> Option<(Kind, AuthCtx, u32)> {
        let ServerMsg::Response { id, resp } = msg else {
            return None;
        };
        let i = self.asked.iter().position(|(r, ..)| r == id)?;
        let (_, kind, auth, head) = self.asked.remove(i);
        let j = self
            .open
            .iter()
            .position(|w| w.kind == kind && w.auth == auth && w.head == head)?;
        match resp {
            Response::Page(p) if p.next.is_none() => {
                let w = self.open.remove(j);
                Some((w.kind, w.auth, w.refresh))
            }
            _ => {
                self.open[j].answered = true;
                None
            }
        }
    }

    /// The observed end of walk `ending` ([`answered`](Self::answered)) of `client`, given the
    /// publishes observed in the step that took its last page: published if its list's readers
    /// read another list since, else discarded.
    pub fn ended(client: ClientId, ending: (Kind, AuthCtx, u32), published: &[Event]) -> Event {
        let (kind, auth, refresh) = ending;
        let shown = published.iter().any(
            |e| matches!(e, Event::Published { kind: k, auth: a, .. } if *k == kind && *a == auth),
        );
        Event::RefreshEnded {
            client,
            kind,
            auth,
            refresh,
            outcome: if shown {
                RefreshOutcome::Published
            } else {
                RefreshOutcome::Discarded
            },
        }
    }

    /// Whether it has seen nothing in progress.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty() && self.asked.is_empty()
    }

    /// The connection was cut: every open walk ends failed, nothing asked will be answered.
    pub fn cut(&mut self, client: ClientId) -> Vec<Event> {
        self.asked.clear();
        self.open
            .drain(..)
            .map(|w| Event::RefreshEnded {
                client,
                kind: w.kind,
                auth: w.auth,
                refresh: w.refresh,
                outcome: RefreshOutcome::Failed,
            })
            .collect()
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
    /// The user approves a tool as a client's published list shows it (scripted approval
    /// `approval`).
    Approve {
        /// Index in the scenario's approvals.
        approval: u8,
    },
    /// The application of several servers calls `name` from its combined listing.
    CallCombined {
        /// The combined name called.
        name: Name,
    },
    /// The tool call at `index` of a client's request link fails with an internal error in the
    /// server's place (the server never sees it): an error that is not a list change.
    FailCall {
        /// Whose connection.
        client: ClientId,
        /// Position in the request link (always 0 on an ordered link).
        index: u8,
    },
    /// The list request (a page of a walk, of any kind's list) at `index` of a client's request
    /// link fails with an internal error in the server's place (the server never sees it): the
    /// client keeps its refresh running and retries it after a back-off.
    FailList {
        /// Whose connection.
        client: ClientId,
        /// Position in the request link (always 0 on an ordered link).
        index: u8,
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
    /// A client's pacing timer fires: its held walk starts.
    WalkDue {
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
    /// A client's cached list runs out of `ttlMs` (2026-07-28) and is re-fetched. Only enabled
    /// while the list is out of date and idle: a timer firing on a current list changes nothing.
    TtlExpire {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
    },
    /// (cluster) A change event on the bus reaches a node, which makes the version and catalog
    /// the event carries visible if it is newer than what the node serves.
    BusDeliver {
        /// Node.
        node: u8,
        /// Position in the node's (unordered) bus queue.
        index: u8,
    },
    /// (cluster) The bus will deliver an event twice.
    BusDuplicate {
        /// Node.
        node: u8,
        /// Position in the node's bus queue.
        index: u8,
    },
    /// (cluster) The bus loses an event.
    BusDrop {
        /// Node.
        node: u8,
        /// Position in the node's bus queue.
        index: u8,
    },
    /// (cluster) A node that is behind and has no event pending reads the store and catches up.
    Poll {
        /// Node.
        node: u8,
    },
    /// (cluster, `cluster-notify-before-visible`) a node loads the version it already announced.
    Load {
        /// Node.
        node: u8,
    },
    /// (cluster) A client's connection moves to the next node: in-flight messages are lost, the
    /// client reconnects there.
    Migrate {
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
            Step::CallCombined { name } => write!(f, "combined call of {name}"),
            Step::Approve { approval } => write!(f, "user approval {approval}"),
            Step::FailCall { client, index } => {
                write!(f, "fail the call at Up[{index}] of c{client}")
            }
            Step::FailList { client, index } => {
                write!(f, "fail the list request at Up[{index}] of c{client}")
            }
            Step::Retry { client, kind, auth } => {
                write!(f, "c{client} retry timer for {kind} ({auth})")
            }
            Step::WalkDue { client, kind, auth } => {
                write!(f, "c{client} pacing timer for {kind} ({auth})")
            }
            Step::Disconnect { client } => write!(f, "c{client} connection cut"),
            Step::Reconnect { client } => write!(f, "c{client} reconnects"),
            Step::TtlExpire { client, kind } => write!(f, "c{client} {kind} ttl runs out"),
            Step::BusDeliver { node, index } => {
                write!(f, "bus delivers event [{index}] to node {node}")
            }
            Step::BusDuplicate { node, index } => {
                write!(f, "bus duplicates event [{index}] to node {node}")
            }
            Step::BusDrop { node, index } => write!(f, "bus loses event [{index}] to node {node}"),
            Step::Poll { node } => write!(f, "node {node} reads the store"),
            Step::Load { node } => write!(f, "node {node} loads its announced version"),
            Step::Migrate { client } => write!(f, "c{client} moves to another node"),
        }
    }
}

/// The closed world's state, its clients running machine `C` (the reference algorithm and the
/// known-bad strategies unless said otherwise; any [`ClientMachine`] a user writes).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct World<C = CatalogClient> {
    /// The server nodes (one unless the scenario is a cluster).
    pub nodes: Vec<Shared<Registry>>,
    /// Node each client is connected to.
    pub node_of: Vec<u8>,
    /// What the administrator has committed: the latest version and its catalog (the shared
    /// store of a cluster). Versions count the changes that made the catalog differ. This is
    /// the world's own ground truth, which the observer judges the server against.
    pub truth: (u64, Shared<Catalog>),
    /// (cluster) Change events in flight to each node; unordered.
    pub bus: Vec<Vec<BusEvent>>,
    /// (cluster) Per node, the newest committed version that has reached it: carried by a bus
    /// event the world delivered, or read from the store by a poll. What a node's
    /// `list_changed` announces (the world saw it arrive; the node's own report is not used).
    pub reached: Vec<u64>,
    /// (cluster) Faults used: bus duplicates, bus drops, migrations.
    pub bus_used: [u32; 3],
    /// The clients, indexed by `ClientId`.
    pub clients: Vec<Shared<C>>,
    /// Messages in flight, per client.
    pub links: Vec<Shared<Links>>,
    /// What the observer saw of each client's list requests (its walks).
    pub watch: Vec<Shared<Watch>>,
    /// Next scripted batch.
    pub next_batch: u8,
    /// Next scripted auth change.
    pub next_auth: u8,
    /// Scripted calls made.
    pub calls_done: BTreeSet<u8>,
    /// Scripted approvals given.
    pub approvals_done: BTreeSet<u8>,
    /// Calls made through the combined listing (several servers).
    pub combined_calls: u8,
    /// Faults used: duplicates, drops, disconnects, failed calls, failed list requests.
    pub used: [u32; 5],
    /// Clients whose connection is cut.
    pub cut: BTreeSet<ClientId>,
    /// The property checker.
    pub monitor: Shared<Monitor>,
}

impl World {
    /// The initial state of a scenario with listsync's own client machine
    /// ([`CatalogClient`], the strategy each client's configuration names): the initial
    /// catalog committed, every client connected and started (its first request in flight).
    pub fn new(scn: &Scenario) -> World {
        World::start(scn)
    }

    /// [`World::new`], recording what happens.
    pub fn new_recorded(scn: &Scenario, rec: &mut dyn Recorder) -> World {
        World::start_recorded(scn, rec)
    }
}

impl<C: ClientMachine> World<C> {
    /// The initial state of a scenario, its clients running machine `C`: the initial catalog
    /// committed, every client connected and started (its first request in flight).
    pub fn start(scn: &Scenario) -> World<C> {
        Self::start_recorded(scn, &mut ())
    }

    /// [`World::start`], recording what happens.
    pub fn start_recorded(scn: &Scenario, rec: &mut dyn Recorder) -> World<C> {
        Self::start_with(scn, rec, |id, cfg| C::new(id, cfg))
    }

    /// [`World::start_recorded`], each client made by `make` from its id and configuration
    /// (a machine that needs more than its configuration, such as a
    /// [`TapedClient`](crate::tape::TapedClient) its tape).
    pub fn start_with(
        scn: &Scenario,
        rec: &mut dyn Recorder,
        mut make: impl FnMut(ClientId, Arc<crate::client::ClientConfig>) -> C,
    ) -> World<C> {
        let initial = Catalog::from_ops(&scn.initial);
        let n_nodes = scn
            .cluster
            .as_ref()
            .map_or(1, |c| usize::from(c.nodes.max(1)));
        // One machine shared by every node until one of them changes (copy on write).
        let node = Shared::new(Registry::new(scn.server, initial.clone()));
        let nodes = vec![node; n_nodes];
        let node_of = (0..scn.clients.len())
            .map(|c| scn.cluster.as_ref().map_or(0, |cl| cl.node_of_client(c)))
            .collect();
        let truth = (1, Shared::new(initial));
        let (bus, reached) = if scn.cluster.is_some() {
            (vec![Vec::new(); n_nodes], vec![truth.0; n_nodes])
        } else {
            (Vec::new(), Vec::new())
        };
        let clients = scn
            .clients
            .iter()
            .enumerate()
            .map(|(i, c)| Shared::new(make(i as ClientId, Arc::new(c.clone()))))
            .collect();
        let mut w = World {
            clients,
            links: vec![Shared::default(); scn.clients.len()],
            watch: vec![Shared::default(); scn.clients.len()],
            next_batch: 0,
            next_auth: 0,
            calls_done: BTreeSet::new(),
            approvals_done: BTreeSet::new(),
            combined_calls: 0,
            used: [0; 5],
            cut: BTreeSet::new(),
            monitor: Shared::new(Monitor::new()),
            nodes,
            node_of,
            truth,
            bus,
            reached,
            bus_used: [0; 3],
        };
        let first = Event::Committed {
            version: w.truth.0,
            catalog: w.truth.1.arc().clone(),
        };
        w.observe(&first, rec);
        for c in 0..scn.clients.len() as ClientId {
            w.connect(scn, c, rec);
        }
        w
    }

    fn observe(&mut self, e: &Event, rec: &mut dyn Recorder) {
        rec.event(e);
        for v in Shared::make_mut(&mut self.monitor).observe(e) {
            note(rec, || Note::Violation {
                property: v.property,
                detail: v.detail.clone(),
            });
        }
    }

    /// The server (node 0 of a cluster).
    pub fn server(&self) -> &Registry {
        &self.nodes[0]
    }

    /// Client `c`'s machine, to change it (copied first if another state shares it).
    pub fn client_mut(&mut self, c: ClientId) -> &mut C {
        Shared::make_mut(&mut self.clients[c as usize])
    }

    /// Node `n`'s machine, to change it (copied first if another state shares it).
    fn node_mut(&mut self, n: usize) -> &mut Registry {
        Shared::make_mut(&mut self.nodes[n])
    }

    /// Client `c`'s links, to change them (copied first if another state shares them).
    fn links_mut(&mut self, c: ClientId) -> &mut Links {
        Shared::make_mut(&mut self.links[c as usize])
    }

    fn node(&mut self, c: ClientId) -> &mut Registry {
        let n = usize::from(self.node_of[c as usize]);
        self.node_mut(n)
    }

    fn connect(&mut self, scn: &Scenario, c: ClientId, rec: &mut dyn Recorder) {
        let mut out = Vec::new();
        self.node(c).step(ServerInput::Connect(c), &mut out);
        self.route_server(scn, out, rec);
        self.client_step(scn, c, ClientInput::Start, rec);
    }

    /// Answers request `msg` of client `c` with an internal error in the server's place (the
    /// server never sees the request): an error that is not a list change.
    fn fail_in_servers_place(
        &mut self,
        scn: &Scenario,
        c: ClientId,
        msg: &ClientMsg,
        rec: &mut dyn Recorder,
    ) {
        let failure = ServerOutput::Send {
            to: c,
            lane: Lane::Rpc,
            msg: ServerMsg::Response {
                id: msg.id,
                resp: Response::Error(RpcError {
                    code: crate::wire::INTERNAL_ERROR,
                    reason: ErrorReason::Other("injected failure".into()),
                }),
            },
        };
        self.route_server(scn, vec![failure], rec);
    }

    /// Client `c`'s connection is gone with what was on it: the walks it had open end failed.
    fn lose_walks(&mut self, c: ClientId, rec: &mut dyn Recorder) {
        if self.watch[c as usize].is_empty() {
            return;
        }
        for e in Shared::make_mut(&mut self.watch[c as usize]).cut(c) {
            self.observe(&e, rec);
        }
    }

    /// Whether the world is a cluster (nodes sharing a store through a bus).
    pub fn is_cluster(&self) -> bool {
        !self.bus.is_empty()
    }

    fn is_cut(&self, c: ClientId) -> bool {
        self.cut.contains(&c)
    }

    fn route_server(&mut self, scn: &Scenario, out: Vec<ServerOutput>, rec: &mut dyn Recorder) {
        let node_of_sender = |w: &World<C>, to: ClientId| usize::from(w.node_of[to as usize]);
        // What each probe found: no node changes while its outputs are routed, so a commit
        // announced to many sessions is probed once per (node, kind, context).
        let mut probes = Probes::new();
        for o in out {
            match o {
                ServerOutput::Event(e @ Event::Served { client, .. }) => {
                    // Dated at the newest version that has reached the node (the world's, not
                    // the server's word).
                    let node = node_of_sender(self, client);
                    let version = self.reached.get(node).copied().unwrap_or(self.truth.0);
                    self.observe(&e.dated(version), rec);
                }
                ServerOutput::Event(e) => self.observe(&e, rec),
                // What the server says about itself is never judged (see `ServerOutput`).
                ServerOutput::Claim(_) => {}
                ServerOutput::Send { to, lane, msg } => {
                    if self.is_cut(to) {
                        continue;
                    }
                    if let ServerMsg::Notification(Notification::ListChanged { kind, .. }) = &msg {
                        let node = node_of_sender(self, to);
                        let e = self.observe_notification(scn, node, to, *kind, &mut probes);
                        self.observe(&e, rec);
                    }
                    note(rec, || Note::ServerSends {
                        to,
                        msg: msg.clone(),
                    });
                    let l = self.links_mut(to);
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
    ) -> Vec<Event> {
        self.client_step_ending(scn, c, input, None, rec)
    }

    /// Steps client `c` with `input` and observes what follows: each list its readers now read
    /// otherwise than before (a publish, dated by the committed version it equals), the walk
    /// `ending` (a last page that reached it with this input) with what became of it, and each
    /// message it puts on the wire. What the client says about itself (its history events of
    /// refreshes, walks and publishes) is recorded as its claim, never judged.
    fn client_step_ending(
        &mut self,
        scn: &Scenario,
        c: ClientId,
        input: ClientInput,
        ending: Option<(Kind, AuthCtx, u32)>,
        rec: &mut dyn Recorder,
    ) -> Vec<Event> {
        for e in observe_input(c, &scn.clients[c as usize], &input) {
            self.observe(&e, rec);
        }
        let contexts = scn.auth_contexts();
        let before = readers_see(&*self.clients[c as usize], &contexts);
        let mut out = Vec::new();
        self.client_mut(c).step(input, &mut out);
        let monitor = Shared::make_mut(&mut self.monitor);
        let published = observe_publishes(c, &*self.clients[c as usize], before, |k, a, items| {
            monitor.latest_version_of(k, a, items)
        });
        let tools_published = scn.aggregate.is_some()
            && published.iter().any(|e| {
                matches!(
                    e,
                    Event::Published {
                        kind: Kind::Tools,
                        ..
                    }
                )
            });
        let ended = ending.map(|ending| Watch::ended(c, ending, &published));
        for e in published.iter().chain(&ended) {
            self.observe(e, rec);
        }
        // The client's word on why a walk began again: a label for the observed restart.
        let reason = |kind: Kind| {
            out.iter().find_map(|o| match o {
                ClientOutput::Event(Event::WalkRestarted {
                    kind: k, reason, ..
                }) if *k == kind => Some(*reason),
                _ => None,
            })
        };
        let reasons: Vec<(Kind, Restart)> = Kind::ALL
            .into_iter()
            .filter_map(|k| reason(k).map(|r| (k, r)))
            .collect();
        let failed = observe_call_failure(c, &out);
        let cfg = &scn.clients[c as usize];
        let routed = if cfg.calls_by_name {
            Vec::new() // the application decides, not the router
        } else {
            observe_call_routing(c, cfg.ask_approval, &out)
        };
        for o in out {
            match o {
                ClientOutput::Event(e) if e.is_claim() => rec.claim(&e),
                ClientOutput::Event(e) => self.observe(&e, rec),
                ClientOutput::Send(msg) => {
                    let reason = match &msg.req {
                        Request::List { kind, .. } => {
                            reasons.iter().find(|(k, _)| k == kind).map(|(_, r)| *r)
                        }
                        _ => None,
                    };
                    if let Some(e) =
                        Shared::make_mut(&mut self.watch[c as usize]).asks(c, &msg, reason)
                    {
                        self.observe(&e, rec);
                    }
                    note(rec, || Note::ClientSends {
                        client: c,
                        msg: msg.clone(),
                    });
                    let up = &mut self.links_mut(c).up;
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
                } => note(rec, || Note::RetryArmed {
                    client: c,
                    kind,
                    attempt,
                    delay_ms,
                }),
                ClientOutput::ScheduleWalk { kind, delay_ms, .. } => note(rec, || Note::WalkHeld {
                    client: c,
                    kind,
                    delay_ms,
                }),
                ClientOutput::Failed { kind, error } => note(rec, || Note::RefreshFailed {
                    client: c,
                    kind,
                    error: error.to_string(),
                }),
                ClientOutput::ListenRefused { error } => note(rec, || Note::ListenRefused {
                    client: c,
                    error: error.to_string(),
                }),
                ClientOutput::CallDone { name, result, .. } => note(rec, || Note::CallDone {
                    client: c,
                    name,
                    result,
                }),
                ClientOutput::Content { uri, text } => note(rec, || Note::Content {
                    client: c,
                    uri,
                    text,
                }),
            }
        }
        for e in routed.iter().chain(&failed) {
            self.observe(e, rec);
        }
        if tools_published {
            let e = self.observe_combined(scn, c);
            self.observe(&e, rec);
        }
        routed
    }

    /// (several servers) The application's combined listing now, built by the application's
    /// own code ([`aggregate::combined`]) from each client's published tool list.
    pub fn combined_listing(&self, scn: &Scenario) -> Vec<aggregate::CombinedEntry> {
        let Some(a) = &scn.aggregate else {
            return Vec::new();
        };
        let lists: Vec<Option<&[Item]>> = self
            .clients
            .iter()
            .map(|c| c.snapshot(Kind::Tools).map(|s| &*s.items))
            .collect();
        aggregate::combined(scn.client_strategy(), &a.members, &lists)
    }

    /// The observed event of the application's combined listing after client `c` published
    /// its tools: the entries it shows against the tools its clients' published lists hold
    /// (the lists every consumer of each client reads).
    fn observe_combined(&self, scn: &Scenario, c: ClientId) -> Event {
        let listed = self
            .clients
            .iter()
            .filter_map(|c| c.snapshot(Kind::Tools))
            .map(|s| s.items.len() as u32)
            .sum();
        Event::CombinedListing {
            client: c,
            shown: self.combined_listing(scn).len() as u32,
            listed,
        }
    }

    /// The observed event of a `list_changed` of `kind` that node `node` puts on the wire to
    /// `client`: it announces the latest committed version (in a cluster: the newest that has
    /// reached the node, by a bus event or a read of the store); the version visible is what a list
    /// request to that node would be served now, found by probing the node through its wire
    /// interface (a throwaway copy walks every page) under every authorization context of the
    /// scenario, and matching each probe against the committed versions (the earliest match
    /// over the contexts counts). Nothing the server reports about itself is used.
    fn observe_notification(
        &mut self,
        scn: &Scenario,
        node: usize,
        client: ClientId,
        kind: Kind,
        probes: &mut Probes,
    ) -> Event {
        // A node of a cluster announces what has reached it; a single server, its own commit.
        let announces = self.reached.get(node).copied().unwrap_or(self.truth.0);
        let mut visible = announces;
        for auth in scn.auth_contexts() {
            for k in kind.notification_group() {
                let at = match probes.iter().position(|(key, _)| *key == (node, *k, auth)) {
                    Some(i) => i,
                    None => {
                        probes.push(((node, *k, auth), probe(&self.nodes[node], *k, auth)));
                        probes.len() - 1
                    }
                };
                let seen = probes[at]
                    .1
                    .as_deref()
                    .and_then(|items| {
                        Shared::make_mut(&mut self.monitor).latest_version_of(*k, auth, items)
                    })
                    .unwrap_or(0);
                visible = visible.min(seen);
            }
        }
        Event::Notified {
            client,
            kind,
            announces,
            visible,
        }
    }

    /// The observed event of the server's answer `resp` to `req` from `client`: a tool result
    /// is a dispatch, judged present when the committed catalog holds the tool visible to the
    /// caller's authorization context; an error to a call is a refusal.
    fn observe_answer(&self, client: ClientId, req: &ClientMsg, resp: &Response) -> Option<Event> {
        let Request::CallTool { name, .. } = &req.req else {
            return None;
        };
        Some(match resp {
            Response::ToolResult { .. } => Event::Dispatched {
                client,
                tool: name.clone(),
                present: self
                    .truth
                    .1
                    .get(Kind::Tools, name)
                    .is_some_and(|e| e.scope.visible_to(req.auth)),
            },
            _ => Event::CallRejected {
                client,
                tool: name.clone(),
            },
        })
    }

    /// The observed event of the server running a call of `client` whose arguments were built
    /// for an input schema the tool no longer has: the call's schema fingerprint (on the wire)
    /// against the tool's definition in the catalog the observer knows the dispatching node to
    /// serve (the latest commit; in a cluster, the newest version that has reached the node).
    fn observe_arguments(
        &self,
        client: ClientId,
        req: &ClientMsg,
        resp: &Response,
    ) -> Option<Event> {
        let (Request::CallTool { name, schema }, Response::ToolResult { .. }) = (&req.req, resp)
        else {
            return None;
        };
        if *schema == 0 {
            return None;
        }
        let node = usize::from(self.node_of[client as usize]);
        let version = self.reached.get(node).copied().unwrap_or(self.truth.0);
        let def = self
            .monitor
            .catalog_at(version)?
            .get(Kind::Tools, name)?
            .def
            .clone();
        (crate::vocab::schema_fingerprint(&def) != *schema).then(|| Event::RanStaleArguments {
            client,
            tool: name.clone(),
        })
    }

    /// (cluster) Node `node` reads the store (a poll) and makes its latest version visible (if
    /// newer), notifying.
    fn load_latest(&mut self, scn: &Scenario, node: u8, rec: &mut dyn Recorder) {
        let (v, cat) = (self.truth.0, self.truth.1.arc().clone());
        self.install(scn, node, v, cat, rec);
    }

    /// (cluster) Node `node` makes version `v` (catalog `cat`) visible if it is newer than what
    /// the node serves, and notifies: core's one install-if-newer decision, whether the version
    /// came with a change event or from reading the store.
    fn install(
        &mut self,
        scn: &Scenario,
        node: u8,
        v: u64,
        cat: Arc<Catalog>,
        rec: &mut dyn Recorder,
    ) {
        let r = &mut self.reached[usize::from(node)];
        *r = (*r).max(v);
        let mut out = Vec::new();
        if self.node_mut(usize::from(node)).install(v, cat, &mut out) {
            note(rec, || Note::NodeTakes { node, version: v });
        }
        self.route_server(scn, out, rec);
    }

    /// Kinds of client `c` whose TTL timer is due (see [`ClientMachine::ttl_due`]).
    pub fn ttl_due(&self, c: ClientId) -> Vec<Kind> {
        if self.is_cut(c) {
            return Vec::new();
        }
        let node = &self.nodes[usize::from(self.node_of[c as usize])];
        self.clients[c as usize].ttl_due(node.version())
    }

    /// Whether any list of client `c` is [`ttl_due`](Self::ttl_due) (without collecting them).
    pub fn ttl_is_due(&self, c: ClientId) -> bool {
        if self.is_cut(c) {
            return false;
        }
        let node = &self.nodes[usize::from(self.node_of[c as usize])];
        self.clients[c as usize].ttl_is_due(node.version())
    }

    /// Whether nothing is pending: no message in flight, no staged batch, every client connected
    /// and idle (no refresh running, no retry armed).
    pub fn quiescent(&self) -> bool {
        self.cut.is_empty()
            && self.nodes.iter().all(|n| !n.has_staged())
            && self.bus.iter().all(Vec::is_empty)
            && (!self.is_cluster() || self.nodes.iter().all(|n| n.version() == self.truth.0))
            && self.links.iter().all(|l| l.is_empty())
            && self.clients.iter().all(|c| c.is_idle() && c.is_ready())
            && (0..self.clients.len()).all(|c| !self.ttl_is_due(c as ClientId))
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
        !p.judged_at_rest()
            || !self.quiescent()
            || self
                .monitor
                .check_quiescent(&self.expectations())
                .iter()
                .all(|(q, _)| *q != p)
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
    pub fn canonical(&self) -> World<C> {
        use std::hash::{Hash, Hasher};
        let n = self.clients.len();
        let mut keyed: Vec<(u64, usize)> = (0..n)
            .map(|i| {
                let c = i as ClientId;
                let mut h = crate::vocab::Fnv::default();
                // The client's own hash leaves its id out (and is computed once per change).
                self.clients[i].hash(&mut h);
                self.links[i].hash(&mut h);
                self.watch[i].hash(&mut h);
                self.is_cut(c).hash(&mut h);
                self.node_of[i].hash(&mut h);
                self.nodes[usize::from(self.node_of[i])].hash_session(c, &mut h);
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
        self.relabel(&map)
    }

    /// This state with its clients renumbered: client `old` becomes client `map[old]` (a
    /// permutation), everything that carries a client's id renumbered with it.
    pub fn relabel(&self, map: &[ClientId]) -> World<C> {
        let mut clients = self.clients.clone();
        let mut links = self.links.clone();
        let mut watch = self.watch.clone();
        let mut cut = BTreeSet::new();
        let mut node_of = self.node_of.clone();
        for (old, new) in map.iter().enumerate() {
            node_of[*new as usize] = self.node_of[old];
            clients[*new as usize] =
                self.clients[old].hashing_like(self.clients[old].with_id(*new));
            links[*new as usize] = self.links[old].clone();
            watch[*new as usize] = self.watch[old].clone();
            if self.is_cut(old as ClientId) {
                cut.insert(*new);
            }
        }
        World {
            nodes: self
                .nodes
                .iter()
                .map(|n| Shared::new(n.relabel(map)))
                .collect(),
            node_of,
            truth: self.truth.clone(),
            bus: self.bus.clone(),
            reached: self.reached.clone(),
            bus_used: self.bus_used,
            clients,
            links,
            watch,
            next_batch: self.next_batch,
            next_auth: self.next_auth,
            calls_done: self.calls_done.clone(),
            approvals_done: self.approvals_done.clone(),
            combined_calls: self.combined_calls,
            used: self.used,
            cut,
            monitor: Shared::new(self.monitor.relabel(map)),
        }
    }

    /// Every step enabled in this state, in a fixed order.
    pub fn enabled(&self, scn: &Scenario, steps: &mut Vec<Step>) {
        let single = !self.is_cluster();
        if usize::from(self.next_batch) < scn.script.len()
            && !(single && self.nodes[0].has_staged())
        {
            steps.push(Step::Mutate {
                batch: self.next_batch,
            });
        }
        if single && self.nodes[0].has_staged() {
            steps.push(Step::Commit);
        }
        if let Some(cl) = scn.cluster.as_ref().filter(|_| !single) {
            let latest = &self.truth.0;
            for (ni, q) in self.bus.iter().enumerate() {
                let node = ni as u8;
                for (i, v) in q.iter().enumerate().take(usize::from(u8::MAX)) {
                    if q[..i].contains(v) {
                        continue;
                    }
                    let index = i as u8;
                    steps.push(Step::BusDeliver { node, index });
                    if self.bus_used[0] < cl.bus_duplicate {
                        steps.push(Step::BusDuplicate { node, index });
                    }
                    if self.bus_used[1] < cl.bus_drop {
                        steps.push(Step::BusDrop { node, index });
                    }
                }
                let n = &self.nodes[ni];
                if q.is_empty() && n.version() < *latest && !n.has_staged() {
                    steps.push(Step::Poll { node });
                }
                if n.has_staged() {
                    steps.push(Step::Load { node });
                }
            }
        }
        let ordered_up = scn.transport == Transport::Stdio;
        for (ci, l) in self.links.iter().enumerate() {
            let client = ci as ClientId;
            push_deliveries(&l.up, ordered_up, client, Link::Up, steps);
            push_deliveries(&l.down, ordered_up, client, Link::Down, steps);
            push_deliveries(&l.stream, true, client, Link::Stream, steps);
            if self.used[3] < scn.faults.call_error {
                for (i, m) in l.up.iter().enumerate().take(usize::from(u8::MAX)) {
                    if ordered_up && i > 0 {
                        break;
                    }
                    if matches!(m.req, Request::CallTool { .. }) {
                        steps.push(Step::FailCall {
                            client,
                            index: i as u8,
                        });
                    }
                }
            }
            if self.used[4] < scn.faults.list_error {
                for (i, m) in l.up.iter().enumerate().take(usize::from(u8::MAX)) {
                    if ordered_up && i > 0 {
                        break;
                    }
                    if matches!(m.req, Request::List { .. }) {
                        steps.push(Step::FailList {
                            client,
                            index: i as u8,
                        });
                    }
                }
            }
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
        if let Some(a) = &scn.aggregate
            && self.combined_calls < a.calls
        {
            for e in self.combined_listing(scn) {
                steps.push(Step::CallCombined { name: e.name });
            }
        }
        for i in (0..scn.approvals.len()).map(|i| i as u8) {
            if !self.approvals_done.contains(&i) {
                steps.push(Step::Approve { approval: i });
            }
        }
        for (ci, c) in self.clients.iter().enumerate() {
            let client = ci as ClientId;
            for (kind, auth) in c.armed_retries() {
                steps.push(Step::Retry { client, kind, auth });
            }
            for (kind, auth, _) in c.held_walks() {
                steps.push(Step::WalkDue { client, kind, auth });
            }
            for kind in self.ttl_due(client) {
                steps.push(Step::TtlExpire { client, kind });
            }
            if self.is_cut(client) {
                steps.push(Step::Reconnect { client });
            } else {
                if self.used[2] < scn.faults.disconnect {
                    steps.push(Step::Disconnect { client });
                }
                if scn
                    .cluster
                    .as_ref()
                    .is_some_and(|cl| cl.nodes > 1 && self.bus_used[2] < cl.migrate)
                {
                    steps.push(Step::Migrate { client });
                }
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
        match *step {
            Step::Mutate { batch } => self.admin_applies(scn, batch, rec)?,
            Step::Commit => {
                if self.is_cluster() || !self.nodes[0].has_staged() {
                    return Err("nothing is staged".into());
                }
                let mut out = Vec::new();
                self.node_mut(0).step(ServerInput::CommitStaged, &mut out);
                self.route_server(scn, out, rec);
            }
            Step::BusDeliver { node, index }
            | Step::BusDuplicate { node, index }
            | Step::BusDrop { node, index } => self.bus_moves(scn, step, node, index, rec)?,
            Step::Poll { node } => self.node_polls(scn, node, rec)?,
            Step::Load { node } => self.node_loads(scn, node, rec)?,
            Step::Migrate { client } => self.client_moves(scn, client, rec)?,
            Step::Deliver {
                client,
                link,
                index,
            } => self.deliver(scn, client, link, index, rec)?,
            Step::Duplicate { client, link } | Step::Drop { client, link } => {
                let dup = matches!(step, Step::Duplicate { .. });
                self.network_fault(scn, client, link, dup, rec)?;
            }
            Step::FailCall { client, index } => self.fail_call(scn, client, index, rec)?,
            Step::FailList { client, index } => self.fail_list(scn, client, index, rec)?,
            Step::SetAuth { change } => {
                if change != self.next_auth {
                    return Err(format!("auth change {change} is not next"));
                }
                let (c, auth) = *scn
                    .auth_changes
                    .get(usize::from(change))
                    .ok_or_else(|| format!("the scenario has no auth change {change}"))?;
                self.client_ok(c)?;
                self.next_auth += 1;
                note(rec, || Note::AuthSwitch { client: c, auth });
                self.client_step(scn, c, ClientInput::SetAuth(auth), rec);
            }
            Step::Call { call } => {
                let (c, name) = take_scripted(&scn.calls, &mut self.calls_done, call, "call")?;
                self.client_ok(c)?;
                note(rec, || Note::AppCalls {
                    client: c,
                    name: name.clone(),
                });
                self.client_step(scn, c, ClientInput::CallTool(name), rec);
            }
            Step::CallCombined { ref name } => self.call_combined(scn, name, rec)?,
            Step::Approve { approval } => self.user_approves(scn, approval, rec)?,
            Step::Retry { client, kind, auth } => {
                self.client_ok(client)?;
                if !self.clients[client as usize].retry_armed(kind, auth) {
                    return Err(format!("c{client} has no retry armed for {kind}"));
                }
                self.client_step(scn, client, ClientInput::RetryDue(kind, auth), rec);
            }
            Step::WalkDue { client, kind, auth } => {
                self.client_ok(client)?;
                if !self.clients[client as usize].walk_held(kind, auth) {
                    return Err(format!("c{client} holds no walk of {kind}"));
                }
                self.client_step(scn, client, ClientInput::WalkDue(kind, auth), rec);
            }
            Step::TtlExpire { client, kind } => {
                self.client_ok(client)?;
                if !self.ttl_due(client).contains(&kind) {
                    return Err(format!(
                        "c{client}'s {kind} ttl is not due (the list is current or busy)"
                    ));
                }
                note(rec, || Note::TtlRunsOut { client, kind });
                self.client_step(scn, client, ClientInput::TtlExpired(kind), rec);
            }
            Step::Disconnect { client } => self.connection_cut(scn, client, rec)?,
            Step::Reconnect { client } => {
                self.client_ok(client)?;
                if !self.is_cut(client) {
                    return Err(format!("c{client} is connected"));
                }
                self.cut.remove(&client);
                note(rec, || Note::Reconnects { client });
                self.connect(scn, client, rec);
            }
        }
        Ok(())
    }

    /// Whether the world has a client `c`.
    fn client_ok(&self, c: ClientId) -> Result<(), String> {
        if (c as usize) < self.clients.len() {
            Ok(())
        } else {
            Err(format!("there is no client c{c}"))
        }
    }

    /// [`Step::Mutate`]: the administrator applies the script's next batch, `batch`.
    fn admin_applies(
        &mut self,
        scn: &Scenario,
        batch: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
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
        let cluster = self.is_cluster();
        if !cluster && self.nodes[0].has_staged() {
            return Err("a staged batch must be committed first".into());
        }
        self.next_batch += 1;
        note(rec, || Note::AdminApplies {
            batch,
            ops: ops.clone(),
        });
        // The administrator's commit: the world's ground truth (a cluster's store).
        let mut next = (*self.truth.1).clone();
        for op in ops {
            next.apply(op);
        }
        if next != *self.truth.1 {
            self.truth = (self.truth.0 + 1, Shared::new(next));
            let (v, c) = (self.truth.0, self.truth.1.arc().clone());
            self.observe(
                &Event::Committed {
                    version: v,
                    catalog: c,
                },
                rec,
            );
            if cluster {
                // One atomic commit to the shared store, then a change event to every
                // node.
                for q in self.bus.iter_mut() {
                    insert_sorted(q, BusEvent::of(&self.truth));
                }
                note(rec, || Note::StoreCommits { version: v });
            }
        }
        if !cluster {
            let mut out = Vec::new();
            self.node_mut(0)
                .step(ServerInput::Apply(ops.clone().into()), &mut out);
            self.route_server(scn, out, rec);
        }
        Ok(())
    }

    /// [`Step::BusDeliver`], [`Step::BusDuplicate`], [`Step::BusDrop`] (`step`): the store's
    /// change event at `index` on its way to node `node` is delivered, duplicated or lost.
    fn bus_moves(
        &mut self,
        scn: &Scenario,
        step: &Step,
        node: u8,
        index: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let cl = scn
            .cluster
            .as_ref()
            .ok_or("the scenario is not a cluster")?;
        let q = self
            .bus
            .get_mut(usize::from(node))
            .ok_or_else(|| format!("there is no node {node}"))?;
        let i = usize::from(index);
        if i >= q.len() {
            return Err(format!(
                "no bus event at [{i}] for node {node} (in flight: {})",
                q.len()
            ));
        }
        match step {
            Step::BusDuplicate { .. } => {
                if self.bus_used[0] >= cl.bus_duplicate {
                    return Err(format!(
                        "the scenario allows {} bus duplicates",
                        cl.bus_duplicate
                    ));
                }
                self.bus_used[0] += 1;
                let e = q[i].clone();
                let v = e.version;
                insert_sorted(q, e);
                note(rec, || Note::BusDuplicates { node, version: v });
            }
            Step::BusDrop { .. } => {
                if self.bus_used[1] >= cl.bus_drop {
                    return Err(format!("the scenario allows {} bus drops", cl.bus_drop));
                }
                self.bus_used[1] += 1;
                let v = q.remove(i).version;
                note(rec, || Note::BusLoses { node, version: v });
            }
            _ => {
                let e = q.remove(i);
                note(rec, || Note::BusDelivers {
                    node,
                    version: e.version,
                });
                self.install(scn, node, e.version, e.catalog, rec);
            }
        }
        Ok(())
    }

    /// [`Step::Poll`]: node `node`, behind the store with no change event on its way, catches up.
    fn node_polls(
        &mut self,
        scn: &Scenario,
        node: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let behind = self.is_cluster()
            && self
                .nodes
                .get(usize::from(node))
                .is_some_and(|n| n.version() < self.truth.0 && !n.has_staged());
        if !behind || !self.bus[usize::from(node)].is_empty() {
            return Err(format!("node {node} has nothing to catch up on by polling"));
        }
        note(rec, || Note::NodePolls { node });
        self.load_latest(scn, node, rec);
        Ok(())
    }

    /// [`Step::Load`]: node `node` loads the version it has staged.
    fn node_loads(
        &mut self,
        scn: &Scenario,
        node: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        if !self.is_cluster()
            || !self
                .nodes
                .get(usize::from(node))
                .is_some_and(|n| n.has_staged())
        {
            return Err(format!("node {node} has nothing staged"));
        }
        let mut out = Vec::new();
        self.node_mut(usize::from(node))
            .step(ServerInput::CommitStaged, &mut out);
        let version = self.nodes[usize::from(node)].version();
        note(rec, || Note::NodeLoads { node, version });
        self.route_server(scn, out, rec);
        Ok(())
    }

    /// [`Step::Migrate`]: client `client`'s connection moves to the next node.
    fn client_moves(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        let cl = scn
            .cluster
            .as_ref()
            .ok_or("the scenario is not a cluster")?;
        if self.is_cut(client) || cl.nodes < 2 || self.bus_used[2] >= cl.migrate {
            return Err(format!("c{client} cannot move now"));
        }
        self.bus_used[2] += 1;
        self.links[client as usize] = Shared::default();
        self.lose_walks(client, rec);
        let mut out = Vec::new();
        self.node(client)
            .step(ServerInput::Disconnect(client), &mut out);
        self.route_server(scn, out, rec);
        self.client_step(scn, client, ClientInput::Disconnected, rec);
        let to = (self.node_of[client as usize] + 1) % cl.nodes;
        self.node_of[client as usize] = to;
        note(rec, || Note::ClientMoves { client, to });
        self.connect(scn, client, rec);
        Ok(())
    }

    /// [`Step::Deliver`]: the message at `index` of `link` of client `client` arrives.
    fn deliver(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        link: Link,
        index: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        let ordered = link == Link::Stream || scn.transport == Transport::Stdio;
        if ordered && index != 0 {
            return Err(format!(
                "{link:?} of c{client} is ordered: only its head can be delivered"
            ));
        }
        let i = usize::from(index);
        if link == Link::Up {
            self.server_receives(scn, client, i, rec)
        } else {
            self.client_receives(scn, client, link, i, rec)
        }
    }

    /// The request at `Up[i]` of client `client` reaches its server; the server's answer is
    /// observed as it leaves.
    fn server_receives(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        i: usize,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let l = self.links_mut(client);
        if i >= l.up.len() {
            return Err(format!(
                "no request at Up[{i}] of c{client} (in flight: {})",
                l.up.len()
            ));
        }
        let msg = l.up.remove(i);
        note(rec, || Note::ServerReceives {
            client,
            msg: msg.clone(),
        });
        let mut out = Vec::new();
        self.node(client)
            .step(ServerInput::Request(client, msg.clone()), &mut out);
        for o in &out {
            if let ServerOutput::Send {
                msg: ServerMsg::Response { id, resp },
                ..
            } = o
                && *id == msg.id
            {
                let stale = self.observe_arguments(client, &msg, resp);
                for e in self
                    .observe_answer(client, &msg, resp)
                    .into_iter()
                    .chain(stale)
                {
                    self.observe(&e, rec);
                }
            }
        }
        self.route_server(scn, out, rec);
        Ok(())
    }

    /// The message at `[i]` of server-to-client `link` of client `client` reaches it.
    fn client_receives(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        link: Link,
        i: usize,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let q = self.links_mut(client).down_link_mut(link);
        if i >= q.len() {
            return Err(format!(
                "no message at {link:?}[{i}] of c{client} (in flight: {})",
                q.len()
            ));
        }
        let msg = q.remove(i);
        note(rec, || Note::ClientReceives {
            client,
            msg: msg.clone(),
        });
        let ending = Shared::make_mut(&mut self.watch[client as usize]).answered(&msg);
        self.client_step_ending(scn, client, ClientInput::Receive(msg), ending, rec);
        Ok(())
    }

    /// [`Step::Duplicate`] (`dup`) or [`Step::Drop`]: the network duplicates or loses the
    /// `list_changed` at the head of `link` of client `client`.
    fn network_fault(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        link: Link,
        dup: bool,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        let (slot, budget) = if dup {
            (0, scn.faults.duplicate)
        } else {
            (1, scn.faults.drop)
        };
        if self.used[slot] >= budget {
            return Err(format!("the scenario allows {budget} such faults"));
        }
        let q = Shared::make_mut(&mut self.links[client as usize]).down_link_mut(link);
        if !is_list_changed(q.first()) {
            return Err(format!(
                "the head of {link:?} of c{client} is not a list_changed notification"
            ));
        }
        self.used[slot] += 1;
        if dup {
            let m = q[0].clone();
            q.insert(1, m);
            note(rec, || Note::NetworkDuplicates { client });
        } else {
            q.remove(0);
            note(rec, || Note::NetworkLoses { client });
        }
        Ok(())
    }

    /// [`Step::FailCall`]: the tool call at `Up[index]` of client `client` fails in the
    /// server's place.
    fn fail_call(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        index: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        if self.used[3] >= scn.faults.call_error {
            return Err(format!(
                "the scenario allows {} failed calls",
                scn.faults.call_error
            ));
        }
        let ordered = scn.transport == Transport::Stdio;
        let up = &self.links[client as usize].up;
        let i = usize::from(index);
        let name = match up.get(i).map(|m| &m.req) {
            Some(Request::CallTool { name, .. }) if !ordered || i == 0 => name.clone(),
            _ => return Err(format!("no tool call at Up[{i}] of c{client}")),
        };
        self.used[3] += 1;
        let msg = self.links_mut(client).up.remove(i);
        note(rec, || Note::CallFails { client, name });
        self.fail_in_servers_place(scn, client, &msg, rec);
        Ok(())
    }

    /// [`Step::FailList`]: the list request at `Up[index]` of client `client` fails in the
    /// server's place.
    fn fail_list(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        index: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        if self.used[4] >= scn.faults.list_error {
            return Err(format!(
                "the scenario allows {} failed list requests",
                scn.faults.list_error
            ));
        }
        let ordered = scn.transport == Transport::Stdio;
        let up = &self.links[client as usize].up;
        let i = usize::from(index);
        let kind = match up.get(i).map(|m| &m.req) {
            Some(Request::List { kind, .. }) if !ordered || i == 0 => *kind,
            _ => return Err(format!("no list request at Up[{i}] of c{client}")),
        };
        self.used[4] += 1;
        let msg = self.links_mut(client).up.remove(i);
        note(rec, || Note::ListFails { client, kind });
        self.fail_in_servers_place(scn, client, &msg, rec);
        Ok(())
    }

    /// [`Step::CallCombined`]: the application with several servers calls `name` of its
    /// combined listing; the call is observed with the connection and tool it reached.
    fn call_combined(
        &mut self,
        scn: &Scenario,
        name: &Name,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let Some(a) = &scn.aggregate else {
            return Err("the scenario has no application with several servers".into());
        };
        if self.combined_calls >= a.calls {
            return Err(format!("all {} combined calls are made", a.calls));
        }
        let listing = self.combined_listing(scn);
        let Some(e) = aggregate::route(&listing, name) else {
            return Err(format!("the combined listing shows no {name}"));
        };
        let (c, tool) = (e.member as ClientId, e.item.name.clone());
        self.combined_calls += 1;
        note(rec, || Note::AppCalls {
            client: c,
            name: name.clone(),
        });
        let routed = self.client_step(scn, c, ClientInput::CallTool(tool), rec);
        for r in routed {
            if let Event::Routed {
                client,
                tool,
                sent: true,
                ..
            } = r
            {
                let e = Event::CalledCombined {
                    name: name.clone(),
                    client,
                    tool,
                };
                self.observe(&e, rec);
            }
        }
        Ok(())
    }

    /// [`Step::Approve`]: the user gives the script's approval `approval`.
    fn user_approves(
        &mut self,
        scn: &Scenario,
        approval: u8,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        let (c, name) = take_scripted(
            &scn.approvals,
            &mut self.approvals_done,
            approval,
            "approval",
        )?;
        self.client_ok(c)?;
        note(rec, || Note::UserApproves {
            client: c,
            name: name.clone(),
        });
        let auth = self.clients[c as usize].auth();
        let e = Event::Approved {
            client: c,
            tool: name.clone(),
            auth,
        };
        self.observe(&e, rec);
        self.client_step(scn, c, ClientInput::Approve(name), rec);
        Ok(())
    }

    /// [`Step::Disconnect`]: client `client`'s connection is cut.
    fn connection_cut(
        &mut self,
        scn: &Scenario,
        client: ClientId,
        rec: &mut dyn Recorder,
    ) -> Result<(), String> {
        self.client_ok(client)?;
        if self.is_cut(client) || self.used[2] >= scn.faults.disconnect {
            return Err(format!("c{client} cannot be cut now"));
        }
        self.used[2] += 1;
        self.cut.insert(client);
        self.links[client as usize] = Shared::default();
        self.lose_walks(client, rec);
        note(rec, || Note::ConnectionCut { client });
        let mut out = Vec::new();
        self.node(client)
            .step(ServerInput::Disconnect(client), &mut out);
        self.route_server(scn, out, rec);
        self.client_step(scn, client, ClientInput::Disconnected, rec);
        Ok(())
    }
}

/// The observed event of a failed tool call handed to client `client` in one step of its
/// machine, from that step's outputs: the error the wire carried (or the transport's failure),
/// and the kinds whose first page the client put on the wire in reaction. None when no call
/// failed in the step, or when the client refused a call locally (not in its snapshot, not
/// approved, its list known out of date: nothing was on the wire, so an observer saw no call).
/// The world and the runtime observe calls with this one function.
pub fn observe_call_failure(client: ClientId, out: &[ClientOutput]) -> Option<Event> {
    let (tool, auth, err) = out.iter().find_map(|o| match o {
        ClientOutput::CallDone {
            name,
            auth,
            result: Err(e),
        } if matches!(e, CallError::Rpc(_) | CallError::Transport(_)) => Some((name, *auth, e)),
        _ => None,
    })?;
    let relisted: KindSet = out
        .iter()
        .filter_map(|o| match o {
            ClientOutput::Send(ClientMsg {
                req: Request::List { kind, cursor: None },
                ..
            }) => Some(*kind),
            _ => None,
        })
        .collect();
    Some(Event::CallFailed {
        client,
        tool: tool.clone(),
        auth,
        gone: matches!(err, CallError::Rpc(e) if e.reason.says_tool_changed()),
        relisted,
    })
}

/// What an observer sees when `input` reaches client `client` (configured by `cfg`), before the
/// client steps with it: the world and the runtime observe every input with this one function.
///
/// - A `list_changed` reaching a client whose application asks for approvals
///   (`NoticeReceived`).
/// - A listen's acknowledgement (`ListenAcked`, for the kinds it honours that the client keeps:
///   the wire's word, not the client's, on which lists it must fetch before `listen_then_list`
///   holds).
/// - A **wake-up** (`Woken`): the input gives the client a reason to fetch lists it keeps — a
///   `list_changed` (its kind's group), a listen's acknowledgement, the answer to `initialize`
///   (or a listen refused with -32601: it lists instead), a call's error saying the tool is gone
///   or its schema changed (the tool list), a `ttlMs` running out, the application's refresh or
///   switch of context, a (re)connection (2026-07-28, which has no handshake). `bounded_refresh` closes a burst's window at the first
///   wake-up after its refresh ended: whether the client heeds the input (it may ignore a
///   notification before its handshake, or of another listen stream) is its decision, so this
///   is generous, never stricter than the client's own word; a refresh with no such input
///   before it (a call's unrelated error, nothing at all) is counted in the window still open.
pub fn observe_input(
    client: ClientId,
    cfg: &crate::client::ClientConfig,
    input: &ClientInput,
) -> Vec<Event> {
    use crate::history::Cause;
    let kept = cfg.kinds;
    let woken = |kinds: KindSet, cause: Cause| {
        (!kinds.is_empty()).then_some(Event::Woken {
            client,
            kinds,
            cause,
        })
    };
    let only = |kind: Kind| {
        KindSet::only(kind)
            .iter()
            .filter(|k| kept.contains(*k))
            .collect()
    };
    let mut seen = Vec::new();
    let wake = match input {
        // 2026-07-28 has no handshake: the connection is the reason to list (the 2025-11-25
        // client's is the handshake's answer, below).
        ClientInput::Start if cfg.era == crate::vocab::Era::V2026_07_28 => {
            woken(kept, Cause::Startup)
        }
        ClientInput::TtlExpired(kind) => woken(only(*kind), Cause::TtlExpired),
        ClientInput::Refresh(kind) => woken(KindSet::only(*kind), Cause::Requested),
        ClientInput::SetAuth(_) => woken(kept, Cause::AuthChanged),
        ClientInput::Receive(msg) => match msg {
            ServerMsg::Notification(Notification::ListChanged { kind, .. }) => {
                if cfg.ask_approval {
                    seen.push(Event::NoticeReceived {
                        client,
                        kind: *kind,
                    });
                }
                let group = kind
                    .notification_group()
                    .iter()
                    .copied()
                    .filter(|g| kept.contains(*g))
                    .collect();
                woken(group, Cause::ListChanged)
            }
            ServerMsg::Notification(Notification::Acknowledged { kinds, .. }) => {
                seen.push(Event::ListenAcked {
                    client,
                    kinds: kinds.iter().filter(|k| kept.contains(*k)).collect(),
                });
                woken(kept, Cause::ListenAck)
            }
            ServerMsg::Response {
                resp: Response::Initialized { .. },
                ..
            } => woken(kept, Cause::Startup),
            ServerMsg::Response {
                resp: Response::Error(e),
                ..
            } if e.code == crate::wire::METHOD_NOT_FOUND => woken(kept, Cause::Startup),
            ServerMsg::Response {
                resp: Response::Error(e),
                ..
            } if e.reason.says_tool_changed() => woken(only(Kind::Tools), Cause::ItemGone),
            _ => None,
        },
        _ => None,
    };
    seen.extend(wake);
    seen
}

/// The lists a client's readers can read now: every kind under each of `contexts`, as
/// [`ClientMachine::snapshot_for`] gives it to them.
pub fn readers_see<C: ClientMachine>(
    m: &C,
    contexts: &BTreeSet<AuthCtx>,
) -> Vec<((Kind, AuthCtx), Option<ItemList>)> {
    contexts
        .iter()
        .flat_map(|a| Kind::ALL.into_iter().map(move |k| (k, *a)))
        .map(|(k, a)| ((k, a), m.snapshot_for(k, a).map(|s| s.items.clone())))
        .collect()
}

/// The observed publishes of one step of client `client`: each list its readers read now
/// otherwise than `before` the step ([`readers_see`]), dated by `date` (the latest committed
/// version whose list it equals, which the observer knows; None if none). A list that readers can
/// no longer read is no publish (it is judged at quiescence). What the client says it published
/// is not used. The world and the runtime observe publishes with this one function.
pub fn observe_publishes<C: ClientMachine>(
    client: ClientId,
    m: &C,
    before: Vec<((Kind, AuthCtx), Option<ItemList>)>,
    mut date: impl FnMut(Kind, AuthCtx, &[Item]) -> Option<u64>,
) -> Vec<Event> {
    before
        .into_iter()
        .filter_map(|((kind, auth), was)| {
            let now = m.snapshot_for(kind, auth).map(|s| s.items.clone())?;
            (Some(&now) != was.as_ref()).then(|| Event::Published {
                client,
                kind,
                auth,
                version: date(kind, auth, &now),
                items: now,
            })
        })
        .collect()
}

/// Scripted entry `i` (a tool call, an approval) of `script`, marked taken in `done`; an error if
/// the script has no such entry or it was taken already.
fn take_scripted(
    script: &[(ClientId, crate::vocab::Name)],
    done: &mut BTreeSet<u8>,
    i: u8,
    what: &str,
) -> Result<(ClientId, crate::vocab::Name), String> {
    let entry = script
        .get(usize::from(i))
        .cloned()
        .ok_or_else(|| format!("the scenario has no {what} {i}"))?;
    if !done.insert(i) {
        return Err(format!("{what} {i} was already taken"));
    }
    Ok(entry)
}

/// The observed events of a client's call router deciding on the application's calls, from the
/// outputs of one step of its machine: each `tools/call` on the wire, and each call refused in
/// the client as not in its list (none for a call refused otherwise, or made while the client
/// was not connected). `approval`: whether the client's application asks the user to approve
/// tools with side effects. The world and the runtime observe routing with this one function.
pub fn observe_call_routing(client: ClientId, approval: bool, out: &[ClientOutput]) -> Vec<Event> {
    out.iter()
        .filter_map(|o| match o {
            ClientOutput::Send(ClientMsg {
                req: Request::CallTool { name, .. },
                auth,
                ..
            }) => Some(Event::Routed {
                client,
                tool: name.clone(),
                auth: *auth,
                sent: true,
                approval,
            }),
            ClientOutput::CallDone {
                name,
                auth,
                result: Err(CallError::NotInSnapshot),
            } => Some(Event::Routed {
                client,
                tool: name.clone(),
                auth: *auth,
                sent: false,
                approval,
            }),
            _ => None,
        })
        .collect()
}

/// What a list request of `kind` under `auth` would be served by `node` now: a throwaway copy
/// of the node ([`Registry::probe_copy`]: everything a list depends on, none of the sessions) is
/// asked through its wire interface (a connection of its own, the era's handshake, then every
/// page, following cursors). The node itself is left untouched: a walk can change what it
/// retains for cursors, which would change what its clients' walks get. None if the walk fails
/// or does not end.
pub fn probe(node: &Registry, kind: Kind, auth: AuthCtx) -> Option<Vec<Item>> {
    let mut copy = node.probe_copy();
    let mut out = Vec::new();
    copy.step(ServerInput::Connect(PROBE), &mut out);
    walk(&mut copy, kind, auth)
}

/// What probes of (node, kind, authorization context) found, within one routing of a node's
/// outputs.
type Probes = Vec<((usize, Kind, AuthCtx), Option<Vec<Item>>)>;

/// The session id of a probe (no client's).
const PROBE: ClientId = ClientId::MAX;

fn walk(r: &mut Registry, kind: Kind, auth: AuthCtx) -> Option<Vec<Item>> {
    const MAX_PAGES: usize = 64;
    let ask = |r: &mut Registry, id: u32, req: Request| -> Option<Response> {
        let mut out = Vec::new();
        r.step(
            ServerInput::Request(PROBE, ClientMsg { id, auth, req }),
            &mut out,
        );
        out.into_iter().find_map(|o| match o {
            ServerOutput::Send {
                msg: ServerMsg::Response { id: got, resp },
                ..
            } if got == id => Some(resp),
            _ => None,
        })
    };
    if r.config().era == crate::vocab::Era::V2025_11_25 {
        ask(r, 0, Request::Initialize)?;
    }
    let mut items = Vec::new();
    let mut cursor = None;
    for page in 1..=MAX_PAGES {
        match ask(r, page as u32, Request::List { kind, cursor })? {
            Response::Page(p) => {
                items.extend(p.items.iter().cloned());
                match p.next {
                    Some(next) => cursor = Some(next),
                    None => return Some(items),
                }
            }
            _ => return None,
        }
    }
    None
}

/// (cluster) A change event on the bus: the version a commit made, and the catalog it carries
/// (as rt's nodes publish it). Events are ordered, compared and hashed by version alone: one
/// version has one catalog.
#[derive(Clone, Debug)]
pub struct BusEvent {
    /// The committed version.
    pub version: u64,
    /// Its catalog.
    pub catalog: Arc<Catalog>,
}

impl BusEvent {
    fn of((version, catalog): &(u64, Shared<Catalog>)) -> BusEvent {
        BusEvent {
            version: *version,
            catalog: catalog.arc().clone(),
        }
    }
}

impl PartialEq for BusEvent {
    fn eq(&self, other: &Self) -> bool {
        self.version == other.version
    }
}

impl Eq for BusEvent {}

impl PartialOrd for BusEvent {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for BusEvent {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.version.cmp(&other.version)
    }
}

impl std::hash::Hash for BusEvent {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.version.hash(state);
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
