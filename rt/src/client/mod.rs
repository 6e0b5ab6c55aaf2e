//! The reference client: a catalog that applications read while one actor task keeps it in
//! step with a server by running core's [`CatalogClient`] machine.
//!
//! * reads are wait-free: [`ClientHandle::tools`] returns the current snapshot (`Arc`), never blocked
//!   by a refresh, never torn (store's `SnapshotCell`);
//! * [`ClientHandle::changes`] is a `watch` stream of publications (and stale markings);
//! * on failure the old snapshot is kept and marked stale, and the refresh is retried with
//!   backoff and jitter; a lost connection is reopened (backoff, jitter) and everything
//!   re-listed; every failure and every retry it schedules is reported
//!   ([`ClientNotice::RefreshFailed`], [`ClientNotice::RetryScheduled`],
//!   [`ClientNotice::ConnectFailed`], [`ClientNotice::ReconnectScheduled`]), and
//!   [`ClientHandle::list_status`] says of each list whether it is current, stale or failing, why,
//!   and when the next attempt is due;
//! * notifications are coalesced before they reach the actor (they are idempotent to the
//!   reference machine), so a server flooding them costs bounded memory ([`inflow`]); the
//!   known-bad strategies get every notification, up to a cap;
//! * snapshots are cached per (server identity, era, authorization context): a reconnect to a
//!   different server drops the cache, and a context switch shows that context's own snapshots
//!   only — a private entry is never served to another context;
//! * in 2026-07-28 the machine opens `subscriptions/listen`, lists after the acknowledgement, and
//!   re-opens and re-lists after the stream drops;
//! * an application connected to several servers holds one handle per server in [`Servers`],
//!   which shows their tools as one combined listing under the keys it configured.
//!
//! [`CatalogClient`]: listsync_core::client::CatalogClient

mod actor;
mod connect;
mod guard;
mod handler;
pub mod inflow;
mod request;
mod servers;
mod views;

pub use connect::{BoxRead, BoxWrite, Endpoint, IoFactory};
pub use servers::{Servers, ServersError};
pub use views::{Change, Listing, View};

use crate::history::SharedHistory;
use actor::{Actor, Command, Input};
use listsync_core::client::{CallError, ClientConfig, ClientError};
use listsync_core::history::{ClientId, Event};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_core::wire::SubId;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use views::Views;

/// Client settings: core's configuration plus runtime knobs.
#[derive(Clone, Debug)]
pub struct ClientSettings {
    /// Strategy, era, kinds kept, initial authorization context, watched resources, limits.
    pub client: ClientConfig,
    /// The id this client records its history events under.
    pub id: ClientId,
    /// `clientInfo.name`.
    pub name: String,
    /// Longest wait for one request.
    pub request_timeout: Duration,
    /// Longest wait for a connection (and its handshake).
    pub connect_timeout: Duration,
    /// First reconnect delay (doubles per failed attempt, with jitter).
    pub reconnect_base: Duration,
    /// Largest reconnect delay.
    pub reconnect_max: Duration,
    /// Give up after this many reconnects in a row (None: never). A reconnect succeeds once its
    /// connection has served a list (or has none to serve): a server that accepts the handshake
    /// and dies before it serves one counts as a failed attempt.
    pub max_reconnects: Option<u32>,
    /// How often an HTTP connection is probed with `ping` (rmcp's HTTP client does not notice
    /// a server that went away until a request fails).
    pub probe_interval: Duration,
    /// The bearer token presented over HTTP under each authorization context (a server started
    /// with `--auth-tokens`). A context without one is sent as `Bearer auth<N>` (N > 0), the
    /// convention of servers started with `--insecure-test-auth`; context 0 then sends nothing.
    pub bearer: BTreeMap<AuthCtx, String>,
    /// Where to record history events.
    pub history: Option<SharedHistory>,
    /// Where to report what happens (the control channel).
    pub observer: Option<mpsc::UnboundedSender<ClientNotice>>,
    /// Seed of the retry and reconnect jitter (None: drawn from the clock). A simulator sets it
    /// so that one seed reproduces a whole run.
    pub jitter_seed: Option<u64>,
}

impl ClientSettings {
    /// A reference client of `era` keeping `kinds`.
    pub fn new(era: Era, kinds: KindSet) -> Self {
        let mut client = ClientConfig::tools(ClientStrategy::Reference, era);
        client.kinds = kinds;
        ClientSettings {
            client,
            id: 0,
            name: "listsync-rt".into(),
            request_timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(30),
            reconnect_base: Duration::from_millis(50),
            reconnect_max: Duration::from_secs(5),
            max_reconnects: None,
            probe_interval: Duration::from_secs(5),
            bearer: BTreeMap::new(),
            history: None,
            observer: None,
            jitter_seed: None,
        }
    }
}

/// What the client is doing, for tests and tools that wait for a state.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClientStatus {
    /// A connection is open.
    pub connected: bool,
    /// Past the handshake (2025-11-25) or the listen acknowledgement (2026-07-28).
    pub ready: bool,
    /// No request outstanding, no refresh running, no retry armed.
    pub idle: bool,
    /// The actor stopped (shutdown, or a connection that cannot be reopened was lost).
    pub ended: bool,
    /// Connection attempt number.
    pub epoch: u32,
    /// Connections opened so far.
    pub connections: u32,
    /// Notifications received (list_changed and resources/updated, on any stream).
    pub notifications: u64,
    /// Snapshots published.
    pub publications: u64,
    /// Refreshes that failed (each failure, retries included).
    pub failures: u64,
    /// The last error.
    pub last_error: Option<String>,
    /// Failed connection attempts in a row (reset by a connection that opens).
    pub connect_failures: u32,
    /// When the next connection attempt is due, if one is scheduled.
    pub next_reconnect: Option<Instant>,
    /// How current each kept list is (under the current authorization context).
    pub lists: BTreeMap<Kind, ListStatus>,
    /// Negotiated protocol version.
    pub protocol_version: Option<String>,
    /// `serverInfo` name and version (`NAME VERSION`).
    pub server: Option<String>,
    /// `serverInfo.name` alone (either field may contain spaces, so [`ClientStatus::server`] cannot
    /// be split back reliably).
    pub server_name: Option<String>,
}

/// Whether a list's snapshot can be trusted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ListHealth {
    /// Listed, and nothing since says it is out of date.
    Current,
    /// Not listed yet, or known to be out of date (the connection was lost, the context
    /// switched) with nothing failing.
    #[default]
    Stale,
    /// The last attempt to list it (or to connect) failed; `next_retry` says when the next one
    /// is due, None if the client gave up until the next change notification.
    Failing,
    /// The server does not offer this list: its handshake declares no capability for it, so
    /// the client does not list it on this connection.
    NotOffered,
}

/// How current one list is, why, and when the next attempt is due.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListStatus {
    /// Current, stale or failing.
    pub health: ListHealth,
    /// Why it is not current.
    pub reason: Option<String>,
    /// When the next refresh or connection attempt is due.
    pub next_retry: Option<Instant>,
    /// Failed attempts in a row (reset by a refresh that completes).
    pub failures: u32,
}

/// What a client reports to an observer.
#[derive(Clone, Debug)]
pub enum ClientNotice {
    /// A connection opened.
    Negotiated {
        /// Protocol version.
        protocol_version: String,
        /// Server name and version.
        server: String,
    },
    /// A notification arrived (`count` identical ones, coalesced while the client was busy).
    Notification {
        /// JSON-RPC method.
        method: &'static str,
        /// URI of `resources/updated`.
        uri: Option<String>,
        /// Listen stream it came on (local number).
        sub: Option<SubId>,
        /// How many arrived.
        count: u64,
    },
    /// Notifications dropped because too many distinct ones were pending (updates of resources
    /// the client does not watch).
    NotificationsDropped {
        /// How many.
        count: u64,
    },
    /// A refresh failed; the snapshot was kept.
    RefreshFailed {
        /// List.
        kind: Kind,
        /// Why.
        error: ClientError,
    },
    /// A failed refresh will be tried again.
    RetryScheduled {
        /// List.
        kind: Kind,
        /// Retry number (1 = first retry).
        attempt: u8,
        /// Of at most this many.
        of: u8,
        /// After this delay (jitter included).
        delay: Duration,
    },
    /// A connection opened whose server does not offer every list the client keeps (its
    /// handshake declares no capability for them): those are not listed on this connection.
    NotOffered {
        /// The kept lists the server does not offer.
        kinds: KindSet,
        /// The kept lists it offers (empty: the client lists nothing on this connection).
        offered: KindSet,
    },
    /// A connection attempt failed.
    ConnectFailed {
        /// Why.
        why: String,
    },
    /// The client gave up connecting: the connection failed or was lost, and `retries`
    /// reconnects in a row (at most [`ClientSettings::max_reconnects`]) failed after it.
    GaveUp {
        /// Reconnects made since the last connection that served a list (0: none allowed).
        retries: u32,
        /// The last error.
        why: String,
    },
    /// The connection will be opened again.
    ReconnectScheduled {
        /// Attempt number (1 = first reconnect in a row).
        attempt: u32,
        /// Of at most this many (None: no limit).
        of: Option<u32>,
        /// After this delay (jitter included).
        delay: Duration,
    },
    /// A tool call finished.
    CallDone {
        /// Tool.
        tool: String,
        /// Result.
        result: Result<CallResult, CallError>,
    },
    /// A watched resource's content.
    Content {
        /// URI.
        uri: String,
        /// Text.
        text: String,
    },
    /// The connection was lost.
    Disconnected {
        /// Why.
        why: String,
    },
    /// A history event of this client, as observed (a list its readers now read, a walk seen
    /// starting or ending on the wire, a wake-up, ...).
    Event(Event),
    /// The client machine's own account of its refreshes (started, begun again, ended, and
    /// how) and publishes: what it says it did, for display (`watch` counts failed attempts by
    /// it); histories record what was observed instead (the walks on the wire, the lists its
    /// readers read).
    Claimed(Event),
    /// Something wrong the client tolerated (a server child printing non-JSON on stdout).
    Warning(String),
    /// Anything worth a log line.
    Log(String),
}

/// The result of a tool call that reached the server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallResult {
    /// The result's text content.
    pub text: String,
    /// The result's `isError`.
    pub is_error: bool,
}

/// What [`ClientHandle::refresh`] returns once the client is idle again.
#[derive(Clone, Debug)]
pub struct RefreshDone {
    /// The snapshot now current.
    pub view: Arc<View>,
    /// List requests sent for this kind meanwhile.
    pub pages: u64,
}

struct Inner {
    views: Arc<Views>,
    tx: mpsc::UnboundedSender<Input>,
    status: watch::Receiver<ClientStatus>,
    era: Era,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let _ = self.tx.send(Input::Cmd(Command::Shutdown));
    }
}

/// A handle on a running reference client (cheap to clone; the client stops when the last
/// handle is dropped, or on [`ClientHandle::shutdown`]).
#[derive(Clone)]
pub struct ClientHandle {
    inner: Arc<Inner>,
}

impl ClientHandle {
    /// Starts a client connecting to `endpoint` (call inside a tokio runtime).
    pub fn spawn(settings: ClientSettings, endpoint: Endpoint) -> ClientHandle {
        let (tx, rx) = mpsc::unbounded_channel();
        let views = Arc::new(Views::new(settings.client.auth));
        let (status_tx, status) = watch::channel(ClientStatus::default());
        let era = settings.client.era;
        let actor = Actor::new(
            Arc::new(settings),
            endpoint,
            tx.clone(),
            views.clone(),
            status_tx,
        );
        tokio::spawn(actor.run(rx));
        ClientHandle {
            inner: Arc::new(Inner {
                views,
                tx,
                status,
                era,
            }),
        }
    }

    /// The protocol era.
    pub fn era(&self) -> Era {
        self.inner.era
    }

    /// The current snapshot of `kind` (under the current authorization context).
    pub fn list(&self, kind: Kind) -> Arc<View> {
        self.inner.views.load(kind)
    }

    /// The current tools snapshot.
    pub fn tools(&self) -> Arc<View> {
        self.list(Kind::Tools)
    }

    /// The current prompts snapshot.
    pub fn prompts(&self) -> Arc<View> {
        self.list(Kind::Prompts)
    }

    /// The current resources snapshot.
    pub fn resources(&self) -> Arc<View> {
        self.list(Kind::Resources)
    }

    /// The current resource templates snapshot.
    pub fn resource_templates(&self) -> Arc<View> {
        self.list(Kind::ResourceTemplates)
    }

    /// The snapshot cached for `kind` under `auth`, and whether it is stale.
    pub fn cached(&self, kind: Kind, auth: AuthCtx) -> Option<(Arc<Listing>, bool)> {
        self.inner.views.cached(kind, auth)
    }

    /// A stream of snapshot changes.
    pub fn changes(&self) -> watch::Receiver<Change> {
        self.inner.views.subscribe()
    }

    /// A stream of status changes.
    pub fn status(&self) -> watch::Receiver<ClientStatus> {
        self.inner.status.clone()
    }

    /// How current the `kind` list is (under the current authorization context), why not, and
    /// when the next attempt is due. When the connection is lost (a server child that exits,
    /// mid-walk or not, or an HTTP server that goes away) every list is `Failing` with the
    /// reason (a child's exit status included) and `next_retry` set to the reconnect's due
    /// time; the snapshot stays readable, marked stale. The connection is opened again (a
    /// child started again) after a back-off that doubles per failed attempt; an attempt
    /// succeeds once its connection has served a list, and after
    /// [`ClientSettings::max_reconnects`] failed attempts in a row the client gives up:
    /// `next_retry` is None and [`ClientNotice::GaveUp`] says how many failed and why.
    pub fn list_status(&self, kind: Kind) -> ListStatus {
        self.inner
            .status
            .borrow()
            .lists
            .get(&kind)
            .cloned()
            .unwrap_or_default()
    }

    fn command(&self, c: Command) -> bool {
        self.inner.tx.send(Input::Cmd(c)).is_ok()
    }

    /// Asks for a refresh of `kind`; returns once the client is idle again (None if it stopped).
    pub async fn refresh(&self, kind: Kind) -> Option<RefreshDone> {
        let (done, rx) = oneshot::channel();
        if !self.command(Command::Refresh { kind, done }) {
            return None;
        }
        rx.await.ok()
    }

    /// Switches the authorization context (the connection is reopened under it).
    pub fn set_auth(&self, auth: AuthCtx) {
        self.command(Command::SetAuth(auth));
    }

    /// Calls a tool that is in the current snapshot.
    pub async fn call(&self, tool: &str) -> Result<CallResult, CallError> {
        let (done, rx) = oneshot::channel();
        if !self.command(Command::Call {
            name: tool.into(),
            done,
        }) {
            return Err(CallError::Transport("client stopped".into()));
        }
        rx.await
            .unwrap_or_else(|_| Err(CallError::Transport("client stopped".into())))
    }

    /// The user approves a tool as the current tool list shows it (its definition: a later
    /// change of the definition needs approving again). False if the list does not show it.
    /// Only meaningful when the client asks for approvals ([`ClientConfig::ask_approval`]).
    pub async fn approve(&self, tool: &str) -> bool {
        let (done, rx) = oneshot::channel();
        if !self.command(Command::Approve {
            name: tool.into(),
            done,
        }) {
            return false;
        }
        rx.await.unwrap_or(false)
    }

    /// The tools the current list shows that need the user's approval (again) before they can
    /// be called: tools with side effects whose listed definition has not been approved.
    pub async fn needs_approval(&self) -> Vec<String> {
        let (done, rx) = oneshot::channel();
        if !self.command(Command::NeedsApproval { done }) {
            return Vec::new();
        }
        let names = rx.await.unwrap_or_default();
        names.iter().map(|n| n.to_string()).collect()
    }

    /// (2026-07-28) Opens one more `subscriptions/listen` stream for these kinds and URIs;
    /// returns the kinds the server acknowledged.
    pub async fn listen(&self, kinds: KindSet, uris: Vec<String>) -> Result<KindSet, String> {
        let (done, rx) = oneshot::channel();
        if !self.command(Command::Listen { kinds, uris, done }) {
            return Err("client stopped".into());
        }
        rx.await.unwrap_or_else(|_| Err("client stopped".into()))
    }

    /// Stops the client (its snapshots stay readable).
    pub fn shutdown(&self) {
        self.command(Command::Shutdown);
    }
}
