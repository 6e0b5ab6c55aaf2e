//! The plumbing both clients share: the handshake of each protocol era, request ids, the
//! published snapshot and the history events listsync's properties are stated over. What to do
//! when the tool list changed is each client's own ([`crate::LastResponseWins`],
//! [`crate::Coalescing`]).

use listsync_core::client::{
    CallError, ClientConfig, ClientError, ClientInput, ClientOutput, Snapshot,
};
use listsync_core::history::{Cause, ClientId, Event, RefreshOutcome, Restart};
use listsync_core::vocab::{AuthCtx, Era, Item, Kind, KindSet, Name, schema_fingerprint};
use listsync_core::wire::{
    ClientMsg, ErrorReason, Notification, Page, ReqId, Request, Response, ServerMsg, SubId,
};
use std::collections::BTreeMap;
use std::sync::Arc;

/// Where the connection stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Phase {
    /// Not connected.
    Offline,
    /// (2025-11-25) `initialize` sent.
    Handshake,
    /// (2026-07-28) `subscriptions/listen` sent, not acknowledged yet.
    Listening,
    /// Lists can be asked for.
    Ready,
}

/// What a request was for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Pending {
    Initialize,
    Listen,
    /// A page of the tool list for walk `refresh`.
    Page(u32),
    Call(Name),
}

/// What an input means for the tool list, once the plumbing has handled it.
#[derive(Debug)]
pub enum Happened {
    /// Nothing for the list.
    Nothing,
    /// The connection is ready (handshake done, or listen acknowledged): list now.
    Ready,
    /// The server says the tool list changed.
    Changed,
    /// A page of the tool list arrived, answering request `id`.
    Page { id: ReqId, page: Page },
    /// The server refused the cursor of request `id` (the list changed under the walk).
    CursorRefused { id: ReqId },
    /// List request `id` failed otherwise.
    Failed { id: ReqId, why: ClientError },
    /// The connection is gone; every request with it.
    Lost,
    /// A retry timer fired.
    RetryDue,
    /// The list's `ttlMs` ran out, or the application asked for a refresh.
    Refetch,
}

/// One client connection's plumbing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    pub id: ClientId,
    pub cfg: Arc<ClientConfig>,
    pub phase: Phase,
    next_req: ReqId,
    next_refresh: u32,
    pending: BTreeMap<ReqId, Pending>,
    sub: Option<SubId>,
    /// The tool list the application reads.
    pub snapshot: Option<Snapshot>,
}

impl std::hash::Hash for Connection {
    /// Everything but the id and the configuration (interchangeable clients hash alike).
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.phase.hash(h);
        self.next_req.hash(h);
        self.next_refresh.hash(h);
        self.pending.hash(h);
        self.sub.hash(h);
        self.snapshot.hash(h);
    }
}

impl Connection {
    pub fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        Connection {
            id,
            cfg,
            phase: Phase::Offline,
            next_req: 1,
            next_refresh: 0,
            pending: BTreeMap::new(),
            sub: None,
            snapshot: None,
        }
    }

    /// Whether no request is outstanding.
    pub fn quiet(&self) -> bool {
        self.pending.is_empty()
    }

    fn send(&mut self, req: Request, what: Pending, out: &mut Vec<ClientOutput>) -> ReqId {
        let id = self.next_req;
        self.next_req += 1;
        self.pending.insert(id, what);
        let auth = self.cfg.auth;
        out.push(ClientOutput::Send(ClientMsg { id, auth, req }));
        id
    }

    /// Starts a walk of the tool list: its first page request. Returns (refresh, request).
    pub fn start_walk(&mut self, cause: Cause, out: &mut Vec<ClientOutput>) -> (u32, ReqId) {
        let refresh = self.next_refresh;
        self.next_refresh += 1;
        let (client, auth) = (self.id, self.cfg.auth);
        let kinds = KindSet::only(Kind::Tools);
        out.push(ClientOutput::Event(Event::Woken {
            client,
            kinds,
            cause,
        }));
        let kind = Kind::Tools;
        out.push(ClientOutput::Event(Event::RefreshStarted {
            client,
            kind,
            auth,
            refresh,
        }));
        (refresh, self.page(refresh, None, out))
    }

    /// Starts walk `refresh` again at its first page.
    pub fn restart_walk(
        &mut self,
        refresh: u32,
        reason: Restart,
        out: &mut Vec<ClientOutput>,
    ) -> ReqId {
        let (client, kind) = (self.id, Kind::Tools);
        out.push(ClientOutput::Event(Event::WalkRestarted {
            client,
            kind,
            refresh,
            reason,
        }));
        self.page(refresh, None, out)
    }

    /// Asks for a page of walk `refresh`.
    pub fn page(
        &mut self,
        refresh: u32,
        cursor: Option<listsync_core::wire::Cursor>,
        out: &mut Vec<ClientOutput>,
    ) -> ReqId {
        let kind = Kind::Tools;
        self.send(Request::List { kind, cursor }, Pending::Page(refresh), out)
    }

    /// Ends walk `refresh`.
    pub fn end_walk(&self, refresh: u32, outcome: RefreshOutcome, out: &mut Vec<ClientOutput>) {
        let (client, kind, auth) = (self.id, Kind::Tools, self.cfg.auth);
        out.push(ClientOutput::Event(Event::RefreshEnded {
            client,
            kind,
            auth,
            refresh,
            outcome,
        }));
    }

    /// Publishes `items` (version `version`) as the list the application reads.
    pub fn publish(
        &mut self,
        items: Vec<Item>,
        version: Option<u64>,
        ttl_ms: Option<u32>,
        out: &mut Vec<ClientOutput>,
    ) {
        let items: Arc<[Item]> = items.into();
        let (client, kind, auth) = (self.id, Kind::Tools, self.cfg.auth);
        out.push(ClientOutput::Event(Event::Published {
            client,
            kind,
            auth,
            items: items.clone(),
            version,
        }));
        self.snapshot = Some(Snapshot {
            items,
            version,
            catalog: None,
            epoch: 0,
            stale: false,
            ttl_ms,
        });
    }

    /// Handles the plumbing of `input` and says what it means for the tool list.
    pub fn input(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) -> Happened {
        match input {
            ClientInput::Start if self.phase == Phase::Offline => {
                match self.cfg.era {
                    Era::V2025_11_25 => {
                        self.phase = Phase::Handshake;
                        self.send(Request::Initialize, Pending::Initialize, out);
                    }
                    Era::V2026_07_28 => {
                        self.phase = Phase::Listening;
                        let kinds = KindSet::only(Kind::Tools);
                        let uris = Vec::new();
                        self.send(Request::Listen { kinds, uris }, Pending::Listen, out);
                    }
                }
                Happened::Nothing
            }
            ClientInput::Receive(ServerMsg::Response { id, resp }) => {
                match self.pending.remove(&id) {
                    None => Happened::Nothing,
                    Some(Pending::Initialize) => match resp {
                        Response::Initialized { .. } => {
                            self.phase = Phase::Ready;
                            Happened::Ready
                        }
                        _ => {
                            self.phase = Phase::Offline;
                            Happened::Nothing
                        }
                    },
                    Some(Pending::Listen) => {
                        self.phase = Phase::Offline;
                        Happened::Nothing
                    }
                    Some(Pending::Page(_)) => match resp {
                        Response::Page(page) if page.kind == Kind::Tools => {
                            Happened::Page { id, page }
                        }
                        Response::Error(e) if e.reason == ErrorReason::InvalidCursor => {
                            Happened::CursorRefused { id }
                        }
                        Response::Error(e) => Happened::Failed {
                            id,
                            why: ClientError::Rpc(e),
                        },
                        _ => Happened::Failed {
                            id,
                            why: ClientError::UnexpectedResponse(
                                "not a page of the tool list".into(),
                            ),
                        },
                    },
                    Some(Pending::Call(name)) => {
                        let result = match resp {
                            Response::ToolResult { def, .. } => Ok(def),
                            Response::Error(e) => Err(CallError::Rpc(e)),
                            _ => Err(CallError::Transport("unexpected answer to a call".into())),
                        };
                        let auth = self.cfg.auth;
                        out.push(ClientOutput::CallDone { name, auth, result });
                        Happened::Nothing
                    }
                }
            }
            ClientInput::Receive(ServerMsg::Notification(n)) => match n {
                Notification::Acknowledged { sub, kinds } if self.phase == Phase::Listening => {
                    self.pending.retain(|_, p| *p != Pending::Listen);
                    self.sub = Some(sub);
                    self.phase = Phase::Ready;
                    let client = self.id;
                    out.push(ClientOutput::Event(Event::ListenAcked { client, kinds }));
                    Happened::Ready
                }
                Notification::ListChanged { kind, sub }
                    if self.phase == Phase::Ready
                        && kind.notification_group().contains(&Kind::Tools)
                        && (sub.is_none() || sub == self.sub) =>
                {
                    Happened::Changed
                }
                _ => Happened::Nothing,
            },
            ClientInput::Disconnected => {
                self.phase = Phase::Offline;
                self.sub = None;
                for (_, p) in std::mem::take(&mut self.pending) {
                    if let Pending::Call(name) = p {
                        let auth = self.cfg.auth;
                        let result = Err(CallError::Transport("connection lost".into()));
                        out.push(ClientOutput::CallDone { name, auth, result });
                    }
                }
                if let Some(s) = &mut self.snapshot {
                    s.stale = true;
                }
                Happened::Lost
            }
            ClientInput::StreamLost
                if self.phase == Phase::Ready && self.cfg.era == Era::V2026_07_28 =>
            {
                // Listen again; list once the new stream is acknowledged.
                self.sub = None;
                self.pending.retain(|_, p| *p != Pending::Listen);
                self.phase = Phase::Listening;
                let kinds = KindSet::only(Kind::Tools);
                self.send(
                    Request::Listen {
                        kinds,
                        uris: Vec::new(),
                    },
                    Pending::Listen,
                    out,
                );
                Happened::Nothing
            }
            ClientInput::RequestFailed(id, why) | ClientInput::InvalidResponse(id, why) => {
                match self.pending.remove(&id) {
                    Some(Pending::Page(_)) => Happened::Failed {
                        id,
                        why: ClientError::Transport(why),
                    },
                    Some(Pending::Call(name)) => {
                        let auth = self.cfg.auth;
                        let result = Err(CallError::Transport(why));
                        out.push(ClientOutput::CallDone { name, auth, result });
                        Happened::Nothing
                    }
                    Some(Pending::Initialize | Pending::Listen) => {
                        self.phase = Phase::Offline;
                        Happened::Nothing
                    }
                    None => Happened::Nothing,
                }
            }
            ClientInput::RetryDue(Kind::Tools, _) => Happened::RetryDue,
            ClientInput::TtlExpired(Kind::Tools) | ClientInput::Refresh(Kind::Tools)
                if self.phase == Phase::Ready =>
            {
                Happened::Refetch
            }
            ClientInput::CallTool(name) => {
                self.call(name, out);
                Happened::Nothing
            }
            _ => Happened::Nothing,
        }
    }

    /// The application calls a tool: it goes out only while connected, and only if the
    /// published list shows it, with the schema the list shows.
    fn call(&mut self, name: Name, out: &mut Vec<ClientOutput>) {
        let auth: AuthCtx = self.cfg.auth;
        if self.phase != Phase::Ready {
            let result = Err(CallError::Transport("not connected".into()));
            out.push(ClientOutput::CallDone { name, auth, result });
            return;
        }
        let listed = self
            .snapshot
            .as_ref()
            .and_then(|s| s.items.iter().find(|i| i.name == name))
            .map(|i| schema_fingerprint(&i.def));
        match listed {
            Some(schema) => {
                let req = Request::CallTool {
                    name: name.clone(),
                    schema,
                };
                self.send(req, Pending::Call(name), out);
            }
            None => {
                let result = Err(CallError::NotInSnapshot);
                out.push(ClientOutput::CallDone { name, auth, result });
            }
        }
    }
}
