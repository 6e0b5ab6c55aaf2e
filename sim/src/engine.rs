//! The machine-level scheduler: core's [`World`] moved on simulated time.
//!
//! The model checker explores every enabled step of a world; the simulator instead *schedules*
//! steps with a seeded random stream. When a message is put on a link (core tells the
//! [`Recorder`] through `sent`), its delivery is scheduled at now + a latency drawn from the fault
//! plan — never earlier than the previous delivery on an ordered link, independently on an
//! unordered HTTP link (which then delivers a message picked at random). The administrator's
//! batches, authorization switches, tool calls, cut connections and server crashes are
//! scheduled from the plan when the run starts; retry timers when a client arms one;
//! duplicated and lost notifications are decided when a notification arrives.
//!
//! Every scheduled thing happens by applying one of the world's own [`Step`]s, so the list of
//! applied steps *is* a trace, replayable by `Trace::check`. The world's monitor judges event
//! properties as they happen; whenever the world is quiescent (nothing in flight, nobody busy)
//! the quiescence properties are checked too, and at the end, when nothing is pending.
//!
//! The scheduler keeps its own pending-event structures (a time-ordered queue, per-client
//! connection epochs and counters), so one step costs what the machines cost, whatever the
//! number of clients. Pending events of a cut connection are not removed: they are skipped
//! when they come due because their epoch is stale.

use crate::case::{roll, stream, streams, uniform};
use crate::plan::{FaultPlan, Micros};
use listsync_core::client::CatalogClient;
use listsync_core::history::{ClientId, Event};
use listsync_core::machine::ClientMachine;
use listsync_core::property::Property;
use listsync_core::record::{Note, Recorder};
use listsync_core::scenario::{Scenario, Transport};
use listsync_core::situation::Situation;
use listsync_core::vocab::{AuthCtx, Kind};
use listsync_core::wire::{Notification, Request, ServerMsg};
use listsync_core::world::{Link, Step, World};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap, VecDeque};

/// Options of one run.
#[derive(Clone, Copy, Debug)]
pub struct RunOpts {
    /// Keep the applied steps (for a trace) and the history (for determinism checks).
    pub record: bool,
    /// Give up after this many steps (a safety net; a finished run never reaches it).
    pub max_steps: u64,
    /// Stop as soon as this property is violated (shrinking).
    pub stop_on: Option<Property>,
}

impl Default for RunOpts {
    fn default() -> Self {
        RunOpts {
            record: false,
            max_steps: 50_000_000,
            stop_on: None,
        }
    }
}

/// The environment's fault counts for one run (budgets the plan's schedule may use).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Budget {
    /// Connections cut at random moments.
    pub disconnects: u32,
    /// Server crashes.
    pub crashes: u32,
    /// Notification streams that break (the connection is cut as a notification arrives),
    /// for plans whose losses are not silent.
    pub breaks: u32,
    /// Whether some messages are slow.
    pub slow: bool,
    /// (cluster) Client connections moved to another node at random moments.
    pub migrations: u32,
}

/// The first violation of one property in a run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FirstViolation {
    /// The property.
    pub property: Property,
    /// Number of steps applied when it showed (a trace of that many steps shows it).
    pub after_steps: u64,
    /// Simulated time it showed at.
    pub at_us: Micros,
    /// The monitor's explanation.
    pub detail: String,
}

/// What a run recorded, with `RunOpts::record`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunRecording {
    /// The applied steps, in order: a trace of the run.
    pub steps: Vec<Step>,
    /// The history: every applied step and every event, with its simulated time, one line
    /// each.
    pub history: Vec<String>,
}

/// The result of one run.
#[derive(Clone, Debug, Default)]
pub struct RunResult {
    /// Clients.
    pub clients: u32,
    /// Steps applied.
    pub steps: u64,
    /// History events observed.
    pub events: u64,
    /// Simulated time at the end.
    pub end_us: Micros,
    /// Committed changes (after the initial catalog).
    pub commits: u32,
    /// List walks started (first page requests, restarts and retries included).
    pub walks: u64,
    /// Walks started at or after the first batch.
    pub walks_after_change: u64,
    /// Most walks one client started at or after the first batch.
    pub max_client_walks: u32,
    /// Per client: time from the last commit to its last publish (0 if it had nothing to
    /// fetch); empty without commits.
    pub converge_us: Vec<Micros>,
    /// Time from the last commit to the end of the run.
    pub settle_us: Option<Micros>,
    /// First violation of each violated property, in the order found.
    pub found: Vec<FirstViolation>,
    /// The run ended with something pending that nothing would ever move (a scheduler bug).
    pub stuck: Option<String>,
    /// The step limit was reached.
    pub aborted: bool,
    /// Steps the world refused (a scheduler bug; always 0).
    pub refused: u32,
    /// With `RunOpts::record`.
    pub recording: Option<RunRecording>,
    /// The situations (`core::situation`) some state of the run was in; `None` when they were
    /// not watched (runs with more than [`SITUATION_CLIENTS`] clients).
    pub situations: Option<BTreeSet<Situation>>,
}

/// Runs with at most this many clients watch for situations after every step (the predicates
/// look at every client; scale runs skip them).
pub const SITUATION_CLIENTS: usize = 16;

impl RunResult {
    /// Whether `p` was violated.
    pub fn violated(&self, p: Property) -> bool {
        self.found.iter().any(|f| f.property == p)
    }
}

/// Something scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ev {
    Deliver {
        client: ClientId,
        link: Link,
        epoch: u32,
    },
    Mutate {
        batch: u32,
    },
    Commit {
        batch: u32,
    },
    SetAuth {
        change: u8,
    },
    Call {
        call: u8,
    },
    Approve {
        approval: u8,
    },
    /// The application of several servers calls an entry of its combined listing (`pick`,
    /// modulo the entries it shows then).
    CallCombined {
        pick: u32,
    },
    Retry {
        client: ClientId,
        kind: Kind,
        auth: AuthCtx,
        epoch: u32,
    },
    /// A client's pacing timer: its held walk starts.
    WalkDue {
        client: ClientId,
        kind: Kind,
        auth: AuthCtx,
        epoch: u32,
    },
    Disconnect {
        client: ClientId,
    },
    Reconnect {
        client: ClientId,
    },
    Crash,
    /// A client's cached list runs out of `ttlMs` (2026-07-28).
    Ttl {
        client: ClientId,
        kind: Kind,
    },
    /// (cluster) One change event on the bus reaches `node`.
    Bus {
        node: u8,
    },
    /// (cluster) `node` reads the store if it is behind with nothing on the bus.
    Poll {
        node: u8,
    },
    /// (cluster) `node` loads a version it announced (`cluster-notify-before-visible`).
    Load {
        node: u8,
    },
    /// (cluster) A client's connection moves to another node.
    Migrate {
        client: ClientId,
    },
}

/// A queue entry, ordered by (time, insertion order).
#[derive(Clone, Copy, Debug)]
struct Entry {
    at: Micros,
    seq: u64,
    ev: Ev,
}

impl PartialEq for Entry {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for Entry {}
impl PartialOrd for Entry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for Entry {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// The recorder the world reports to during a step: counts, timestamps, sent messages.
struct Tap {
    now: Micros,
    sent: Vec<(ClientId, Link)>,
    events: u64,
    commits: u32,
    last_commit: Option<Micros>,
    changing: bool,
    walks: u64,
    walks_after: u64,
    client_walks: Vec<u32>,
    last_publish: Vec<Micros>,
    attempts: BTreeMap<(ClientId, Kind, AuthCtx), u8>,
    published: Vec<(ClientId, Kind)>,
    history: Option<Vec<String>>,
}

impl Recorder for Tap {
    fn event(&mut self, e: &Event) {
        self.events += 1;
        match e {
            Event::Committed { .. } if self.changing => {
                self.commits += 1;
                self.last_commit = Some(self.now);
            }
            Event::RefreshStarted { client, .. } | Event::WalkRestarted { client, .. } => {
                self.walks += 1;
                if self.changing {
                    self.walks_after += 1;
                    self.client_walks[*client as usize] += 1;
                }
            }
            Event::Published { client, kind, .. } => {
                self.last_publish[*client as usize] = self.now;
                self.published.push((*client, *kind));
            }
            Event::RefreshEnded {
                client, kind, auth, ..
            } => {
                self.attempts.remove(&(*client, *kind, *auth));
            }
            _ => {}
        }
        if let Some(h) = self.history.as_mut() {
            h.push(format!("{} {e:?}", self.now));
        }
    }

    fn wants_notes(&self) -> bool {
        false
    }

    fn note(&mut self, _: Note) {}

    fn sent(&mut self, client: ClientId, link: Link) {
        self.sent.push((client, link));
    }
}

fn link_slot(link: Link) -> usize {
    match link {
        Link::Up => 0,
        Link::Down => 1,
        Link::Stream => 2,
    }
}

/// One simulated run of a scenario under a fault plan, its clients running machine `C`.
pub struct Engine<'a, C = CatalogClient> {
    scn: &'a Scenario,
    plan: &'a FaultPlan,
    opts: RunOpts,
    budget: Budget,
    world: World<C>,
    tap: Tap,
    net: ChaCha8Rng,
    /// Which tool calls fail (a stream of its own, so that the network's draws stay as they were).
    calls: ChaCha8Rng,
    queue: BinaryHeap<Reverse<Entry>>,
    seq: u64,
    now: Micros,
    epoch: Vec<u32>,
    /// Due times of the messages on each client's ordered links (head first); only the head's
    /// delivery is in the queue, so a burst on many links keeps the queue small.
    due: Vec<[VecDeque<Micros>; 3]>,
    inflight: u64,
    busy: u32,
    client_busy: Vec<bool>,
    retries: BTreeSet<(ClientId, Kind, AuthCtx)>,
    /// Pacing timers scheduled (client, kind, auth).
    walk_timers: BTreeSet<(ClientId, Kind, AuthCtx)>,
    staged_batch: Option<u32>,
    breaks: u32,
    /// (cluster) Bus events per node whose arrival is scheduled.
    bus_seen: Vec<usize>,
    /// TTL timers pending, per (client, kind), and how many are in the queue.
    ttl_timers: BTreeSet<(ClientId, Kind)>,
    steps: u64,
    observed: usize,
    found: Vec<FirstViolation>,
    refused: u32,
    recording: Option<RunRecording>,
    /// The situations reached so far, one bit each (`Situation::index`); `None` when they are
    /// not watched.
    situations: Option<u32>,
}

/// Every situation's bit.
const ALL_SITUATIONS: u32 = (1 << Situation::ALL.len()) - 1;

impl<'a, C: ClientMachine> Engine<'a, C> {
    /// A run of `scn` under `plan`, its schedule drawn from `seed`.
    pub fn new(
        scn: &'a Scenario,
        plan: &'a FaultPlan,
        seed: u64,
        budget: Budget,
        opts: RunOpts,
    ) -> Engine<'a, C> {
        let n = scn.clients.len();
        let mut tap = Tap {
            now: 0,
            sent: Vec::new(),
            events: 0,
            commits: 0,
            last_commit: None,
            changing: false,
            walks: 0,
            walks_after: 0,
            client_walks: vec![0; n],
            last_publish: vec![0; n],
            attempts: BTreeMap::new(),
            published: Vec::new(),
            history: opts.record.then(Vec::new),
        };
        let world = World::start_recorded(scn, &mut tap);
        let mut e = Engine {
            scn,
            plan,
            opts,
            budget,
            world,
            tap,
            net: stream(seed, streams::NET),
            calls: stream(seed, streams::CALL_FAIL),
            queue: BinaryHeap::new(),
            seq: 0,
            now: 0,
            epoch: vec![0; n],
            due: (0..n).map(|_| Default::default()).collect(),
            inflight: 0,
            busy: 0,
            client_busy: vec![false; n],
            retries: BTreeSet::new(),
            walk_timers: BTreeSet::new(),
            staged_batch: None,
            breaks: 0,
            bus_seen: Vec::new(),
            ttl_timers: BTreeSet::new(),
            steps: 0,
            observed: 0,
            found: Vec::new(),
            refused: 0,
            recording: opts.record.then(RunRecording::default),
            situations: (n <= SITUATION_CLIENTS).then_some(0),
        };
        for c in 0..n {
            let b = !e.idle(c as ClientId);
            e.client_busy[c] = b;
            e.busy += u32::from(b);
        }
        if let (Some(rec), Some(h)) = (e.recording.as_mut(), e.tap.history.as_mut()) {
            rec.history.append(h);
        }
        e.bus_seen = vec![0; e.world.bus.len()];
        e.schedule_sent();
        e.schedule_environment(seed);
        e
    }

    fn idle(&self, c: ClientId) -> bool {
        let cl = &self.world.clients[c as usize];
        cl.is_idle() && cl.is_ready()
    }

    fn push(&mut self, at: Micros, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse(Entry {
            at,
            seq: self.seq,
            ev,
        }));
    }

    /// Draws the administrator's, the applications' and the environment's schedule.
    fn schedule_environment(&mut self, seed: u64) {
        let plan = self.plan;
        let scn = self.scn;
        let mut r = stream(seed, streams::ENV);
        let mut t = uniform(&mut r, plan.first_batch);
        for b in 0..scn.script.len() as u32 {
            if b > 0 {
                t += if roll(&mut r, plan.storm_permille) {
                    uniform(&mut r, plan.storm_gap)
                } else {
                    uniform(&mut r, plan.gap)
                };
            }
            self.push(t, Ev::Mutate { batch: b });
        }
        let horizon = t + 50_000;
        let mut times: Vec<Micros> = (0..scn.auth_changes.len())
            .map(|_| r.random_range(0..=horizon))
            .collect();
        times.sort_unstable();
        for (i, at) in times.into_iter().enumerate() {
            self.push(at, Ev::SetAuth { change: i as u8 });
        }
        for i in 0..scn.calls.len() {
            let at = r.random_range(0..=horizon);
            self.push(at, Ev::Call { call: i as u8 });
        }
        for i in 0..scn.approvals.len() {
            let at = r.random_range(0..=horizon);
            self.push(at, Ev::Approve { approval: i as u8 });
        }
        let n = scn.clients.len() as u32;
        for _ in 0..self.budget.disconnects {
            let at = r.random_range(0..=horizon);
            let client = r.random_range(0..n);
            self.push(at, Ev::Disconnect { client });
        }
        for _ in 0..self.budget.crashes {
            let at = r.random_range(0..=horizon);
            self.push(at, Ev::Crash);
        }
        for _ in 0..self.budget.migrations {
            let at = r.random_range(0..=horizon);
            let client = r.random_range(0..n);
            self.push(at, Ev::Migrate { client });
        }
        // Drawn last, so that a run without several servers draws what it always drew.
        for _ in 0..scn.aggregate.as_ref().map_or(0, |a| a.calls) {
            let at = r.random_range(0..=horizon);
            let pick = r.random();
            self.push(at, Ev::CallCombined { pick });
        }
    }

    /// Schedules the delivery of every message the last step put on a link.
    fn schedule_sent(&mut self) {
        let sent = std::mem::take(&mut self.tap.sent);
        for &(client, link) in &sent {
            self.schedule_delivery(client, link);
        }
        self.tap.sent = sent;
        self.tap.sent.clear();
    }

    fn schedule_delivery(&mut self, client: ClientId, link: Link) {
        let plan = self.plan;
        let mut d = uniform(&mut self.net, plan.latency);
        if self.budget.slow && roll(&mut self.net, plan.slow_permille) {
            d += uniform(&mut self.net, plan.slow);
        }
        let at = self.now + d;
        self.inflight += 1;
        let epoch = self.epoch[client as usize];
        if self.ordered(link) {
            let q = &mut self.due[client as usize][link_slot(link)];
            if let Some(&last) = q.back() {
                // Behind the messages already on the link: their delivery brings this one.
                q.push_back(at.max(last));
                return;
            }
            q.push_back(at);
        }
        self.push(
            at,
            Ev::Deliver {
                client,
                link,
                epoch,
            },
        );
    }

    /// An ordered link delivered its head: schedules the next message's delivery.
    fn next_on_link(&mut self, client: ClientId, link: Link) {
        let q = &mut self.due[client as usize][link_slot(link)];
        q.pop_front();
        if let Some(&at) = q.front() {
            let epoch = self.epoch[client as usize];
            self.push(
                at.max(self.now),
                Ev::Deliver {
                    client,
                    link,
                    epoch,
                },
            );
        }
    }

    fn ordered(&self, link: Link) -> bool {
        link == Link::Stream || self.scn.transport == Transport::Stdio
    }

    fn notification_link(&self) -> Link {
        match self.scn.transport {
            Transport::Http => Link::Stream,
            Transport::Stdio => Link::Down,
        }
    }

    /// Applies one step of the world and does the bookkeeping that follows it.
    fn apply(&mut self, step: Step, touched: Option<ClientId>) -> bool {
        if let Some(c) = touched {
            // Pacing reads the client's clock: the simulated time.
            self.world.client_mut(c).set_clock(self.now);
        }
        if let Err(why) = self.world.apply(self.scn, &step, &mut self.tap) {
            // The scheduler only applies steps it knows are possible; count the exception.
            debug_assert!(false, "world refused {step}: {why}");
            self.refused += 1;
            return false;
        }
        self.steps += 1;
        if let Some(reached) = self.situations.as_mut()
            && *reached != ALL_SITUATIONS
        {
            *reached |= Situation::holding(self.scn, &self.world, ALL_SITUATIONS & !*reached);
        }
        if let Some(rec) = self.recording.as_mut() {
            rec.history.push(format!("{} step {step}", self.now));
            if let Some(h) = self.tap.history.as_mut() {
                rec.history.append(h);
            }
            rec.steps.push(step);
        }
        self.schedule_sent();
        if let Some(c) = touched {
            let client = &self.world.clients[c as usize];
            let a = client.activity();
            let b = !(a.idle && client.is_ready());
            if b != self.client_busy[c as usize] {
                self.client_busy[c as usize] = b;
                if b {
                    self.busy += 1;
                } else {
                    self.busy -= 1;
                }
            }
            if a.armed {
                self.arm_retries(c);
            }
            if a.held {
                self.arm_walks(c);
            }
        }
        let observed = self.world.monitor.observed();
        if observed != self.observed {
            self.observed = observed;
            for p in Property::ALL {
                if self.world.monitor.violated(p) && !self.found.iter().any(|f| f.property == p) {
                    let detail = self
                        .world
                        .monitor
                        .first_violation(p)
                        .unwrap_or_default()
                        .to_owned();
                    self.record_found(p, detail);
                }
            }
        }
        if !self.bus_seen.is_empty() {
            self.schedule_bus();
        }
        if !self.tap.published.is_empty() {
            self.arm_ttls();
        }
        if self.inflight == 0
            && self.busy == 0
            && self.bus_seen.iter().all(|n| *n == 0)
            && self.world.quiescent()
        {
            self.check_quiescent();
        }
        true
    }

    fn record_found(&mut self, property: Property, detail: String) {
        self.found.push(FirstViolation {
            property,
            after_steps: self.steps,
            at_us: self.now,
            detail,
        });
    }

    /// Checks the quiescence properties (the world is quiescent).
    fn check_quiescent(&mut self) {
        let expect = self.world.expectations();
        for (p, detail) in self.world.monitor.check_quiescent(&expect) {
            if !self.found.iter().any(|f| f.property == p) {
                self.record_found(p, detail);
            }
        }
    }

    /// Schedules the pacing timers of the walks client `c` holds back.
    fn arm_walks(&mut self, c: ClientId) {
        let client = &self.world.clients[c as usize];
        if client.held_walks().next().is_none() {
            return;
        }
        let held: Vec<_> = client.held_walks().collect();
        for (kind, auth, due) in held {
            if self.walk_timers.insert((c, kind, auth)) {
                let epoch = self.epoch[c as usize];
                self.push(
                    due.max(self.now),
                    Ev::WalkDue {
                        client: c,
                        kind,
                        auth,
                        epoch,
                    },
                );
            }
        }
    }

    /// Schedules the retry timers client `c` armed.
    fn arm_retries(&mut self, c: ClientId) {
        let client = &self.world.clients[c as usize];
        if client.armed_retries().next().is_none() {
            return;
        }
        let armed: Vec<_> = client.armed_retries().collect();
        let limits = self.scn.clients[c as usize].limits;
        for (kind, auth) in armed {
            if !self.retries.insert((c, kind, auth)) {
                continue;
            }
            let attempt = self.tap.attempts.entry((c, kind, auth)).or_insert(0);
            *attempt = attempt.saturating_add(1);
            let shift = u32::from(*attempt - 1).min(16);
            let base = u64::from(
                limits
                    .backoff_base_ms
                    .saturating_mul(1 << shift)
                    .min(limits.backoff_max_ms),
            ) * 1_000;
            let jitter = self.net.random_range(base / 2..=base + base / 2);
            let epoch = self.epoch[c as usize];
            self.push(
                self.now + jitter,
                Ev::Retry {
                    client: c,
                    kind,
                    auth,
                    epoch,
                },
            );
        }
    }

    /// (cluster) Schedules the arrival of every bus event the last step put on the bus.
    fn schedule_bus(&mut self) {
        for node in 0..self.bus_seen.len() {
            let len = self.world.bus[node].len();
            for _ in self.bus_seen[node]..len {
                let at = self.now + uniform(&mut self.net, self.plan.bus_latency);
                self.push(at, Ev::Bus { node: node as u8 });
            }
            self.bus_seen[node] = len;
        }
    }

    /// Arms the TTL timer of every list just published with a `ttlMs` (one timer per list).
    fn arm_ttls(&mut self) {
        let published = std::mem::take(&mut self.tap.published);
        if let Some(ttl) = self.ttl_us() {
            for (client, kind) in published {
                if self.ttl_timers.insert((client, kind)) {
                    self.push(self.now + ttl, Ev::Ttl { client, kind });
                }
            }
        }
    }

    /// The lists' time to live (2026-07-28 servers that set one).
    fn ttl_us(&self) -> Option<Micros> {
        (self.scn.era == listsync_core::vocab::Era::V2026_07_28)
            .then_some(self.scn.server.ttl_ms)
            .flatten()
            .map(|ms| u64::from(ms.max(1)) * 1_000)
    }

    /// Forgets what is in flight on a connection that is going away.
    fn forget_connection(&mut self, c: ClientId) -> u64 {
        let l = &self.world.links[c as usize];
        let lost = (l.up.len() + l.down.len() + l.stream.len()) as u64;
        self.inflight -= lost;
        self.epoch[c as usize] += 1;
        for q in self.due[c as usize].iter_mut() {
            q.clear();
        }
        self.retries.retain(|(cc, _, _)| *cc != c);
        self.walk_timers.retain(|(cc, _, _)| *cc != c);
        self.tap.attempts.retain(|(cc, _, _), _| *cc != c);
        lost
    }

    /// Cuts a client's connection (if possible) and schedules its reconnection.
    fn disconnect(&mut self, c: ClientId, after: (Micros, Micros)) {
        if self.world.cut.contains(&c) || self.world.used[2] >= self.scn.faults.disconnect {
            return;
        }
        let lost = self.forget_connection(c);
        if !self.apply(Step::Disconnect { client: c }, Some(c)) {
            self.inflight += lost;
            return;
        }
        let at = self.now + uniform(&mut self.net, after);
        self.push(at, Ev::Reconnect { client: c });
    }

    fn fire(&mut self, ev: Ev) {
        match ev {
            Ev::Deliver {
                client,
                link,
                epoch,
            } => self.deliver(client, link, epoch),
            Ev::Mutate { batch } => {
                let single = !self.world.is_cluster();
                if single && self.world.server().has_staged() {
                    self.apply(Step::Commit, None);
                    self.staged_batch = None;
                }
                self.tap.changing = true;
                if self.apply(Step::Mutate { batch: batch as u8 }, None)
                    && single
                    && self.world.server().has_staged()
                {
                    self.staged_batch = Some(batch);
                    let at = self.now + uniform(&mut self.net, self.plan.commit_delay);
                    self.push(at, Ev::Commit { batch });
                }
            }
            Ev::Commit { batch } => {
                if self.staged_batch == Some(batch)
                    && !self.world.is_cluster()
                    && self.world.server().has_staged()
                {
                    self.staged_batch = None;
                    self.apply(Step::Commit, None);
                }
            }
            Ev::SetAuth { change } => {
                let c = self.scn.auth_changes[usize::from(change)].0;
                self.apply(Step::SetAuth { change }, Some(c));
            }
            Ev::Call { call } => {
                let c = self.scn.calls[usize::from(call)].0;
                self.apply(Step::Call { call }, Some(c));
            }
            Ev::Approve { approval } => {
                let c = self.scn.approvals[usize::from(approval)].0;
                self.apply(Step::Approve { approval }, Some(c));
            }
            Ev::CallCombined { pick } => {
                let listing = self.world.combined_listing(self.scn);
                if !listing.is_empty() {
                    let e = &listing[pick as usize % listing.len()];
                    let (name, c) = (e.name.clone(), e.member as ClientId);
                    self.apply(Step::CallCombined { name }, Some(c));
                }
            }
            Ev::Retry {
                client,
                kind,
                auth,
                epoch,
            } => {
                self.retries.remove(&(client, kind, auth));
                if epoch == self.epoch[client as usize]
                    && self.world.clients[client as usize].retry_armed(kind, auth)
                {
                    self.apply(Step::Retry { client, kind, auth }, Some(client));
                }
            }
            Ev::WalkDue {
                client,
                kind,
                auth,
                epoch,
            } => {
                self.walk_timers.remove(&(client, kind, auth));
                if epoch == self.epoch[client as usize]
                    && self.world.clients[client as usize].walk_held(kind, auth)
                {
                    self.apply(Step::WalkDue { client, kind, auth }, Some(client));
                }
            }
            Ev::Disconnect { client } => self.disconnect(client, self.plan.reconnect),
            Ev::Reconnect { client } => {
                if self.world.cut.contains(&client) {
                    self.apply(Step::Reconnect { client }, Some(client));
                }
            }
            Ev::Crash => {
                for c in 0..self.scn.clients.len() as ClientId {
                    self.disconnect(c, self.plan.restart);
                }
            }
            Ev::Ttl { client, kind } => {
                self.ttl_timers.remove(&(client, kind));
                if self.world.ttl_due(client).contains(&kind) {
                    self.apply(Step::TtlExpire { client, kind }, Some(client));
                } else if self.queue.len() > self.ttl_timers.len()
                    && let Some(ttl) = self.ttl_us()
                {
                    // The list is current (or busy); its timer runs again while anything
                    // else is still going on that could make it out of date.
                    self.ttl_timers.insert((client, kind));
                    self.push(self.now + ttl, Ev::Ttl { client, kind });
                }
            }
            Ev::Bus { node } => self.bus_arrival(node),
            Ev::Poll { node } => {
                let n = usize::from(node);
                let behind =
                    self.world.is_cluster() && self.world.nodes[n].version() < self.world.truth.0;
                if behind
                    && !self.world.nodes[n].has_staged()
                    && self.world.bus[n].is_empty()
                    && self.apply(Step::Poll { node }, None)
                    && self.world.nodes[n].has_staged()
                {
                    let at = self.now + uniform(&mut self.net, self.plan.commit_delay);
                    self.push(at, Ev::Load { node });
                }
            }
            Ev::Load { node } => {
                if self.world.nodes[usize::from(node)].has_staged() {
                    self.apply(Step::Load { node }, None);
                }
            }
            Ev::Migrate { client } => {
                let Some(cl) = self.scn.cluster.as_ref() else {
                    return;
                };
                if self.world.cut.contains(&client)
                    || cl.nodes < 2
                    || self.world.bus_used[2] >= cl.migrate
                {
                    return;
                }
                let lost = self.forget_connection(client);
                if !self.apply(Step::Migrate { client }, Some(client)) {
                    self.inflight += lost;
                }
            }
        }
    }

    /// (cluster) A bus event reaches `node`: perhaps twice, perhaps never (the node then polls
    /// the store later).
    fn bus_arrival(&mut self, node: u8) {
        let n = usize::from(node);
        let len = self.world.bus[n].len();
        if len == 0 {
            debug_assert!(false, "bus arrival with nothing on the bus");
            self.refused += 1;
            return;
        }
        let Some(cl) = self.scn.cluster.as_ref() else {
            return;
        };
        let plan = self.plan;
        let index = self.net.random_range(0..len.min(256)) as u8;
        if self.world.bus_used[0] < cl.bus_duplicate && roll(&mut self.net, plan.bus_dup_permille) {
            // The copy arrives later (it is scheduled when the bus is next looked at).
            self.apply(Step::BusDuplicate { node, index }, None);
        }
        if self.world.bus_used[1] < cl.bus_drop && roll(&mut self.net, plan.bus_drop_permille) {
            if self.apply(Step::BusDrop { node, index }, None) {
                let at = self.now + uniform(&mut self.net, plan.poll);
                self.push(at, Ev::Poll { node });
            }
            return;
        }
        if self.apply(Step::BusDeliver { node, index }, None) && self.world.nodes[n].has_staged() {
            let at = self.now + uniform(&mut self.net, plan.commit_delay);
            self.push(at, Ev::Load { node });
        }
    }

    fn deliver(&mut self, client: ClientId, link: Link, epoch: u32) {
        if epoch != self.epoch[client as usize] {
            return;
        }
        let notif = self.notification_link();
        let (len, head_changed) = {
            let l = &self.world.links[client as usize];
            let (len, head) = match link {
                Link::Up => (l.up.len(), None),
                Link::Down => (l.down.len(), l.down.first()),
                Link::Stream => (l.stream.len(), l.stream.first()),
            };
            let changed = matches!(
                head,
                Some(ServerMsg::Notification(Notification::ListChanged { .. }))
            );
            (len, changed)
        };
        if len == 0 {
            debug_assert!(false, "delivery on an empty link");
            self.refused += 1;
            return;
        }
        if link == notif && head_changed {
            let faults = self.scn.faults;
            let plan = self.plan;
            if self.world.used[0] < faults.duplicate && roll(&mut self.net, plan.dup_permille) {
                if self.apply(Step::Duplicate { client, link }, None) {
                    self.schedule_delivery(client, link);
                }
            } else if plan.silent_drops {
                if self.world.used[1] < faults.drop && roll(&mut self.net, plan.drop_permille) {
                    self.inflight -= 1;
                    if self.apply(Step::Drop { client, link }, None) {
                        self.next_on_link(client, link);
                    } else {
                        self.inflight += 1;
                    }
                    return;
                }
            } else if self.breaks < self.budget.breaks && roll(&mut self.net, plan.drop_permille) {
                // The stream breaks with the notification on it: the connection is cut (every
                // message in flight is lost) and the client reconnects.
                self.breaks += 1;
                self.disconnect(client, plan.reconnect);
                return;
            }
        }
        let ordered = self.ordered(link);
        let index = if ordered {
            0
        } else {
            self.net.random_range(0..len.min(256)) as u8
        };
        self.inflight -= 1;
        let is_call = link == Link::Up
            && self.world.links[client as usize]
                .up
                .get(usize::from(index))
                .is_some_and(|m| matches!(m.req, Request::CallTool { .. }));
        if is_call
            && self.world.used[3] < self.scn.faults.call_error
            && roll(&mut self.calls, self.plan.call_fail_permille)
        {
            // The call fails in the server's place: an error that is not a list change.
            self.apply(Step::FailCall { client, index }, None);
        } else {
            self.apply(
                Step::Deliver {
                    client,
                    link,
                    index,
                },
                (link != Link::Up).then_some(client),
            );
        }
        if ordered {
            self.next_on_link(client, link);
        }
    }

    /// Runs until nothing is pending (or the stop property shows, or the step limit).
    pub fn run(mut self) -> RunResult {
        let mut aborted = false;
        while let Some(Reverse(e)) = self.queue.pop() {
            if self.steps >= self.opts.max_steps {
                aborted = true;
                break;
            }
            self.now = e.at;
            self.tap.now = e.at;
            self.fire(e.ev);
            if let Some(p) = self.opts.stop_on
                && self.found.iter().any(|f| f.property == p)
            {
                return self.finish(false, true);
            }
        }
        self.finish(aborted, false)
    }

    fn finish(mut self, aborted: bool, stopped: bool) -> RunResult {
        let mut stuck = None;
        if !aborted && !stopped {
            if self.world.quiescent() {
                self.check_quiescent();
            } else {
                stuck = Some(format!(
                    "nothing pending but the world is not quiescent ({} in flight by the scheduler's count, {} busy clients)",
                    self.inflight, self.busy
                ));
            }
        }
        let converge_us = match self.tap.last_commit {
            Some(lc) => self
                .tap
                .last_publish
                .iter()
                .map(|p| p.saturating_sub(lc))
                .collect(),
            None => Vec::new(),
        };
        RunResult {
            clients: self.scn.clients.len() as u32,
            steps: self.steps,
            events: self.tap.events,
            end_us: self.now,
            commits: self.tap.commits,
            walks: self.tap.walks,
            walks_after_change: self.tap.walks_after,
            max_client_walks: self.tap.client_walks.iter().copied().max().unwrap_or(0),
            converge_us,
            settle_us: self.tap.last_commit.map(|lc| self.now.saturating_sub(lc)),
            found: self.found,
            stuck,
            aborted,
            refused: self.refused,
            recording: self.recording,
            situations: self.situations.map(|reached| {
                Situation::ALL
                    .into_iter()
                    .filter(|s| reached & (1 << s.index()) != 0)
                    .collect()
            }),
        }
    }
}
