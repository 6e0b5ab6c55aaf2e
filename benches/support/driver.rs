//! A bench-local, in-process async driver of core's machines — **not** the `rt/` runtime.
//!
//! One tokio task runs core's server [`Registry`] (reference strategy, fixed page size) and
//! answers requests; one task per client runs core's [`CatalogClient`] machine; unbounded
//! channels stand in for the transport (FIFO per direction, like stdio, with no latency beyond
//! the channel hop). What is measured is therefore the refresh *algorithm* (how many list round
//! trips a burst costs, how long until the final list is published, what readers pay), not
//! rmcp's serialization or a real transport.
//!
//! Strategies ([`Strategy`]):
//! * `reference` and `naive` are core's client strategies, unchanged;
//! * `debounce-<D>ms` is bench-local: a trailing debounce like the TypeScript SDK's
//!   `listChanged` option (each notification restarts a D ms timer; when it fires, one refresh
//!   runs, walked like `naive` — no single-flight, last response wins). With D = 0 the timer
//!   fires at the next timer tick (tokio's resolution is 1 ms), which coalesces the
//!   notifications that arrived together;
//! * `mutex-single-flight` is bench-local: every notification spawns a task that takes one
//!   `tokio::sync::Mutex`, walks the list (as `naive` would, but now one walk at a time), stores
//!   the result *in the mutex-guarded slot* and releases the lock. Refreshes never overlap, but
//!   nothing coalesces them, and readers of the guarded slot wait while a walk holds the lock.
//!
//! Readers of `reference`, `naive` and `debounce` read a `listsync_store::SnapshotCell` the
//! driver publishes into (wait-free); readers of `mutex-single-flight` lock the mutex.
//!
//! "A refresh in flight": the server can park the n-th list request of one client (the last
//! page of the walk the bench starts) until told to release it, so a burst lands mid-walk
//! deterministically; the parked request is served, at the version current then, on release.

use listsync_core::client::{CatalogClient, ClientConfig, ClientInput, ClientOutput};
use listsync_core::history::{ClientId, Event};
use listsync_core::server::{Registry, ServerConfig, ServerInput, ServerOutput};
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{Batch, Catalog, Era, ItemList, Kind, Op};
use listsync_core::wire::{ClientMsg, Notification, Request, ServerMsg};
use listsync_store::{SnapshotCell, Versioned};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::{Notify, mpsc, oneshot};

/// Items per page.
pub const PAGE_SIZE: u16 = 4;

/// A client refresh strategy under measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// core's reference client.
    Reference,
    /// core's `naive` client.
    Naive,
    /// Trailing debounce of this many ms, then a naive walk (bench-local).
    Debounce(u64),
    /// One `tokio::sync::Mutex` around every walk, no coalescing (bench-local).
    MutexSingleFlight,
}

impl Strategy {
    /// The strategies of the refresh-contention bench, in report order.
    pub const ALL: [Strategy; 5] = [
        Strategy::Reference,
        Strategy::Naive,
        Strategy::Debounce(300),
        Strategy::Debounce(0),
        Strategy::MutexSingleFlight,
    ];

    /// Name in reports.
    pub fn name(self) -> String {
        match self {
            Strategy::Reference => "reference".into(),
            Strategy::Naive => "naive".into(),
            Strategy::Debounce(ms) => format!("debounce-{ms}ms"),
            Strategy::MutexSingleFlight => "mutex-single-flight".into(),
        }
    }

    fn machine(self) -> ClientStrategy {
        match self {
            Strategy::Reference => ClientStrategy::Reference,
            _ => ClientStrategy::Naive,
        }
    }
}

/// What readers read.
pub struct Listing {
    /// Publication order (the server's version for `reference`; a local counter otherwise,
    /// so the last publication wins as these strategies intend).
    pub order: u64,
    /// The server's catalog version behind it.
    pub version: Option<u64>,
    /// The items.
    pub items: ItemList,
}

impl Versioned for Listing {
    type Version = u64;
    fn version(&self) -> u64 {
        self.order
    }
}

/// Requests the server received (all clients), reset by the bench around a burst.
#[derive(Default)]
pub struct Counters {
    /// First-page `list` requests (walks started, restarts included).
    pub walks: AtomicU64,
    /// All `list` requests (pages).
    pub requests: AtomicU64,
}

impl Counters {
    /// Zeroes both.
    pub fn reset(&self) {
        self.walks.store(0, Ordering::SeqCst);
        self.requests.store(0, Ordering::SeqCst);
    }
}

enum ToServer {
    Connect(ClientId, mpsc::UnboundedSender<ServerMsg>),
    Request(ClientId, ClientMsg),
    Burst(Vec<Batch>, oneshot::Sender<(u64, Instant)>),
    Hold {
        client: ClientId,
        nth: u32,
        captured: oneshot::Sender<()>,
    },
    Release,
}

/// Handle on the server task.
#[derive(Clone)]
pub struct Server {
    tx: mpsc::UnboundedSender<ToServer>,
    /// What it received.
    pub counters: Arc<Counters>,
}

/// A catalog of `items` tools `t0000`…, definition `d0`.
pub fn catalog_ops(items: u32) -> Vec<Op> {
    (0..items)
        .map(|i| Op::add(Kind::Tools, &format!("t{i:04}"), "d0"))
        .collect()
}

/// `k` one-update batches (each a new version, so one `list_changed` each).
pub fn burst(k: u32) -> Vec<Batch> {
    (0..k)
        .map(|i| Batch::from(vec![Op::update(Kind::Tools, "t0000", &format!("b{i}"))]))
        .collect()
}

impl Server {
    /// Starts a reference server holding `initial` (call inside a tokio runtime).
    pub fn spawn(initial: &[Op]) -> Server {
        let cfg = ServerConfig {
            strategy: ServerStrategy::Reference,
            era: Era::V2025_11_25,
            page_size: PAGE_SIZE,
            ttl_ms: None,
            catalog_id: 1,
        };
        let mut reg = Registry::new(cfg, Catalog::from_ops(initial));
        let (tx, mut rx) = mpsc::unbounded_channel::<ToServer>();
        let counters = Arc::new(Counters::default());
        let c = counters.clone();
        tokio::spawn(async move {
            let mut clients: Vec<Option<mpsc::UnboundedSender<ServerMsg>>> = Vec::new();
            let mut hold: Option<(ClientId, u32, oneshot::Sender<()>)> = None;
            let mut held: Vec<(ClientId, ClientMsg)> = Vec::new();
            let mut out = Vec::new();
            let route = |out: &mut Vec<ServerOutput>,
                         clients: &[Option<mpsc::UnboundedSender<ServerMsg>>]| {
                for o in out.drain(..) {
                    if let ServerOutput::Send { to, msg, .. } = o
                        && let Some(Some(tx)) = clients.get(to as usize)
                    {
                        let _ = tx.send(msg);
                    }
                }
            };
            while let Some(m) = rx.recv().await {
                match m {
                    ToServer::Connect(id, tx) => {
                        let i = id as usize;
                        if clients.len() <= i {
                            clients.resize(i + 1, None);
                        }
                        clients[i] = Some(tx);
                        reg.step(ServerInput::Connect(id), &mut out);
                        route(&mut out, &clients);
                    }
                    ToServer::Request(id, msg) => {
                        if let Request::List { cursor, .. } = &msg.req {
                            c.requests.fetch_add(1, Ordering::Relaxed);
                            if cursor.is_none() {
                                c.walks.fetch_add(1, Ordering::Relaxed);
                            }
                            if let Some((hc, n, _)) = &mut hold
                                && *hc == id
                            {
                                *n -= 1;
                                if *n == 0 {
                                    let (_, _, captured) = hold.take().expect("armed");
                                    held.push((id, msg));
                                    let _ = captured.send(());
                                    continue;
                                }
                            }
                        }
                        reg.step(ServerInput::Request(id, msg), &mut out);
                        route(&mut out, &clients);
                    }
                    ToServer::Burst(batches, done) => {
                        for b in batches {
                            reg.step(ServerInput::Apply(b), &mut out);
                            route(&mut out, &clients);
                        }
                        let _ = done.send((reg.version(), Instant::now()));
                    }
                    ToServer::Hold {
                        client,
                        nth,
                        captured,
                    } => hold = Some((client, nth.max(1), captured)),
                    ToServer::Release => {
                        for (id, msg) in held.drain(..) {
                            reg.step(ServerInput::Request(id, msg), &mut out);
                            route(&mut out, &clients);
                        }
                    }
                }
            }
        });
        Server { tx, counters }
    }

    /// Applies `batches` back to back (no request is served in between); returns the final
    /// version and when the last one was applied.
    pub async fn burst(&self, batches: Vec<Batch>) -> (u64, Instant) {
        let (done, rx) = oneshot::channel();
        let _ = self.tx.send(ToServer::Burst(batches, done));
        rx.await.expect("server running")
    }

    /// Parks the `nth` list request `client` sends from now on; resolves once it is parked.
    pub fn hold(&self, client: ClientId, nth: u32) -> oneshot::Receiver<()> {
        let (captured, rx) = oneshot::channel();
        let _ = self.tx.send(ToServer::Hold {
            client,
            nth,
            captured,
        });
        rx
    }

    /// Serves the parked request.
    pub fn release(&self) {
        let _ = self.tx.send(ToServer::Release);
    }
}

/// What a client task reports.
#[derive(Default)]
struct State {
    /// Machine idle, no debounce timer armed, no refresh waiting.
    idle: bool,
    /// Catalog version of the current snapshot.
    version: Option<u64>,
    /// When the current snapshot's version was published.
    changed_at: Option<Instant>,
    /// list_changed notifications received.
    notifications: u64,
}

enum Cmd {
    /// The application asks for a refresh; `done` once the machine is idle again.
    Refresh(Option<oneshot::Sender<()>>),
}

/// Handle on one client task.
pub struct Client {
    strategy: Strategy,
    cmds: mpsc::UnboundedSender<Cmd>,
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    cell: Arc<SnapshotCell<Listing>>,
    guarded: Arc<tokio::sync::Mutex<Arc<Listing>>>,
    workers: Arc<AtomicUsize>,
}

impl Client {
    /// Connects a client of `strategy` to `server` (call inside a tokio runtime).
    pub fn spawn(id: ClientId, strategy: Strategy, server: &Server) -> Client {
        let (to_client, mut from_server) = mpsc::unbounded_channel::<ServerMsg>();
        let (cmds, mut cmd_rx) = mpsc::unbounded_channel::<Cmd>();
        let _ = server.tx.send(ToServer::Connect(id, to_client));
        let empty = || {
            Arc::new(Listing {
                order: 0,
                version: None,
                items: Arc::from([]),
            })
        };
        let client = Client {
            strategy,
            cmds: cmds.clone(),
            state: Arc::new(Mutex::new(State::default())),
            changed: Arc::new(Notify::new()),
            cell: Arc::new(SnapshotCell::new(empty())),
            guarded: Arc::new(tokio::sync::Mutex::new(empty())),
            workers: Arc::new(AtomicUsize::new(0)),
        };
        let mut machine = CatalogClient::new(
            id,
            Arc::new(ClientConfig::tools(strategy.machine(), Era::V2025_11_25)),
        );
        let mut ctx = Flush {
            id,
            strategy,
            to_server: server.tx.clone(),
            cell: client.cell.clone(),
            state: client.state.clone(),
            order: 0,
        };
        let (state, changed, cell) = (
            client.state.clone(),
            client.changed.clone(),
            client.cell.clone(),
        );
        let (guarded, workers) = (client.guarded.clone(), client.workers.clone());
        tokio::spawn(async move {
            let mut out = Vec::new();
            let mut deadline: Option<tokio::time::Instant> = None;
            let mut waiting: Vec<oneshot::Sender<()>> = Vec::new();
            machine.step(ClientInput::Start, &mut out);
            loop {
                ctx.flush(&mut out);
                let idle = machine.is_idle() && deadline.is_none();
                if idle {
                    for w in waiting.drain(..) {
                        let _ = w.send(());
                    }
                }
                state.lock().expect("state").idle = idle && waiting.is_empty();
                changed.notify_waiters();
                let timer = async {
                    match deadline {
                        Some(d) => tokio::time::sleep_until(d).await,
                        None => std::future::pending().await,
                    }
                };
                tokio::select! {
                    biased;
                    m = from_server.recv() => {
                        let Some(msg) = m else { break };
                        let notif = matches!(
                            msg,
                            ServerMsg::Notification(Notification::ListChanged { .. })
                        );
                        if !notif {
                            machine.step(ClientInput::Receive(msg), &mut out);
                            continue;
                        }
                        match strategy {
                            Strategy::Reference | Strategy::Naive => {
                                machine.step(ClientInput::Receive(msg), &mut out);
                            }
                            Strategy::Debounce(ms) => {
                                deadline = Some(
                                    tokio::time::Instant::now() + Duration::from_millis(ms),
                                );
                            }
                            Strategy::MutexSingleFlight => {
                                spawn_locked_refresh(&cmds, &guarded, &cell, &workers, &changed);
                            }
                        }
                        // Counted once the requests it caused are on their way.
                        ctx.flush(&mut out);
                        state.lock().expect("state").notifications += 1;
                    }
                    c = cmd_rx.recv() => {
                        let Some(Cmd::Refresh(done)) = c else { break };
                        machine.step(ClientInput::Refresh(Kind::Tools), &mut out);
                        if let Some(d) = done {
                            waiting.push(d);
                        }
                    }
                    () = timer => {
                        deadline = None;
                        machine.step(ClientInput::Refresh(Kind::Tools), &mut out);
                    }
                }
            }
        });
        client
    }

    /// The application asks for a refresh (through the mutex for `mutex-single-flight`).
    pub fn refresh(&self) {
        if self.strategy == Strategy::MutexSingleFlight {
            spawn_locked_refresh(
                &self.cmds,
                &self.guarded,
                &self.cell,
                &self.workers,
                &self.changed,
            );
        } else {
            let _ = self.cmds.send(Cmd::Refresh(None));
        }
    }

    /// One read of the current list, as an application would do it.
    pub async fn read(&self) -> usize {
        if self.strategy == Strategy::MutexSingleFlight {
            self.guarded.lock().await.items.len()
        } else {
            self.cell.load().value().items.len()
        }
    }

    /// Puts the current snapshot in the mutex-guarded slot (after the initial list).
    pub async fn sync_guarded(&self) {
        *self.guarded.lock().await = self.cell.load().value().clone();
    }

    /// Notifications received so far.
    pub fn notifications(&self) -> u64 {
        self.state.lock().expect("state").notifications
    }

    /// Waits until `cond(idle, version, notifications)` holds or `limit` passes; returns
    /// whether it held.
    pub async fn wait(
        &self,
        limit: Duration,
        cond: impl Fn(bool, Option<u64>, u64) -> bool,
    ) -> bool {
        let end = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.changed.notified();
            {
                let s = self.state.lock().expect("state");
                let idle = s.idle && self.workers.load(Ordering::SeqCst) == 0;
                if cond(idle, s.version, s.notifications) {
                    return true;
                }
            }
            if tokio::time::timeout_at(end, notified).await.is_err() {
                return false;
            }
        }
    }

    /// Waits until the client is idle holding catalog `version`; returns when that version
    /// was published, or None if it did not happen within `limit`.
    pub async fn converged(&self, version: u64, limit: Duration) -> Option<Instant> {
        let ok = self
            .wait(limit, |idle, v, _| idle && v == Some(version))
            .await;
        if ok {
            self.state.lock().expect("state").changed_at
        } else {
            None
        }
    }
}

/// Routes a client machine's outputs: requests to the server, publications to the cell.
struct Flush {
    id: ClientId,
    strategy: Strategy,
    to_server: mpsc::UnboundedSender<ToServer>,
    cell: Arc<SnapshotCell<Listing>>,
    state: Arc<Mutex<State>>,
    order: u64,
}

impl Flush {
    fn flush(&mut self, out: &mut Vec<ClientOutput>) {
        for o in out.drain(..) {
            match o {
                ClientOutput::Send(msg) => {
                    let _ = self.to_server.send(ToServer::Request(self.id, msg));
                }
                ClientOutput::Event(Event::Published { items, version, .. }) => {
                    self.order += 1;
                    let key = if self.strategy == Strategy::Reference {
                        version.unwrap_or(self.order)
                    } else {
                        self.order
                    };
                    let _ = self.cell.publish(Arc::new(Listing {
                        order: key,
                        version,
                        items,
                    }));
                    let mut s = self.state.lock().expect("state");
                    if s.version != version {
                        s.version = version;
                        s.changed_at = Some(Instant::now());
                    }
                }
                _ => {}
            }
        }
    }
}

/// `mutex-single-flight`: take the lock, have the machine walk, store the result in the
/// guarded slot, release.
fn spawn_locked_refresh(
    cmds: &mpsc::UnboundedSender<Cmd>,
    guarded: &Arc<tokio::sync::Mutex<Arc<Listing>>>,
    cell: &Arc<SnapshotCell<Listing>>,
    workers: &Arc<AtomicUsize>,
    changed: &Arc<Notify>,
) {
    workers.fetch_add(1, Ordering::SeqCst);
    let (cmds, guarded, cell, workers, changed) = (
        cmds.clone(),
        guarded.clone(),
        cell.clone(),
        workers.clone(),
        changed.clone(),
    );
    tokio::spawn(async move {
        let mut slot = guarded.lock().await;
        let (done, rx) = oneshot::channel();
        if cmds.send(Cmd::Refresh(Some(done))).is_ok() {
            let _ = rx.await;
        }
        *slot = cell.load().value().clone();
        drop(slot);
        workers.fetch_sub(1, Ordering::SeqCst);
        changed.notify_waiters();
    });
}

/// Runs `m` reader tasks reading `client` until `stop` is notified; returns every read's
/// latency in ns.
pub fn spawn_readers(
    client: &Arc<Client>,
    m: u32,
    stop: &Arc<tokio::sync::watch::Sender<bool>>,
) -> Vec<tokio::task::JoinHandle<Vec<f64>>> {
    (0..m)
        .map(|_| {
            let client = client.clone();
            let mut stop = stop.subscribe();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut n = 0u32;
                while !*stop.borrow_and_update() {
                    let t = Instant::now();
                    std::hint::black_box(client.read().await);
                    if samples.len() < 200_000 {
                        samples.push(t.elapsed().as_nanos() as f64);
                    }
                    n += 1;
                    if n % 32 == 0 {
                        tokio::task::yield_now().await;
                    }
                }
                samples
            })
        })
        .collect()
}
