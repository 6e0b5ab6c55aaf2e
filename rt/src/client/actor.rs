//! The client's one actor task: it owns core's [`CatalogClient`] and steps it with everything
//! that happens — notifications (forwarded by the rmcp handler), request completions, listen
//! streams, retry, pacing and ttl timers, connection changes, application commands — and carries out
//! what the machine asks: requests (each a spawned task that posts its outcome back, page by
//! page), timers with jitter, publications into the snapshot cells, history events.
//!
//! Everything is tagged with the connection epoch; inputs from an older connection are dropped.

use super::connect::{self, Endpoint};
use super::handler::Notifier;
use super::inflow::Inflow;
use super::request::{self, CallMeta, RequestOutcome};
use super::views::{Listing, View, Views};
use super::{
    CallResult, ClientNotice, ClientSettings, ClientStatus, ListHealth, ListStatus, RefreshDone,
};
use listsync_core::client::{CallError, CatalogClient, ClientInput, ClientOutput};
use listsync_core::history::{Event, RefreshOutcome};
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Name};
use listsync_core::wire::{
    Caps, ClientMsg, Notification, ReqId, Request, Response, ServerMsg, SubId,
};
use listsync_core::world::{Watch, observe_input, observe_publishes, readers_see};
use rmcp::model::{
    ClientCapabilities, ClientConfig, Implementation, ProtocolVersion, ServerNotification,
    ServerPeerInfo, SubscriptionFilter,
};
use rmcp::service::{Peer, RoleClient};
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_util::sync::CancellationToken;

/// One open connection.
pub(crate) struct Live {
    peer: Peer<RoleClient>,
    kill: CancellationToken,
    info: Option<Arc<ServerPeerInfo>>,
    /// The server child, for a [`Endpoint::Command`]: its exit status says why a connection
    /// ended.
    child: Option<connect::Child>,
}

/// An application command.
pub(crate) enum Command {
    Refresh {
        kind: Kind,
        done: oneshot::Sender<RefreshDone>,
    },
    SetAuth(AuthCtx),
    Call {
        name: Name,
        done: oneshot::Sender<Result<CallResult, CallError>>,
    },
    Listen {
        kinds: KindSet,
        uris: Vec<String>,
        done: oneshot::Sender<Result<KindSet, String>>,
    },
    Approve {
        name: Name,
        done: oneshot::Sender<bool>,
    },
    NeedsApproval {
        done: oneshot::Sender<Vec<Name>>,
    },
    Shutdown,
}

/// Everything the actor reacts to.
pub(crate) enum Input {
    Connected {
        epoch: u32,
        live: Live,
    },
    ConnectFailed {
        epoch: u32,
        why: String,
    },
    Lost {
        epoch: u32,
        why: String,
    },
    /// Notifications are waiting in the [`Inflow`].
    Arrived,
    /// A child server printed something that is not JSON-RPC on stdout.
    Warning {
        epoch: u32,
        text: String,
    },
    Acked {
        epoch: u32,
        listen: SubId,
        kinds: KindSet,
    },
    StreamLost {
        epoch: u32,
        listen: SubId,
    },
    Reply {
        epoch: u32,
        id: ReqId,
        outcome: RequestOutcome,
        call: Option<CallMeta>,
    },
    RetryDue {
        epoch: u32,
        kind: Kind,
        auth: AuthCtx,
    },
    WalkDue {
        epoch: u32,
        kind: Kind,
        auth: AuthCtx,
        generation: u64,
    },
    TtlDue {
        epoch: u32,
        kind: Kind,
        generation: u64,
    },
    Reconnect {
        epoch: u32,
    },
    Cmd(Command),
}

struct RefreshWaiter {
    kind: Kind,
    pages_before: u64,
    done: oneshot::Sender<RefreshDone>,
}

pub(crate) struct Actor {
    machine: CatalogClient,
    settings: Arc<ClientSettings>,
    endpoint: Endpoint,
    tx: mpsc::UnboundedSender<Input>,
    /// Where notifications wait, coalesced, until the actor takes them.
    inflow: Inflow,
    views: Arc<Views>,
    status: watch::Sender<ClientStatus>,
    /// The status being built; published (all fields at once) after each input.
    now: ClientStatus,
    epoch: u32,
    live: Option<Live>,
    /// A connection attempt of the current epoch is under way.
    connecting: bool,
    /// Local id of the listen stream core currently relies on (2026-07-28).
    listen: Option<SubId>,
    next_listen: SubId,
    queue: VecDeque<ClientInput>,
    seq: u64,
    /// What the actor saw of its machine's list requests on the wire (its walks, as history).
    watch: Watch,
    /// The authorization contexts the machine has been in (whose lists its readers read).
    contexts: BTreeSet<AuthCtx>,
    pages: BTreeMap<Kind, u64>,
    ttl_gen: BTreeMap<Kind, u64>,
    /// Latest pacing timer per list (an older one that fires is ignored).
    walk_gen: BTreeMap<(Kind, AuthCtx), u64>,
    /// The origin of the clock core's pacing reads (tokio's, so a paused runtime pauses it).
    started: tokio::time::Instant,
    refresh_waiters: Vec<RefreshWaiter>,
    call_waiters: HashMap<Name, VecDeque<oneshot::Sender<Result<CallResult, CallError>>>>,
    call_meta: HashMap<Name, VecDeque<CallMeta>>,
    reconnects: u32,
    identity: Option<String>,
    rng: u64,
}

fn client_info(era: Era, name: &str) -> ClientConfig {
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new(name.to_owned(), env!("CARGO_PKG_VERSION").to_owned()),
    );
    match era {
        Era::V2025_11_25 => info.with_protocol_version(ProtocolVersion::V_2025_11_25),
        Era::V2026_07_28 => info.with_protocol_version(ProtocolVersion::V_2026_07_28),
    }
}

fn caps_of(info: Option<&ServerPeerInfo>) -> Caps {
    let Some(info) = info else {
        return Caps::default();
    };
    let c = &info.capabilities;
    let mut kinds = KindSet::EMPTY;
    if c.tools
        .as_ref()
        .is_some_and(|t| t.list_changed == Some(true))
    {
        kinds = kinds.with(Kind::Tools);
    }
    if c.prompts
        .as_ref()
        .is_some_and(|p| p.list_changed == Some(true))
    {
        kinds = kinds.with(Kind::Prompts);
    }
    if c.resources
        .as_ref()
        .is_some_and(|r| r.list_changed == Some(true))
    {
        kinds = kinds.with(Kind::Resources).with(Kind::ResourceTemplates);
    }
    Caps {
        list_changed: kinds,
        subscribe: c
            .resources
            .as_ref()
            .is_some_and(|r| r.subscribe == Some(true)),
    }
}

/// The lists a server offers: those whose capability its handshake declares (`resources`
/// offers resource templates too); every list if rmcp kept no handshake.
fn offered_of(info: Option<&ServerPeerInfo>) -> KindSet {
    let Some(info) = info else {
        return Kind::ALL.into_iter().collect();
    };
    let c = &info.capabilities;
    let mut kinds = KindSet::EMPTY;
    if c.tools.is_some() {
        kinds = kinds.with(Kind::Tools);
    }
    if c.prompts.is_some() {
        kinds = kinds.with(Kind::Prompts);
    }
    if c.resources.is_some() {
        kinds = kinds.with(Kind::Resources).with(Kind::ResourceTemplates);
    }
    kinds
}

fn filter_of(kinds: KindSet, uris: &[String]) -> SubscriptionFilter {
    let mut f = SubscriptionFilter::new();
    let on = |k| kinds.contains(k).then_some(true);
    f.tools_list_changed = on(Kind::Tools);
    f.prompts_list_changed = on(Kind::Prompts);
    f.resources_list_changed = on(Kind::Resources);
    if !uris.is_empty() {
        f.resource_subscriptions = Some(uris.to_vec());
    }
    f
}

fn kinds_of(f: &SubscriptionFilter) -> KindSet {
    let mut k = KindSet::EMPTY;
    if f.tools_list_changed == Some(true) {
        k = k.with(Kind::Tools);
    }
    if f.prompts_list_changed == Some(true) {
        k = k.with(Kind::Prompts);
    }
    if f.resources_list_changed == Some(true) {
        k = k.with(Kind::Resources);
    }
    k
}

/// A notification from a listen stream, as core reads it.
fn from_stream(
    n: ServerNotification,
    sub: SubId,
) -> Option<(ServerMsg, &'static str, Option<String>)> {
    let (note, method, uri) = match n {
        ServerNotification::ToolListChangedNotification(_) => (
            Notification::ListChanged {
                kind: Kind::Tools,
                sub: Some(sub),
            },
            Kind::Tools.list_changed_method(),
            None,
        ),
        ServerNotification::PromptListChangedNotification(_) => (
            Notification::ListChanged {
                kind: Kind::Prompts,
                sub: Some(sub),
            },
            Kind::Prompts.list_changed_method(),
            None,
        ),
        ServerNotification::ResourceListChangedNotification(_) => (
            Notification::ListChanged {
                kind: Kind::Resources,
                sub: Some(sub),
            },
            Kind::Resources.list_changed_method(),
            None,
        ),
        ServerNotification::ResourceUpdatedNotification(u) => (
            Notification::ResourceUpdated {
                uri: u.params.uri.as_str().into(),
                sub: Some(sub),
            },
            "notifications/resources/updated",
            Some(u.params.uri),
        ),
        _ => return None,
    };
    Some((ServerMsg::Notification(note), method, uri))
}

/// How long a connection attempt waits for the handshake's answer before saying that it is
/// still waiting (it gives up at the connect timeout).
const STILL_WAITING: Duration = Duration::from_secs(1);
/// How long a lost connection waits for its server child's exit status to say it.
const CHILD_EXIT: Duration = Duration::from_millis(300);

/// A list nothing was fetched for yet.
fn not_listed_yet() -> ListStatus {
    ListStatus {
        health: ListHealth::Stale,
        reason: Some("not listed yet".into()),
        ..ListStatus::default()
    }
}

impl Actor {
    pub(crate) fn new(
        settings: Arc<ClientSettings>,
        endpoint: Endpoint,
        tx: mpsc::UnboundedSender<Input>,
        views: Arc<Views>,
        status: watch::Sender<ClientStatus>,
    ) -> Self {
        let seed = settings.jitter_seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64)
                ^ u64::from(settings.id).rotate_left(32)
        });
        let coalesce =
            settings.client.strategy == listsync_core::strategy::ClientStrategy::Reference;
        let inflow = Inflow::new(tx.clone(), &settings.client.watch, coalesce);
        let now = ClientStatus {
            lists: settings
                .client
                .kinds
                .iter()
                .map(|k| (k, not_listed_yet()))
                .collect(),
            ..ClientStatus::default()
        };
        Actor {
            machine: CatalogClient::new(settings.id, Arc::new(settings.client.clone())),
            settings,
            endpoint,
            tx,
            inflow,
            views,
            status,
            now,
            epoch: 0,
            live: None,
            connecting: false,
            listen: None,
            next_listen: 0,
            queue: VecDeque::new(),
            seq: 0,
            watch: Watch::default(),
            contexts: BTreeSet::new(),
            pages: BTreeMap::new(),
            ttl_gen: BTreeMap::new(),
            walk_gen: BTreeMap::new(),
            started: tokio::time::Instant::now(),
            refresh_waiters: Vec::new(),
            call_waiters: HashMap::new(),
            call_meta: HashMap::new(),
            reconnects: 0,
            identity: None,
            rng: seed | 1,
        }
    }

    fn notice(&self, n: ClientNotice) {
        if let Some(o) = &self.settings.observer {
            let _ = o.send(n);
        }
    }

    /// A factor in [0.5, 1.0) (SplitMix64).
    fn jitter(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        0.5 + (z >> 11) as f64 / (1u64 << 53) as f64 / 2.0
    }

    fn after_delay(&self, delay: Duration, input: Input) {
        let tx = self.tx.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let _ = tx.send(input);
        });
    }

    pub(crate) async fn run(mut self, mut inbox: mpsc::UnboundedReceiver<Input>) {
        self.connect();
        self.publish_status();
        while let Some(input) = inbox.recv().await {
            if !self.handle(input) {
                break;
            }
            self.after();
        }
        if let Some(live) = self.live.take() {
            live.kill.cancel();
        }
        self.now.ended = true;
        self.now.connected = false;
        self.publish_status();
    }

    fn connect(&mut self) {
        self.epoch += 1;
        self.connecting = true;
        let epoch = self.epoch;
        let endpoint = self.endpoint.clone();
        let tx = self.tx.clone();
        let era = self.settings.client.era;
        let auth = self.machine.auth();
        let timeout = self.settings.connect_timeout;
        let probe_every = self.settings.probe_interval;
        let probe = self.endpoint.request_failure_is_disconnect();
        let handler = Notifier {
            epoch,
            inflow: self.inflow.clone(),
            info: client_info(era, &self.settings.name),
        };
        let bearer = self.settings.bearer.get(&auth).cloned();
        let warn_tx = tx.clone();
        let warn: crate::sniff::Report = Arc::new(move |text| {
            let _ = warn_tx.send(Input::Warning { epoch, text });
        });
        // The connection's future holds rmcp's handshake and service futures, several KiB:
        // boxed, the task moves a pointer instead of copying it at each hand-over.
        tokio::spawn(Box::pin(async move {
            let opened = tokio::time::timeout(
                timeout,
                connect::open(&endpoint, handler, era, auth, bearer.as_deref(), warn),
            );
            tokio::pin!(opened);
            // A server that is slow to answer (or never will) is said to be so within a second,
            // not only at the timeout.
            let opened = tokio::select! {
                r = &mut opened => r,
                () = tokio::time::sleep(STILL_WAITING), if timeout > STILL_WAITING => {
                    let text = format!(
                        "no answer to the handshake after {STILL_WAITING:?}; still waiting \
                         (gives up after {timeout:?})"
                    );
                    let _ = tx.send(Input::Warning { epoch, text });
                    opened.await
                }
            };
            let (running, child) = match opened {
                Ok(Ok(connect::Opened { running, child })) => (running, child),
                Ok(Err(why)) => {
                    let _ = tx.send(Input::ConnectFailed { epoch, why });
                    return;
                }
                Err(_) => {
                    let why = format!("connecting timed out after {timeout:?}");
                    let _ = tx.send(Input::ConnectFailed { epoch, why });
                    return;
                }
            };
            let kill = CancellationToken::new();
            let live = Live {
                peer: running.peer().clone(),
                kill: kill.clone(),
                info: running.peer().peer_info(),
                child: child.clone(),
            };
            if tx.send(Input::Connected { epoch, live }).is_err() {
                return;
            }
            let ct = running.cancellation_token();
            let probe = probe.then(|| {
                tokio::spawn(connect::probe(
                    running.peer().clone(),
                    kill.clone(),
                    probe_every,
                    timeout,
                ))
            });
            let killer = tokio::spawn(async move {
                kill.cancelled().await;
                ct.cancel();
            });
            let why = match running.waiting().await {
                Ok(reason) => format!("connection ended ({reason:?})"),
                Err(e) => format!("connection task failed: {e}"),
            };
            let why = connect::Opened::ended(child.as_ref(), why, CHILD_EXIT).await;
            killer.abort();
            if let Some(p) = probe {
                p.abort();
            }
            let _ = tx.send(Input::Lost { epoch, why });
        }));
    }

    fn schedule_reconnect(&mut self, why: &str) {
        self.now.last_error = Some(why.to_owned());
        if !self.endpoint.reconnectable()
            || self
                .settings
                .max_reconnects
                .is_some_and(|m| self.reconnects >= m)
        {
            self.now.ended = true;
            self.now.next_reconnect = None;
            self.lists_failing(why, None);
            if self.endpoint.reconnectable() {
                self.notice(ClientNotice::GaveUp {
                    retries: self.reconnects,
                    why: why.to_owned(),
                });
            }
            return;
        }
        self.reconnects += 1;
        let shift = self.reconnects.saturating_sub(1).min(16);
        let base = self.settings.reconnect_base.saturating_mul(1 << shift);
        let delay = base.min(self.settings.reconnect_max).mul_f64(self.jitter());
        let due = Instant::now() + delay;
        self.now.next_reconnect = Some(due);
        self.lists_failing(why, Some(due));
        self.notice(ClientNotice::ReconnectScheduled {
            attempt: self.reconnects,
            of: self.settings.max_reconnects,
            delay,
        });
        self.after_delay(delay, Input::Reconnect { epoch: self.epoch });
    }

    /// Every kept list waits for the connection, which failed for `why`; the next attempt is
    /// due at `due` (None: the client gave up).
    fn lists_failing(&mut self, why: &str, due: Option<Instant>) {
        for ls in self.now.lists.values_mut() {
            ls.health = ListHealth::Failing;
            ls.reason = Some(why.to_owned());
            ls.next_retry = due;
        }
    }

    /// The connection's server offers `offered`: the kept lists it does not offer are said
    /// to be so (they are not listed on this connection), those it offers wait for their list.
    fn not_offered(&mut self, offered: KindSet) {
        let kept = self.settings.client.kinds;
        let missing: KindSet = kept.iter().filter(|k| !offered.contains(*k)).collect();
        for (kind, ls) in &mut self.now.lists {
            if missing.contains(*kind) {
                let capability = match kind {
                    Kind::Tools => "tools",
                    Kind::Prompts => "prompts",
                    Kind::Resources | Kind::ResourceTemplates => "resources",
                };
                *ls = ListStatus {
                    health: ListHealth::NotOffered,
                    reason: Some(format!(
                        "the server does not offer it (its handshake declares no `{capability}` capability)"
                    )),
                    ..ListStatus::default()
                };
            } else if ls.health == ListHealth::NotOffered {
                *ls = not_listed_yet();
            }
        }
        if !missing.is_empty() {
            self.notice(ClientNotice::NotOffered {
                kinds: missing,
                offered: kept.iter().filter(|k| offered.contains(*k)).collect(),
            });
        }
    }

    /// Drops the current connection now (its `Lost` will be ignored) and tells the machine.
    fn drop_connection(&mut self) {
        if let Some(live) = self.live.take() {
            live.kill.cancel();
        }
        self.listen = None;
        self.epoch += 1; // anything still in flight belongs to the old connection
        self.step(ClientInput::Disconnected);
    }

    fn handle(&mut self, input: Input) -> bool {
        let current = self.epoch;
        match input {
            Input::Connected { epoch, live } if epoch == current => {
                self.connecting = false;
                self.now.connect_failures = 0;
                self.now.next_reconnect = None;
                for ls in self.now.lists.values_mut() {
                    if ls.health == ListHealth::Failing && ls.failures == 0 {
                        // Failing for want of a connection only: now it waits for its list.
                        ls.health = ListHealth::Stale;
                        ls.next_retry = None;
                    }
                }
                let identity = format!(
                    "{}|{}|{}",
                    self.endpoint.describe(),
                    live.info
                        .as_ref()
                        .and_then(|i| i.server_info.as_ref())
                        .map(|s| format!("{}@{}", s.name, s.version))
                        .unwrap_or_default(),
                    self.settings.client.era
                );
                if self.identity.as_ref().is_some_and(|i| *i != identity) {
                    // A different server: nothing cached applies to it.
                    self.machine = CatalogClient::new(
                        self.settings.id,
                        Arc::new(self.settings.client.clone()),
                    );
                    let mut seq = self.seq;
                    self.views.reset(self.machine.auth(), || {
                        seq += 1;
                        seq
                    });
                    self.seq = seq;
                }
                self.identity = Some(identity);
                let version = live
                    .info
                    .as_ref()
                    .map(|i| i.protocol_version.to_string())
                    .unwrap_or_default();
                let info = live.info.as_ref().and_then(|i| i.server_info.as_ref());
                let server = info
                    .map(|s| format!("{} {}", s.name, s.version))
                    .unwrap_or_default();
                self.now.server_name = Some(info.map(|s| s.name.clone()).unwrap_or_default());
                self.now.connected = true;
                self.now.connections += 1;
                self.now.protocol_version = Some(version.clone());
                self.now.server = Some(server.clone());
                self.notice(ClientNotice::Negotiated {
                    protocol_version: version,
                    server,
                });
                let offered = offered_of(live.info.as_deref());
                if !self
                    .settings
                    .client
                    .kinds
                    .iter()
                    .any(|k| offered.contains(k))
                {
                    // Nothing to list: the handshake is the whole of a successful attempt. A
                    // connection with lists to serve succeeds once it has served one, so a
                    // server that dies before it does is a failed attempt.
                    self.reconnects = 0;
                }
                self.not_offered(offered);
                self.live = Some(live);
                self.step(ClientInput::Offers(offered));
                self.step(ClientInput::Start);
            }
            Input::Connected { live, .. } => live.kill.cancel(),
            Input::ConnectFailed { epoch, why } if epoch == current => {
                self.connecting = false;
                self.now.connect_failures += 1;
                self.notice(ClientNotice::ConnectFailed { why: why.clone() });
                self.schedule_reconnect(&why);
            }
            Input::Lost { epoch, why } if epoch == current => {
                self.live = None;
                self.listen = None;
                self.now.connected = false;
                self.notice(ClientNotice::Disconnected { why: why.clone() });
                self.step(ClientInput::Disconnected);
                self.schedule_reconnect(&why);
            }
            Input::Arrived => self.arrived(current),
            Input::Warning { epoch, text } if epoch == current => {
                self.notice(ClientNotice::Warning(text));
            }
            Input::Acked {
                epoch,
                listen,
                kinds,
            } if epoch == current => {
                self.listen = Some(listen);
                self.step(ClientInput::Receive(ServerMsg::Notification(
                    Notification::Acknowledged { sub: listen, kinds },
                )));
            }
            Input::StreamLost { epoch, listen }
                if epoch == current && self.listen == Some(listen) =>
            {
                self.listen = None;
                self.notice(ClientNotice::Log("listen stream ended".into()));
                self.step(ClientInput::StreamLost);
            }
            Input::Reply {
                epoch,
                id,
                outcome,
                call,
            } if epoch == current => self.reply(id, outcome, call),
            Input::RetryDue { epoch, kind, auth } if epoch == current => {
                if let Some(ls) = self.now.lists.get_mut(&kind) {
                    ls.next_retry = None;
                }
                self.step(ClientInput::RetryDue(kind, auth));
            }
            Input::WalkDue {
                epoch,
                kind,
                auth,
                generation,
            } if epoch == current && self.walk_gen.get(&(kind, auth)) == Some(&generation) => {
                self.step(ClientInput::WalkDue(kind, auth));
            }
            Input::TtlDue {
                epoch,
                kind,
                generation,
            } if epoch == current && self.ttl_gen.get(&kind) == Some(&generation) => {
                self.step(ClientInput::TtlExpired(kind));
            }
            Input::Reconnect { epoch } if epoch == current && self.live.is_none() => {
                self.connect();
            }
            Input::Cmd(cmd) => return self.command(cmd),
            _ => {} // from an older connection
        }
        true
    }

    /// Steps the machine with every notification waiting in the inflow (those of the current
    /// connection; older ones are dropped like any input of an older epoch).
    fn arrived(&mut self, current: u32) {
        let (arrivals, dropped) = self.inflow.take();
        if dropped > 0 {
            self.notice(ClientNotice::NotificationsDropped { count: dropped });
        }
        for a in arrivals.into_iter().filter(|a| a.epoch == current) {
            let sub = match &a.msg {
                ServerMsg::Notification(Notification::ListChanged { sub, .. })
                | ServerMsg::Notification(Notification::ResourceUpdated { sub, .. }) => *sub,
                _ => None,
            };
            self.now.notifications += a.count;
            self.notice(ClientNotice::Notification {
                method: a.method,
                uri: a.uri,
                sub,
                count: a.count,
            });
            self.step(ClientInput::Receive(a.msg));
        }
    }

    fn reply(&mut self, id: ReqId, outcome: RequestOutcome, call: Option<CallMeta>) {
        match outcome {
            RequestOutcome::Response(resp) => {
                if let (Some(meta), Response::ToolResult { name, .. }) = (call, &resp) {
                    self.call_meta
                        .entry(name.clone())
                        .or_default()
                        .push_back(meta);
                }
                if let Response::Page(p) = &resp
                    && let Some(ttl) = p.ttl_ms.filter(|t| *t > 0)
                {
                    let next = self.ttl_gen.entry(p.kind).or_default();
                    *next += 1;
                    let input = Input::TtlDue {
                        epoch: self.epoch,
                        kind: p.kind,
                        generation: *next,
                    };
                    self.after_delay(Duration::from_millis(u64::from(ttl)), input);
                }
                self.step(ClientInput::Receive(ServerMsg::Response { id, resp }));
            }
            RequestOutcome::Failed { why, .. }
                if why == super::request::TRANSPORT_CLOSED
                    && self.live.as_ref().is_some_and(|l| l.child.is_some()) =>
            {
                // A server child's output closed: the connection's end follows, and says so
                // with the child's exit status (Input::Lost). Nothing to decide before it.
                tracing::debug!("request {id:?} failed: {why}; waiting for the connection's end");
            }
            RequestOutcome::Failed { why, fatal }
                if fatal
                    && !self.endpoint.request_failure_is_disconnect()
                    && self.live.is_some() =>
            {
                // The byte stream is gone, and every outstanding request fails with it, in
                // whatever order rmcp drops them: the machine learns it once, as a disconnect,
                // whichever request noticed first.
                let why = format!("connection lost ({why})");
                self.now.connected = false;
                self.notice(ClientNotice::Disconnected { why: why.clone() });
                self.drop_connection();
                self.schedule_reconnect(&why);
            }
            RequestOutcome::Failed { why, fatal } => {
                self.step(ClientInput::RequestFailed(id, why.as_str().into()));
                if fatal && self.endpoint.request_failure_is_disconnect() {
                    // rmcp's HTTP client does not notice a dead server: end the connection.
                    if let Some(live) = &self.live {
                        live.kill.cancel();
                    }
                }
            }
            RequestOutcome::Invalid(why) => {
                self.notice(ClientNotice::Log(format!("invalid response: {why}")));
                self.step(ClientInput::InvalidResponse(id, why.as_str().into()));
            }
        }
    }

    fn command(&mut self, cmd: Command) -> bool {
        match cmd {
            Command::Refresh { kind, done } => {
                let pages_before = self.pages.get(&kind).copied().unwrap_or(0);
                self.step(ClientInput::Refresh(kind));
                self.refresh_waiters.push(RefreshWaiter {
                    kind,
                    pages_before,
                    done,
                });
            }
            Command::SetAuth(auth) => {
                if auth != self.machine.auth() {
                    // The authorization context is a property of the connection (a header, or
                    // the in-memory connection's context): reconnect under the new one, so no
                    // request of the old connection can fill the new context's cache.
                    let was_live = self.live.is_some();
                    let was_connecting = !was_live && self.connecting;
                    if was_live {
                        self.drop_connection();
                    } else if was_connecting {
                        // A connection being opened under the old context is abandoned (it
                        // is closed when it arrives, from an older epoch).
                        self.epoch += 1;
                    }
                    self.step(ClientInput::SetAuth(auth));
                    for ls in self.now.lists.values_mut() {
                        *ls = not_listed_yet();
                    }
                    let mut seq = self.seq;
                    self.views.switch(auth, || {
                        seq += 1;
                        seq
                    });
                    self.seq = seq;
                    if was_live || was_connecting {
                        self.connect();
                    }
                }
            }
            Command::Call { name, done } => {
                self.call_waiters
                    .entry(name.clone())
                    .or_default()
                    .push_back(done);
                self.step(ClientInput::CallTool(name));
            }
            Command::Listen { kinds, uris, done } => self.extra_listen(kinds, uris, done),
            Command::Approve { name, done } => {
                // The user approves the tool as the published list shows it now: that is
                // what the history records, and what the machine keys the approval by.
                let listed = self
                    .machine
                    .snapshot(Kind::Tools)
                    .is_some_and(|s| s.items.iter().any(|i| i.name == name));
                if let Some(h) = &self.settings.history {
                    h.record(&Event::Approved {
                        client: self.machine.id(),
                        tool: name.clone(),
                        auth: self.machine.auth(),
                    });
                }
                self.step(ClientInput::Approve(name));
                let _ = done.send(listed);
            }
            Command::NeedsApproval { done } => {
                let _ = done.send(self.machine.needs_approval());
            }
            Command::Shutdown => return false,
        }
        true
    }

    /// One more listen stream, outside the machine (the control protocol's `listen`): its
    /// notifications are reported, and fed to the machine untagged like any other.
    fn extra_listen(
        &mut self,
        kinds: KindSet,
        uris: Vec<String>,
        done: oneshot::Sender<Result<KindSet, String>>,
    ) {
        let Some(live) = &self.live else {
            let _ = done.send(Err("not connected".into()));
            return;
        };
        let peer = live.peer.clone();
        let inflow = self.inflow.clone();
        let epoch = self.epoch;
        let timeout = self.settings.request_timeout;
        tokio::spawn(async move {
            let mut sub =
                match tokio::time::timeout(timeout, peer.listen(filter_of(kinds, &uris))).await {
                    Ok(Ok(sub)) => sub,
                    Ok(Err(e)) => {
                        let _ = done.send(Err(e.to_string()));
                        return;
                    }
                    Err(_) => {
                        let _ = done.send(Err("listen timed out".into()));
                        return;
                    }
                };
            let _ = done.send(Ok(kinds_of(sub.acknowledged())));
            while let Ok(Some(n)) = sub.next().await {
                if let Some((msg, method, uri)) = from_stream(n, SubId::MAX) {
                    let msg = match msg {
                        ServerMsg::Notification(Notification::ListChanged { kind, .. }) => {
                            ServerMsg::Notification(Notification::ListChanged { kind, sub: None })
                        }
                        ServerMsg::Notification(Notification::ResourceUpdated { uri, .. }) => {
                            ServerMsg::Notification(Notification::ResourceUpdated {
                                uri,
                                sub: None,
                            })
                        }
                        other => other,
                    };
                    if !inflow.push(epoch, msg, method, uri) {
                        break;
                    }
                }
            }
        });
    }

    /// Steps the machine with `input`, and with whatever carrying out its outputs produces.
    fn step(&mut self, input: ClientInput) {
        self.queue.push_back(input);
        while let Some(input) = self.queue.pop_front() {
            let mut out = Vec::new();
            let now = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
            self.machine.set_clock(now);
            let approval = self.settings.client.ask_approval;
            // What the input shows an observer (a wake-up, an acknowledged listen): history,
            // and told to watchers (the control channel's `history`).
            for e in observe_input(self.machine.id(), &self.settings.client, &input) {
                if let Some(h) = &self.settings.history {
                    h.record(&e);
                }
                self.notice(ClientNotice::Event(e));
            }
            // What the history holds of the machine's lists and walks is observed: the lists
            // its readers read before and after the step, and its list requests on the wire
            // (the machine's own events of them are its claims, not recorded).
            let id = self.machine.id();
            self.contexts.insert(self.machine.auth());
            let before = readers_see(&self.machine, &self.contexts);
            let ending = match &input {
                ClientInput::Receive(msg) => self.watch.answered(msg),
                _ => None,
            };
            let cut = matches!(input, ClientInput::Disconnected);
            self.machine.step(input, &mut out);
            // Dated by the version the server named on the pages the list came from: a label
            // for watchers (the control channel's `published`); no verdict reads it, the
            // monitor matches the items against the commits it observed.
            let published = observe_publishes(id, &self.machine, before, |k, a, _| {
                self.machine.snapshot_for(k, a).and_then(|s| s.version)
            });
            let ended = ending.map(|e| Watch::ended(id, e, &published));
            let lost = if cut { self.watch.cut(id) } else { Vec::new() };
            if let Some(h) = &self.settings.history {
                for e in published.iter().chain(&ended).chain(&lost) {
                    h.record(e);
                }
            }
            // Watchers (the control channel's `published`, `history` and `refresh_started`) are
            // told what was observed, not the machine's word on it.
            for e in published.into_iter().chain(ended).chain(lost) {
                self.notice(ClientNotice::Event(e));
            }
            let reasons: Vec<(Kind, listsync_core::history::Restart)> = out
                .iter()
                .filter_map(|o| match o {
                    ClientOutput::Event(Event::WalkRestarted { kind, reason, .. }) => {
                        Some((*kind, *reason))
                    }
                    _ => None,
                })
                .collect();
            // A call's routing, and a failed call with the list requests it made the client
            // send, are observed from what the step put on the wire.
            let routed = if self.settings.client.calls_by_name {
                Vec::new()
            } else {
                listsync_core::world::observe_call_routing(id, approval, &out)
            };
            let failed = listsync_core::world::observe_call_failure(id, &out);
            // In the order of the outputs: a walk seen starting after the wake-up or the
            // acknowledgement that caused it.
            for o in out {
                if let ClientOutput::Send(msg) = &o
                    && let Some(e) = self.watch.asks(
                        id,
                        msg,
                        reasons
                            .iter()
                            .find(|(k, _)| matches!(&msg.req, Request::List { kind, .. } if kind == k))
                            .map(|(_, r)| *r),
                    )
                {
                    if let Some(h) = &self.settings.history {
                        h.record(&e);
                    }
                    self.notice(ClientNotice::Event(e));
                }
                self.carry(o);
            }
            if let Some(h) = &self.settings.history {
                for e in routed.iter().chain(&failed) {
                    h.record(e);
                }
            }
        }
    }

    fn carry(&mut self, o: ClientOutput) {
        match o {
            ClientOutput::Send(msg) => self.send(msg),
            ClientOutput::ScheduleRetry {
                kind,
                auth,
                delay_ms,
                attempt,
            } => {
                let delay = Duration::from_millis(u64::from(delay_ms)).mul_f64(self.jitter());
                if auth == self.machine.auth()
                    && let Some(ls) = self.now.lists.get_mut(&kind)
                {
                    ls.next_retry = Some(Instant::now() + delay);
                }
                self.notice(ClientNotice::RetryScheduled {
                    kind,
                    attempt,
                    of: self.settings.client.limits.max_retries,
                    delay,
                });
                self.after_delay(
                    delay,
                    Input::RetryDue {
                        epoch: self.epoch,
                        kind,
                        auth,
                    },
                );
            }
            ClientOutput::ScheduleWalk {
                kind,
                auth,
                delay_ms,
            } => {
                let generation = self.walk_gen.entry((kind, auth)).or_default();
                *generation += 1;
                if delay_ms == 0 {
                    self.queue.push_back(ClientInput::WalkDue(kind, auth));
                    return;
                }
                let input = Input::WalkDue {
                    epoch: self.epoch,
                    kind,
                    auth,
                    generation: *generation,
                };
                self.after_delay(Duration::from_millis(u64::from(delay_ms)), input);
            }
            ClientOutput::Failed { kind, error } => {
                let text = error.to_string();
                self.now.failures += 1;
                if let Some(ls) = self.now.lists.get_mut(&kind) {
                    ls.health = ListHealth::Failing;
                    ls.reason = Some(text.clone());
                    ls.next_retry = None;
                    ls.failures += 1;
                }
                self.now.last_error = Some(text);
                self.notice(ClientNotice::RefreshFailed { kind, error });
            }
            ClientOutput::ListenRefused { error } => {
                let text = format!(
                    "the server refused subscriptions/listen ({error}): no change notifications; lists refresh when their ttlMs runs out and on request"
                );
                tracing::warn!("{text}");
                self.now.last_error = Some(text.clone());
                self.notice(ClientNotice::Log(text));
            }
            ClientOutput::CallDone { name, result, .. } => {
                let meta = match &result {
                    Ok(_) => self.call_meta.get_mut(&name).and_then(|q| q.pop_front()),
                    Err(_) => None,
                };
                let result = result.map(|text| CallResult {
                    is_error: meta.as_ref().is_some_and(|m| m.is_error),
                    text: meta.map_or_else(|| text.to_string(), |m| m.text),
                });
                self.notice(ClientNotice::CallDone {
                    tool: name.to_string(),
                    result: result.clone(),
                });
                if let Some(w) = self.call_waiters.get_mut(&name).and_then(|q| q.pop_front()) {
                    let _ = w.send(result);
                }
            }
            ClientOutput::Content { uri, text } => {
                self.notice(ClientNotice::Content {
                    uri: uri.to_string(),
                    text: text.to_string(),
                });
            }
            ClientOutput::Event(e) => self.event(e),
        }
    }

    fn event(&mut self, e: Event) {
        // The machine's word on its refreshes, walks, publishes and acknowledged listens is not
        // history: those are observed (`step`).
        let claim = e.is_claim();
        if !claim && let Some(h) = &self.settings.history {
            h.record(&e);
        }
        match &e {
            Event::Published {
                kind,
                auth,
                version,
                ..
            } => {
                self.seq += 1;
                // What the handle's readers read is the machine's snapshot, not what its
                // event names.
                let (epoch, items) = self
                    .machine
                    .snapshot_for(*kind, *auth)
                    .map_or((0, Arc::from([])), |s| (s.epoch, s.items.clone()));
                self.views.publish(
                    Listing {
                        kind: *kind,
                        auth: *auth,
                        items,
                        version: *version,
                        epoch,
                        seq: self.seq,
                        fetched: true,
                    },
                    self.machine.auth(),
                );
                self.now.publications += 1;
                if *auth == self.machine.auth() {
                    self.list_current(*kind);
                }
            }
            Event::MarkedStale { kind, auth, .. } => {
                self.views.mark_stale(*kind, *auth, self.machine.auth());
                if *auth == self.machine.auth()
                    && let Some(ls) = self.now.lists.get_mut(kind)
                    && ls.health == ListHealth::Current
                {
                    ls.health = ListHealth::Stale;
                    ls.reason = Some(
                        self.now
                            .last_error
                            .clone()
                            .unwrap_or_else(|| "marked stale".into()),
                    );
                }
            }
            Event::RefreshEnded {
                kind,
                auth,
                outcome,
                ..
            } if *auth == self.machine.auth() => match outcome {
                // Given up until the next change notification: still failing, nothing due.
                RefreshOutcome::Failed => {
                    if let Some(ls) = self.now.lists.get_mut(kind)
                        && ls.health == ListHealth::Failing
                    {
                        ls.next_retry = None;
                    }
                }
                _ => {
                    // The connection served a whole list: the reconnects before it succeeded.
                    self.reconnects = 0;
                    self.list_current(*kind);
                }
            },
            _ => {}
        }
        // Watchers (the control channel's `published`, `history`) are told what was observed
        // (`step`): the lists the readers read, the walks on the wire. The machine's word on its
        // refreshes and publishes goes to them as its claim.
        if claim {
            self.notice(ClientNotice::Claimed(e));
        } else {
            self.notice(ClientNotice::Event(e));
        }
    }

    /// A refresh of `kind` completed: the list is current unless its snapshot is stale.
    fn list_current(&mut self, kind: Kind) {
        let auth = self.machine.auth();
        let stale = self
            .machine
            .snapshot_for(kind, auth)
            .is_some_and(|s| s.stale);
        if !stale
            && self.machine.snapshot_for(kind, auth).is_some()
            && self.views.confirm(kind, auth, auth, self.seq + 1)
        {
            self.seq += 1;
        }
        if let Some(ls) = self.now.lists.get_mut(&kind) {
            *ls = if stale {
                ListStatus {
                    health: ListHealth::Stale,
                    reason: Some("the server's list changed since".into()),
                    ..ListStatus::default()
                }
            } else {
                ListStatus {
                    health: ListHealth::Current,
                    ..ListStatus::default()
                }
            };
        }
    }

    fn send(&mut self, msg: ClientMsg) {
        let ClientMsg { id, req, .. } = msg;
        let Some(live) = &self.live else {
            self.queue
                .push_back(ClientInput::RequestFailed(id, "not connected".into()));
            return;
        };
        let peer = live.peer.clone();
        let epoch = self.epoch;
        let tx = self.tx.clone();
        let inflow = self.inflow.clone();
        let timeout = self.settings.request_timeout;
        match req {
            Request::Initialize => {
                // rmcp already did the handshake when the connection opened.
                let resp = Response::Initialized {
                    era: self.settings.client.era,
                    caps: caps_of(live.info.as_deref()),
                };
                self.queue
                    .push_back(ClientInput::Receive(ServerMsg::Response { id, resp }));
            }
            Request::Listen { kinds, uris } => {
                self.next_listen += 1;
                let local = self.next_listen;
                let uris: Vec<String> = uris.iter().map(|u| u.to_string()).collect();
                tokio::spawn(async move {
                    let req = Request::Listen {
                        kinds,
                        uris: uris.iter().map(|u| u.as_str().into()).collect(),
                    };
                    let opened =
                        tokio::time::timeout(timeout, peer.listen(filter_of(kinds, &uris)));
                    let mut sub = match opened.await {
                        Ok(Ok(sub)) => sub,
                        Ok(Err(e)) => {
                            let outcome = request::failure(e, &req);
                            let _ = tx.send(Input::Reply {
                                epoch,
                                id,
                                outcome,
                                call: None,
                            });
                            return;
                        }
                        Err(_) => {
                            let outcome = RequestOutcome::Failed {
                                why: "subscriptions/listen timed out".into(),
                                fatal: false,
                            };
                            let _ = tx.send(Input::Reply {
                                epoch,
                                id,
                                outcome,
                                call: None,
                            });
                            return;
                        }
                    };
                    let kinds = kinds_of(sub.acknowledged());
                    if tx
                        .send(Input::Acked {
                            epoch,
                            listen: local,
                            kinds,
                        })
                        .is_err()
                    {
                        return;
                    }
                    // Drain continuously (rmcp cancels a subscription whose buffer fills up) into
                    // the coalescing inflow, which holds at most one entry per distinct
                    // notification however fast they come.
                    while let Ok(Some(n)) = sub.next().await {
                        if let Some((msg, method, uri)) = from_stream(n, local)
                            && !inflow.push(epoch, msg, method, uri)
                        {
                            return;
                        }
                    }
                    let _ = tx.send(Input::StreamLost {
                        epoch,
                        listen: local,
                    });
                });
            }
            req => {
                if let Request::List { kind, .. } = &req {
                    *self.pages.entry(*kind).or_default() += 1;
                }
                tokio::spawn(async move {
                    let (outcome, call) = request::perform(&peer, &req, timeout).await;
                    let _ = tx.send(Input::Reply {
                        epoch,
                        id,
                        outcome,
                        call,
                    });
                });
            }
        }
    }

    /// After each input: reconnect a connection whose handshake or listen failed, answer
    /// refresh commands once nothing is in progress, publish the status.
    fn after(&mut self) {
        let idle = self.machine.is_idle();
        if self.live.is_some() && idle && !self.machine.is_ready() {
            // The machine went offline on a live connection (listen or initialize refused).
            if let Some(live) = &self.live {
                live.kill.cancel();
            }
        }
        if idle && !self.refresh_waiters.is_empty() {
            for w in std::mem::take(&mut self.refresh_waiters) {
                let view: Arc<View> = self.views.load(w.kind);
                let pages = self.pages.get(&w.kind).copied().unwrap_or(0) - w.pages_before;
                let _ = w.done.send(RefreshDone { view, pages });
            }
        }
        self.publish_status();
    }

    /// Publishes the status, every field at once (a reader never sees a count that is ahead of
    /// the idle flag).
    fn publish_status(&mut self) {
        self.now.ready = self.machine.is_ready();
        self.now.idle = self.machine.is_idle();
        self.now.epoch = self.epoch;
        let now = &self.now;
        self.status.send_if_modified(|s| {
            let changed = s != now;
            if changed {
                *s = now.clone();
            }
            changed
        });
    }
}
