//! The reference MCP server: core's [`Registry`] behind a `std::sync::Mutex`, served over rmcp.
//!
//! Every JSON-RPC request becomes `ServerInput::Request(session, ClientMsg)`; every
//! administrator batch becomes `ServerInput::Apply`. The lock is held only while the machine
//! steps and its history events are recorded (so the recorded order is the commit order); what
//! the machine asks for — the response, `list_changed` to other sessions — is carried out after
//! unlocking. Notifications of a batch are awaited before [`Server::apply`] returns, so they
//! leave after the commit (`notify_after_commit`) and the caller knows they were written.
//!
//! The history records what the server's observer ([`observe`]) sees — the administrator's
//! ground truth, every `list_changed` handed to a transport with what a list request would be
//! served at that moment, every tool result against the ground truth — and never what the
//! registry claims about itself.
//!
//! Sessions are core client ids allocated by the server: one per connection (stdio, a 2025-11-25
//! HTTP session, one stateless 2026-07-28 HTTP request) and one per `subscriptions/listen`
//! stream. They live in their own number space, starting at [`FIRST_SESSION`], unrelated to the
//! ids clients record their own events under.

#[cfg(feature = "http")]
pub mod admin;
#[cfg(feature = "cluster")]
pub mod cluster;
mod deliver;
mod handler;
mod health;
#[cfg(feature = "http")]
pub mod http;
#[cfg(feature = "http")]
mod http_guard;
mod observe;
pub(crate) mod reply;
#[cfg(feature = "http")]
pub mod tokens;

pub use deliver::{Outlet, Tagged};
pub use handler::Handler;
pub use health::HealthReport;
pub use reply::{CATALOG_KEY, VERSION_BOUND_KEY, VERSION_KEY};

#[cfg(feature = "harness")]
use crate::gate::{Gates, Parked};
use crate::history::SharedHistory;
use crate::items;
use listsync_core::history::{ClientId, Event};
use listsync_core::server::{Registry, ServerConfig, ServerInput, ServerOutput};
use listsync_core::vocab::{AuthCtx, Catalog, Era, Item, Kind, Op};
use listsync_core::wire::{ClientMsg, Notification, ReqId, Request, Response, ServerMsg};
use observe::Observer;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::{mpsc, watch};

/// The first session id the server hands out.
pub const FIRST_SESSION: ClientId = 1_000;

/// Server settings: core's configuration plus runtime knobs.
#[derive(Clone, Debug)]
pub struct ServerSettings {
    /// Strategy, era, page size, ttl.
    pub core: ServerConfig,
    /// `serverInfo.name`.
    pub name: String,
    /// Longest wait for one notification to be handed to a transport.
    pub delivery_timeout: Duration,
    /// Batches that successful tool calls commit (the conformance suite's trigger tools).
    pub call_effects: Option<CallEffects>,
}

/// The side effects of tool calls: for a tool that was just called successfully and the catalog
/// it was resolved against, the batch to commit (through the registry, like an administrator's).
#[derive(Clone)]
pub struct CallEffects(Arc<EffectFn>);

type EffectFn = dyn Fn(&str, &Catalog) -> Option<Vec<Op>> + Send + Sync;

impl CallEffects {
    /// Wraps a function from (tool, catalog) to the batch to commit.
    pub fn new(f: Arc<EffectFn>) -> Self {
        CallEffects(f)
    }

    /// The batch a call of `tool` commits, if any.
    pub fn batch(&self, tool: &str, catalog: &Catalog) -> Option<Vec<Op>> {
        (self.0)(tool, catalog)
    }
}

impl std::fmt::Debug for CallEffects {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CallEffects(..)")
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        ServerSettings {
            core: ServerConfig {
                // The catalog lives in memory: a restarted server starts a new version space.
                catalog_id: fresh_catalog_id(),
                ..ServerConfig::default()
            },
            name: "listsync-rt".into(),
            delivery_timeout: Duration::from_secs(10),
            call_effects: None,
        }
    }
}

impl ServerSettings {
    /// Settings for `era` with `page_size` items per page (0: one page).
    pub fn new(era: Era, page_size: u16) -> Self {
        let mut s = ServerSettings::default();
        s.core.era = era;
        s.core.page_size = page_size;
        s
    }
}

/// A catalog id unlikely to repeat across starts (time and process id).
pub fn fresh_catalog_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    (nanos ^ (u64::from(std::process::id()) << 40)) | 1
}

/// Something the server did that an observer (the control channel) may report.
#[derive(Clone, Debug)]
pub enum ServerNotice {
    /// A history event as the server's observer saw it (a ground-truth commit, a notification
    /// handed to a transport, a tool result...): what the history records.
    Event(Event),
    /// What the registry says about itself (its commits, notifications, dispatches): reported
    /// for information, never judged.
    Claim(Event),
    /// A gate parked a request or a call.
    #[cfg(feature = "harness")]
    Parked(Parked),
    /// A tool handler returned.
    CallDone {
        /// Tool name.
        tool: String,
    },
    /// A notification was handed to a session's transport.
    Sent {
        /// Session.
        session: ClientId,
        /// JSON-RPC method.
        method: &'static str,
        /// Resource URI for `resources/updated`.
        uri: Option<String>,
    },
}

/// Why a checked batch was refused (nothing was applied).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BatchError {
    /// Adding a name that exists.
    #[error("{kind} '{name}' already exists")]
    Exists {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
    },
    /// Removing or updating a name that does not exist.
    #[error("{kind} '{name}' does not exist")]
    Missing {
        /// Kind.
        kind: Kind,
        /// Name.
        name: String,
    },
    /// Setting the content of a resource that does not exist.
    #[error("resource '{0}' does not exist")]
    NoResource(String),
    /// (multi-instance) The shared store could not take the batch (unreachable, or too
    /// contended); nothing was committed by this attempt.
    #[error("the shared catalog store failed: {0}")]
    Store(String),
}

/// What [`Server::apply`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Applied {
    /// Catalog version visible after the batch.
    pub version: u64,
    /// Notifications handed to transports.
    pub notified: usize,
}

pub(crate) struct Shared {
    pub(crate) settings: ServerSettings,
    registry: Mutex<Registry>,
    pub(crate) outlets: Mutex<HashMap<ClientId, Outlet>>,
    next_session: AtomicU32,
    next_req: AtomicU32,
    pub(crate) history: Option<SharedHistory>,
    /// The ground truth and what is observed against it (lock order: `registry`, then this).
    observer: Mutex<Observer>,
    #[cfg(feature = "harness")]
    pub(crate) gates: Gates,
    observers: Mutex<Vec<mpsc::UnboundedSender<ServerNotice>>>,
    /// Notifications handed to transports, in total.
    sent: AtomicU32,
    /// Where batches commit when the catalog lives outside this process (None: the registry).
    backend: Option<Arc<dyn Backend>>,
    /// (multi-instance) This node's name.
    node: Option<String>,
    /// Why this node is cut off from its shared store, if it is.
    stale: watch::Sender<Option<String>>,
}

/// What [`Backend::commit`] returns.
pub(crate) type Committing<'a> =
    Pin<Box<dyn Future<Output = Result<Applied, BatchError>> + Send + 'a>>;

/// A catalog that lives outside this process (a multi-instance server's shared store): batches
/// commit there, and come back to the registry as installs.
pub(crate) trait Backend: Send + Sync {
    /// Commits `ops` as one batch (checked first if `check`), makes the result visible here
    /// and notifies this server's sessions.
    fn commit<'a>(&'a self, shared: &'a Arc<Shared>, ops: &'a [Op], check: bool) -> Committing<'a>;
}

/// A handle on one reference server (cheap to clone). Serve it over any number of connections.
#[derive(Clone)]
pub struct Server {
    pub(crate) shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Server {
    /// A server holding `initial` (ops are normalized to canonical definitions) at version 1.
    /// If `history` is given, the initial commit and everything after it is recorded there.
    pub fn new(settings: ServerSettings, initial: &[Op], history: Option<SharedHistory>) -> Server {
        let mut catalog = Catalog::default();
        for op in initial {
            let op = items::normalize(op, &catalog);
            catalog.apply(&op);
        }
        let truth = Arc::new(catalog.clone());
        let registry = Registry::new(settings.core, catalog);
        let server = Server::assemble(settings, registry, history, None, None);
        server.shared.learn(1, truth);
        server
    }

    /// A server around `registry`, committing through `backend` if given.
    fn assemble(
        settings: ServerSettings,
        registry: Registry,
        history: Option<SharedHistory>,
        backend: Option<Arc<dyn Backend>>,
        node: Option<String>,
    ) -> Server {
        Server {
            shared: Arc::new(Shared {
                settings,
                registry: Mutex::new(registry),
                outlets: Mutex::new(HashMap::new()),
                next_session: AtomicU32::new(FIRST_SESSION),
                next_req: AtomicU32::new(1),
                history,
                observer: Mutex::new(Observer::new()),
                #[cfg(feature = "harness")]
                gates: Gates::new(),
                observers: Mutex::new(Vec::new()),
                sent: AtomicU32::new(0),
                backend,
                node,
                stale: watch::channel(None).0,
            }),
        }
    }

    /// The version served, and (for a node of a multi-instance server) whether it follows the
    /// shared store.
    pub fn health(&self) -> HealthReport {
        let (version, catalog_id) = {
            let reg = lock(&self.shared.registry);
            (reg.version(), reg.config().catalog_id)
        };
        HealthReport {
            node: self.shared.node.clone(),
            version,
            catalog_id,
            stale: self.shared.stale.borrow().clone(),
        }
    }

    /// Changes between current and stale (the value is why the node is stale).
    pub fn staleness(&self) -> watch::Receiver<Option<String>> {
        self.shared.stale.subscribe()
    }

    /// Settings.
    pub fn settings(&self) -> &ServerSettings {
        &self.shared.settings
    }

    /// The protocol era served.
    pub fn era(&self) -> Era {
        self.shared.settings.core.era
    }

    /// The gates of this server.
    #[cfg(feature = "harness")]
    pub fn gates(&self) -> &Gates {
        &self.shared.gates
    }

    /// The history this server records into, if any.
    pub fn history(&self) -> Option<&SharedHistory> {
        self.shared.history.as_ref()
    }

    /// Reports what the server does (history events, gates, sends) to `tx`.
    pub fn observe(&self, tx: mpsc::UnboundedSender<ServerNotice>) {
        #[cfg(feature = "harness")]
        {
            let (ptx, mut prx) = mpsc::unbounded_channel();
            self.shared.gates.observe(ptx);
            let fwd = tx.clone();
            tokio::spawn(async move {
                while let Some(p) = prx.recv().await {
                    if fwd.send(ServerNotice::Parked(p)).is_err() {
                        break;
                    }
                }
            });
        }
        lock(&self.shared.observers).push(tx);
    }

    /// The catalog version visible to list requests.
    pub fn version(&self) -> u64 {
        lock(&self.shared.registry).version()
    }

    /// The catalog visible to list requests.
    pub fn catalog(&self) -> Arc<Catalog> {
        lock(&self.shared.registry).catalog().clone()
    }

    /// The list a request of `kind` under `auth` would see now, in list order.
    pub fn visible(&self, kind: Kind, auth: AuthCtx) -> Vec<Item> {
        self.catalog().visible(kind, auth)
    }

    /// Notifications handed to transports so far (list_changed and resources/updated).
    pub fn notifications_sent(&self) -> u32 {
        self.shared.sent.load(Ordering::SeqCst)
    }

    /// Sessions that would receive a list_changed now (2025-11-25 initialized sessions with a
    /// connection, or 2026-07-28 listen streams).
    pub fn sessions(&self) -> usize {
        lock(&self.shared.outlets).len()
    }

    /// Applies `ops` as one batch (definitions normalized to canonical JSON; `Add` replaces,
    /// removing or updating a missing item does nothing), then hands the coalesced
    /// notifications to every entitled session and waits for them to be written.
    pub async fn apply(&self, ops: &[Op]) -> Applied {
        match self.apply_inner(ops, false).await {
            Ok(applied) => applied,
            // The check is off here; only a shared store that failed refuses (and the batch
            // is then not committed).
            Err(_) => Applied {
                version: self.version(),
                notified: 0,
            },
        }
    }

    /// Like [`Server::apply`], but first checks the batch against the current catalog (adding
    /// an existing item, removing or updating a missing one, setting the content of a missing
    /// resource) and applies nothing if it fails — the control protocol's `mutate`.
    pub async fn apply_checked(&self, ops: &[Op]) -> Result<Applied, BatchError> {
        self.apply_inner(ops, true).await
    }

    async fn apply_inner(&self, ops: &[Op], check: bool) -> Result<Applied, BatchError> {
        if let Some(backend) = &self.shared.backend {
            return backend.commit(&self.shared, ops, check).await;
        }
        let (out, announces) = {
            let mut reg = lock(&self.shared.registry);
            let mut obs = lock(&self.shared.observer);
            // The batch is checked and normalized against the administrator's latest catalog
            // (the ground truth), which is what the registry applies it to: the catalog it
            // serves may still lack a batch it announced and has not committed.
            let mut view = (**obs.catalog()).clone();
            let mut batch = Vec::with_capacity(ops.len());
            for op in ops {
                if check {
                    check_op(op, &view)?;
                }
                let op = items::normalize(op, &view);
                view.apply(&op);
                batch.push(op);
            }
            // The administrator's batch is the ground truth, whatever the registry makes of it.
            if let Some(e) = obs.apply(&batch) {
                self.shared.record_observed(&e);
            }
            let announces = obs.version();
            drop(obs);
            let mut out = Vec::new();
            reg.step(ServerInput::Apply(batch.into()), &mut out);
            self.shared.record(&out);
            (out, announces)
        };
        let notified = self.shared.deliver(out, announces).await;
        if self.shared.settings.core.strategy.commits_after_notifying() {
            // The known-bad variant: the batch becomes visible only after the notifications
            // went out (a gate can hold it longer).
            #[cfg(feature = "harness")]
            self.shared
                .gates
                .checkpoint(&crate::gate::GateTarget::Commit)
                .await;
            self.shared.step(ServerInput::CommitStaged);
        }
        Ok(Applied {
            version: self.version(),
            notified,
        })
    }

    /// Sends `notifications/{kind}/list_changed` (or, with `uri`, `notifications/resources/updated`)
    /// to every session outside the registry machine — the control protocol's explicit `notify`.
    /// Returns how many sessions it reached.
    pub async fn notify(&self, kind: Kind, uri: Option<&str>) -> usize {
        let targets: Vec<ClientId> = lock(&self.shared.outlets).keys().copied().collect();
        let note = match uri {
            Some(u) => Notification::ResourceUpdated {
                uri: u.into(),
                sub: None,
            },
            None => Notification::ListChanged {
                kind: listsync_core::server::group_of(kind),
                sub: None,
            },
        };
        let out = targets
            .into_iter()
            .map(|to| ServerOutput::Send {
                to,
                lane: listsync_core::wire::Lane::Stream,
                msg: ServerMsg::Notification(note.clone()),
            })
            .collect();
        let announces = self.shared.truth_version();
        self.shared.deliver(out, announces).await
    }

    /// A handler for one new connection: serve it with rmcp (`ServiceExt::serve`). Requests are
    /// made under authorization context 0 unless an HTTP request says otherwise.
    pub fn service(&self) -> Handler {
        Handler::new(self.shared.clone(), None)
    }

    /// A handler for one new connection whose requests are all made under `auth` (in-memory
    /// connections standing for an authenticated client).
    pub fn service_as(&self, auth: AuthCtx) -> Handler {
        Handler::new(self.shared.clone(), Some(auth))
    }

    /// The current ground-truth commit as a history event (what a late observer needs first).
    pub fn current_commit(&self) -> Event {
        let obs = lock(&self.shared.observer);
        Event::Committed {
            version: obs.version(),
            catalog: obs.catalog().clone(),
        }
    }
}

fn check_op(op: &Op, view: &Catalog) -> Result<(), BatchError> {
    match op {
        Op::Add { kind, name, .. } if view.get(*kind, name).is_some() => Err(BatchError::Exists {
            kind: *kind,
            name: name.to_string(),
        }),
        Op::Remove { kind, name } | Op::Update { kind, name, .. }
            if view.get(*kind, name).is_none() =>
        {
            Err(BatchError::Missing {
                kind: *kind,
                name: name.to_string(),
            })
        }
        Op::SetContent { uri, .. } if view.get(Kind::Resources, uri).is_none() => {
            Err(BatchError::NoResource(uri.to_string()))
        }
        _ => Ok(()),
    }
}

impl Shared {
    /// Steps the registry with one input and records its events, under the lock.
    pub(crate) fn step(&self, input: ServerInput) -> Vec<ServerOutput> {
        let mut reg = lock(&self.registry);
        let mut out = Vec::new();
        reg.step(input, &mut out);
        self.record(&out);
        out
    }

    /// Records the registry's outputs among `out` (call with the registry locked): the events
    /// the server is the only witness of (a session opened, a page served) go to the history,
    /// a page dated by the observer's ground truth rather than the registry's word; its claims
    /// about itself go to the debug log and to observers as claims, never to the history (the
    /// observer records the judged events).
    fn record(&self, out: &[ServerOutput]) {
        for o in out {
            match o {
                ServerOutput::Event(e @ Event::Served { .. }) => {
                    self.record_observed(&e.clone().dated(self.truth_version()));
                }
                ServerOutput::Event(e) => self.record_observed(e),
                ServerOutput::Claim(e) => {
                    tracing::debug!(claim = %e, "registry claim (not judged)");
                    self.notice(ServerNotice::Claim(e.clone()));
                }
                ServerOutput::Send { .. } => {}
            }
        }
    }

    /// Records an observed event: into the history, and to observers.
    pub(crate) fn record_observed(&self, e: &Event) {
        if let Some(h) = &self.history {
            h.record(e);
        }
        self.notice(ServerNotice::Event(e.clone()));
    }

    /// Whether anyone records or observes what the server does (otherwise the observer's
    /// probes are skipped: nobody would see their result).
    pub(crate) fn watched(&self) -> bool {
        self.history.is_some() || !lock(&self.observers).is_empty()
    }

    /// The latest ground-truth version.
    pub(crate) fn truth_version(&self) -> u64 {
        lock(&self.observer).version()
    }

    /// A version read from where the catalog lives (the initial catalog, the shared store):
    /// recorded as committed if it is newer than any seen (call with the registry locked, or
    /// before anyone can reach the server). Returns the latest ground-truth version.
    pub(crate) fn learn(&self, version: u64, catalog: Arc<Catalog>) -> u64 {
        let mut obs = lock(&self.observer);
        if let Some(e) = obs.learn(version, catalog) {
            self.record_observed(&e);
        }
        obs.version()
    }

    /// The version a list request would be served now, for a notification of `kind` that
    /// announces `announces` (see [`observe`]).
    pub(crate) fn visible_now(&self, kind: Kind, announces: u64) -> u64 {
        let reg = lock(&self.registry);
        let obs = lock(&self.observer);
        obs.visible(&reg, kind, announces)
    }

    pub(crate) fn notice(&self, n: ServerNotice) {
        lock(&self.observers).retain(|o| o.send(n.clone()).is_ok());
    }

    pub(crate) fn era(&self) -> Era {
        self.settings.core.era
    }

    /// A fresh session id, connected in the registry.
    pub(crate) fn connect(&self) -> ClientId {
        let c = self.next_session.fetch_add(1, Ordering::SeqCst);
        self.step(ServerInput::Connect(c));
        c
    }

    /// Ends a session: the registry forgets it and its outlet is dropped.
    pub(crate) fn disconnect(&self, c: ClientId) {
        lock(&self.outlets).remove(&c);
        self.step(ServerInput::Disconnect(c));
    }

    /// Runs one request through the registry: returns the response to it and delivers whatever
    /// else the machine asked to send.
    pub(crate) async fn request(
        self: &Arc<Self>,
        c: ClientId,
        auth: AuthCtx,
        req: Request,
    ) -> Response {
        let id: ReqId = self.next_req.fetch_add(1, Ordering::SeqCst);
        let tool = match &req {
            Request::CallTool { name, schema } => Some((name.clone(), *schema)),
            _ => None,
        };
        let mut resp = None;
        let mut rest = Vec::new();
        let announces = {
            let mut reg = lock(&self.registry);
            let mut out = Vec::new();
            reg.step(
                ServerInput::Request(c, ClientMsg { id, auth, req }),
                &mut out,
            );
            self.record(&out);
            for o in out {
                match o {
                    ServerOutput::Send {
                        to,
                        msg: ServerMsg::Response { id: rid, resp: r },
                        ..
                    } if to == c && rid == id => resp = Some(r),
                    ServerOutput::Send { .. } => rest.push(o),
                    ServerOutput::Event(_) | ServerOutput::Claim(_) => {}
                }
            }
            let obs = lock(&self.observer);
            // A tool result is a dispatch, judged against the ground truth at this moment.
            if let (Some((tool, schema)), Some(r)) = (&tool, &resp) {
                self.record_observed(&obs.answer(c, auth, tool, r));
                if let Some(e) = obs.stale_arguments(c, tool, *schema, r) {
                    self.record_observed(&e);
                }
            }
            obs.version()
        };
        self.deliver(rest, announces).await;
        resp.unwrap_or_else(|| {
            Response::Error(listsync_core::wire::RpcError {
                code: listsync_core::wire::INTERNAL_ERROR,
                reason: listsync_core::wire::ErrorReason::Other("no response".into()),
            })
        })
    }

    /// Registers where a session's notifications go, delivering any that were queued for it.
    pub(crate) async fn attach(self: &Arc<Self>, c: ClientId, outlet: Outlet) {
        let queued = {
            let mut outlets = lock(&self.outlets);
            match outlets.insert(c, outlet) {
                Some(Outlet::Pending(q)) => q,
                _ => Vec::new(),
            }
        };
        if !queued.is_empty() {
            self.deliver_tagged([(c, queued)].into()).await;
        }
    }

    pub(crate) fn count_sent(&self, n: usize) {
        self.sent.fetch_add(n as u32, Ordering::SeqCst);
    }
}
