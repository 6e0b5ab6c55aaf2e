//! What benches 1 and 3 measure: the shipped runtime. `listsync-rt`'s reference server and its
//! clients (core's `Registry` and `CatalogClient` machines driven by tokio over rmcp, the
//! snapshot store's `SnapshotCell` for reads), each client connected to the server by a pair of
//! `tokio::io::duplex` pipes carrying newline-delimited JSON-RPC, as stdio would.
//!
//! Between each client and the server sits a *tap*: two pumps that copy lines across, count the
//! `tools/list` requests (walks and pages) and the `notifications/tools/list_changed` the server
//! sends, and — for the two strategies the project does not ship — do what those strategies add
//! in front of the shipped client. Every strategy's list walks are rt's:
//!
//! * `reference`: rt's client with core's reference strategy and its default pacing (the
//!   adaptive coalescing gap); `reference-gap-off`, `reference-gap-5ms`, `reference-gap-50ms`:
//!   the same client with the coalescing gap off or fixed (the knob's other settings); the tap
//!   only counts;
//! * `naive`: rt's client with core's `naive` strategy (one walk per notification, concurrent,
//!   last response wins);
//! * `debounce-<D>ms`: a trailing debounce like the TypeScript SDK's `listChanged` option in
//!   front of rt's `naive` client. An SDK's debounce runs in the client, on notifications the
//!   client has read and parsed, so it sits at the client's end of the wire, behind the tap
//!   like every client: a *debounce stage* between the tap's pipe and the client reads every
//!   line, parses each notification as rmcp's client does (`ServerJsonRpcMessage`) and runs
//!   its handler in a task of its own (rmcp runs one per notification); the handler holds the
//!   notification and restarts a D ms timer. When the timer fires the stage lets the last one
//!   through, and the client walks once. Every other line it passes on (one pipe more than
//!   the other strategies' answers take). With D = 0 the timer fires as soon as no further
//!   line is already waiting and no handler is still to run (notifications that arrived
//!   together coalesce, as with `setTimeout(.., 0)`);
//! * `mutex-single-flight`: every notification spawns a task that takes one
//!   `tokio::sync::Mutex`, asks rt's `naive` client for a refresh (`ClientHandle::refresh`, which
//!   returns once the walk is done), stores the result in the mutex-guarded slot and releases the
//!   lock. The tap hands notifications to that code instead of to the client. Walks never
//!   overlap, nothing coalesces them, and readers (who lock the slot) wait while a walk holds it.
//!
//! A refresh is put "in flight" with one of rt's gates: the server parks the n-th `tools/list`
//! request before serving it, and serves it (at the version current then) on release. While
//! the rig *holds lists*, the taps also hold every further `tools/list` request a client sends
//! (in order) until released, as a server busy with the refresh in flight would.

use listsync_core::client::{Coalesce, Pacing};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::client::{BoxRead, BoxWrite, ClientHandle, ClientSettings, Endpoint, View};
use listsync_rt::gate::{GateId, GateTarget, Phase};
use listsync_rt::server::{Server, ServerSettings};
use listsync_testkit::peers::serve_in_memory;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Items per page.
pub const PAGE_SIZE: u16 = 4;

/// A client refresh strategy under measurement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Strategy {
    /// rt's client, core's reference strategy with this coalescing setting (the rest of its
    /// pacing as shipped).
    Reference(Coalesce),
    /// rt's client, core's `naive` strategy.
    Naive,
    /// A trailing debounce of this many ms in front of rt's `naive` client.
    Debounce(u64),
    /// One `tokio::sync::Mutex` around every refresh of rt's `naive` client, no coalescing.
    MutexSingleFlight,
}

/// The shipped reference client.
pub const REFERENCE: Strategy = Strategy::Reference(DEFAULT_COALESCE);

/// The reference client's default coalescing setting.
const DEFAULT_COALESCE: Coalesce = Pacing::default_coalesce();

impl Strategy {
    /// The strategies of the fan-out bench, in report order.
    pub const ALL: [Strategy; 6] = [
        REFERENCE,
        Strategy::Reference(Coalesce::Off),
        Strategy::Naive,
        Strategy::Debounce(300),
        Strategy::Debounce(0),
        Strategy::MutexSingleFlight,
    ];

    /// The refresh-contention frontier: the reference at each coalescing setting, and what it
    /// is compared with, in report order.
    pub const FRONTIER: [Strategy; 8] = [
        REFERENCE,
        Strategy::Reference(Coalesce::Off),
        Strategy::Reference(Coalesce::Gap(5)),
        Strategy::Reference(Coalesce::Gap(50)),
        Strategy::Naive,
        Strategy::Debounce(0),
        Strategy::Debounce(50),
        Strategy::Debounce(300),
    ];

    /// Name in reports.
    pub fn name(self) -> String {
        match self {
            Strategy::Reference(c) if c == DEFAULT_COALESCE => "reference".into(),
            Strategy::Reference(Coalesce::Off) => "reference-gap-off".into(),
            Strategy::Reference(Coalesce::Gap(ms)) => format!("reference-gap-{ms}ms"),
            Strategy::Reference(Coalesce::Adaptive(ms)) => format!("reference-adaptive-{ms}ms"),
            Strategy::Naive => "naive".into(),
            Strategy::Debounce(ms) => format!("debounce-{ms}ms"),
            Strategy::MutexSingleFlight => "mutex-single-flight".into(),
        }
    }

    fn machine(self) -> ClientStrategy {
        match self {
            Strategy::Reference(_) => ClientStrategy::Reference,
            _ => ClientStrategy::Naive,
        }
    }
}

/// What every tap of one rig counted (reset by the bench around a burst).
#[derive(Default)]
pub struct Counters {
    /// First-page `tools/list` requests (walks started, restarts included).
    pub walks: AtomicU64,
    /// All `tools/list` requests (pages).
    pub requests: AtomicU64,
    /// `notifications/tools/list_changed` the server sent.
    pub notifications: AtomicU64,
    /// The JSON-RPC ids of the `tools/list` requests counted in `requests`.
    sent: Mutex<Vec<serde_json::Value>>,
    /// Every answer carrying a catalog version the taps passed to a client since the reset, in
    /// the order they passed it (kept as read; parsed by [`Counters::final_answer`] afterwards).
    answers: Mutex<Vec<String>>,
}

/// Which request's answer first carried the final list to a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FinalAnswer {
    /// The request already in flight when the counters were reset (before the burst).
    InFlight,
    /// A request the client sent after the reset (during or after the burst).
    Sent,
}

impl Counters {
    /// Zeroes every counter.
    pub fn reset(&self) {
        self.walks.store(0, Ordering::SeqCst);
        self.requests.store(0, Ordering::SeqCst);
        self.notifications.store(0, Ordering::SeqCst);
        self.sent.lock().expect("sent").clear();
        self.answers.lock().expect("answers").clear();
    }

    /// Reads one counter.
    pub fn get(c: &AtomicU64) -> u64 {
        c.load(Ordering::SeqCst)
    }

    /// Which request the first answer at catalog `version` since the reset answered (`None`:
    /// no such answer passed the taps).
    pub fn final_answer(&self, version: u64) -> Option<FinalAnswer> {
        let answers = self.answers.lock().expect("answers");
        let id = answers.iter().find_map(|line| {
            let v: serde_json::Value = serde_json::from_str(line).ok()?;
            let at = v.get("result")?.get("_meta")?.get(VERSION_META)?.as_u64()?;
            (at == version).then(|| v.get("id").cloned())?
        })?;
        let sent = self.sent.lock().expect("sent").contains(&id);
        Some(if sent {
            FinalAnswer::Sent
        } else {
            FinalAnswer::InFlight
        })
    }
}

/// Whether the taps let `tools/list` requests through.
#[derive(Default)]
struct Hold {
    on: AtomicBool,
    changed: tokio::sync::Notify,
}

impl Hold {
    /// Returns once requests may pass.
    async fn pass(&self) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if !self.on.load(Ordering::SeqCst) {
                return;
            }
            changed.await;
        }
    }

    fn set(&self, on: bool) {
        self.on.store(on, Ordering::SeqCst);
        self.changed.notify_waiters();
    }
}

/// One rt reference server and the counters of every tap in front of it.
pub struct TappedServer {
    /// The server.
    pub server: Server,
    /// What the taps counted.
    pub counters: Arc<Counters>,
    hold: Arc<Hold>,
}

impl TappedServer {
    /// A 2025-11-25 reference server holding `items` tools, [`PAGE_SIZE`] per page (call inside
    /// a tokio runtime).
    pub fn new(items: u32) -> TappedServer {
        let ops: Vec<Op> = (0..items)
            .map(|i| Op::add(Kind::Tools, &format!("t{i:04}"), "d0"))
            .collect();
        TappedServer {
            server: Server::new(ServerSettings::new(Era::V2025_11_25, PAGE_SIZE), &ops, None),
            counters: Arc::new(Counters::default()),
            hold: Arc::new(Hold::default()),
        }
    }

    /// From now on, the taps hold every `tools/list` request until [`TappedServer::release_lists`].
    pub fn hold_lists(&self) {
        self.hold.set(true);
    }

    /// Lets the held `tools/list` requests go, in the order they were sent.
    pub fn release_lists(&self) {
        self.hold.set(false);
    }

    /// Applies `k` one-update batches back to back (each a new version, so one `list_changed`
    /// per client each); returns the final version and when its commit began.
    pub async fn burst(&self, k: u32) -> (u64, Instant) {
        self.burst_spaced(k, Duration::ZERO).await
    }

    /// [`TappedServer::burst`] with a sleep of `spacing` between two batches (none if zero).
    pub async fn burst_spaced(&self, k: u32, spacing: Duration) -> (u64, Instant) {
        let mut last = Instant::now();
        for i in 0..k {
            if i > 0 && !spacing.is_zero() {
                tokio::time::sleep(spacing).await;
            }
            last = Instant::now();
            let batch = [Op::update(Kind::Tools, "t0000", &format!("b{i}-{last:?}"))];
            self.server.apply(&batch).await;
        }
        (self.server.version(), last)
    }

    /// Arms a gate on the `nth` next `tools/list` request (parked before it is served).
    pub fn park_list(&self, nth: u32) -> GateId {
        self.server.gates().arm(
            GateTarget::Request {
                method: "tools/list".into(),
                phase: Phase::Before,
            },
            nth,
        )
    }
}

/// What one client's tap knows.
#[derive(Default)]
struct Tap {
    /// Notifications the server sent to this client.
    seen: AtomicU64,
    /// Notifications let through to the client.
    forwarded: AtomicU64,
    /// Debounce: notifications the tap passed to the debounce stage.
    staged: AtomicU64,
    /// Debounce: notifications whose handler has run in the stage.
    handled: AtomicU64,
    /// A debounce timer is running.
    pending: AtomicBool,
    /// Woken whenever `seen` grows, so that a wait on the burst wakes as the tap reads it.
    progress: tokio::sync::Notify,
}

/// What the tap does with a `list_changed` from the server.
#[derive(Clone)]
enum Relay {
    Forward,
    Debounce(Duration),
    Divert(Arc<dyn Fn() + Send + Sync>),
}

fn is_list_changed(line: &str) -> bool {
    line.contains("notifications/tools/list_changed")
}

/// The `_meta` key of the reference server's answers that carries the catalog version.
const VERSION_META: &str = "dev.listsync/catalogVersion";

/// For a `tools/list` request: whether it asks for a first page, and its id.
fn list_request(line: &str) -> Option<(bool, serde_json::Value)> {
    if !line.contains("tools/list") {
        return None;
    }
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    if v.get("method")?.as_str()? != "tools/list" {
        return None;
    }
    let cursor = v
        .get("params")
        .and_then(|p| p.get("cursor"))
        .is_some_and(|c| !c.is_null());
    Some((!cursor, v.get("id")?.clone()))
}

async fn write_line(to: &mut (impl AsyncWrite + Unpin), line: &str) -> std::io::Result<()> {
    to.write_all(line.as_bytes()).await?;
    to.write_all(b"\n").await?;
    to.flush().await
}

/// Client to server: copy, counting list requests (and holding them while the rig says so).
async fn pump_up(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    counters: Arc<Counters>,
    hold: Arc<Hold>,
) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some((first, id)) = list_request(&line) {
            counters.sent.lock().expect("sent").push(id);
            counters.requests.fetch_add(1, Ordering::SeqCst);
            if first {
                counters.walks.fetch_add(1, Ordering::SeqCst);
            }
            hold.pass().await;
        }
        if write_line(&mut to, &line).await.is_err() {
            break;
        }
    }
}

/// Server to client: copy, counting notifications and relaying them per strategy.
async fn pump_down(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    relay: Relay,
    tap: Arc<Tap>,
    counters: Arc<Counters>,
) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if !is_list_changed(&line) {
            if line.contains(VERSION_META) {
                counters.answers.lock().expect("answers").push(line.clone());
            }
            if write_line(&mut to, &line).await.is_err() {
                break;
            }
            continue;
        }
        match &relay {
            Relay::Forward => {
                if write_line(&mut to, &line).await.is_err() {
                    break;
                }
                tap.forwarded.fetch_add(1, Ordering::SeqCst);
            }
            Relay::Debounce(_) => {
                tap.staged.fetch_add(1, Ordering::SeqCst);
                if write_line(&mut to, &line).await.is_err() {
                    break;
                }
            }
            Relay::Divert(f) => f(),
        }
        tap.seen.fetch_add(1, Ordering::SeqCst);
        tap.progress.notify_waiters();
        counters.notifications.fetch_add(1, Ordering::SeqCst);
    }
}

/// The debounce stage at the client's end of the wire (`debounce-<D>ms`): what an SDK's
/// trailing debounce does with the lines the client reads.
async fn debounce_stage(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    delay: Duration,
    tap: Arc<Tap>,
) {
    let mut lines = BufReader::new(from).lines();
    let mut held: Option<String> = None;
    let mut deadline: Option<tokio::time::Instant> = None;
    // Handler tasks started and not yet heard back from, and what they hand back (the
    // notification, to hold).
    let mut handling = 0usize;
    let (handled_tx, mut handled_rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    loop {
        // The timer runs once every handler started so far has run.
        let timer = async {
            match deadline {
                Some(d) if handling == 0 => tokio::time::sleep_until(d).await,
                _ => std::future::pending().await,
            }
        };
        tokio::select! {
            biased;
            line = lines.next_line() => {
                let Ok(Some(line)) = line else { break };
                if !is_list_changed(&line) {
                    if write_line(&mut to, &line).await.is_err() {
                        break;
                    }
                    continue;
                }
                let parsed = serde_json::from_str::<rmcp::model::ServerJsonRpcMessage>(&line);
                handling += 1;
                let handled = handled_tx.clone();
                tokio::spawn(async move {
                    drop(std::hint::black_box(parsed));
                    let _ = handled.send(line);
                });
            }
            Some(line) = handled_rx.recv() => {
                handling -= 1;
                held = Some(line);
                deadline = Some(tokio::time::Instant::now() + delay);
                // Pending before handled, so that `settled` (which reads them the other way
                // round) never sees this notification handled and no timer running.
                tap.pending.store(true, Ordering::SeqCst);
                tap.handled.fetch_add(1, Ordering::SeqCst);
            }
            () = timer => {
                deadline = None;
                if let Some(line) = held.take() {
                    if write_line(&mut to, &line).await.is_err() {
                        break;
                    }
                    tap.forwarded.fetch_add(1, Ordering::SeqCst);
                }
                tap.pending.store(false, Ordering::SeqCst);
            }
        }
    }
}

/// Connections to the rig's server through a tap.
fn tapped(rig: &TappedServer, relay: Relay, tap: Arc<Tap>) -> Endpoint {
    let (server, counters, hold) = (rig.server.clone(), rig.counters.clone(), rig.hold.clone());
    Endpoint::io(move |auth| {
        let (server, relay, tap, counters, hold) = (
            server.clone(),
            relay.clone(),
            tap.clone(),
            counters.clone(),
            hold.clone(),
        );
        async move {
            let (client_end, tap_client) = tokio::io::duplex(1 << 16);
            let tap_server = serve_in_memory(server.service_as(auth));
            let (cr, cw) = tokio::io::split(tap_client);
            let (sr, sw) = tokio::io::split(tap_server);
            tokio::spawn(pump_up(cr, sw, counters.clone(), hold));
            if let Relay::Debounce(delay) = relay {
                let (stage_end, tap_end) = tokio::io::duplex(1 << 16);
                let (stage_r, _) = tokio::io::split(stage_end);
                let (_, tap_w) = tokio::io::split(tap_end);
                tokio::spawn(pump_down(sr, tap_w, relay, tap.clone(), counters));
                tokio::spawn(debounce_stage(stage_r, cw, delay, tap));
            } else {
                tokio::spawn(pump_down(sr, cw, relay, tap, counters));
            }
            let (r, w) = tokio::io::split(client_end);
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    })
}

/// The catalog version a client's readers see, and since when.
#[derive(Default)]
struct Current {
    version: Option<u64>,
    since: Option<Instant>,
}

impl Current {
    fn set(&mut self, version: Option<u64>) {
        if self.version != version {
            self.version = version;
            self.since = Some(Instant::now());
        }
    }
}

/// One client under a strategy.
pub struct Subject {
    strategy: Strategy,
    catalog: ClientHandle,
    tap: Arc<Tap>,
    /// `mutex-single-flight`: the slot its readers read.
    guarded: Arc<tokio::sync::Mutex<Option<Arc<View>>>>,
    /// `mutex-single-flight`: refresh tasks started and not finished.
    workers: Arc<AtomicUsize>,
    current: Arc<Mutex<Current>>,
}

/// `mutex-single-flight`: lock, refresh through rt, store, unlock.
fn locked_refresh(
    catalog: &ClientHandle,
    guarded: &Arc<tokio::sync::Mutex<Option<Arc<View>>>>,
    workers: &Arc<AtomicUsize>,
    current: &Arc<Mutex<Current>>,
) {
    workers.fetch_add(1, Ordering::SeqCst);
    let (catalog, guarded, workers, current) = (
        catalog.clone(),
        guarded.clone(),
        workers.clone(),
        current.clone(),
    );
    tokio::spawn(async move {
        let mut slot = guarded.lock().await;
        if let Some(done) = catalog.refresh(Kind::Tools).await {
            *slot = Some(done.view);
        }
        let version = slot.as_ref().and_then(|v| v.value().version);
        current.lock().expect("current").set(version);
        drop(slot);
        workers.fetch_sub(1, Ordering::SeqCst);
    });
}

impl Subject {
    /// Connects client `id` of `strategy` to the rig's server and waits for its first list
    /// (call inside a tokio runtime).
    pub async fn connect(
        rig: &TappedServer,
        id: u32,
        strategy: Strategy,
        limit: Duration,
    ) -> Subject {
        let tap = Arc::new(Tap::default());
        let guarded = Arc::new(tokio::sync::Mutex::new(None));
        let workers = Arc::new(AtomicUsize::new(0));
        let current = Arc::new(Mutex::new(Current::default()));
        // The catalog exists only once spawned; the divert closure reaches it through a cell.
        let cell: Arc<std::sync::OnceLock<ClientHandle>> = Arc::new(std::sync::OnceLock::new());
        let relay = match strategy {
            Strategy::Reference(_) | Strategy::Naive => Relay::Forward,
            Strategy::Debounce(ms) => Relay::Debounce(Duration::from_millis(ms)),
            Strategy::MutexSingleFlight => {
                let (cell, guarded, workers, current) = (
                    cell.clone(),
                    guarded.clone(),
                    workers.clone(),
                    current.clone(),
                );
                Relay::Divert(Arc::new(move || {
                    if let Some(c) = cell.get() {
                        locked_refresh(c, &guarded, &workers, &current);
                    }
                }))
            }
        };
        let mut settings = ClientSettings::new(Era::V2025_11_25, KindSet::only(Kind::Tools));
        settings.client.strategy = strategy.machine();
        if let Strategy::Reference(coalesce) = strategy {
            settings.client.pacing.coalesce = coalesce;
        }
        settings.id = id;
        let endpoint = tapped(rig, relay, tap.clone());
        let catalog = ClientHandle::spawn(settings, endpoint);
        let _ = cell.set(catalog.clone());
        if strategy != Strategy::MutexSingleFlight {
            // What readers read is the catalog's snapshot: note when its version changes.
            let mut changes = catalog.changes();
            let current = current.clone();
            tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    let c = changes.borrow_and_update().clone();
                    if c.kind == Kind::Tools {
                        current.lock().expect("current").set(c.version);
                    }
                }
            });
        }
        let s = Subject {
            strategy,
            catalog,
            tap,
            guarded,
            workers,
            current,
        };
        let version = rig.server.version();
        let ok = s
            .wait(limit, || {
                s.settled() && s.catalog.tools().value().version == Some(version)
            })
            .await;
        assert!(ok, "{}: no first list within {limit:?}", strategy.name());
        if strategy == Strategy::MutexSingleFlight {
            *s.guarded.lock().await = Some(s.catalog.tools());
            s.current.lock().expect("current").set(Some(version));
        }
        s
    }

    /// The strategy.
    pub fn strategy(&self) -> Strategy {
        self.strategy
    }

    /// Starts a refresh as the application would, without waiting for it.
    pub fn refresh(&self) {
        if self.strategy == Strategy::MutexSingleFlight {
            locked_refresh(&self.catalog, &self.guarded, &self.workers, &self.current);
        } else {
            let c = self.catalog.clone();
            tokio::spawn(async move { c.refresh(Kind::Tools).await });
        }
    }

    /// One read of the current list, as an application does it.
    pub async fn read(&self) -> usize {
        if self.strategy == Strategy::MutexSingleFlight {
            self.guarded
                .lock()
                .await
                .as_ref()
                .map_or(0, |v| v.value().items.len())
        } else {
            self.catalog.tools().value().items.len()
        }
    }

    /// Nothing left to do: every notification the tap let through was handled, no debounce
    /// timer or locked refresh is pending, and the client is idle.
    pub fn settled(&self) -> bool {
        let st = self.catalog.status().borrow().clone();
        st.ready
            && st.idle
            && self.tap.handled.load(Ordering::SeqCst) == self.tap.staged.load(Ordering::SeqCst)
            && !self.tap.pending.load(Ordering::SeqCst)
            && self.workers.load(Ordering::SeqCst) == 0
            && st.notifications >= self.tap.forwarded.load(Ordering::SeqCst)
    }

    /// The server has sent `n` notifications to this client since it connected, and the tap
    /// has passed each on (or, for a debounce, taken it): the burst is on the client's side of
    /// the wire, whatever the client has made of it yet. The same wire event for every
    /// strategy, as a server would see it.
    pub fn heard(&self, n: u64) -> bool {
        self.tap.seen.load(Ordering::SeqCst) >= n
    }

    /// Notifications the server has sent to this client.
    pub fn notifications(&self) -> u64 {
        self.tap.seen.load(Ordering::SeqCst)
    }

    /// The version readers see now, and since when.
    pub fn current(&self) -> (Option<u64>, Option<Instant>) {
        let c = self.current.lock().expect("current");
        (c.version, c.since)
    }

    /// Waits until `cond` holds (checked on every status change of the client, on every
    /// notification the tap reads, and at least every millisecond) or `limit` passes; returns
    /// whether it held.
    pub async fn wait(&self, limit: Duration, cond: impl Fn() -> bool) -> bool {
        let end = tokio::time::Instant::now() + limit;
        let mut status = self.catalog.status();
        loop {
            // Registered before the check, so a notification read in between still wakes us.
            let tapped = self.tap.progress.notified();
            if cond() {
                return true;
            }
            if tokio::time::Instant::now() >= end {
                return false;
            }
            let woken = async {
                tokio::select! {
                    _ = status.changed() => {}
                    () = tapped => {}
                }
            };
            let _ = tokio::time::timeout(Duration::from_millis(1), woken).await;
        }
    }

    /// The version of the list readers read now (the guarded slot for `mutex-single-flight`,
    /// else the catalog's snapshot).
    fn reading(&self) -> Option<u64> {
        if self.strategy == Strategy::MutexSingleFlight {
            self.current.lock().expect("current").version
        } else {
            self.catalog.tools().value().version
        }
    }

    /// Waits until settled; returns when readers started seeing `version`, if that is what
    /// they see then (None if the client settled on another list, or did not settle).
    pub async fn converged(&self, version: u64, limit: Duration) -> Option<Instant> {
        if !self.wait(limit, || self.settled()).await {
            return None;
        }
        if self.reading() != Some(version) {
            return None;
        }
        // The time of the change is noted by a task watching the catalog: let it catch up.
        let noted = self.wait(limit, || self.current().0 == Some(version)).await;
        if noted { self.current().1 } else { None }
    }

    /// What the client holds and does, for a message when it did not converge.
    pub fn describe(&self) -> String {
        let st = self.catalog.status().borrow().clone();
        format!(
            "{}: reads v{:?} (noted {:?}), idle {}, notifications {} of {} let through ({} sent), \
             debouncing {}, locked refreshes {}, failures {}, last error {:?}",
            self.strategy.name(),
            self.reading(),
            self.current().0,
            st.idle,
            st.notifications,
            self.tap.forwarded.load(Ordering::SeqCst),
            self.tap.seen.load(Ordering::SeqCst),
            self.tap.pending.load(Ordering::SeqCst),
            self.workers.load(Ordering::SeqCst),
            st.failures,
            st.last_error
        )
    }

    /// Stops the client.
    pub fn shutdown(&self) {
        self.catalog.shutdown();
    }
}

/// A neighbouring session in the same process: another client of the measured client's
/// strategy (the same library, as an MCP host with two sessions runs it) walking another
/// server's one-page list, then pausing 1 ms, over and over, until dropped. Its server never
/// changes, so it sends no notifications and every walk is one the application asked for.
/// It keeps the process (its tokio workers, its CPUs, the caches on the answer path) as busy
/// as a host with more than one session is, whatever the measured client does: a client that
/// is itself busy during a burst (one that walks on every notification) otherwise meets the
/// burst's last answer in a warm process, and one that waits quietly for it in a cold one.
pub struct Neighbour {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Neighbour {
    /// Starts a neighbour of `strategy` once its client has its first list (call inside a
    /// tokio runtime).
    pub async fn start(strategy: Strategy, limit: Duration) -> Neighbour {
        let rig = TappedServer::new(u32::from(PAGE_SIZE));
        let subject = Subject::connect(&rig, 0, strategy, limit).await;
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            loop {
                let walk = async {
                    let _ = subject.catalog.refresh(Kind::Tools).await;
                    tokio::time::sleep(Duration::from_millis(1)).await;
                };
                tokio::select! {
                    _ = &mut stopped => break,
                    () = walk => {}
                }
            }
            subject.shutdown();
            drop(rig);
        });
        Neighbour { stop: Some(stop) }
    }
}

impl Drop for Neighbour {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Runs `m` reader tasks reading `subject` until `stop` turns true; returns every read's
/// latency in ns.
pub fn spawn_readers(
    subject: &Arc<Subject>,
    m: u32,
    stop: &tokio::sync::watch::Sender<bool>,
) -> Vec<tokio::task::JoinHandle<Vec<f64>>> {
    (0..m)
        .map(|_| {
            let subject = subject.clone();
            let mut stop = stop.subscribe();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut n = 0u32;
                while !*stop.borrow_and_update() {
                    let t = Instant::now();
                    std::hint::black_box(subject.read().await);
                    if samples.len() < 200_000 {
                        samples.push(t.elapsed().as_nanos() as f64);
                    }
                    n += 1;
                    if n.is_multiple_of(32) {
                        tokio::task::yield_now().await;
                    }
                }
                samples
            })
        })
        .collect()
}
