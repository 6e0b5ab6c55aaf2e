//! The server registry machine: a versioned catalog with atomic batch commits, coalesced
//! `list_changed` notifications sent only after commit, version-bound pagination cursors, tool
//! dispatch against the same snapshot lists read, resource subscriptions, and both protocol eras
//! (sessions with `initialize`, or stateless with `subscriptions/listen`).
//!
//! The machine is sans-IO: [`Registry::step`] takes one input and appends what to send and what
//! happened (history events) to an output buffer. The known-bad server strategies are variants of
//! the same machine, selected by [`ServerStrategy`].

use crate::history::{ClientId, Event};
use crate::strategy::ServerStrategy;
use crate::vocab::{AuthCtx, Batch, Catalog, Entry, Era, Item, Kind, KindSet, Name};
use crate::wire::{
    CacheScope, Caps, ClientMsg, ErrorReason, INVALID_PARAMS, Lane, Notification, Page,
    RESOURCE_NOT_FOUND, Request, Response, RpcError, ServerCursor, ServerMsg, SubId,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// Static server settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ServerConfig {
    /// Reference or a known-bad variant.
    pub strategy: ServerStrategy,
    /// Protocol era served.
    pub era: Era,
    /// Items per list page; 0 = everything in one page.
    pub page_size: u16,
    /// `ttlMs` put on 2026-07-28 list results.
    pub ttl_ms: Option<u32>,
    /// Identity of this server's version space (shared by every node of a cluster; a server
    /// whose catalog does not survive a restart takes a new one at each start).
    #[serde(default = "default_catalog_id")]
    pub catalog_id: u64,
    /// How many earlier catalog versions a version-bound cursor is still served from (the
    /// newest ones a walk started at): a walk that a commit overtakes finishes at its own
    /// version instead of being refused. 0: only the current version (a cursor of any other
    /// gets -32602). Memory is bounded by this many catalogs.
    #[serde(default)]
    pub retain_versions: u8,
    /// Hostile: after answering every list request, send that list's `list_changed` to the
    /// requester although nothing changed (an easy mistake in a real server; it makes a naive
    /// client list forever). Never set by the reference server.
    #[serde(default)]
    pub notify_on_list: bool,
}

fn default_catalog_id() -> u64 {
    1
}

/// Earlier versions the reference server keeps serving cursors of (see
/// [`ServerConfig::retain_versions`]).
pub const DEFAULT_RETAIN_VERSIONS: u8 = 16;

impl Default for ServerConfig {
    fn default() -> Self {
        ServerConfig {
            strategy: ServerStrategy::Reference,
            era: Era::V2025_11_25,
            page_size: 0,
            ttl_ms: None,
            catalog_id: default_catalog_id(),
            retain_versions: DEFAULT_RETAIN_VERSIONS,
            notify_on_list: false,
        }
    }
}

/// Most authorization contexts a session is told of changes for one by one; a session that used
/// more is told of every change (bounded memory against a client cycling through contexts).
pub const MAX_SESSION_CONTEXTS: usize = 8;

/// The authorization contexts a session is told of changes for: every context it has listed
/// under (a connection's context is fixed over HTTP; in the model a client may switch, and a
/// list request of the context it left may still arrive after one of the context it switched to,
/// so the latest request's context alone would miss changes the client's current lists see).
/// Only list requests count: a session holds lists only of the contexts it listed under, so a
/// change no such context sees is no news to it (no_spurious_notify); a call, a read or a listen
/// under another context changes nothing it was told.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
enum Contexts {
    /// No request yet (or a stream whose caller is not authenticated yet): told of every change.
    #[default]
    Unknown,
    /// Told of a change any of these sees.
    Used(BTreeSet<AuthCtx>),
    /// More than [`MAX_SESSION_CONTEXTS`]: told of every change.
    Many,
}

/// What a server knows about one client connection.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct Session {
    initialized: bool,
    /// The authorization contexts the session is told of changes for.
    auth: Contexts,
    /// Open `subscriptions/listen` stream: id, kinds honoured, URIs watched.
    listen: Option<(SubId, KindSet, Vec<Name>)>,
    /// `resources/subscribe` URIs (2025-11-25).
    subscribed: BTreeSet<Name>,
    /// The tool table the session captured when it started (`stale-dispatch` only).
    dispatch_view: Option<Arc<Catalog>>,
}

/// An input to the server machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ServerInput {
    /// A client connected.
    Connect(ClientId),
    /// A client's connection (and its streams) went away.
    Disconnect(ClientId),
    /// A request arrived from a client.
    Request(ClientId, ClientMsg),
    /// The administrator applies a batch of mutations.
    Apply(Batch),
    /// (`notify-before-commit` only) the staged batch becomes visible.
    CommitStaged,
    /// The driver learned a session's authorization context apart from a request (a stream
    /// registered before its caller was authenticated), or that it is not known yet (`None`:
    /// the session is told of every change until it is).
    Identified(ClientId, Option<AuthCtx>),
}

/// Something the server machine asks its driver to do, or reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ServerOutput {
    /// Send `msg` to client `to` on `lane`.
    Send {
        /// Receiving client.
        to: ClientId,
        /// Lane.
        lane: Lane,
        /// Message.
        msg: ServerMsg,
    },
    /// A history event the server is the only witness of (a connection, a page served).
    Event(Event),
    /// What the server says about itself — a commit, a notification and what it believes was
    /// visible, a dispatch and whether it believes the tool was present, a refused call. Logs
    /// and diagnostics show claims; the property checkers never judge them: a driver's
    /// observer derives the judged events from the wire and its own state (`docs/design.md`,
    /// "Observed vs reported").
    Claim(Event),
}

/// The server registry machine.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Registry {
    cfg: ServerConfig,
    version: u64,
    catalog: Arc<Catalog>,
    /// (`notify-before-commit`) a batch that was announced but is not yet visible.
    staged: Option<Arc<Catalog>>,
    /// (`cluster-notify-before-visible`) a store version announced but not yet loaded.
    staged_install: Option<(u64, Arc<Catalog>)>,
    sessions: BTreeMap<ClientId, Session>,
    next_sub: SubId,
    /// Earlier versions whose cursors are still served: the newest
    /// [`ServerConfig::retain_versions`] at which a page with a next cursor was cut.
    retained: BTreeMap<u64, Arc<Catalog>>,
}

impl Registry {
    /// A registry at version 1 holding `initial`. Emits nothing: call
    /// [`Registry::initial_event`] to record the initial commit in a history.
    pub fn new(cfg: ServerConfig, initial: Catalog) -> Self {
        Registry {
            cfg,
            version: 1,
            catalog: Arc::new(initial),
            staged: None,
            staged_install: None,
            sessions: BTreeMap::new(),
            next_sub: 1,
            retained: BTreeMap::new(),
        }
    }

    /// A copy of this registry without its sessions: everything a list request is served
    /// from (catalog, version, staged batches, retained walk versions), cheap to make whatever
    /// the number of sessions. What an observer's probe walks ([`crate::world::probe`]).
    pub fn probe_copy(&self) -> Registry {
        Registry {
            cfg: self.cfg,
            version: self.version,
            catalog: self.catalog.clone(),
            staged: self.staged.clone(),
            staged_install: self.staged_install.clone(),
            sessions: BTreeMap::new(),
            next_sub: self.next_sub,
            retained: self.retained.clone(),
        }
    }

    /// The history event for the initial catalog.
    pub fn initial_event(&self) -> Event {
        Event::Committed {
            version: self.version,
            catalog: self.catalog.clone(),
        }
    }

    /// Static settings.
    pub fn config(&self) -> &ServerConfig {
        &self.cfg
    }

    /// The version visible to list requests.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// The catalog visible to list requests.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// Whether a batch is announced but not yet committed (`notify-before-commit`).
    pub fn has_staged(&self) -> bool {
        self.staged.is_some() || self.staged_install.is_some()
    }

    /// Makes a catalog committed elsewhere (the shared store of a multi-node deployment)
    /// visible at `version`, if newer than what this node serves, then notifies this node's
    /// clients. Duplicate and out-of-order versions are ignored. Returns whether it was taken.
    /// (The store's commit is the history's `Committed` event; a node's install is not.)
    pub fn install(
        &mut self,
        version: u64,
        catalog: Arc<Catalog>,
        out: &mut Vec<ServerOutput>,
    ) -> bool {
        let pending = self
            .staged_install
            .as_ref()
            .map_or(self.version, |(v, _)| *v);
        if version <= self.version || version <= pending {
            return false;
        }
        let changed = self.changes(&self.catalog, &catalog);
        let contents = changed_contents(&self.catalog, &catalog);
        if self.cfg.strategy.installs_after_notifying() {
            // The bug: announce first, load later. The lying registry claims the announced
            // version is already visible.
            let visible = if self.cfg.strategy == ServerStrategy::LyingRegistry {
                version
            } else {
                self.version
            };
            self.staged_install = Some((version, catalog));
            self.notify(&changed, &contents, version, visible, 1, out);
            return true;
        }
        self.version = version;
        self.catalog = catalog;
        self.notify(&changed, &contents, version, version, 1, out);
        true
    }

    /// Renames clients: `map[old] = new` (for symmetry reduction over interchangeable clients).
    pub fn relabel(&self, map: &[ClientId]) -> Registry {
        let mut r = self.clone();
        r.sessions = self
            .sessions
            .iter()
            .map(|(c, s)| (map.get(*c as usize).copied().unwrap_or(*c), s.clone()))
            .collect();
        r
    }

    /// Hashes the server's session of client `c`, independent of its id.
    pub fn hash_session<H: std::hash::Hasher>(&self, c: ClientId, h: &mut H) {
        use std::hash::Hash;
        self.sessions.get(&c).hash(h);
    }

    /// Steps the machine with one input, appending outputs to `out`.
    pub fn step(&mut self, input: ServerInput, out: &mut Vec<ServerOutput>) {
        match input {
            ServerInput::Connect(c) => {
                let view = matches!(
                    self.cfg.strategy,
                    ServerStrategy::StaleDispatch | ServerStrategy::LyingRegistry
                )
                .then(|| self.catalog.clone());
                self.sessions.insert(
                    c,
                    Session {
                        dispatch_view: view,
                        ..Session::default()
                    },
                );
                out.push(ServerOutput::Event(Event::Connected { client: c }));
            }
            ServerInput::Disconnect(c) => {
                self.sessions.remove(&c);
            }
            ServerInput::Apply(batch) => self.apply(&batch, out),
            ServerInput::CommitStaged => {
                if let Some((v, cat)) = self.staged_install.take() {
                    self.version = v;
                    self.catalog = cat;
                } else if let Some(next) = self.staged.take() {
                    self.version += 1;
                    self.catalog = next;
                    out.push(ServerOutput::Claim(Event::Committed {
                        version: self.version,
                        catalog: self.catalog.clone(),
                    }));
                }
            }
            ServerInput::Request(c, msg) => self.request(c, msg, out),
            ServerInput::Identified(c, auth) => {
                if let Some(s) = self.sessions.get_mut(&c) {
                    s.auth =
                        auth.map_or(Contexts::Unknown, |a| Contexts::Used(BTreeSet::from([a])));
                }
            }
        }
    }

    fn apply(&mut self, batch: &Batch, out: &mut Vec<ServerOutput>) {
        if let Some(pending) = self.staged.take() {
            // A second batch while one is staged: the staged one lands first.
            self.version += 1;
            self.catalog = pending;
            out.push(ServerOutput::Claim(Event::Committed {
                version: self.version,
                catalog: self.catalog.clone(),
            }));
        }
        let mut next = (*self.catalog).clone();
        // Mutations that changed something, one by one (what `notify-per-mutation` announces).
        let mut per_op = 0usize;
        for op in batch.iter() {
            if next.apply(op) && op.kind().is_some() {
                per_op += 1;
            }
        }
        // A batch whose net effect is nothing (an add and a remove of the same item, a
        // definition set to what it was, a rebuild) is no change: no new version, no
        // notification.
        // The bug of `notify-on-noop`: every list the server has is announced as changed, to
        // everyone, after every batch (a rebuild that re-registers everything).
        let everything = || {
            let has = |k: Kind| {
                (self.catalog.items.keys().chain(next.items.keys())).any(|(kk, _)| *kk == k)
            };
            Changes::all(
                Kind::ALL
                    .into_iter()
                    .filter(|k| has(*k))
                    .map(group_of)
                    .collect(),
            )
        };
        if next == *self.catalog {
            if self.cfg.strategy == ServerStrategy::NotifyOnNoop {
                let v = self.version;
                self.notify(&everything(), &[], v, v, 1, out);
            }
            return;
        }
        let changed = if self.cfg.strategy == ServerStrategy::NotifyOnNoop {
            everything()
        } else {
            self.changes(&self.catalog, &next)
        };
        let contents = changed_contents(&self.catalog, &next);
        let next = Arc::new(next);
        let announced = self.version + 1;
        let copies = if self.cfg.strategy == ServerStrategy::NotifyPerMutation {
            per_op.max(1)
        } else {
            1
        };
        if self.cfg.strategy.commits_after_notifying() {
            // Announce now, commit later: list requests in between still see the old version.
            // The lying registry claims the announced version is already visible.
            let claimed = if self.cfg.strategy == ServerStrategy::LyingRegistry {
                announced
            } else {
                self.version
            };
            self.staged = Some(next);
            self.notify(&changed, &contents, announced, claimed, 1, out);
            return;
        }
        self.version = announced;
        self.catalog = next;
        out.push(ServerOutput::Claim(Event::Committed {
            version: self.version,
            catalog: self.catalog.clone(),
        }));
        self.notify(&changed, &contents, announced, self.version, copies, out);
    }

    /// Sends list_changed for each changed kind group (and resources/updated for changed
    /// contents) to every session entitled to it.
    fn notify(
        &self,
        changed: &Changes,
        contents: &[Name],
        announces: u64,
        visible: u64,
        copies: usize,
        out: &mut Vec<ServerOutput>,
    ) {
        self.notify_sessions(None, changed, contents, announces, visible, copies, out);
    }

    /// What changed between `old` and `new`, as each current session's context sees it.
    fn changes(&self, old: &Catalog, new: &Catalog) -> Changes {
        let by_auth = self
            .sessions
            .values()
            .filter_map(|s| match &s.auth {
                Contexts::Used(set) => Some(set),
                _ => None,
            })
            .flatten()
            .copied()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .map(|a| (a, changed_kinds_for(old, new, a)))
            .collect();
        Changes {
            any: changed_kinds(old, new),
            by_auth,
        }
    }

    /// [`Registry::notify`], to one client's session only if `only` says so.
    #[allow(clippy::too_many_arguments)]
    fn notify_sessions(
        &self,
        only: Option<ClientId>,
        changed: &Changes,
        contents: &[Name],
        announces: u64,
        visible: u64,
        copies: usize,
        out: &mut Vec<ServerOutput>,
    ) {
        for (&c, s) in &self.sessions {
            if only.is_some_and(|o| o != c) {
                continue;
            }
            let sub = match (self.cfg.era, &s.listen) {
                (Era::V2025_11_25, _) if s.initialized => None,
                (Era::V2026_07_28, Some((id, _, _))) => Some(*id),
                _ => continue,
            };
            for kind in changed.seen_by(&s.auth).iter() {
                let wanted = match &s.listen {
                    Some((_, kinds, _)) => {
                        kind.notification_group().iter().any(|k| kinds.contains(*k))
                    }
                    None => true,
                };
                if !wanted {
                    continue;
                }
                for _ in 0..copies {
                    out.push(ServerOutput::Claim(Event::Notified {
                        client: c,
                        kind,
                        announces,
                        visible,
                    }));
                    out.push(ServerOutput::Send {
                        to: c,
                        lane: Lane::Stream,
                        msg: ServerMsg::Notification(Notification::ListChanged { kind, sub }),
                    });
                }
            }
            for uri in contents {
                let watched = match &s.listen {
                    Some((_, _, uris)) => uris.contains(uri),
                    None => s.subscribed.contains(uri),
                };
                if watched {
                    out.push(ServerOutput::Send {
                        to: c,
                        lane: Lane::Stream,
                        msg: ServerMsg::Notification(Notification::ResourceUpdated {
                            uri: uri.clone(),
                            sub,
                        }),
                    });
                }
            }
        }
    }

    fn request(&mut self, c: ClientId, msg: ClientMsg, out: &mut Vec<ServerOutput>) {
        let ClientMsg { id, auth, req } = msg;
        let lane = req.reply_lane();
        if matches!(req, Request::List { .. })
            && let Some(s) = self.sessions.get_mut(&c)
        {
            s.auth = match std::mem::take(&mut s.auth) {
                Contexts::Unknown => Contexts::Used(BTreeSet::from([auth])),
                Contexts::Used(mut set) => {
                    set.insert(auth);
                    if set.len() > MAX_SESSION_CONTEXTS {
                        Contexts::Many
                    } else {
                        Contexts::Used(set)
                    }
                }
                Contexts::Many => Contexts::Many,
            };
        }
        let resp = match req {
            Request::Initialize => {
                if let Some(s) = self.sessions.get_mut(&c) {
                    s.initialized = true;
                }
                Response::Initialized {
                    era: self.cfg.era,
                    caps: Caps {
                        list_changed: Kind::ALL.into_iter().collect(),
                        subscribe: true,
                    },
                }
            }
            Request::List { kind, cursor } => {
                let resp = match self.page(kind, auth, cursor.as_ref()) {
                    Ok((page, version)) => {
                        out.push(ServerOutput::Event(Event::Served {
                            client: c,
                            kind,
                            auth,
                            version,
                            items: page.items.len() as u32,
                            more: page.next.is_some(),
                        }));
                        Response::Page(page)
                    }
                    Err(e) => Response::Error(e),
                };
                out.push(ServerOutput::Send {
                    to: c,
                    lane,
                    msg: ServerMsg::Response { id, resp },
                });
                if self.cfg.notify_on_list {
                    // The hostile server: "the list changed", in reply to every list.
                    let v = self.version;
                    let echo = Changes::all(KindSet::only(group_of(kind)));
                    self.notify_sessions(Some(c), &echo, &[], v, v, 1, out);
                }
                return;
            }
            Request::CallTool { name, schema } => self.call(c, auth, name, schema, out),
            Request::GetPrompt { name } => match self.catalog.get(Kind::Prompts, &name) {
                Some(e) if e.scope.visible_to(auth) => Response::Prompt {
                    def: e.def.clone(),
                    name,
                },
                _ => Response::Error(RpcError {
                    code: INVALID_PARAMS,
                    reason: ErrorReason::UnknownPrompt,
                }),
            },
            Request::Subscribe { uri } => {
                // A resource of another authorization context is not found: a subscription
                // would confirm that it exists and send its URI in `resources/updated`.
                if !self
                    .catalog
                    .get(Kind::Resources, &uri)
                    .is_some_and(|e| e.scope.visible_to(auth))
                {
                    Response::Error(self.not_found())
                } else {
                    if let Some(s) = self.sessions.get_mut(&c) {
                        s.subscribed.insert(uri);
                    }
                    Response::Subscribed
                }
            }
            Request::ReadResource { uri } => {
                match (
                    self.catalog.get(Kind::Resources, &uri),
                    self.catalog.contents.get(&uri),
                ) {
                    (Some(e), text) if e.scope.visible_to(auth) => Response::Content {
                        text: text.cloned().unwrap_or_else(|| e.def.clone()),
                        uri,
                    },
                    _ => Response::Error(self.not_found()),
                }
            }
            Request::Listen { kinds, uris } => {
                if self.cfg.era != Era::V2026_07_28 {
                    Response::Error(RpcError {
                        code: crate::wire::METHOD_NOT_FOUND,
                        reason: ErrorReason::Other("subscriptions/listen needs 2026-07-28".into()),
                    })
                } else {
                    let sub = self.next_sub;
                    self.next_sub += 1;
                    if let Some(s) = self.sessions.get_mut(&c) {
                        s.listen = Some((sub, kinds, uris));
                    }
                    // The acknowledgement is the stream's first message; the stream stays open.
                    out.push(ServerOutput::Send {
                        to: c,
                        lane: Lane::Stream,
                        msg: ServerMsg::Notification(Notification::Acknowledged { sub, kinds }),
                    });
                    return;
                }
            }
        };
        out.push(ServerOutput::Send {
            to: c,
            lane,
            msg: ServerMsg::Response { id, resp },
        });
    }

    fn not_found(&self) -> RpcError {
        RpcError {
            code: match self.cfg.era {
                Era::V2025_11_25 => RESOURCE_NOT_FOUND,
                Era::V2026_07_28 => INVALID_PARAMS,
            },
            reason: ErrorReason::ResourceNotFound,
        }
    }

    /// Cuts one page of `kind` for `auth`: the first page at the current version, a next page
    /// at its cursor's version (the current one, or a retained earlier one). Returns the page
    /// and the version it was cut from.
    fn page(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        cursor: Option<&crate::wire::Cursor>,
    ) -> Result<(Page, u64), RpcError> {
        let bound = self.cfg.strategy != ServerStrategy::OffsetCursor;
        let (offset, version, catalog) = match cursor {
            None => (0, self.version, self.catalog.clone()),
            Some(c) => {
                let sc = ServerCursor::decode(c).ok_or_else(RpcError::invalid_cursor)?;
                let (version, catalog) = if !bound {
                    (self.version, self.catalog.clone())
                } else if sc.auth != Some(auth) {
                    return Err(RpcError::invalid_cursor());
                } else {
                    match sc.version {
                        Some(v) if v == self.version => (v, self.catalog.clone()),
                        Some(v) => match self.retained.get(&v) {
                            Some(cat) => (v, cat.clone()),
                            None => return Err(RpcError::invalid_cursor()),
                        },
                        None => return Err(RpcError::invalid_cursor()),
                    }
                };
                (sc.offset as usize, version, catalog)
            }
        };
        // The visible list (`Catalog::visible`) is counted, then only the page is copied.
        let len = visible_entries(&catalog, kind, auth).count();
        if bound && (offset > len || (offset == len && offset != 0)) {
            return Err(RpcError::invalid_cursor());
        }
        // A bare-offset server slices whatever the list is now; past the end is an empty page.
        let offset = offset.min(len);
        let size = if self.cfg.page_size == 0 {
            len.max(1)
        } else {
            self.cfg.page_size as usize
        };
        let end = (offset + size).min(len);
        let next = (end < len).then(|| {
            ServerCursor {
                version: bound.then_some(version),
                auth: bound.then_some(auth),
                offset: end as u32,
            }
            .encode()
        });
        if next.is_some() && bound {
            self.retain(version, &catalog);
        }
        let era26 = self.cfg.era == Era::V2026_07_28;
        let page = Page {
            kind,
            items: visible_entries(&catalog, kind, auth)
                .skip(offset)
                .take(end - offset)
                .map(|(name, e)| Item {
                    name: name.clone(),
                    def: e.def.clone(),
                    scope: e.scope,
                })
                .collect(),
            next,
            version: bound.then_some(version),
            catalog: bound.then_some(self.cfg.catalog_id),
            ttl_ms: if era26 { self.cfg.ttl_ms } else { None },
            cache_scope: era26.then(|| {
                if catalog.varies_by_auth(kind) {
                    CacheScope::Private
                } else {
                    CacheScope::Public
                }
            }),
            version_bound: bound,
        };
        Ok((page, version))
    }

    /// Keeps serving cursors of `version` after later commits (the newest
    /// [`ServerConfig::retain_versions`] such versions; the oldest is dropped first).
    fn retain(&mut self, version: u64, catalog: &Arc<Catalog>) {
        let cap = usize::from(self.cfg.retain_versions);
        if cap == 0 || self.retained.contains_key(&version) {
            return;
        }
        self.retained.insert(version, catalog.clone());
        while self.retained.len() > cap {
            self.retained.pop_first();
        }
    }

    /// Dispatches a tool call: the tool must be in the registry, visible to the caller, and (unless
    /// `unvalidated-dispatch`) the call's arguments must fit its current input schema — a call
    /// built for an earlier schema is refused with -32602 naming the change (docs/design.md,
    /// "The schema-change race"). A call that says nothing of its arguments (schema 0) is not
    /// checked.
    fn call(
        &mut self,
        c: ClientId,
        auth: AuthCtx,
        name: Name,
        schema: u64,
        out: &mut Vec<ServerOutput>,
    ) -> Response {
        let view = match (self.cfg.strategy, self.sessions.get(&c)) {
            (
                ServerStrategy::StaleDispatch | ServerStrategy::LyingRegistry,
                Some(Session {
                    dispatch_view: Some(v),
                    ..
                }),
            ) => v.clone(),
            _ => self.catalog.clone(),
        };
        let checks = self.cfg.strategy != ServerStrategy::UnvalidatedDispatch;
        match view.get(Kind::Tools, &name) {
            Some(e)
                if e.scope.visible_to(auth)
                    && checks
                    && schema != 0
                    && schema != crate::vocab::schema_fingerprint(&e.def) =>
            {
                out.push(ServerOutput::Claim(Event::CallRejected {
                    client: c,
                    tool: name,
                }));
                Response::Error(RpcError {
                    code: INVALID_PARAMS,
                    reason: ErrorReason::SchemaChanged,
                })
            }
            Some(e) if e.scope.visible_to(auth) => {
                // The lying registry claims every tool it runs is present.
                let present = self.cfg.strategy == ServerStrategy::LyingRegistry
                    || self
                        .catalog
                        .get(Kind::Tools, &name)
                        .is_some_and(|e| e.scope.visible_to(auth));
                out.push(ServerOutput::Claim(Event::Dispatched {
                    client: c,
                    tool: name.clone(),
                    present,
                }));
                Response::ToolResult {
                    name,
                    def: e.def.clone(),
                }
            }
            _ => {
                out.push(ServerOutput::Claim(Event::CallRejected {
                    client: c,
                    tool: name,
                }));
                Response::Error(RpcError {
                    code: INVALID_PARAMS,
                    reason: ErrorReason::UnknownTool,
                })
            }
        }
    }
}

/// The kind whose `list_changed` covers `k` (templates are announced as resources).
pub fn group_of(k: Kind) -> Kind {
    k.notification_group()[0]
}

/// The notification groups whose visible lists differ between two catalogs.
pub fn changed_kinds(a: &Catalog, b: &Catalog) -> KindSet {
    Kind::ALL
        .into_iter()
        .filter(|k| {
            let of_kind = |((kk, _), _): &(&(Kind, Name), &Entry)| kk == k;
            !a.items
                .iter()
                .filter(of_kind)
                .eq(b.items.iter().filter(of_kind))
        })
        .map(group_of)
        .collect()
}

/// The notification groups whose list, as a request under `auth` sees it, differs between two
/// catalogs.
pub fn changed_kinds_for(a: &Catalog, b: &Catalog, auth: AuthCtx) -> KindSet {
    Kind::ALL
        .into_iter()
        .filter(|k| !visible_entries(a, *k, auth).eq(visible_entries(b, *k, auth)))
        .map(group_of)
        .collect()
}

/// The entries of the list a request of `kind` made under `auth` sees, in list order: the
/// items [`Catalog::visible`] copies out, read in place.
pub(crate) fn visible_entries(
    c: &Catalog,
    kind: Kind,
    auth: AuthCtx,
) -> impl Iterator<Item = (&Name, &Entry)> + '_ {
    c.items
        .iter()
        .skip_while(move |((k, _), _)| *k < kind)
        .take_while(move |((k, _), _)| *k == kind)
        .filter(move |(_, e)| e.scope.visible_to(auth))
        .map(|((_, name), e)| (name, e))
}

/// The list changes of one batch or install: in all, and as each session context sees them.
#[derive(Clone, Debug)]
struct Changes {
    any: KindSet,
    by_auth: BTreeMap<AuthCtx, KindSet>,
}

impl Changes {
    /// `kinds` changed for everyone.
    fn all(kinds: KindSet) -> Self {
        Changes {
            any: kinds,
            by_auth: BTreeMap::new(),
        }
    }

    /// The kinds a session with contexts `auths` is told of: what any of them sees change
    /// (every change when its contexts are unknown or too many).
    fn seen_by(&self, auths: &Contexts) -> KindSet {
        let Contexts::Used(auths) = auths else {
            return self.any;
        };
        let mut kinds = KindSet::EMPTY;
        for a in auths {
            match self.by_auth.get(a) {
                Some(k) => kinds = kinds.union(*k),
                None => return self.any,
            }
        }
        kinds
    }
}

/// Resource URIs whose content differs between two catalogs.
pub fn changed_contents(a: &Catalog, b: &Catalog) -> Vec<Name> {
    b.contents
        .iter()
        .filter(|(uri, text)| a.contents.get(*uri) != Some(text))
        .map(|(uri, _)| uri.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{Op, Scope};
    use crate::wire::Cursor;

    /// The groups whose lists differ between two catalogs, read in place, are the groups whose
    /// copied-out lists differ: in all (every scope) and as each context sees them.
    #[test]
    fn changed_groups_are_the_groups_whose_copied_lists_differ() {
        let only = |name: &str, def: &str, auth: u8| Op::Add {
            kind: Kind::Tools,
            name: name.into(),
            def: def.into(),
            scope: Scope::Only(AuthCtx(auth)),
        };
        let ops = [
            Op::add(Kind::Tools, "a", "a1"),
            only("s", "s1", 1),
            Op::add(Kind::Prompts, "p", "p1"),
            Op::add(Kind::ResourceTemplates, "r/{x}", "r1"),
            Op::update(Kind::Tools, "a", "a2"),
            only("s", "s2", 2),
            Op::remove(Kind::Prompts, "p"),
            Op::add(Kind::Resources, "file:///a", "f1"),
        ];
        let copied = |c: &Catalog, k: Kind| {
            c.items
                .iter()
                .filter(|((kk, _), _)| *kk == k)
                .map(|(key, e)| (key.clone(), e.clone()))
                .collect::<Vec<_>>()
        };
        let mut differ = 0;
        for i in 0..=ops.len() {
            for j in 0..=ops.len() {
                let (a, b) = (Catalog::from_ops(&ops[..i]), Catalog::from_ops(&ops[..j]));
                let any: KindSet = Kind::ALL
                    .into_iter()
                    .filter(|k| copied(&a, *k) != copied(&b, *k))
                    .map(group_of)
                    .collect();
                assert_eq!(changed_kinds(&a, &b), any, "{i} -> {j} ops");
                differ += usize::from(!any.is_empty());
                for auth in [AuthCtx(0), AuthCtx(1), AuthCtx(2)] {
                    let seen: KindSet = Kind::ALL
                        .into_iter()
                        .filter(|k| a.visible(*k, auth) != b.visible(*k, auth))
                        .map(group_of)
                        .collect();
                    assert_eq!(
                        changed_kinds_for(&a, &b, auth),
                        seen,
                        "{i} -> {j} ops, {auth}"
                    );
                }
            }
        }
        assert!(differ > ops.len(), "the catalogs mostly differ");
    }

    fn reg(strategy: ServerStrategy, page_size: u16) -> Registry {
        reg_with(ServerConfig {
            strategy,
            page_size,
            ..ServerConfig::default()
        })
    }

    fn reg_with(cfg: ServerConfig) -> Registry {
        let mut r = Registry::new(
            cfg,
            Catalog::from_ops(&[
                Op::add(Kind::Tools, "a", "a1"),
                Op::add(Kind::Tools, "b", "b1"),
                Op::add(Kind::Tools, "c", "c1"),
            ]),
        );
        let mut out = Vec::new();
        r.step(ServerInput::Connect(0), &mut out);
        r.step(
            ServerInput::Request(
                0,
                ClientMsg {
                    id: 0,
                    auth: AuthCtx(0),
                    req: Request::Initialize,
                },
            ),
            &mut out,
        );
        r
    }

    fn list(r: &mut Registry, cursor: Option<Cursor>) -> Response {
        let mut out = Vec::new();
        r.step(
            ServerInput::Request(
                0,
                ClientMsg {
                    id: 9,
                    auth: AuthCtx(0),
                    req: Request::List {
                        kind: Kind::Tools,
                        cursor,
                    },
                },
            ),
            &mut out,
        );
        out.into_iter()
            .find_map(|o| match o {
                ServerOutput::Send {
                    msg: ServerMsg::Response { resp, .. },
                    ..
                } => Some(resp),
                _ => None,
            })
            .expect("a response")
    }

    fn page(r: Response) -> Page {
        match r {
            Response::Page(p) => p,
            other => panic!("expected a page, got {other:?}"),
        }
    }

    fn apply(r: &mut Registry, ops: Vec<Op>) -> Vec<ServerOutput> {
        let mut out = Vec::new();
        r.step(ServerInput::Apply(ops.into()), &mut out);
        out
    }

    #[test]
    fn pages_are_bound_to_the_version() {
        // Without retained versions, a cursor of an earlier version is refused.
        let mut r = reg_with(ServerConfig {
            page_size: 2,
            retain_versions: 0,
            ..ServerConfig::default()
        });
        let p1 = page(list(&mut r, None));
        assert_eq!(p1.items.len(), 2);
        assert_eq!(p1.version, Some(1));
        assert!(p1.version_bound);
        apply(&mut r, vec![Op::add(Kind::Tools, "d", "d1")]);
        match list(&mut r, p1.next.clone()) {
            Response::Error(e) => assert_eq!(e, RpcError::invalid_cursor()),
            other => panic!("stale cursor accepted: {other:?}"),
        }
        // The reference server finishes a walk at its own version after a commit.
        let mut r = reg(ServerStrategy::Reference, 2);
        let p1 = page(list(&mut r, None));
        apply(&mut r, vec![Op::remove(Kind::Tools, "c")]);
        let p2 = page(list(&mut r, p1.next.clone()));
        assert_eq!(p2.version, Some(1));
        assert_eq!(&*p2.items[0].name, "c", "the walk sees v1 to its end");
        assert_eq!(page(list(&mut r, None)).version, Some(2));
        // Only the newest `retain_versions` walk versions are kept.
        let mut r = reg_with(ServerConfig {
            page_size: 1,
            retain_versions: 1,
            ..ServerConfig::default()
        });
        let old = page(list(&mut r, None));
        apply(&mut r, vec![Op::add(Kind::Tools, "d", "d1")]);
        let newer = page(list(&mut r, None));
        apply(&mut r, vec![Op::add(Kind::Tools, "e", "e1")]);
        assert!(matches!(list(&mut r, old.next), Response::Error(_)));
        assert_eq!(page(list(&mut r, newer.next)).version, Some(2));
        let mut r = reg(ServerStrategy::OffsetCursor, 2);
        let p1 = page(list(&mut r, None));
        apply(&mut r, vec![Op::remove(Kind::Tools, "a")]);
        let p2 = page(list(&mut r, p1.next));
        assert_eq!(p2.version, None);
        assert!(!p2.version_bound);
        // The walk saw [a, b] then [] although the list is now [b, c]: c was skipped.
        assert!(p2.items.is_empty());
    }

    #[test]
    fn one_notification_per_batch_after_commit() {
        let mut r = reg(ServerStrategy::Reference, 0);
        let out = apply(
            &mut r,
            vec![
                Op::add(Kind::Tools, "d", "d1"),
                Op::remove(Kind::Tools, "a"),
            ],
        );
        let commit = out
            .iter()
            .position(|o| matches!(o, ServerOutput::Claim(Event::Committed { .. })))
            .unwrap();
        let sends: Vec<_> = out
            .iter()
            .enumerate()
            .filter(|(_, o)| matches!(o, ServerOutput::Send { .. }))
            .collect();
        assert_eq!(sends.len(), 1);
        assert!(sends[0].0 > commit);
        assert_eq!(r.version(), 2);
        // An empty batch commits nothing.
        assert!(apply(&mut r, vec![Op::remove(Kind::Tools, "zz")]).is_empty());
        assert_eq!(r.version(), 2);

        let mut r = reg(ServerStrategy::NotifyPerMutation, 0);
        let out = apply(
            &mut r,
            vec![
                Op::add(Kind::Tools, "d", "d1"),
                Op::remove(Kind::Tools, "a"),
                // Changes nothing: not a mutation to announce.
                Op::update(Kind::Tools, "b", "b1"),
            ],
        );
        assert_eq!(
            out.iter()
                .filter(|o| matches!(o, ServerOutput::Send { .. }))
                .count(),
            2,
            "one list_changed per mutation that changed something"
        );
    }

    #[test]
    fn notify_before_commit_announces_an_invisible_version() {
        let mut r = reg(ServerStrategy::NotifyBeforeCommit, 0);
        let out = apply(&mut r, vec![Op::add(Kind::Tools, "d", "d1")]);
        assert!(out.iter().any(|o| matches!(
            o,
            ServerOutput::Claim(Event::Notified {
                announces: 2,
                visible: 1,
                ..
            })
        )));
        assert_eq!(page(list(&mut r, None)).items.len(), 3);
        r.step(ServerInput::CommitStaged, &mut Vec::new());
        assert_eq!(page(list(&mut r, None)).items.len(), 4);
        // Its only bug is the order: commits number versions as the reference does, a staged
        // batch landing first when another one comes.
        assert_eq!(r.version(), 2, "the staged batch is version 2");
        apply(&mut r, vec![Op::add(Kind::Tools, "e", "e1")]);
        apply(&mut r, vec![Op::add(Kind::Tools, "f", "f1")]);
        assert_eq!(r.version(), 3, "the staged e landed when f came");
        r.step(ServerInput::CommitStaged, &mut Vec::new());
        assert_eq!(r.version(), 4);
        assert_eq!(page(list(&mut r, None)).items.len(), 6);
    }

    #[test]
    fn calls_resolve_against_the_live_registry_unless_stale_dispatch() {
        for (strategy, ran) in [
            (ServerStrategy::Reference, false),
            (ServerStrategy::StaleDispatch, true),
        ] {
            let mut r = reg(strategy, 0);
            let a1 = r
                .catalog
                .get(Kind::Tools, "a")
                .expect("a listed")
                .def
                .clone();
            apply(&mut r, vec![Op::remove(Kind::Tools, "a")]);
            let mut out = Vec::new();
            r.step(
                ServerInput::Request(
                    0,
                    ClientMsg {
                        id: 3,
                        auth: AuthCtx(0),
                        req: Request::CallTool {
                            name: "a".into(),
                            schema: 0,
                        },
                    },
                ),
                &mut out,
            );
            // What the caller receives: the removed tool's result from a stale dispatch
            // table, -32602 unknown tool from the live registry.
            let responses: Vec<&Response> = out
                .iter()
                .filter_map(|o| match o {
                    ServerOutput::Send {
                        to: 0,
                        msg: ServerMsg::Response { id: 3, resp },
                        ..
                    } => Some(resp),
                    _ => None,
                })
                .collect();
            let expected = if ran {
                Response::ToolResult {
                    name: "a".into(),
                    def: a1,
                }
            } else {
                Response::Error(RpcError {
                    code: INVALID_PARAMS,
                    reason: ErrorReason::UnknownTool,
                })
            };
            assert_eq!(responses, [&expected], "{strategy}: {out:?}");
            // The registry's claim about itself agrees (the lying registry's would not).
            let dispatched = out.iter().any(|o| {
                matches!(
                    o,
                    ServerOutput::Claim(Event::Dispatched { present: false, .. })
                )
            });
            assert_eq!(dispatched, ran, "{strategy}");
        }
    }

    #[test]
    fn a_notify_on_list_server_announces_a_change_after_every_list() {
        let mut r = reg_with(ServerConfig {
            notify_on_list: true,
            ..ServerConfig::default()
        });
        let mut out = Vec::new();
        r.step(
            ServerInput::Request(
                0,
                ClientMsg {
                    id: 5,
                    auth: AuthCtx(0),
                    req: Request::List {
                        kind: Kind::Tools,
                        cursor: None,
                    },
                },
            ),
            &mut out,
        );
        let sends: Vec<&ServerMsg> = out
            .iter()
            .filter_map(|o| match o {
                ServerOutput::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .collect();
        assert!(matches!(sends[0], ServerMsg::Response { id: 5, .. }));
        assert!(matches!(
            sends[1],
            ServerMsg::Notification(Notification::ListChanged {
                kind: Kind::Tools,
                ..
            })
        ));
        assert_eq!(r.version(), 1, "nothing was committed");
    }

    /// Sends `req` under `auth` from client 0; the response and every output.
    fn ask(r: &mut Registry, auth: AuthCtx, req: Request) -> (Response, Vec<ServerOutput>) {
        let mut out = Vec::new();
        r.step(
            ServerInput::Request(0, ClientMsg { id: 7, auth, req }),
            &mut out,
        );
        let resp = out
            .iter()
            .find_map(|o| match o {
                ServerOutput::Send {
                    msg: ServerMsg::Response { resp, .. },
                    ..
                } => Some(resp.clone()),
                _ => None,
            })
            .expect("a response");
        (resp, out)
    }

    fn sent(out: &[ServerOutput]) -> Vec<&ServerMsg> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Send { msg, .. } => Some(msg),
                _ => None,
            })
            .collect()
    }

    /// Who is told of a batch: the clients whose list_changed goes out.
    /// Adding tool `name` (definition `def`) that only authorization context `auth` sees.
    fn tool_only(name: &str, def: &str, auth: u8) -> Op {
        Op::Add {
            kind: Kind::Tools,
            name: name.into(),
            def: def.into(),
            scope: Scope::Only(AuthCtx(auth)),
        }
    }

    fn told(out: &[ServerOutput]) -> Vec<ClientId> {
        out.iter()
            .filter_map(|o| match o {
                ServerOutput::Send {
                    to,
                    msg: ServerMsg::Notification(Notification::ListChanged { .. }),
                    ..
                } => Some(*to),
                _ => None,
            })
            .collect()
    }

    /// Client `c` sends each (auth, request) in turn.
    fn requests(r: &mut Registry, c: ClientId, reqs: Vec<(u8, Request)>) {
        let mut out = Vec::new();
        for (id, (auth, req)) in reqs.into_iter().enumerate() {
            let msg = ClientMsg {
                id: id as _,
                auth: AuthCtx(auth),
                req,
            };
            r.step(ServerInput::Request(c, msg), &mut out);
        }
    }

    fn list_tools() -> Request {
        Request::List {
            kind: Kind::Tools,
            cursor: None,
        }
    }

    #[test]
    fn a_change_one_context_cannot_see_notifies_only_the_sessions_that_can() {
        let mut r = reg(ServerStrategy::Reference, 0);
        list(&mut r, None);
        let mut out = Vec::new();
        r.step(ServerInput::Connect(1), &mut out);
        requests(&mut r, 1, vec![(1, Request::Initialize), (1, list_tools())]);
        let add = apply(&mut r, vec![tool_only("s", "s1", 1)]);
        assert_eq!(told(&add), vec![1], "only auth1 sees the added item");
        let public = apply(&mut r, vec![Op::add(Kind::Tools, "d", "d1")]);
        assert_eq!(told(&public), vec![0, 1], "everyone sees a public item");
        let remove = apply(&mut r, vec![Op::remove(Kind::Tools, "s")]);
        assert_eq!(told(&remove), vec![1], "only auth1 saw the removed item");
    }

    /// A client that switched from auth1 to auth0 and back can have its auth0 request reach the
    /// server last; a change only auth1 sees must still be announced to it (the machine
    /// simulator's seed 4616 found the session told by its latest request's context only).
    #[test]
    fn a_session_is_told_of_changes_any_context_it_listed_under_sees() {
        let mut r = reg(ServerStrategy::Reference, 0);
        list(&mut r, None);
        let mut out = Vec::new();
        r.step(ServerInput::Connect(1), &mut out);
        requests(
            &mut r,
            1,
            vec![
                (1, Request::Initialize),
                (1, list_tools()),
                (0, list_tools()),
            ],
        );
        let add = apply(&mut r, vec![tool_only("s", "s1", 1)]);
        assert_eq!(told(&add), vec![1], "client 1 listed under auth1");
        let other = apply(&mut r, vec![tool_only("t", "t1", 2)]);
        assert_eq!(
            told(&other),
            Vec::<ClientId>::new(),
            "nobody listed under auth2"
        );
    }

    /// Only list requests tell the server which lists a session holds: a call under another
    /// context does not make that context's changes news to the session, and a session that has
    /// listed nothing yet is told of every change.
    #[test]
    fn only_list_requests_add_a_context_to_a_session() {
        let mut r = reg(ServerStrategy::Reference, 0);
        let mut out = Vec::new();
        r.step(ServerInput::Connect(1), &mut out);
        requests(&mut r, 1, vec![(1, Request::Initialize)]);
        let unlisted = apply(&mut r, vec![tool_only("s", "s1", 1)]);
        assert_eq!(
            told(&unlisted),
            vec![0, 1],
            "neither session has listed yet"
        );
        list(&mut r, None);
        requests(
            &mut r,
            1,
            vec![
                (0, list_tools()),
                (
                    1,
                    Request::CallTool {
                        name: "s".into(),
                        schema: 0,
                    },
                ),
            ],
        );
        let auth1 = apply(&mut r, vec![Op::remove(Kind::Tools, "s")]);
        assert_eq!(
            told(&auth1),
            Vec::<ClientId>::new(),
            "both listed under auth0 only"
        );
    }

    /// A node installs only versions newer than both the one it serves and the one it has
    /// staged (announced, not yet loaded, as `cluster-notify-before-visible` does): an older
    /// event arriving late is ignored, also while one is staged.
    #[test]
    fn a_node_never_installs_a_version_older_than_its_staged_one() {
        let cat = |n: usize| {
            let ops: Vec<Op> = (0..n)
                .map(|i| Op::add(Kind::Tools, &format!("t{i}"), "d"))
                .collect();
            Arc::new(Catalog::from_ops(&ops))
        };
        for strategy in [
            ServerStrategy::Reference,
            ServerStrategy::ClusterNotifyBeforeVisible,
        ] {
            let mut r = reg(strategy, 0);
            let mut out = Vec::new();
            assert!(r.install(3, cat(5), &mut out), "{strategy}: v3 is new");
            assert!(!r.install(2, cat(4), &mut out), "{strategy}: v2 came late");
            assert!(!r.install(3, cat(5), &mut out), "{strategy}: v3 again");
            r.step(ServerInput::CommitStaged, &mut out);
            assert_eq!(r.version(), 3, "{strategy}");
            assert_eq!(page(list(&mut r, None)).items.len(), 5, "{strategy}");
        }
    }

    /// A session is told only of changes the contexts it listed under see, for up to
    /// [`MAX_SESSION_CONTEXTS`] contexts; past that, the server stops keeping them and tells
    /// it of every change.
    #[test]
    fn a_session_past_the_context_bound_is_told_of_every_change() {
        let mut r = reg(ServerStrategy::Reference, 0);
        let contexts = MAX_SESSION_CONTEXTS as u8;
        requests(
            &mut r,
            0,
            (0..contexts).map(|a| (a, list_tools())).collect(),
        );
        let unseen = apply(&mut r, vec![tool_only("s", "s1", contexts + 10)]);
        assert_eq!(
            told(&unseen),
            Vec::<ClientId>::new(),
            "{contexts} contexts are kept: none of them sees the change"
        );
        requests(&mut r, 0, vec![(contexts, list_tools())]);
        let past = apply(&mut r, vec![tool_only("t", "t1", contexts + 11)]);
        assert_eq!(told(&past), vec![0], "past the bound: told of every change");
    }

    /// Each `subscriptions/listen` stream gets its own id (a client tells its streams apart by
    /// it), across sessions and on a session that listens again.
    #[test]
    fn every_listen_stream_gets_a_new_id() {
        let mut r = reg_with(ServerConfig {
            era: Era::V2026_07_28,
            ..ServerConfig::default()
        });
        let mut out = Vec::new();
        r.step(ServerInput::Connect(1), &mut out);
        let listen = || Request::Listen {
            kinds: KindSet::only(Kind::Tools),
            uris: Vec::new(),
        };
        let mut out = Vec::new();
        for (c, id) in [(0, 1), (1, 2), (0, 3)] {
            let msg = ClientMsg {
                id,
                auth: AuthCtx(0),
                req: listen(),
            };
            r.step(ServerInput::Request(c, msg), &mut out);
        }
        let subs: Vec<SubId> = sent(&out)
            .into_iter()
            .filter_map(|m| match m {
                ServerMsg::Notification(Notification::Acknowledged { sub, .. }) => Some(*sub),
                _ => None,
            })
            .collect();
        assert_eq!(subs.len(), 3, "three acknowledgements: {subs:?}");
        let distinct: BTreeSet<SubId> = subs.iter().copied().collect();
        assert_eq!(distinct.len(), 3, "ids repeat: {subs:?}");
    }

    /// A version-bound cursor is only ever issued for an offset inside the list; a forged one
    /// at or past the end is refused, not answered with an empty last page.
    #[test]
    fn a_forged_cursor_at_or_past_the_end_is_refused() {
        let mut r = reg(ServerStrategy::Reference, 2);
        let issued = page(list(&mut r, None));
        assert!(issued.next.is_some(), "three tools, pages of two");
        for offset in [3, 4] {
            let forged = ServerCursor {
                version: Some(1),
                auth: Some(AuthCtx(0)),
                offset,
            }
            .encode();
            match list(&mut r, Some(forged)) {
                Response::Error(e) => assert_eq!(e, RpcError::invalid_cursor(), "offset {offset}"),
                other => panic!("forged cursor at offset {offset} accepted: {other:?}"),
            }
        }
        assert_eq!(
            page(list(&mut r, issued.next)).items.len(),
            1,
            "the issued one works"
        );
    }

    /// A rebuild that leaves the catalog as it was commits nothing and announces nothing; the
    /// known-bad `notify-on-noop` announces every list it has (here, tools) after it, and after a
    /// change one context sees, to everyone.
    #[test]
    fn a_no_op_rebuild_is_announced_only_by_notify_on_noop() {
        for (strategy, rebuild, hidden) in [
            (ServerStrategy::Reference, vec![], vec![]),
            (ServerStrategy::NotifyOnNoop, vec![0], vec![0]),
        ] {
            let mut r = reg(strategy, 0);
            list(&mut r, None);
            let out = apply(&mut r, vec![Op::update(Kind::Tools, "a", "a1")]);
            assert_eq!(told(&out), rebuild, "{strategy}: rebuild");
            assert_eq!(r.version(), 1, "{strategy}: a rebuild is no new version");
            let out = apply(&mut r, vec![tool_only("s", "s1", 1)]);
            assert_eq!(told(&out), hidden, "{strategy}: a change only auth1 sees");
        }
    }

    #[test]
    fn calls_gets_reads_and_subscriptions_answer_only_what_the_caller_may_see() {
        let mut r = reg(ServerStrategy::Reference, 0);
        let only1 = Scope::Only(AuthCtx(1));
        apply(
            &mut r,
            vec![
                Op::Add {
                    kind: Kind::Tools,
                    name: "s".into(),
                    def: "s1".into(),
                    scope: only1,
                },
                Op::Add {
                    kind: Kind::Prompts,
                    name: "p".into(),
                    def: "p1".into(),
                    scope: only1,
                },
                Op::Add {
                    kind: Kind::Resources,
                    name: "file:///s".into(),
                    def: "s".into(),
                    scope: only1,
                },
            ],
        );
        let call = || Request::CallTool {
            name: "s".into(),
            schema: 0,
        };
        let get = || Request::GetPrompt { name: "p".into() };
        let read = || Request::ReadResource {
            uri: "file:///s".into(),
        };
        let subscribe = || Request::Subscribe {
            uri: "file:///s".into(),
        };
        for req in [call(), get(), read(), subscribe()] {
            let (resp, out) = ask(&mut r, AuthCtx(0), req.clone());
            assert!(
                matches!(resp, Response::Error(_)),
                "{req:?} under auth0 answered {resp:?}"
            );
            assert!(
                !out.iter()
                    .any(|o| matches!(o, ServerOutput::Claim(Event::Dispatched { .. }))),
                "{req:?} under auth0 ran something"
            );
        }
        assert!(matches!(
            ask(&mut r, AuthCtx(1), call()).0,
            Response::ToolResult { .. }
        ));
        assert!(matches!(
            ask(&mut r, AuthCtx(1), get()).0,
            Response::Prompt { .. }
        ));
        assert!(matches!(
            ask(&mut r, AuthCtx(1), read()).0,
            Response::Content { .. }
        ));
        assert_eq!(ask(&mut r, AuthCtx(1), subscribe()).0, Response::Subscribed);
    }

    #[test]
    fn a_content_change_tells_the_subscriber_and_changes_no_list() {
        let mut r = reg(ServerStrategy::Reference, 0);
        apply(&mut r, vec![Op::add(Kind::Resources, "file:///r", "r1")]);
        let uri = || Name::from("file:///r");
        assert_eq!(
            ask(&mut r, AuthCtx(0), Request::Subscribe { uri: uri() }).0,
            Response::Subscribed
        );
        let v = r.version();
        let out = apply(
            &mut r,
            vec![Op::SetContent {
                uri: uri(),
                text: "hello".into(),
            }],
        );
        assert_eq!(r.version(), v + 1, "a content change is a commit");
        assert_eq!(
            sent(&out),
            [&ServerMsg::Notification(Notification::ResourceUpdated {
                uri: uri(),
                sub: None,
            })],
            "one resources/updated to the subscriber, no list_changed"
        );
        match ask(&mut r, AuthCtx(0), Request::ReadResource { uri: uri() }).0 {
            Response::Content { text, .. } => assert_eq!(&*text, "hello"),
            other => panic!("read after the change answered {other:?}"),
        }
        // Setting the same content again is no change: no version, no notification.
        let out = apply(
            &mut r,
            vec![Op::SetContent {
                uri: uri(),
                text: "hello".into(),
            }],
        );
        assert!(out.is_empty(), "{out:?}");
        assert_eq!(r.version(), v + 1);
    }
}
