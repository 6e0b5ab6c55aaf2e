//! The client catalog machine: one immutable snapshot per (kind, authorization context), kept in
//! step with a server's lists by the reference algorithm — single-flight refresh with a dirty
//! flag; walk every page before publishing; restart the walk on an invalid cursor, on a version
//! change between pages, or on a notification that arrives once pages are in hand unless the
//! server declared its cursors version-bound (then the walk is finished, published if newer, and
//! followed by one more); publish atomically, only if newer and only if the list or its version
//! changed; pace the walks that change signals cause ([`Pacing`]: a coalescing gap and a storm
//! back-off); on failure keep the old snapshot marked stale and retry with backoff; in
//! 2026-07-28 list only after the `subscriptions/listen` acknowledgement — or by one of the
//! known-bad strategies, selected by [`ClientStrategy`].
//!
//! The machine is sans-IO: [`CatalogClient::step`] takes one input and appends requests to send,
//! timers to arm and history events to an output buffer; time enters only as the clock its
//! driver sets ([`CatalogClient::set_clock`]) and the timers it delivers. A lying server
//! (duplicate names, cursor cycles, endless or oversized lists, a change announced on every
//! list) is met with a [`ClientError`] or a back-off and bounded work; the old snapshot is
//! kept.

use crate::history::{Cause, ClientId, Event, RefreshOutcome, Restart, Unsettled};
use crate::strategy::ClientStrategy;
use crate::vocab::{
    AuthCtx, Era, Item, ItemList, Kind, KindSet, Name, declares_read_only, fingerprint,
};
use crate::wire::{
    ClientMsg, Cursor, ErrorReason, Notification, Page, ReqId, Request, Response, RpcError,
    ServerMsg, SubId,
};
use listsync_store::FlightState;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

/// Bounds that keep a client's work finite against a lying server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Limits {
    /// Most pages one walk may take.
    pub max_pages: u32,
    /// Most items one list may hold.
    pub max_items: u32,
    /// Most walk restarts (invalid cursor, version change) within one attempt.
    pub max_restarts: u8,
    /// Most retries of a failed refresh before giving up until the next wake-up.
    pub max_retries: u8,
    /// First retry delay.
    pub backoff_base_ms: u32,
    /// Largest retry delay.
    pub backoff_max_ms: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_pages: 1_000,
            max_items: 100_000,
            max_restarts: 8,
            max_retries: 5,
            backoff_base_ms: 100,
            backoff_max_ms: 10_000,
        }
    }
}

/// How long a walk that a change signal (a `list_changed`, a TTL running out) causes may be held
/// back after the previous walk of the same list started (docs/design.md, "Pacing").
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Coalesce {
    /// No gap: walk as soon as the list's single flight allows.
    Off,
    /// A fixed minimum gap, in ms, between the starts of two walks.
    Gap(u32),
    /// A gap adapted to what the client observes, at most this many ms (0: no gap). While a
    /// burst goes on (notifications of the list less than this far apart, the last one no more
    /// than four smoothed intervals ago) the next walk starts four smoothed notification
    /// intervals after the previous one started — at once if that walk took longer; otherwise
    /// (no burst, or the walk that catches up after one) it starts at once.
    Adaptive(u32),
}

/// Pacing of the walks change signals cause (docs/design.md, "Pacing"). Walks an application
/// asks for, and the first walks of a connection or a context, are never held back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Pacing {
    /// The coalescing gap.
    pub coalesce: Coalesce,
    /// Storm back-off: after this many walks in a row that found the list unchanged (same items,
    /// same version), the next walk waits `storm_base_ms` after the previous one started,
    /// doubling with each further unchanged walk up to `storm_max_ms`; a walk that publishes a
    /// change ends it. 0: off.
    pub storm_after: u8,
    /// First storm delay.
    pub storm_base_ms: u32,
    /// Largest storm delay: in an endless storm, a list is walked at most once per this long.
    pub storm_max_ms: u32,
}

impl Pacing {
    /// No pacing at all: every change signal walks as soon as the single flight allows (the
    /// behaviour before pacing existed, and what a trace without the field means).
    pub const OFF: Pacing = Pacing {
        coalesce: Coalesce::Off,
        storm_after: 0,
        storm_base_ms: 0,
        storm_max_ms: 0,
    };

    fn off() -> Pacing {
        Pacing::OFF
    }

    /// Whether walks change signals cause go through a pacing timer at all.
    pub fn is_on(&self) -> bool {
        !matches!(self.coalesce, Coalesce::Off | Coalesce::Adaptive(0)) || self.storm_after > 0
    }

    /// The documented bound on the walks of one list that change signals cause, over `secs`
    /// seconds of an endless storm in which every walk finds the list unchanged: `storm_after`
    /// walks back to back, then one per storm delay (`storm_base_ms`, doubling, up to
    /// `storm_max_ms`). None when the storm back-off is off.
    pub fn storm_bound(&self, secs: f64) -> Option<u64> {
        if self.storm_after == 0 || self.storm_base_ms == 0 {
            return None;
        }
        let mut walks = u64::from(self.storm_after);
        let mut left = secs * 1e3;
        let mut delay = f64::from(self.storm_base_ms);
        let max = f64::from(self.storm_max_ms.max(self.storm_base_ms));
        loop {
            walks += 1; // the walk after the last back-to-back one, or after a full delay
            if left < delay {
                return Some(walks);
            }
            left -= delay;
            delay = (delay * 2.0).min(max);
        }
    }
}

impl Pacing {
    /// The reference client's coalescing setting (see [`Pacing::default`]).
    pub const fn default_coalesce() -> Coalesce {
        Coalesce::Adaptive(100)
    }
}

impl Default for Pacing {
    /// The reference client's pacing: an adaptive gap of at most 100 ms, and a storm back-off
    /// after 2 unchanged walks from 100 ms up to 10 s.
    fn default() -> Self {
        Pacing {
            coalesce: Pacing::default_coalesce(),
            storm_after: 2,
            storm_base_ms: 100,
            storm_max_ms: 10_000,
        }
    }
}

/// Static client settings.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClientConfig {
    /// Reference or a known-bad variant.
    pub strategy: ClientStrategy,
    /// Protocol era.
    pub era: Era,
    /// Lists to keep.
    pub kinds: KindSet,
    /// Authorization context at start.
    pub auth: AuthCtx,
    /// Resource URIs whose content to follow.
    #[serde(default)]
    pub watch: Vec<Name>,
    /// Bounds against lying servers.
    #[serde(default)]
    pub limits: Limits,
    /// Pacing of the walks change signals cause (absent: [`Pacing::OFF`]).
    #[serde(default = "Pacing::off")]
    pub pacing: Pacing,
    /// The application calls tools by a name it knows from elsewhere (a model naming a tool, a
    /// saved workflow) without looking it up in the snapshot, so the server's own checks decide.
    /// Off: a call of a tool absent from the current snapshot fails in the client.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub calls_by_name: bool,
    /// Tools the application preloads ("known tools"): the router may call them before the
    /// client has listed tools; once it has, the server's list alone decides (a known tool the
    /// server does not list is gone).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub known: Vec<Name>,
    /// The application asks the user to approve tools with side effects (every tool whose
    /// definition does not declare itself read-only) before they run: a call of one goes out
    /// only under the user's approval of the definition the published list shows, and waits
    /// while the tool list is unsettled (docs/design.md, "Approval is never inherited").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ask_approval: bool,
}

impl ClientConfig {
    /// A client of `strategy` in `era` keeping the tools list.
    pub fn tools(strategy: ClientStrategy, era: Era) -> Self {
        ClientConfig {
            strategy,
            era,
            kinds: KindSet::only(Kind::Tools),
            auth: AuthCtx(0),
            watch: Vec::new(),
            limits: Limits::default(),
            pacing: Pacing::default(),
            calls_by_name: false,
            known: Vec::new(),
            ask_approval: false,
        }
    }
}

/// Why a refresh failed.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientError {
    /// The server answered with a JSON-RPC error.
    Rpc(RpcError),
    /// The same name twice in one list.
    DuplicateName(Name),
    /// A cursor the walk already followed.
    CursorCycle(Cursor),
    /// More pages than `Limits::max_pages`.
    TooManyPages(u32),
    /// More items than `Limits::max_items`.
    TooManyItems(u32),
    /// Restarted more than `Limits::max_restarts` times.
    TooManyRestarts(u8),
    /// A response of the wrong shape for the request.
    UnexpectedResponse(Arc<str>),
    /// The request failed in transport (timeout, connection lost).
    Transport(Arc<str>),
    /// The response could not be read as what was asked for (malformed item, invalid schema).
    InvalidResponse(Arc<str>),
}

impl fmt::Display for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ClientError::Rpc(e) => write!(f, "server error {e}"),
            ClientError::DuplicateName(n) => write!(f, "server listed '{n}' twice in one list"),
            ClientError::CursorCycle(c) => {
                write!(f, "server returned cursor '{c}' twice in one walk")
            }
            ClientError::TooManyPages(n) => write!(f, "list has more than {n} pages"),
            ClientError::TooManyItems(n) => write!(f, "list has more than {n} items"),
            ClientError::TooManyRestarts(n) => write!(f, "list changed under {n} walks in a row"),
            ClientError::UnexpectedResponse(w) => write!(f, "unexpected response: {w}"),
            ClientError::Transport(m) => write!(f, "transport: {m}"),
            ClientError::InvalidResponse(m) => write!(f, "invalid response: {m}"),
        }
    }
}

/// A published snapshot: immutable; replaced whole.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Snapshot {
    /// The items, in server order.
    pub items: ItemList,
    /// Server catalog version behind it, if the server said.
    pub version: Option<u64>,
    /// Version space of `version` (see [`Page::catalog`]).
    pub catalog: Option<u64>,
    /// Connection epoch it was fetched in (versions are compared within one epoch only).
    pub epoch: u32,
    /// Known to be out of date (a refresh failed or the connection was lost).
    pub stale: bool,
    /// The shortest `ttlMs` among its pages (2026-07-28): the list is re-fetched when it runs
    /// out, which is how a client recovers from a lost notification.
    pub ttl_ms: Option<u32>,
}

/// One walk over the pages of a list.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Walk {
    refresh: u32,
    /// Request id of the first page of this refresh (for `request-id-guard`).
    first_req: ReqId,
    awaiting: Option<ReqId>,
    items: Vec<Item>,
    names: BTreeSet<Name>,
    version: Option<u64>,
    catalog: Option<u64>,
    ttl_ms: Option<u32>,
    pages: u32,
    cursors: BTreeSet<Cursor>,
    restarts: u8,
    /// The server declared its cursors version-bound, with a version on the first page: a
    /// notification cannot tear this walk.
    bound: bool,
}

impl Walk {
    fn fresh(refresh: u32, req: ReqId, restarts: u8) -> Walk {
        Walk {
            bound: false,
            refresh,
            first_req: req,
            awaiting: Some(req),
            items: Vec::new(),
            names: BTreeSet::new(),
            version: None,
            catalog: None,
            ttl_ms: None,
            pages: 0,
            cursors: BTreeSet::new(),
            restarts,
        }
    }
}

/// Refresh state of one (kind, auth) list.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct ListState {
    snapshot: Option<Snapshot>,
    flight: FlightState,
    walks: Vec<Walk>,
    /// Failed attempts of the running refresh.
    retry: Option<u8>,
    /// A retry timer is armed.
    armed: bool,
    /// `request-id-guard`: first request id behind the current snapshot.
    guard: Option<ReqId>,
    /// A walk waits for its pacing timer ([`ClientOutput::ScheduleWalk`]): when it is due.
    held: Option<u64>,
    /// What pacing observed of this list.
    pace: Pace,
}

/// What pacing observes of one list (times are the driver's clock, µs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
struct Pace {
    /// When the last walk started (a first-page request).
    last_walk: Option<u64>,
    /// When the last `list_changed` for the list arrived.
    last_note: Option<u64>,
    /// Smoothed interval between the notifications of the current burst; None outside one.
    interval: Option<u64>,
    /// Walks in a row that found the list unchanged (saturates once the delay is at its
    /// largest).
    unchanged: u8,
}

/// What a driver watches of a client after each step ([`CatalogClient::activity`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Activity {
    /// [`CatalogClient::is_idle`].
    pub idle: bool,
    /// Some retry timer is armed ([`CatalogClient::armed_retries`] yields something).
    pub armed: bool,
    /// Some walk is held back by pacing ([`CatalogClient::held_walks`] yields something).
    pub held: bool,
}

/// What an outstanding request is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pending {
    Initialize,
    Listen,
    Page(Kind, AuthCtx, u32),
    Call(Name, AuthCtx),
    Subscribe,
    Read(Name),
}

/// Connection phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Phase {
    Offline,
    Handshake,
    Listening,
    Ready,
}

/// An input to the client machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientInput {
    /// Connect (or reconnect): handshake, then list.
    Start,
    /// The lists the server offers, as the capabilities of its handshake declare them (`tools`,
    /// `prompts`, `resources`, the last with resource templates): a driver that learns them
    /// before [`ClientInput::Start`] tells them here; until told, every list is offered. The
    /// client lists, listens for and re-lists on its own only the configured kinds the server
    /// offers (asking a server for a list it does not offer fails, and retrying it fails
    /// again); an application's [`ClientInput::Refresh`] is sent whatever the server offers.
    Offers(KindSet),
    /// A message from the server.
    Receive(ServerMsg),
    /// The connection is gone; outstanding requests are lost.
    Disconnected,
    /// (2026-07-28) only the listen stream dropped; re-open it and list again after the ack.
    StreamLost,
    /// A request failed in transport (timeout, send error).
    RequestFailed(ReqId, Arc<str>),
    /// The response to a request could not be read as what was asked for (a malformed item,
    /// an invalid schema, a result of the wrong shape). Treated like a failed request.
    InvalidResponse(ReqId, Arc<str>),
    /// A retry timer armed by [`ClientOutput::ScheduleRetry`] fired.
    RetryDue(Kind, AuthCtx),
    /// A pacing timer armed by [`ClientOutput::ScheduleWalk`] fired: the held walk starts.
    WalkDue(Kind, AuthCtx),
    /// A cached list's `ttlMs` ran out.
    TtlExpired(Kind),
    /// The application asks for a refresh.
    Refresh(Kind),
    /// The application switches authorization context.
    SetAuth(AuthCtx),
    /// The application calls a tool.
    CallTool(Name),
    /// The user approves a tool as the published tool list shows it now (its definition).
    Approve(Name),
}

/// Something the client machine asks its driver to do, or reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientOutput {
    /// Send a request.
    Send(ClientMsg),
    /// Arm a timer that delivers [`ClientInput::RetryDue`] after `delay_ms` (add jitter).
    ScheduleRetry {
        /// List kind.
        kind: Kind,
        /// Authorization context.
        auth: AuthCtx,
        /// Attempt number (1 = first retry).
        attempt: u8,
        /// Suggested delay.
        delay_ms: u32,
    },
    /// Arm a timer that delivers [`ClientInput::WalkDue`] after `delay_ms` (no jitter; 0: at
    /// once, after the outputs of this step): a walk is held back by pacing.
    ScheduleWalk {
        /// List kind.
        kind: Kind,
        /// Authorization context.
        auth: AuthCtx,
        /// Delay.
        delay_ms: u32,
    },
    /// A refresh failed; the old snapshot was kept.
    Failed {
        /// List kind.
        kind: Kind,
        /// Why.
        error: ClientError,
    },
    /// A tool call finished (or was refused locally because the tool is not in the snapshot).
    CallDone {
        /// Tool name.
        name: Name,
        /// Authorization context the call was made under.
        auth: AuthCtx,
        /// The definition that ran, or why not.
        result: Result<Arc<str>, CallError>,
    },
    /// A watched resource's content arrived.
    Content {
        /// Resource URI.
        uri: Name,
        /// Content.
        text: Arc<str>,
    },
    /// (2026-07-28) The server does not serve `subscriptions/listen` (it answered "method not
    /// found"): the client goes on without change notifications, and its lists are refreshed
    /// when their `ttlMs` runs out or when the application asks. Say so: the application is
    /// not told of changes as they happen.
    ListenRefused {
        /// The server's answer.
        error: RpcError,
    },
    /// A history event.
    Event(Event),
}

/// Why a tool call did not run.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallError {
    /// The tool is not in the client's current snapshot; nothing was sent.
    NotInSnapshot,
    /// The server refused it.
    Rpc(RpcError),
    /// The call was lost in transport.
    Transport(Arc<str>),
    /// The tool may have side effects and the user has not approved the definition the client
    /// lists for it (never, or an earlier one); nothing was sent.
    NeedsApproval,
    /// The tool may have side effects and the tool list is known to be out of date (a change was
    /// announced and listing it again failed); nothing was sent.
    ListOutOfDate,
}

/// The client catalog machine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CatalogClient {
    id: ClientId,
    cfg: Arc<ClientConfig>,
    auth: AuthCtx,
    phase: Phase,
    epoch: u32,
    next_req: ReqId,
    next_refresh: u32,
    lists: BTreeMap<(Kind, AuthCtx), ListState>,
    pending: BTreeMap<ReqId, Pending>,
    sub: Option<SubId>,
    honoured: KindSet,
    /// The lists the server offers ([`ClientInput::Offers`]).
    offered: KindSet,
    contents: BTreeMap<Name, Arc<str>>,
    /// (`two-registries` only) the call router's own copy of the tool list: the first one
    /// published, never updated.
    router: Option<ItemList>,
    /// (`ask_approval`) the user's approvals: tool name and definition fingerprint
    /// (`approval-by-name`: fingerprint 0, any definition).
    approved: BTreeSet<(Name, u64)>,
    /// (`ask_approval`) whether the tool list is unsettled.
    unsettled: Option<Unsettled>,
    /// (`ask_approval`) calls of tools with side effects that wait for the tool list to settle.
    paused: Vec<(Name, AuthCtx)>,
    /// The driver's clock, µs (only ever moves forward; stays 0 where time is not modelled).
    now: u64,
}

/// Everything a client knows and does, without who it is: its id and its configuration are
/// left out (equal clients still hash equally), so that interchangeable clients hash alike
/// whatever their number and symmetry reduction orders them by this hash as it is
/// ([`crate::world::World::canonical`]). A world hashes its clients in the order of their ids.
impl std::hash::Hash for CatalogClient {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        let CatalogClient {
            id: _,
            cfg: _,
            auth,
            phase,
            epoch,
            next_req,
            next_refresh,
            lists,
            pending,
            sub,
            honoured,
            offered,
            contents,
            router,
            approved,
            unsettled,
            paused,
            now,
        } = self;
        auth.hash(h);
        phase.hash(h);
        epoch.hash(h);
        next_req.hash(h);
        next_refresh.hash(h);
        lists.hash(h);
        pending.hash(h);
        sub.hash(h);
        honoured.hash(h);
        offered.hash(h);
        contents.hash(h);
        router.hash(h);
        approved.hash(h);
        unsettled.hash(h);
        paused.hash(h);
        now.hash(h);
    }
}

impl CatalogClient {
    /// A client that has not connected yet.
    pub fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        CatalogClient {
            id,
            auth: cfg.auth,
            cfg,
            phase: Phase::Offline,
            epoch: 0,
            next_req: 1,
            next_refresh: 0,
            lists: BTreeMap::new(),
            pending: BTreeMap::new(),
            sub: None,
            honoured: KindSet::EMPTY,
            offered: Kind::ALL.into_iter().collect(),
            contents: BTreeMap::new(),
            router: None,
            approved: BTreeSet::new(),
            unsettled: None,
            paused: Vec::new(),
            now: 0,
        }
    }

    /// Sets the clock (µs since any fixed origin) pacing reads; a driver sets it before each
    /// input. It never goes backwards.
    pub fn set_clock(&mut self, now_us: u64) {
        self.now = self.now.max(now_us);
    }

    /// This client's id.
    pub fn id(&self) -> ClientId {
        self.id
    }

    /// The same client under another id (for symmetry reduction).
    pub fn with_id(&self, id: ClientId) -> CatalogClient {
        CatalogClient { id, ..self.clone() }
    }

    /// Static settings.
    pub fn config(&self) -> &ClientConfig {
        &self.cfg
    }

    /// Current authorization context.
    pub fn auth(&self) -> AuthCtx {
        self.auth
    }

    /// The snapshot applications read for `kind` under the current authorization context.
    pub fn snapshot(&self, kind: Kind) -> Option<&Snapshot> {
        self.snapshot_for(kind, self.auth)
    }

    /// The snapshot cached for `kind` under `auth`.
    pub fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        self.lists
            .get(&(kind, auth))
            .and_then(|l| l.snapshot.as_ref())
    }

    /// Watched resource contents.
    pub fn contents(&self) -> &BTreeMap<Name, Arc<str>> {
        &self.contents
    }

    /// Whether the client is connected and past its handshake.
    pub fn is_ready(&self) -> bool {
        self.phase == Phase::Ready
    }

    /// Whether nothing is in progress: no request outstanding, no refresh running or waiting
    /// for a retry, and the handshake (if started) complete.
    pub fn is_idle(&self) -> bool {
        self.pending.is_empty()
            && matches!(self.phase, Phase::Ready | Phase::Offline)
            && self
                .lists
                .values()
                .all(|l| l.flight == FlightState::Idle && l.walks.is_empty() && !l.armed)
    }

    /// What a driver watches after each step ([`Activity`]), read in one pass over the lists.
    pub fn activity(&self) -> Activity {
        let (mut lists_idle, mut armed, mut held) = (true, false, false);
        for l in self.lists.values() {
            lists_idle &= l.flight == FlightState::Idle && l.walks.is_empty() && !l.armed;
            armed |= l.armed;
            held |= l.held.is_some();
        }
        Activity {
            idle: lists_idle
                && self.pending.is_empty()
                && matches!(self.phase, Phase::Ready | Phase::Offline),
            armed,
            held,
        }
    }

    /// Whether a retry timer is armed for (kind, auth).
    pub fn retry_armed(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.lists.get(&(kind, auth)).is_some_and(|l| l.armed)
    }

    /// The kinds whose cached list has a `ttlMs`, is older than `server_version`, and is not
    /// being refreshed: their TTL timer is the only thing left that brings them up to date
    /// (when a notification was lost). A driver fires [`ClientInput::TtlExpired`] for them.
    pub fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        self.ttl_due_kinds(server_version).collect()
    }

    /// Whether any list is [`ttl_due`](Self::ttl_due) (without collecting them).
    pub fn ttl_is_due(&self, server_version: u64) -> bool {
        self.ttl_due_kinds(server_version).next().is_some()
    }

    fn ttl_due_kinds(&self, server_version: u64) -> impl Iterator<Item = Kind> + '_ {
        let ready = self.phase == Phase::Ready;
        self.cfg.kinds.iter().filter(move |k| {
            ready
                && self.lists.get(&(*k, self.auth)).is_some_and(|l| {
                    l.flight == FlightState::Idle
                        && l.walks.is_empty()
                        && !l.armed
                        && l.snapshot.as_ref().is_some_and(|s| {
                            s.ttl_ms.is_some() && s.version.is_some_and(|v| v < server_version)
                        })
                })
        })
    }

    /// The walks in progress: (kind, authorization context, pages in hand) each.
    pub fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        self.lists
            .iter()
            .flat_map(|((k, a), l)| l.walks.iter().map(move |w| (*k, *a, w.pages)))
    }

    /// Whether a walk of (kind, auth) is held back by pacing, waiting for its timer.
    pub fn walk_held(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.lists
            .get(&(kind, auth))
            .is_some_and(|l| l.held.is_some())
    }

    /// Every (kind, auth) whose walk is held back by pacing, with the clock (µs) it is due at.
    pub fn held_walks(&self) -> impl Iterator<Item = (Kind, AuthCtx, u64)> + '_ {
        self.lists
            .iter()
            .filter_map(|(k, l)| l.held.map(|due| (k.0, k.1, due)))
    }

    /// Every (kind, auth) with an armed retry timer.
    pub fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        self.lists.iter().filter(|(_, l)| l.armed).map(|(k, _)| *k)
    }

    /// The (kind, auth) snapshots this client is expected to keep current: its tracked kinds
    /// under its current authorization context.
    pub fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        self.cfg
            .kinds
            .iter()
            .map(|k| (self.id, k, self.auth))
            .collect()
    }

    fn event(&self, out: &mut Vec<ClientOutput>, e: Event) {
        out.push(ClientOutput::Event(e));
    }

    fn send(
        &mut self,
        req: Request,
        auth: AuthCtx,
        what: Pending,
        out: &mut Vec<ClientOutput>,
    ) -> ReqId {
        let id = self.next_req;
        self.next_req += 1;
        self.pending.insert(id, what);
        out.push(ClientOutput::Send(ClientMsg { id, auth, req }));
        id
    }

    /// Steps the machine with one input, appending outputs to `out`.
    pub fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        if !self.cfg.ask_approval {
            return self.step_input(input, out);
        }
        if let ClientInput::Receive(ServerMsg::Notification(Notification::ListChanged {
            kind, ..
        })) = &input
            && kind.notification_group().contains(&Kind::Tools)
        {
            self.unsettled = Some(Unsettled::Told);
        }
        let from = out.len();
        self.step_input(input, out);
        self.settle(from, out);
    }

    /// The approval gate's bookkeeping after a step whose outputs begin at `from`: fold the
    /// step's walk events into the tool list's settledness; once it settles, the waiting calls
    /// are decided afresh against the list now published; if the walk after the change failed,
    /// or no walk is coming, they fail (the list is known to be out of date).
    fn settle(&mut self, from: usize, out: &mut Vec<ClientOutput>) {
        let before = self.unsettled;
        for o in &out[from..] {
            if let ClientOutput::Event(e) = o {
                self.unsettled = Unsettled::after(self.unsettled, e);
            }
        }
        // Told of a change with no walk of the list coming (the walk after it failed, or a
        // strategy that does not walk again): the held calls would wait for ever.
        let failed = self.unsettled == Some(Unsettled::Told)
            && (matches!(before, Some(Unsettled::Walking(_))) || !self.walk_coming(Kind::Tools));
        if self.paused.is_empty() || !(failed || self.unsettled.is_none()) {
            return;
        }
        for (name, auth) in std::mem::take(&mut self.paused) {
            if failed {
                let result = Err(CallError::ListOutOfDate);
                out.push(ClientOutput::CallDone { name, auth, result });
            } else {
                self.call(name, out);
            }
        }
    }

    fn step_input(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        match input {
            ClientInput::Start => self.start(out),
            ClientInput::Offers(kinds) => self.offered = kinds,
            ClientInput::Receive(msg) => self.receive(msg, out),
            ClientInput::Disconnected => self.disconnected(out),
            ClientInput::StreamLost => {
                if self.phase == Phase::Ready && self.cfg.era == Era::V2026_07_28 {
                    self.sub = None;
                    self.pending.retain(|_, p| *p != Pending::Listen);
                    self.open_listen(out);
                }
            }
            ClientInput::RequestFailed(id, why) => {
                if let Some(p) = self.pending.remove(&id) {
                    self.request_failed(p, ClientError::Transport(why), out);
                }
            }
            ClientInput::InvalidResponse(id, why) => {
                if let Some(p) = self.pending.remove(&id) {
                    self.request_failed(p, ClientError::InvalidResponse(why), out);
                }
            }
            ClientInput::RetryDue(kind, auth) => self.retry_due(kind, auth, out),
            ClientInput::WalkDue(kind, auth) => self.walk_due(kind, auth, out),
            ClientInput::TtlExpired(kind) => {
                if self.phase == Phase::Ready && self.tracked().contains(kind) {
                    self.wake(KindSet::only(kind), Cause::TtlExpired, out);
                }
            }
            ClientInput::Refresh(kind) => {
                if self.phase == Phase::Ready {
                    self.wake(KindSet::only(kind), Cause::Requested, out);
                }
            }
            ClientInput::SetAuth(auth) => {
                if auth != self.auth {
                    self.auth = auth;
                    if self.phase == Phase::Ready {
                        let kinds = self.tracked();
                        self.wake(kinds, Cause::AuthChanged, out);
                    }
                }
            }
            ClientInput::CallTool(name) => self.call(name, out),
            ClientInput::Approve(name) => {
                let def = self.listed_def(&name);
                if let Some(def) = def {
                    let fp = if self.cfg.strategy == ClientStrategy::ApprovalByName {
                        0
                    } else {
                        fingerprint(&def)
                    };
                    self.approved.insert((name, fp));
                }
            }
        }
    }

    /// (`ask_approval`) The tools the published list shows that the user must approve before
    /// they can be called: those with side effects whose listed definition has no approval (a
    /// changed definition needs approving again).
    pub fn needs_approval(&self) -> Vec<Name> {
        if !self.cfg.ask_approval {
            return Vec::new();
        }
        let Some(s) = self.snapshot(Kind::Tools) else {
            return Vec::new();
        };
        s.items
            .iter()
            .filter(|i| !declares_read_only(&i.def) && !self.is_approved(&i.name, &i.def))
            .map(|i| i.name.clone())
            .collect()
    }

    fn is_approved(&self, name: &Name, def: &str) -> bool {
        if self.cfg.strategy == ClientStrategy::ApprovalByName {
            self.approved.iter().any(|(n, _)| n == name)
        } else {
            self.approved.contains(&(name.clone(), fingerprint(def)))
        }
    }

    /// (`ask_approval`) Whether the published tool list shows, for some tool the user approved,
    /// a definition other than the approved one: a call of it now needs approving again.
    pub fn approval_outdated(&self) -> bool {
        if self.approved.is_empty() {
            return false;
        }
        let Some(s) = self.snapshot(Kind::Tools) else {
            return false;
        };
        self.approved.iter().any(|(name, fp)| {
            s.items
                .iter()
                .any(|i| i.name == *name && fingerprint(&i.def) != *fp)
        })
    }

    /// The calls waiting for the tool list to settle.
    pub fn paused_calls(&self) -> usize {
        self.paused.len()
    }

    /// The definition the published tool list shows for `name`.
    fn listed_def(&self, name: &Name) -> Option<Arc<str>> {
        let s = self.snapshot(Kind::Tools)?;
        s.items
            .iter()
            .find(|i| i.name == *name)
            .map(|i| i.def.clone())
    }

    /// The application calls a tool: the router decides whether it goes out; then, if the
    /// application asks for approvals and the tool may have side effects, the approval gate
    /// (docs/design.md, "Approval is never inherited"): the call waits while the tool list is
    /// unsettled, and goes out only under an approval of the definition the list shows.
    fn call(&mut self, name: Name, out: &mut Vec<ClientOutput>) {
        let auth = self.auth;
        let refuse = |name, error, out: &mut Vec<ClientOutput>| {
            let result = Err(error);
            out.push(ClientOutput::CallDone { name, auth, result });
        };
        if self.phase != Phase::Ready {
            return refuse(name, CallError::Transport("not connected".into()), out);
        }
        if !(self.cfg.calls_by_name || self.routes(&name)) {
            return refuse(name, CallError::NotInSnapshot, out);
        }
        if self.cfg.ask_approval {
            let def = self.listed_def(&name);
            let effects = def.as_deref().is_none_or(|d| !declares_read_only(d));
            let by_name = self.cfg.strategy == ClientStrategy::ApprovalByName;
            if effects && !by_name && self.unsettled.is_some() {
                if self.unsettled == Some(Unsettled::Told) && !self.walk_coming(Kind::Tools) {
                    return refuse(name, CallError::ListOutOfDate, out);
                }
                self.paused.push((name, auth));
                return;
            }
            let approved = def.is_some_and(|d| self.is_approved(&name, &d));
            if effects && !approved {
                return refuse(name, CallError::NeedsApproval, out);
            }
        }
        // The arguments are built for the definition the list shows (none for a call by name
        // of a tool it does not show).
        let schema = self
            .listed_def(&name)
            .map_or(0, |d| crate::vocab::schema_fingerprint(&d));
        self.send(
            Request::CallTool {
                name: name.clone(),
                schema,
            },
            auth,
            Pending::Call(name, auth),
            out,
        );
    }

    /// Whether a walk of `kind` under the current context is running, held by pacing or
    /// waiting for a retry: the list will be listed again without a further wake-up.
    fn walk_coming(&self, kind: Kind) -> bool {
        self.lists
            .get(&(kind, self.auth))
            .is_some_and(|l| l.flight.is_running() || l.held.is_some() || l.armed)
    }

    /// The configured kinds the server offers: the lists this client keeps on its own.
    fn tracked(&self) -> KindSet {
        self.cfg
            .kinds
            .iter()
            .filter(|k| self.offered.contains(*k))
            .collect()
    }

    fn start(&mut self, out: &mut Vec<ClientOutput>) {
        if self.phase != Phase::Offline {
            return;
        }
        self.epoch += 1;
        let auth = self.auth;
        match self.cfg.era {
            Era::V2025_11_25 => {
                self.phase = Phase::Handshake;
                self.send(Request::Initialize, auth, Pending::Initialize, out);
            }
            Era::V2026_07_28 => {
                self.phase = Phase::Listening;
                if self.cfg.strategy == ClientStrategy::ListenWithoutRelist {
                    // The bug: list first and rely on the stream afterwards.
                    let kinds = self.tracked();
                    self.wake(kinds, Cause::Startup, out);
                }
                self.open_listen(out);
            }
        }
    }

    fn open_listen(&mut self, out: &mut Vec<ClientOutput>) {
        let kinds = self.tracked().iter().map(crate::server::group_of).collect();
        let uris = self.cfg.watch.clone();
        let auth = self.auth;
        self.send(Request::Listen { kinds, uris }, auth, Pending::Listen, out);
    }

    fn disconnected(&mut self, out: &mut Vec<ClientOutput>) {
        self.phase = Phase::Offline;
        self.sub = None;
        for (name, auth) in std::mem::take(&mut self.paused) {
            let lost = Err(CallError::Transport("connection lost".into()));
            out.push(ClientOutput::CallDone {
                name,
                auth,
                result: lost,
            });
        }
        for (_, p) in std::mem::take(&mut self.pending) {
            if let Pending::Call(name, auth) = p {
                let lost = Err(CallError::Transport("connection lost".into()));
                self.call_done(name, auth, lost, out);
            }
        }
        let keys: Vec<_> = self.lists.keys().copied().collect();
        for (kind, auth) in keys {
            let l = self.lists.get_mut(&(kind, auth)).expect("key listed");
            let refreshes: Vec<u32> = l.walks.drain(..).map(|w| w.refresh).collect();
            l.flight = FlightState::Idle;
            l.retry = None;
            l.armed = false;
            l.held = None;
            let mark = l
                .snapshot
                .as_mut()
                .filter(|s| !s.stale)
                .map(|s| s.stale = true)
                .is_some();
            let id = self.id;
            for refresh in refreshes {
                self.event(
                    out,
                    Event::RefreshEnded {
                        client: id,
                        kind,
                        auth,
                        refresh,
                        outcome: RefreshOutcome::Failed,
                    },
                );
            }
            if mark {
                self.event(
                    out,
                    Event::MarkedStale {
                        client: id,
                        kind,
                        auth,
                    },
                );
            }
        }
    }

    fn receive(&mut self, msg: ServerMsg, out: &mut Vec<ClientOutput>) {
        match msg {
            ServerMsg::Notification(n) => self.notification(n, out),
            ServerMsg::Response { id, resp } => {
                let Some(p) = self.pending.remove(&id) else {
                    return; // a response to a request we no longer wait for (restarted walk)
                };
                self.response(p, resp, out);
            }
        }
    }

    fn notification(&mut self, n: Notification, out: &mut Vec<ClientOutput>) {
        match n {
            Notification::Acknowledged { sub, kinds } => {
                if self.phase != Phase::Listening && self.phase != Phase::Ready {
                    return;
                }
                self.pending.retain(|_, p| *p != Pending::Listen);
                self.sub = Some(sub);
                self.honoured = kinds;
                self.phase = Phase::Ready;
                let id = self.id;
                self.event(out, Event::ListenAcked { client: id, kinds });
                if self.cfg.strategy != ClientStrategy::ListenWithoutRelist {
                    let tracked = self.tracked();
                    self.wake(tracked, Cause::ListenAck, out);
                }
            }
            Notification::ListChanged { kind, sub } => {
                if self.phase != Phase::Ready || (sub.is_some() && sub != self.sub) {
                    return;
                }
                let kinds: KindSet = kind
                    .notification_group()
                    .iter()
                    .copied()
                    .filter(|k| self.tracked().contains(*k))
                    .collect();
                if !kinds.is_empty() {
                    self.wake(kinds, Cause::ListChanged, out);
                }
            }
            Notification::ResourceUpdated { uri, sub } => {
                if self.phase != Phase::Ready || (sub.is_some() && sub != self.sub) {
                    return;
                }
                if self.cfg.watch.contains(&uri) {
                    let auth = self.auth;
                    self.send(
                        Request::ReadResource { uri: uri.clone() },
                        auth,
                        Pending::Read(uri),
                        out,
                    );
                }
            }
        }
    }

    fn response(&mut self, p: Pending, resp: Response, out: &mut Vec<ClientOutput>) {
        match (p, resp) {
            (Pending::Initialize, Response::Initialized { .. }) => {
                self.phase = Phase::Ready;
                let auth = self.auth;
                for uri in self.cfg.watch.clone() {
                    self.send(Request::Subscribe { uri }, auth, Pending::Subscribe, out);
                }
                let kinds = self.tracked();
                self.wake(kinds, Cause::Startup, out);
            }
            (Pending::Initialize, _) => {
                // A server that refuses to initialize: stay offline; the driver reconnects.
                self.phase = Phase::Offline;
            }
            (Pending::Listen, Response::Error(e))
                if e.code == crate::wire::METHOD_NOT_FOUND && self.phase == Phase::Listening =>
            {
                // A server without listen streams: reconnecting would be refused the same way
                // for ever. List now; `ttlMs` and the application's refreshes keep it current.
                self.sub = None;
                self.honoured = KindSet::EMPTY;
                self.phase = Phase::Ready;
                out.push(ClientOutput::ListenRefused { error: e });
                let kinds = self.tracked();
                self.wake(kinds, Cause::Startup, out);
            }
            (Pending::Listen, Response::Error(_)) => {
                self.phase = Phase::Offline;
            }
            (Pending::Listen | Pending::Subscribe, _) => {}
            (Pending::Page(kind, auth, refresh), resp) => self.page(kind, auth, refresh, resp, out),
            (Pending::Call(name, auth), resp) => {
                let result = match resp {
                    Response::ToolResult { def, .. } => Ok(def),
                    Response::Error(e) => Err(CallError::Rpc(e)),
                    _ => Err(CallError::Transport(
                        "unexpected response to tools/call".into(),
                    )),
                };
                self.call_done(name, auth, result, out);
            }
            (Pending::Read(uri), Response::Content { text, .. }) => {
                self.contents.insert(uri.clone(), text.clone());
                out.push(ClientOutput::Content { uri, text });
            }
            (Pending::Read(_), _) => {}
        }
    }

    fn request_failed(&mut self, p: Pending, err: ClientError, out: &mut Vec<ClientOutput>) {
        match p {
            Pending::Page(kind, auth, refresh) => self.fail(kind, auth, refresh, err, out),
            Pending::Call(name, auth) => {
                let result = Err(CallError::Transport(err.to_string().into()));
                self.call_done(name, auth, result, out);
            }
            Pending::Initialize | Pending::Listen => self.phase = Phase::Offline,
            Pending::Subscribe | Pending::Read(_) => {}
        }
    }

    /// Whether the call router sends a call of `name`. Every consumer reads the one published
    /// snapshot (docs/design.md, "One snapshot for every consumer"): the router routes a tool the
    /// application's listing shows, and a preloaded ("known") tool only until the tool list has
    /// been listed under the current context, after which the server's list alone decides.
    fn routes(&self, name: &Name) -> bool {
        let listed = |items: &ItemList| items.iter().any(|i| i.name == *name);
        let known = self.cfg.known.contains(name);
        match self.cfg.strategy {
            ClientStrategy::TwoRegistries => self.router.as_ref().is_some_and(listed),
            ClientStrategy::KnownToolsSurvive => {
                known || self.snapshot(Kind::Tools).is_some_and(|s| listed(&s.items))
            }
            _ => match self.snapshot(Kind::Tools) {
                Some(s) => listed(&s.items),
                None => known,
            },
        }
    }

    /// A call finished: hand the result to the application. An error is not a list change
    /// (docs/design.md, "Errors are not changes"): only an error saying the tool is gone or its
    /// input schema changed, for a tool the current snapshot still lists, wakes one refresh of
    /// the tool list. A network,
    /// permission, argument or internal error starts none, so a call that keeps failing cannot
    /// keep the client refreshing.
    fn call_done(
        &mut self,
        name: Name,
        auth: AuthCtx,
        result: Result<Arc<str>, CallError>,
        out: &mut Vec<ClientOutput>,
    ) {
        let relist = match &result {
            Ok(_) => false,
            Err(_) if self.cfg.strategy == ClientStrategy::RefreshOnAnyError => true,
            Err(CallError::Rpc(e)) => {
                e.reason.says_tool_changed()
                    && auth == self.auth
                    && self
                        .snapshot_for(Kind::Tools, auth)
                        .is_some_and(|s| s.items.iter().any(|i| i.name == name))
            }
            Err(_) => false,
        };
        out.push(ClientOutput::CallDone { name, auth, result });
        if relist && self.phase == Phase::Ready && self.tracked().contains(Kind::Tools) {
            self.wake(KindSet::only(Kind::Tools), Cause::ItemGone, out);
        }
    }

    /// The client learned that `kinds` may have changed.
    fn wake(&mut self, kinds: KindSet, cause: Cause, out: &mut Vec<ClientOutput>) {
        let id = self.id;
        self.event(
            out,
            Event::Woken {
                client: id,
                kinds,
                cause,
            },
        );
        let auth = self.auth;
        for kind in kinds.iter() {
            if cause == Cause::ListChanged {
                self.mark_other_auths_stale(kind, out);
                self.observe_notification(kind, auth);
            }
            if cause == Cause::AuthChanged
                && self
                    .snapshot_for(kind, auth)
                    .is_some_and(|s| !s.stale && s.epoch == self.epoch)
            {
                continue; // cached for this context and not known to be out of date
            }
            self.on_change(kind, auth, cause, out);
        }
    }

    fn mark_other_auths_stale(&mut self, kind: Kind, out: &mut Vec<ClientOutput>) {
        let id = self.id;
        let current = self.auth;
        let mut marked = Vec::new();
        for ((k, a), l) in self.lists.iter_mut() {
            if *k != kind || *a == current {
                continue;
            }
            if let Some(s) = l.snapshot.as_mut().filter(|s| !s.stale) {
                s.stale = true;
                marked.push(*a);
            }
            if l.flight.is_running() && l.held.is_none() {
                // A refresh of that context is in flight: what it publishes may predate this
                // change, so one more refresh follows it (the dirty flag). A held walk has not
                // started yet: it will see the change.
                l.flight = l.flight.on_notify().0;
            }
        }
        for auth in marked {
            self.event(
                out,
                Event::MarkedStale {
                    client: id,
                    kind,
                    auth,
                },
            );
        }
    }

    fn on_change(&mut self, kind: Kind, auth: AuthCtx, cause: Cause, out: &mut Vec<ClientOutput>) {
        let strategy = self.cfg.strategy;
        let paced = matches!(cause, Cause::ListChanged | Cause::TtlExpired);
        let l = self.lists.entry((kind, auth)).or_default();
        if strategy.single_flight() {
            if l.held.is_some() {
                // A walk is held back by pacing and has not started: it will see this change.
                // What the application (or a new context) asks for does not wait.
                if !paced {
                    l.held = None;
                    self.begin_refresh(kind, auth, out);
                }
                return;
            }
            let (next, start) = l.flight.on_notify();
            if start {
                l.flight = next;
                self.start_or_hold(kind, auth, paced, out);
                return;
            }
            // A refresh is already running.
            let walk = l.walks.first();
            let mid_walk = walk.is_some_and(|w| w.pages > 0);
            let bound = walk.is_some_and(|w| w.bound);
            if strategy == ClientStrategy::Reference
                && mid_walk
                && !bound
                && cause == Cause::ListChanged
            {
                // Pages in hand may predate the change and the server does not promise that
                // the rest of the walk is cut from their version: start over now.
                self.restart_walk(kind, auth, Restart::NotifiedMidWalk, out);
            } else {
                // Version-bound (or no page in hand yet): the walk cannot be torn; finish it,
                // then walk once more (the dirty flag).
                l.flight = next;
            }
            return;
        }
        if strategy == ClientStrategy::ClearThenFetch
            && l.snapshot.as_ref().is_some_and(|s| !s.items.is_empty())
        {
            let epoch = self.epoch;
            l.snapshot = Some(Snapshot {
                items: Arc::from([]),
                version: None,
                catalog: None,
                epoch,
                stale: false,
                ttl_ms: None,
            });
            let id = self.id;
            self.event(
                out,
                Event::Published {
                    client: id,
                    kind,
                    auth,
                    items: Arc::from([]),
                    version: None,
                },
            );
        }
        self.begin_refresh(kind, auth, out);
    }

    /// Starts a refresh now, or — a walk a change signal caused (`paced`), with pacing on —
    /// holds it until its pacing timer fires. The timer is armed even when its delay is 0, so
    /// that what the machine does never depends on the clock, only on the order of its inputs
    /// (a recorded run replays without it); the clock decides only how long the driver waits.
    fn start_or_hold(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        paced: bool,
        out: &mut Vec<ClientOutput>,
    ) {
        if !paced || !self.cfg.pacing.is_on() {
            self.begin_refresh(kind, auth, out);
            return;
        }
        let delay = self.pace_delay(kind, auth);
        let now = self.now;
        let l = self.lists.entry((kind, auth)).or_default();
        l.held = Some(now + delay);
        out.push(ClientOutput::ScheduleWalk {
            kind,
            auth,
            delay_ms: u32::try_from(delay.div_ceil(1_000)).unwrap_or(u32::MAX),
        });
    }

    /// How long (µs) a paced walk of (kind, auth) must still wait: the gap pacing asks for
    /// between walk starts, less the time since the last one started.
    fn pace_delay(&self, kind: Kind, auth: AuthCtx) -> u64 {
        let Some(l) = self.lists.get(&(kind, auth)) else {
            return 0;
        };
        let p = &l.pace;
        let Some(last) = p.last_walk else {
            return 0;
        };
        let cfg = &self.cfg.pacing;
        let ms = 1_000u64;
        let mut gap = match cfg.coalesce {
            Coalesce::Off | Coalesce::Adaptive(0) => 0,
            Coalesce::Gap(g) => u64::from(g) * ms,
            // Only while the burst goes on: once no notification has come for four intervals,
            // the walk that follows is the one that catches up, and it starts at once. The gap
            // runs from the previous walk's start, so a walk that takes longer than the gap is
            // followed at once: the walk time is part of the gap, not added to it.
            Coalesce::Adaptive(max) => match (p.interval, p.last_note) {
                (Some(i), Some(note)) if self.now.saturating_sub(note) <= i.saturating_mul(4) => {
                    i.saturating_mul(4).min(u64::from(max) * ms)
                }
                _ => 0,
            },
        };
        if cfg.storm_after > 0 && p.unchanged >= cfg.storm_after {
            let shift = u32::from(p.unchanged - cfg.storm_after).min(32);
            let storm = (u64::from(cfg.storm_base_ms) * ms)
                .saturating_mul(1 << shift)
                .min(u64::from(cfg.storm_max_ms.max(cfg.storm_base_ms)) * ms);
            gap = gap.max(storm);
        }
        (last + gap).saturating_sub(self.now)
    }

    /// A `list_changed` for `kind` arrived: update the burst estimate of (kind, auth).
    fn observe_notification(&mut self, kind: Kind, auth: AuthCtx) {
        let now = self.now;
        let horizon = match self.cfg.pacing.coalesce {
            Coalesce::Adaptive(max) => u64::from(max) * 1_000,
            _ => 0,
        };
        let p = &mut self.lists.entry((kind, auth)).or_default().pace;
        p.interval = match p.last_note {
            Some(prev) if now - prev < horizon => {
                let d = now - prev;
                Some(p.interval.map_or(d, |i| (3 * i + d) / 4))
            }
            _ => None,
        };
        p.last_note = Some(now);
    }

    /// The largest useful storm count: beyond it the storm delay no longer grows.
    fn storm_cap(&self) -> u8 {
        let cfg = &self.cfg.pacing;
        let mut doublings = 0u8;
        let mut d = u64::from(cfg.storm_base_ms.max(1));
        while d < u64::from(cfg.storm_max_ms) && doublings < 32 {
            d *= 2;
            doublings += 1;
        }
        cfg.storm_after.saturating_add(doublings)
    }

    fn walk_due(&mut self, kind: Kind, auth: AuthCtx, out: &mut Vec<ClientOutput>) {
        let Some(l) = self.lists.get_mut(&(kind, auth)) else {
            return;
        };
        if l.held.take().is_none() {
            return;
        }
        self.begin_refresh(kind, auth, out);
    }

    fn begin_refresh(&mut self, kind: Kind, auth: AuthCtx, out: &mut Vec<ClientOutput>) {
        let refresh = self.next_refresh;
        self.next_refresh += 1;
        let id = self.id;
        // lying-client: reports none of its walks.
        if self.cfg.strategy != ClientStrategy::LyingClient {
            self.event(
                out,
                Event::RefreshStarted {
                    client: id,
                    kind,
                    auth,
                    refresh,
                },
            );
        }
        let first_req = self.send(
            Request::List { kind, cursor: None },
            auth,
            Pending::Page(kind, auth, refresh),
            out,
        );
        let now = self.now;
        let l = self.lists.entry((kind, auth)).or_default();
        l.pace.last_walk = Some(now);
        l.walks.push(Walk::fresh(refresh, first_req, 0));
    }

    /// Starts the (single) walk of (kind, auth) over from the first page, within the same
    /// refresh.
    fn restart_walk(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        why: Restart,
        out: &mut Vec<ClientOutput>,
    ) {
        let Some(w) = self
            .lists
            .get_mut(&(kind, auth))
            .and_then(|l| l.walks.first_mut())
        else {
            return;
        };
        if let Some(old) = w.awaiting.take() {
            self.pending.remove(&old);
        }
        let w = &mut self
            .lists
            .get_mut(&(kind, auth))
            .expect("walk exists")
            .walks[0];
        let restarts = if why == Restart::Retry {
            0
        } else {
            w.restarts + 1
        };
        let refresh = w.refresh;
        if restarts > self.cfg.limits.max_restarts {
            let n = self.cfg.limits.max_restarts;
            self.fail(kind, auth, refresh, ClientError::TooManyRestarts(n), out);
            return;
        }
        let id = self.id;
        self.event(
            out,
            Event::WalkRestarted {
                client: id,
                kind,
                refresh,
                reason: why,
            },
        );
        let req = self.send(
            Request::List { kind, cursor: None },
            auth,
            Pending::Page(kind, auth, refresh),
            out,
        );
        let now = self.now;
        let l = self.lists.get_mut(&(kind, auth)).expect("walk exists");
        l.pace.last_walk = Some(now);
        l.walks[0] = Walk::fresh(refresh, req, restarts);
    }

    fn page(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        refresh: u32,
        resp: Response,
        out: &mut Vec<ClientOutput>,
    ) {
        let strategy = self.cfg.strategy;
        let restarts_on_error = strategy.single_flight();
        let page = match resp {
            Response::Page(p) if p.kind == kind => p,
            Response::Error(e) if e.reason == ErrorReason::InvalidCursor && restarts_on_error => {
                self.restart_walk(kind, auth, Restart::InvalidCursor, out);
                return;
            }
            Response::Error(e) => {
                self.fail(kind, auth, refresh, ClientError::Rpc(e), out);
                return;
            }
            _ => {
                self.fail(
                    kind,
                    auth,
                    refresh,
                    ClientError::UnexpectedResponse("not a page of this list".into()),
                    out,
                );
                return;
            }
        };
        let limits = self.cfg.limits;
        let Some(l) = self.lists.get_mut(&(kind, auth)) else {
            return;
        };
        let Some(wi) = l.walks.iter().position(|w| w.refresh == refresh) else {
            return;
        };
        let w = &mut l.walks[wi];
        w.awaiting = None;
        if strategy.single_flight()
            && w.pages > 0
            && page.version.is_some()
            && (page.version != w.version || page.catalog != w.catalog)
        {
            self.restart_walk(kind, auth, Restart::VersionChanged, out);
            return;
        }
        if let Some(err) = absorb(w, &page, &limits) {
            self.fail(kind, auth, refresh, err, out);
            return;
        }
        let more = match &page.next {
            Some(c) if strategy != ClientStrategy::FirstPageOnly => Some(c.clone()),
            _ => None,
        };
        if let Some(cursor) = more {
            let req = self.send(
                Request::List {
                    kind,
                    cursor: Some(cursor),
                },
                auth,
                Pending::Page(kind, auth, refresh),
                out,
            );
            self.lists.get_mut(&(kind, auth)).expect("list").walks[wi].awaiting = Some(req);
            return;
        }
        let w = self
            .lists
            .get_mut(&(kind, auth))
            .expect("list")
            .walks
            .remove(wi);
        self.complete(kind, auth, w, out);
    }

    fn complete(&mut self, kind: Kind, auth: AuthCtx, w: Walk, out: &mut Vec<ClientOutput>) {
        let strategy = self.cfg.strategy;
        let epoch = self.epoch;
        let id = self.id;
        let storm_cap = self.storm_cap();
        let l = self.lists.get_mut(&(kind, auth)).expect("list");
        l.retry = None;
        let items: ItemList = w.items.into();
        // A list the client already holds, current, at the same version: nothing to publish
        // (its metadata is refreshed in place).
        let unchanged =
            |cur: &Snapshot| !cur.stale && cur.items == items && cur.version == w.version;
        let publish = match (&l.snapshot, strategy) {
            (None, _) => true,
            (Some(_), ClientStrategy::RequestIdGuard) => l.guard.is_none_or(|g| w.first_req > g),
            (Some(_), s) if !s.single_flight() => true,
            (Some(cur), _) => {
                // Versions order snapshots within one version space, across reconnections too
                // (a lagging node of a cluster must not roll a client back). Without a known
                // version space, a new connection may be a restarted server whose versions
                // began again: its list wins.
                let same_space = cur.catalog.is_some() && cur.catalog == w.catalog;
                match (cur.version, w.version) {
                    _ if !same_space && cur.epoch != epoch => !unchanged(cur),
                    (Some(have), Some(new)) => new > have || (new == have && cur.items != items),
                    _ => !unchanged(cur),
                }
            }
        };
        if publish {
            l.pace.unchanged = 0;
        } else {
            l.pace.unchanged = l.pace.unchanged.saturating_add(1).min(storm_cap);
        }
        let outcome = if publish {
            l.guard = Some(w.first_req);
            // lying-client: its readers keep the list it held, its event names the new one.
            let read = match (&l.snapshot, strategy) {
                (Some(cur), ClientStrategy::LyingClient) => cur.items.clone(),
                _ => items.clone(),
            };
            l.snapshot = Some(Snapshot {
                items: read,
                version: w.version,
                catalog: w.catalog,
                epoch,
                stale: false,
                ttl_ms: w.ttl_ms,
            });
            if strategy == ClientStrategy::TwoRegistries
                && kind == Kind::Tools
                && self.router.is_none()
            {
                self.router = Some(items.clone());
            }
            out.push(ClientOutput::Event(Event::Published {
                client: id,
                kind,
                auth,
                items,
                version: w.version,
            }));
            RefreshOutcome::Published
        } else {
            if let Some(s) = l.snapshot.as_mut() {
                if s.items == items && s.version == w.version {
                    // The same list from this connection: keep it, with this walk's metadata.
                    s.catalog = w.catalog;
                    s.epoch = epoch;
                    s.ttl_ms = w.ttl_ms;
                }
                s.stale = false;
            }
            RefreshOutcome::Discarded
        };
        out.push(ClientOutput::Event(Event::RefreshEnded {
            client: id,
            kind,
            auth,
            refresh: w.refresh,
            outcome,
        }));
        self.finish(kind, auth, out);
    }

    /// The running refresh of a single-flight strategy ended: run again if a notification
    /// arrived meanwhile (the flag-cleared-after-await bug drops it instead).
    fn finish(&mut self, kind: Kind, auth: AuthCtx, out: &mut Vec<ClientOutput>) {
        let strategy = self.cfg.strategy;
        if !strategy.single_flight() {
            return;
        }
        let l = self.lists.get_mut(&(kind, auth)).expect("list");
        if strategy == ClientStrategy::FlagClearedAfterAwait {
            l.flight = FlightState::Idle;
            return;
        }
        let (next, again) = l.flight.on_finish();
        l.flight = next;
        if again {
            self.start_or_hold(kind, auth, true, out);
        }
    }

    fn fail(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        refresh: u32,
        err: ClientError,
        out: &mut Vec<ClientOutput>,
    ) {
        let strategy = self.cfg.strategy;
        let limits = self.cfg.limits;
        let id = self.id;
        let Some(l) = self.lists.get_mut(&(kind, auth)) else {
            return;
        };
        let Some(wi) = l.walks.iter().position(|w| w.refresh == refresh) else {
            return;
        };
        let w = l.walks.remove(wi);
        if let Some(req) = w.awaiting {
            self.pending.remove(&req);
        }
        let l = self.lists.get_mut(&(kind, auth)).expect("list");
        let mark = l
            .snapshot
            .as_mut()
            .filter(|s| !s.stale)
            .map(|s| s.stale = true)
            .is_some();
        if mark {
            out.push(ClientOutput::Event(Event::MarkedStale {
                client: id,
                kind,
                auth,
            }));
        }
        out.push(ClientOutput::Failed { kind, error: err });
        if strategy == ClientStrategy::Reference {
            let attempt = l.retry.unwrap_or(0) + 1;
            if attempt <= limits.max_retries {
                // Keep the refresh running; the walk resumes when the timer fires.
                l.retry = Some(attempt);
                l.armed = true;
                let mut parked = Walk::fresh(refresh, w.first_req, w.restarts);
                parked.awaiting = None;
                l.walks.push(parked);
                let shift = u32::from(attempt - 1).min(16);
                let delay_ms = limits
                    .backoff_base_ms
                    .saturating_mul(1 << shift)
                    .min(limits.backoff_max_ms);
                out.push(ClientOutput::ScheduleRetry {
                    kind,
                    auth,
                    attempt,
                    delay_ms,
                });
                return;
            }
            l.retry = None;
        }
        out.push(ClientOutput::Event(Event::RefreshEnded {
            client: id,
            kind,
            auth,
            refresh,
            outcome: RefreshOutcome::Failed,
        }));
        self.finish(kind, auth, out);
    }

    fn retry_due(&mut self, kind: Kind, auth: AuthCtx, out: &mut Vec<ClientOutput>) {
        if self.phase != Phase::Ready || !self.retry_armed(kind, auth) {
            return;
        }
        if let Some(l) = self.lists.get_mut(&(kind, auth)) {
            l.armed = false;
        }
        self.restart_walk(kind, auth, Restart::Retry, out);
    }
}

/// Adds one page to a walk, enforcing the limits. Returns the error that ends the walk, if any.
fn absorb(w: &mut Walk, page: &Page, limits: &Limits) -> Option<ClientError> {
    w.pages += 1;
    if w.pages > limits.max_pages {
        return Some(ClientError::TooManyPages(limits.max_pages));
    }
    if w.items.len() + page.items.len() > limits.max_items as usize {
        return Some(ClientError::TooManyItems(limits.max_items));
    }
    if let Some(c) = &page.next
        && !w.cursors.insert(c.clone())
    {
        return Some(ClientError::CursorCycle(c.clone()));
    }
    if w.pages == 1 {
        w.version = page.version;
        w.catalog = page.catalog;
        w.ttl_ms = page.ttl_ms;
        w.bound = page.version_bound && page.version.is_some();
    } else if let Some(t) = page.ttl_ms {
        w.ttl_ms = Some(w.ttl_ms.map_or(t, |have| have.min(t)));
    }
    for item in page.items.iter() {
        if !w.names.insert(item.name.clone()) {
            return Some(ClientError::DuplicateName(item.name.clone()));
        }
        w.items.push(item.clone());
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2026-07-28 client started, and the id of its listen request.
    fn started() -> (CatalogClient, ReqId) {
        let cfg = ClientConfig::tools(ClientStrategy::Reference, Era::V2026_07_28);
        let mut c = CatalogClient::new(0, Arc::new(cfg));
        let mut out = Vec::new();
        c.step(ClientInput::Start, &mut out);
        let id = out
            .iter()
            .find_map(|o| match o {
                ClientOutput::Send(ClientMsg {
                    id,
                    req: Request::Listen { .. },
                    ..
                }) => Some(*id),
                _ => None,
            })
            .expect("a listen request");
        (c, id)
    }

    fn refused(c: &mut CatalogClient, id: ReqId, code: i32) -> Vec<ClientOutput> {
        let mut out = Vec::new();
        let resp = Response::Error(RpcError {
            code,
            reason: ErrorReason::Other("no".into()),
        });
        c.step(
            ClientInput::Receive(ServerMsg::Response { id, resp }),
            &mut out,
        );
        out
    }

    fn lists(out: &[ClientOutput]) -> bool {
        out.iter().any(|o| {
            matches!(
                o,
                ClientOutput::Send(ClientMsg {
                    req: Request::List { cursor: None, .. },
                    ..
                })
            )
        })
    }

    #[test]
    fn a_server_without_listen_streams_is_listed_without_one_and_said_so() {
        let (mut c, id) = started();
        let out = refused(&mut c, id, crate::wire::METHOD_NOT_FOUND);
        assert!(
            out.iter()
                .any(|o| matches!(o, ClientOutput::ListenRefused { .. })),
            "{out:?}"
        );
        assert!(lists(&out), "lists at once: {out:?}");
        assert!(c.is_ready());
    }

    #[test]
    fn another_refusal_of_the_listen_takes_the_client_offline() {
        let (mut c, id) = started();
        let out = refused(&mut c, id, crate::wire::INTERNAL_ERROR);
        assert!(!lists(&out), "{out:?}");
        assert!(!c.is_ready());
    }
}
