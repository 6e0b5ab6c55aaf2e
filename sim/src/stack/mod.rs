//! The full-stack level: the runtime's actual tokio + rmcp code — `listsync-rt`'s reference
//! server and its catalog clients, each connection a real rmcp service on both ends — on a
//! paused current-thread tokio runtime, over the simulated network of [`net`].
//!
//! The runtime's clock is tokio's paused clock: it moves only when every task is idle, straight
//! to the next timer, so simulated seconds of request timeouts, retry backoffs and reconnect
//! delays cost nothing. The scheduler is one task that sleeps until the next delivery or
//! environment event is due, then carries it out: the administrator's batches
//! (`Server::apply`), authorization switches and tool calls of the applications
//! (`ClientHandle::set_auth`, `ClientHandle::call`), cut connections, server crashes (every connection
//! cut, connections refused until the restart; the catalog survives, as with a durable store).
//! The clients reconnect, re-initialize or re-listen and re-list by themselves, with their own
//! timers and jitter (seeded).
//! A server that announces a batch before committing it (`notify-before-commit`,
//! `lying-registry`) has each commit held at its commit gate for a time drawn from the plan's
//! `commit_delay`, as the machine level schedules it: the window in which a client re-lists the
//! old catalog, or calls a tool the batch removed.
//!
//! The history is the runtime's own recording (`rt::history::SharedHistory`: the server records
//! what its observer sees — the administrator's ground truth, each `list_changed` probed as it
//! is handed over, each tool result against the truth — never what its registry claims; each
//! client records as its actor steps) and is judged with core's
//! property checkers once the run is quiescent — nothing scheduled, nothing in flight or unread,
//! every client connected, ready and idle.
//!
//! Determinism: every random choice comes from the run's seed (the network draws per
//! connection, the clients' jitter is seeded, the catalog identity fixed), deliveries are
//! ordered by (time, connection, direction), and the runtime runs on one thread, so a seed
//! reproduces the same history (the determinism test runs seeds twice and compares).

pub mod net;
mod seen;

use crate::case::{roll, stream, streams, uniform};
use crate::engine::{Budget, FirstViolation, RunOpts, RunRecording, RunResult};
use crate::plan::{FaultPlan, Micros};
use listsync_core::history::{ClientId, Event};
use listsync_core::property::Property;
use listsync_core::scenario::Scenario;
use listsync_core::vocab::{AuthCtx, Op};
use listsync_rt::client::{
    BoxRead, BoxWrite, ClientHandle, ClientNotice, ClientSettings, Endpoint,
};
use listsync_rt::gate::GateTarget;
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};
use net::{Net, NetBudget, NetCounts, ms_ceil};
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rmcp::ServiceExt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Simulated time the run may take after its last scheduled event before it is declared stuck.
const GRACE: Micros = 300_000_000;

/// How often the scheduler looks for quiescence when nothing of its own is scheduled (the
/// runtime's timers may still be running).
const TICK: Micros = 10_000;

/// Something the environment does at a scheduled time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Env {
    Mutate(u32),
    SetAuth(u8),
    Call(u8),
    Approve(u8),
    Disconnect(ClientId),
    Crash(Micros),
}

/// What a stack run reports besides the common [`RunResult`].
#[derive(Clone, Debug, Default)]
pub struct StackReport {
    /// What the network did.
    pub net: NetCounts,
    /// Connections each client opened (reconnects included).
    pub connections: u64,
    /// (burst runs) Simulated time the burst was applied at.
    pub burst_at: Option<Micros>,
}

/// Settings of one run that are not in the scenario.
#[derive(Clone, Debug)]
pub struct StackRun {
    /// Network fault budgets.
    pub net: NetBudget,
    /// Environment fault counts (cut connections, crashes).
    pub budget: Budget,
    /// Apply the whole script back to back once every client has listed (a burst), instead of
    /// at the plan's times.
    pub burst: bool,
}

impl StackRun {
    /// The budgets a case's shape draws, for the stack level.
    pub fn of(case: &crate::Case, plan: &FaultPlan) -> StackRun {
        let mut r = stream(case.shape.seed, streams::STACK);
        StackRun {
            net: NetBudget {
                dups: case.shape.dups,
                drops: case.shape.drops,
                request_faults: r.random_range(0..=plan.max_request_faults),
                call_errors: case.scenario.faults.call_error,
                slow: case.shape.slow,
            },
            budget: case.budget,
            burst: false,
        }
    }
}

/// Runs `scn` on the runtime under `plan`, its schedule and faults drawn from `seed`.
pub fn run(
    scn: &Scenario,
    plan: &FaultPlan,
    seed: u64,
    how: &StackRun,
    opts: RunOpts,
) -> (RunResult, StackReport) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime builds");
    rt.block_on(drive(scn, plan, seed, how, opts))
}

/// Times of the environment's events (the same drawing as the machine level's).
fn schedule(scn: &Scenario, plan: &FaultPlan, seed: u64, budget: &Budget) -> Vec<(Micros, Env)> {
    let mut r = stream(seed, streams::ENV);
    let mut out = Vec::new();
    let mut t = uniform(&mut r, plan.first_batch);
    for b in 0..scn.script.len() as u32 {
        if b > 0 {
            t += if roll(&mut r, plan.storm_permille) {
                uniform(&mut r, plan.storm_gap)
            } else {
                uniform(&mut r, plan.gap)
            };
        }
        out.push((t, Env::Mutate(b)));
    }
    let horizon = t + 50_000;
    for i in 0..scn.auth_changes.len() {
        out.push((r.random_range(0..=horizon), Env::SetAuth(i as u8)));
    }
    for i in 0..scn.calls.len() {
        out.push((r.random_range(0..=horizon), Env::Call(i as u8)));
    }
    for i in 0..scn.approvals.len() {
        out.push((r.random_range(0..=horizon), Env::Approve(i as u8)));
    }
    let n = scn.clients.len() as u32;
    for _ in 0..budget.disconnects {
        let at = r.random_range(0..=horizon);
        out.push((at, Env::Disconnect(r.random_range(0..n))));
    }
    for _ in 0..budget.crashes {
        let at = r.random_range(0..=horizon);
        let down = uniform(&mut r, plan.restart);
        out.push((at, Env::Crash(down)));
    }
    // Whole milliseconds (the paused clock's resolution); ties keep the drawing order.
    for (at, _) in out.iter_mut() {
        *at = ms_ceil(*at);
    }
    // Authorization switches of one client stay in script order (the scenario's order).
    let mut auth_times: Vec<Micros> = out
        .iter()
        .filter(|(_, e)| matches!(e, Env::SetAuth(_)))
        .map(|(t, _)| *t)
        .collect();
    auth_times.sort_unstable();
    let mut k = 0;
    for (at, e) in out.iter_mut() {
        if matches!(e, Env::SetAuth(_)) {
            *e = Env::SetAuth(k);
            *at = auth_times[k as usize];
            k += 1;
        }
    }
    out.sort_by_key(|(t, _)| *t);
    out
}

/// Publication times, kept by a task that receives every client's notices.
#[derive(Default)]
struct Tap {
    last_publish: Vec<Micros>,
}

struct Stack {
    net: Net,
    server: Server,
    history: SharedHistory,
    clients: Vec<ClientHandle>,
    /// Server batches and tool calls still running.
    busy: Arc<AtomicU32>,
    auth: Vec<AuthCtx>,
    /// (servers that commit after notifying) Draws how long each staged commit is held.
    commits: Option<(ChaCha8Rng, (Micros, Micros))>,
}

impl Stack {
    /// Whether nothing is scheduled, in flight or running, and every client is connected,
    /// ready and idle.
    fn quiescent(&self) -> bool {
        self.busy.load(Ordering::SeqCst) == 0
            && self.net.idle()
            && self.clients.iter().all(|c| {
                let s = c.status().borrow().clone();
                s.connected && s.ready && s.idle && !s.ended
            })
    }

    /// Why the run is not quiescent (for the recorded log).
    fn busy_with(&self) -> String {
        let mut why = Vec::new();
        let busy = self.busy.load(Ordering::SeqCst);
        if busy > 0 {
            why.push(format!("{busy} batch(es) or call(s) running"));
        }
        if !self.net.idle() {
            why.push("bytes in flight".into());
        }
        for (i, c) in self.clients.iter().enumerate() {
            let s = c.status().borrow().clone();
            if !(s.connected && s.ready && s.idle && !s.ended) {
                why.push(format!(
                    "c{i} connected {} ready {} idle {} ended {}",
                    s.connected, s.ready, s.idle, s.ended
                ));
            }
        }
        why.join(", ")
    }

    fn spawn_busy(
        &self,
        what: String,
        fut: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.busy.fetch_add(1, Ordering::SeqCst);
        let busy = self.busy.clone();
        let net = self.net.clone();
        tokio::spawn(async move {
            fut.await;
            busy.fetch_sub(1, Ordering::SeqCst);
            net.note(net.now(), || format!("{what} done"));
        });
    }

    fn apply(&mut self, ops: Vec<Op>) {
        let server = self.server.clone();
        let Some((r, range)) = &mut self.commits else {
            self.spawn_busy("batch".into(), async move {
                server.apply(&ops).await;
            });
            return;
        };
        // Each batch's commit takes the next commit gate (gates pick occurrences in the order
        // they were armed), held for its drawn time once the batch's notifications are out.
        let hold = Duration::from_micros(ms_ceil(uniform(r, *range)));
        let gate = server.gates().arm(GateTarget::Commit, 1);
        self.spawn_busy("batch".into(), async move {
            let applying = tokio::spawn({
                let server = server.clone();
                async move {
                    server.apply(&ops).await;
                }
            });
            if server.gates().parked(gate).await {
                tokio::time::sleep(hold).await;
            }
            server.gates().release(gate);
            let _ = applying.await;
        });
    }
}

fn client_settings(
    scn: &Scenario,
    i: usize,
    seed: u64,
    history: &SharedHistory,
    tx: &tokio::sync::mpsc::UnboundedSender<ClientNotice>,
) -> ClientSettings {
    let cfg = &scn.clients[i];
    let mut s = ClientSettings::new(cfg.era, cfg.kinds);
    s.client = cfg.clone();
    s.id = i as ClientId;
    s.name = format!("sim-c{i}");
    s.history = Some(history.clone());
    s.observer = Some(tx.clone());
    s.request_timeout = Duration::from_secs(2);
    s.connect_timeout = Duration::from_secs(2);
    s.reconnect_base = Duration::from_millis(20);
    s.reconnect_max = Duration::from_secs(1);
    s.jitter_seed = Some(seed ^ (i as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03));
    s
}

fn endpoint(net: &Net, server: &Server, client: ClientId) -> Endpoint {
    let net = net.clone();
    let server = server.clone();
    Endpoint::io(move |auth| {
        let net = net.clone();
        let server = server.clone();
        async move {
            let [cr, cw, sr, sw] = net.open(client, auth)?;
            // Boxed: rmcp's service future is several KiB, copied at each hand-over otherwise.
            tokio::spawn(Box::pin(async move {
                if let Ok(running) = server.service_as(auth).serve((sr, sw)).await {
                    let _ = running.waiting().await;
                }
            }));
            Ok((Box::new(cr) as BoxRead, Box::new(cw) as BoxWrite))
        }
    })
}

async fn sleep_until(net: &Net, base: Instant, t: Micros) {
    tokio::select! {
        biased;
        _ = net.wake.notified() => {}
        _ = tokio::time::sleep_until(base + Duration::from_micros(t)) => {}
    }
}

/// Carries out one environment event.
fn fire(
    rig: &mut Stack,
    scn: &Scenario,
    e: Env,
    now: Micros,
    first_change: &mut Option<Micros>,
    last_commit: &mut Option<Micros>,
) {
    match e {
        Env::Mutate(b) => {
            first_change.get_or_insert(now);
            *last_commit = Some(now);
            rig.apply(scn.script[b as usize].clone());
        }
        Env::SetAuth(i) => {
            let (c, auth) = scn.auth_changes[usize::from(i)];
            rig.auth[c as usize] = auth;
            rig.clients[c as usize].set_auth(auth);
        }
        Env::Call(i) => {
            let (c, name) = scn.calls[usize::from(i)].clone();
            let catalog = rig.clients[c as usize].clone();
            rig.spawn_busy(format!("c{c} call of {name}"), async move {
                let _ = catalog.call(&name).await;
            });
        }
        Env::Approve(i) => {
            let (c, name) = scn.approvals[usize::from(i)].clone();
            let catalog = rig.clients[c as usize].clone();
            rig.spawn_busy(format!("c{c} approval of {name}"), async move {
                catalog.approve(&name).await;
            });
        }
        Env::Disconnect(c) => {
            rig.net.disconnect(c);
        }
        Env::Crash(down) => rig.net.crash(now + down),
    }
}

async fn drive(
    scn: &Scenario,
    plan: &FaultPlan,
    seed: u64,
    how: &StackRun,
    opts: RunOpts,
) -> (RunResult, StackReport) {
    let base = Instant::now();
    let history = SharedHistory::new();
    let mut settings = ServerSettings::new(scn.era, scn.server.page_size);
    settings.core = scn.server;
    settings.name = "sim-server".into();
    let server = Server::new(settings, &scn.initial, Some(history.clone()));
    let net = Net::new(plan, seed, how.net, opts.record, base);

    let tap = Arc::new(Mutex::new(Tap {
        last_publish: vec![0; scn.clients.len()],
    }));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<ClientNotice>();
    {
        let tap = tap.clone();
        let net = net.clone();
        tokio::spawn(async move {
            while let Some(n) = rx.recv().await {
                if let ClientNotice::Event(Event::Published { client, .. }) = n {
                    let now = net.now();
                    let mut t = tap.lock().unwrap_or_else(|e| e.into_inner());
                    if let Some(slot) = t.last_publish.get_mut(client as usize) {
                        *slot = now;
                    }
                }
            }
        });
    }
    let clients: Vec<ClientHandle> = (0..scn.clients.len())
        .map(|i| {
            ClientHandle::spawn(
                client_settings(scn, i, seed, &history, &tx),
                endpoint(&net, &server, i as ClientId),
            )
        })
        .collect();
    drop(tx);
    let mut rig = Stack {
        net: net.clone(),
        server,
        history: history.clone(),
        auth: scn.clients.iter().map(|c| c.auth).collect(),
        clients,
        busy: Arc::new(AtomicU32::new(0)),
        commits: scn
            .server
            .strategy
            .commits_after_notifying()
            .then(|| (stream(seed, streams::COMMITS), plan.commit_delay)),
    };

    let mut env: std::collections::VecDeque<(Micros, Env)> = if how.burst {
        Default::default()
    } else {
        schedule(scn, plan, seed, &how.budget).into()
    };
    let last_env = env.back().map_or(0, |(t, _)| *t);
    let mut burst_pending = how.burst;
    let mut burst_at = None;
    let mut first_change: Option<Micros> = None;
    let mut last_commit: Option<Micros> = None;
    let mut steps = 0u64;
    let mut stuck = None;
    let mut aborted = false;
    let mut deadline = last_env + GRACE;

    loop {
        if steps >= opts.max_steps {
            aborted = true;
            break;
        }
        let now = net.now();
        // The runtime's own timers due at this instant (retries, reconnects, timeouts) go
        // first; then one event at a time, each followed by everything it sets off, so no
        // two of the scheduler's events are ever handled in the same pass of the runtime.
        tokio::task::yield_now().await;
        loop {
            if env.front().is_some_and(|(t, _)| *t <= now) {
                let (_, e) = env.pop_front().expect("peeked");
                steps += 1;
                fire(&mut rig, scn, e, now, &mut first_change, &mut last_commit);
            } else if net.deliver_one(now) {
                steps += 1;
            } else {
                break;
            }
            tokio::task::yield_now().await;
        }
        let next = match (env.front().map(|(t, _)| *t), net.next_due()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        if let Some(t) = next {
            sleep_until(&net, base, t).await;
            continue;
        }
        // Nothing of the scheduler's own is due: let the runtime settle, then look.
        sleep_until(&net, base, ms_ceil(now + 1)).await;
        if net.next_due().is_some() {
            continue;
        }
        if rig.quiescent() {
            if burst_pending {
                burst_pending = false;
                let at = net.now();
                burst_at = Some(at);
                first_change = Some(at);
                last_commit = Some(at);
                deadline = at + GRACE;
                let server = rig.server.clone();
                let script = scn.script.clone();
                steps += 1;
                rig.spawn_busy("burst".into(), async move {
                    for batch in script {
                        server.apply(&batch).await;
                    }
                });
                continue;
            }
            break;
        }
        if env.is_empty() {
            let now = net.now();
            net.note(now, || format!("not quiescent: {}", rig.busy_with()));
        }
        if net.now() > deadline {
            stuck = Some(format!(
                "not quiescent {:.0} s after the last scheduled event",
                GRACE as f64 / 1e6
            ));
            break;
        }
        sleep_until(&net, base, ms_ceil(net.now() + TICK)).await;
    }
    let end_us = net.now();
    // The quiescence the monitor judges: every client's current lists.
    if stuck.is_none() && !aborted {
        let expect = scn
            .clients
            .iter()
            .enumerate()
            .flat_map(|(i, c)| {
                let auth = rig.auth[i];
                c.kinds.iter().map(move |k| (i as ClientId, k, auth))
            })
            .collect();
        rig.history.quiescent(expect);
    }
    let events = history.events();
    let connections: u64 = rig
        .clients
        .iter()
        .map(|c| u64::from(c.status().borrow().connections))
        .sum();
    let last_publish = tap
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .last_publish
        .clone();
    let mut out = outcome(OutcomeParts {
        scn,
        events: &events,
        steps,
        end_us,
        last_commit,
        last_publish,
        stuck,
        aborted,
        record: opts.record.then(|| (net.take_log(), &history)),
    });
    out.situations = Some(net.situations());
    let report = StackReport {
        net: net.counts(),
        connections,
        burst_at,
    };
    for c in &rig.clients {
        c.shutdown();
    }
    (out, report)
}

struct OutcomeParts<'a> {
    scn: &'a Scenario,
    events: &'a [Event],
    steps: u64,
    end_us: Micros,
    last_commit: Option<Micros>,
    last_publish: Vec<Micros>,
    stuck: Option<String>,
    aborted: bool,
    record: Option<(Vec<String>, &'a SharedHistory)>,
}

/// The common outcome of a run, from the runtime's history.
fn outcome(p: OutcomeParts<'_>) -> RunResult {
    let n = p.scn.clients.len();
    let mut commits = 0u32;
    let mut changing = false;
    let mut walks = 0u64;
    let mut walks_after = 0u64;
    let mut client_walks = vec![0u32; n];
    for e in p.events {
        match e {
            Event::Committed { .. } => {
                if changing {
                    commits += 1;
                }
                changing = true; // the first commit is the initial catalog
            }
            Event::RefreshStarted { client, .. } | Event::WalkRestarted { client, .. } => {
                walks += 1;
                if commits > 0 {
                    walks_after += 1;
                    if let Some(w) = client_walks.get_mut(*client as usize) {
                        *w += 1;
                    }
                }
            }
            _ => {}
        }
    }
    let judgement = listsync_core::monitor::judge(p.events);
    let mut found: Vec<FirstViolation> = Vec::new();
    for v in &judgement.violations {
        if !found.iter().any(|f| f.property == v.property) {
            found.push(FirstViolation {
                property: v.property,
                after_steps: v.at as u64,
                at_us: p.end_us,
                detail: v.detail.clone(),
            });
        }
    }
    // A history the monitor judged violated for a property it cannot see at all would be a
    // checker bug; keep the order of Property::ALL for stable output.
    found.sort_by_key(|f| Property::ALL.iter().position(|q| *q == f.property));
    let converge_us = match p.last_commit {
        Some(lc) if commits > 0 => p
            .last_publish
            .iter()
            .map(|t| t.saturating_sub(lc))
            .collect(),
        _ => Vec::new(),
    };
    let recording = p.record.map(|(log, history)| {
        let mut lines = log;
        lines.push("--- history ---".into());
        lines.extend(
            history
                .stamped()
                .iter()
                .map(|s| format!("{:>6} {:?}", s.seq, s.event)),
        );
        RunRecording {
            steps: Vec::new(),
            history: lines,
        }
    });
    RunResult {
        clients: n as u32,
        steps: p.steps,
        events: p.events.len() as u64,
        end_us: p.end_us,
        commits,
        walks,
        walks_after_change: walks_after,
        max_client_walks: client_walks.iter().copied().max().unwrap_or(0),
        converge_us,
        settle_us: p.last_commit.map(|lc| p.end_us.saturating_sub(lc)),
        found,
        stuck: p.stuck,
        aborted: p.aborted,
        refused: 0,
        recording,
        situations: None,
    }
}
