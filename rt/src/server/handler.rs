//! The rmcp side of the server: a hand-written [`ServerHandler`] that turns every request into
//! a registry input (a panic while stepping becomes a -32603 reply, not a request rmcp never
//! answers).
//!
//! Eras: a 2026-07-28 server supports only that version (so `initialize` fails). A 2025-11-25
//! server lets rmcp accept every known version but answers `server/discover` with -32601 (so an
//! rmcp client in `Auto` mode falls back to `initialize` instead of failing on -32022) and
//! refuses any request on a connection that did not `initialize` — it could not deliver
//! notifications to such a client, and a server never advertises what it cannot deliver.
//!
//! Sessions: a 2025-11-25 session is registered in the overridden `initialize`, which rmcp runs
//! inline before it sends the `InitializeResult` — unlike `on_initialized`, which is spawned and
//! may run after the client's first list (a lost wakeup). A 2026-07-28 listen stream is
//! registered in `accepted_subscription_filter`, which rmcp calls in the same task just before
//! it sends the acknowledgement; notifications committed before the sink exists wait in the
//! session's outlet and are flushed when `listen` attaches the sink. So a change committed after
//! the acknowledgement always reaches the stream.

use super::reply;
use super::{Outlet, Shared, lock};
#[cfg(feature = "harness")]
use crate::gate::{GateTarget, Phase};
use crate::panic::catch;
use listsync_core::history::ClientId;
use listsync_core::server::ServerInput;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_core::wire::{ClientMsg, Cursor, Request, Response};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, DiscoverRequestMethod, DiscoverResult,
    GetPromptRequestParams, GetPromptResponse, Implementation, InitializeRequestParams,
    InitializeResult, ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RoleServer, SubscriptionContext};
use rmcp::{ErrorData as McpError, ServerHandler};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// What one connection (or one stateless HTTP request) owns in the registry. Dropping it (when
/// rmcp drops the handler at the end of the connection) disconnects its sessions.
pub(crate) struct Conn {
    shared: Arc<Shared>,
    session: Mutex<Option<ClientId>>,
    /// Whether this connection completed `initialize` (2025-11-25).
    initialized: std::sync::atomic::AtomicBool,
    /// Listen sessions registered in `accepted_subscription_filter`, keyed by the task that
    /// will run `listen` for them.
    pending_listens: Mutex<HashMap<tokio::task::Id, ClientId>>,
    owned: Mutex<Vec<ClientId>>,
    /// The authorization context (and principal) of the connection's first request: every
    /// later request must be made under the same one (a session cannot switch context).
    pinned: Mutex<Option<Caller>>,
}

/// Who a request comes from: its authorization context and, over authenticated HTTP, the
/// principal's name.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Caller {
    auth: AuthCtx,
    principal: Option<Arc<str>>,
}

impl Conn {
    fn new(shared: Arc<Shared>) -> Self {
        Conn {
            shared,
            session: Mutex::new(None),
            initialized: std::sync::atomic::AtomicBool::new(false),
            pending_listens: Mutex::new(HashMap::new()),
            owned: Mutex::new(Vec::new()),
            pinned: Mutex::new(None),
        }
    }

    /// Pins the connection to its first caller; refuses a later request from another one.
    fn admit_caller(&self, caller: Caller) -> Result<AuthCtx, McpError> {
        let mut pinned = lock(&self.pinned);
        match &*pinned {
            None => {
                let auth = caller.auth;
                *pinned = Some(caller);
                Ok(auth)
            }
            Some(p) if *p == caller => Ok(caller.auth),
            Some(_) => Err(McpError::invalid_request(
                "this session belongs to another authorization context",
                None,
            )),
        }
    }

    /// This connection's session (connected on first use).
    fn session(&self) -> ClientId {
        let mut s = lock(&self.session);
        *s.get_or_insert_with(|| self.new_session())
    }

    fn new_session(&self) -> ClientId {
        let c = self.shared.connect();
        lock(&self.owned).push(c);
        c
    }

    fn end_session(&self, c: ClientId) {
        lock(&self.owned).retain(|o| *o != c);
        self.shared.disconnect(c);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        let owned = std::mem::take(&mut *lock(&self.owned));
        for c in owned {
            self.shared.disconnect(c);
        }
    }
}

/// The reference server's rmcp handler for one connection.
pub struct Handler {
    shared: Arc<Shared>,
    conn: Conn,
    /// The authorization context of every request on this connection, if fixed.
    auth: Option<AuthCtx>,
}

impl Handler {
    pub(crate) fn new(shared: Arc<Shared>, auth: Option<AuthCtx>) -> Self {
        Handler {
            conn: Conn::new(shared.clone()),
            shared,
            auth,
        }
    }

    fn era(&self) -> Era {
        self.shared.era()
    }

    /// Refuses a request a 2025-11-25 server cannot serve: one on a connection that did not
    /// `initialize` (an inline 2026-07-28 request, or a stateless HTTP request).
    fn admit(&self, ctx: &RequestContext<RoleServer>) -> Result<(), McpError> {
        if self.era() != Era::V2025_11_25
            || self
                .conn
                .initialized
                .load(std::sync::atomic::Ordering::SeqCst)
        {
            return Ok(());
        }
        match ctx.meta.protocol_version() {
            Some(v) => Err(McpError::unsupported_protocol_version(
                v,
                ProtocolVersion::known_up_to(&ProtocolVersion::V_2025_11_25),
            )),
            None => Err(McpError::invalid_request(
                "this server speaks 2025-11-25: send initialize first",
                None,
            )),
        }
    }

    /// Serves one request through the registry, passing the request gates (feature `harness`)
    /// on the way in and out.
    async fn serve(
        &self,
        ctx: &RequestContext<RoleServer>,
        req: Request,
    ) -> Result<Response, McpError> {
        self.admit(ctx)?;
        let auth = match self.auth {
            Some(auth) => auth,
            None => self.conn.admit_caller(caller_of(ctx))?,
        };
        match catch(self.serve_admitted(auth, req)).await {
            Ok(resp) => Ok(resp),
            Err(panic) => Err(McpError::internal_error(
                format!("handler panicked: {panic}"),
                None,
            )),
        }
    }

    async fn serve_admitted(&self, auth: AuthCtx, req: Request) -> Response {
        #[cfg(feature = "harness")]
        let method = req.method().to_owned();
        #[cfg(feature = "harness")]
        let gate = |phase| GateTarget::Request {
            method: method.clone(),
            phase,
        };
        #[cfg(feature = "harness")]
        self.shared.gates.checkpoint(&gate(Phase::Before)).await;
        let call = match &req {
            Request::CallTool { name, .. } => Some(name.to_string()),
            _ => None,
        };
        let c = self.conn.session();
        let resp = self.shared.request(c, auth, req).await;
        if let (Some(tool), Response::ToolResult { .. }) = (call, &resp) {
            #[cfg(feature = "harness")]
            self.shared
                .gates
                .checkpoint(&GateTarget::Call { tool: tool.clone() })
                .await;
            self.shared.notice(super::ServerNotice::CallDone { tool });
        }
        #[cfg(feature = "harness")]
        self.shared.gates.checkpoint(&gate(Phase::After)).await;
        resp
    }

    fn list(kind: Kind, req: Option<PaginatedRequestParams>) -> Request {
        Request::List {
            kind,
            cursor: req.and_then(|p| p.cursor).map(|c| Cursor(c.into())),
        }
    }

    fn capabilities(&self) -> ServerCapabilities {
        ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .enable_prompts()
            .enable_prompts_list_changed()
            .enable_resources()
            .enable_resources_list_changed()
            .enable_resources_subscribe()
            .build()
    }

    /// Registers a listen stream in the registry (its notifications queue until `listen`
    /// attaches the sink).
    /// `auth` is the caller's context if known; an unknown one is told of every change until
    /// [`Handler::listen`] learns it.
    fn register_listen(&self, accepted: &SubscriptionFilter, auth: Option<AuthCtx>) -> ClientId {
        let c = self.conn.new_session();
        lock(&self.shared.outlets).insert(c, Outlet::Pending(Vec::new()));
        let mut kinds = KindSet::EMPTY;
        for (flag, kind) in [
            (accepted.tools_list_changed, Kind::Tools),
            (accepted.prompts_list_changed, Kind::Prompts),
            (accepted.resources_list_changed, Kind::Resources),
        ] {
            if flag == Some(true) {
                kinds = kinds.with(kind);
            }
        }
        let uris = accepted
            .resource_subscriptions
            .iter()
            .flatten()
            .map(|u| u.as_str().into())
            .collect();
        // The registry answers with its own acknowledgement, which rmcp already sent for us.
        self.shared.step(ServerInput::Request(
            c,
            ClientMsg {
                id: 0,
                auth: auth.unwrap_or(AuthCtx(0)),
                req: Request::Listen { kinds, uris },
            },
        ));
        if auth.is_none() {
            self.shared.step(ServerInput::Identified(c, None));
        }
        c
    }
}

/// Who made a request: over HTTP, the principal the endpoint authenticated
/// ([`super::http_guard`]); everything else (stdio, in-memory connections) is context 0.
fn caller_of(ctx: &RequestContext<RoleServer>) -> Caller {
    #[cfg(feature = "http")]
    if let Some(p) = ctx
        .extensions
        .get::<http::request::Parts>()
        .and_then(|parts| parts.extensions.get::<super::tokens::Principal>())
    {
        return Caller {
            auth: p.auth,
            principal: Some(p.name.clone()),
        };
    }
    let _ = ctx;
    Caller {
        auth: AuthCtx(0),
        principal: None,
    }
}

impl ServerHandler for Handler {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(self.capabilities());
        info.server_info = Implementation::new(
            self.shared.settings.name.clone(),
            env!("CARGO_PKG_VERSION").to_owned(),
        );
        info.protocol_version = match self.era() {
            Era::V2025_11_25 => ProtocolVersion::V_2025_11_25,
            Era::V2026_07_28 => ProtocolVersion::V_2026_07_28,
        };
        info
    }

    fn supported_protocol_versions(&self) -> Cow<'static, [ProtocolVersion]> {
        match self.era() {
            // Every version passes rmcp's check, so `server/discover` reaches `discover` below
            // (-32601); inline requests are refused in `admit`.
            Era::V2025_11_25 => Cow::Borrowed(ProtocolVersion::KNOWN_VERSIONS),
            Era::V2026_07_28 => Cow::Owned(vec![ProtocolVersion::V_2026_07_28]),
        }
    }

    async fn discover(&self, ctx: RequestContext<RoleServer>) -> Result<DiscoverResult, McpError> {
        let _ = ctx;
        match self.era() {
            Era::V2025_11_25 => Err(McpError::method_not_found::<DiscoverRequestMethod>()),
            Era::V2026_07_28 => Ok(DiscoverResult::from_server_info(
                self.supported_protocol_versions().into_owned(),
                self.get_info(),
            )),
        }
    }

    async fn initialize(
        &self,
        req: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // Fails for a 2026-07-28 server: no supported version has a handshake.
        let result = self.negotiate_initialize(&req)?;
        ctx.peer.set_peer_info(req);
        let c = self.conn.session();
        // The outlet first: a commit right after the registry marks the session initialized
        // must find where to send.
        self.shared.attach(c, Outlet::Peer(ctx.peer.clone())).await;
        self.conn
            .initialized
            .store(true, std::sync::atomic::Ordering::SeqCst);
        match self.serve(&ctx, Request::Initialize).await? {
            Response::Initialized { .. } => Ok(result),
            Response::Error(e) => Err(reply::error(&e)),
            other => Err(McpError::internal_error(
                format!("registry answered initialize with {other:?}"),
                None,
            )),
        }
    }

    async fn list_tools(
        &self,
        req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        reply::tools(self.serve(&ctx, Self::list(Kind::Tools, req)).await?)
    }

    async fn list_prompts(
        &self,
        req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        reply::prompts(self.serve(&ctx, Self::list(Kind::Prompts, req)).await?)
    }

    async fn list_resources(
        &self,
        req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        reply::resources(self.serve(&ctx, Self::list(Kind::Resources, req)).await?)
    }

    async fn list_resource_templates(
        &self,
        req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        reply::templates(
            self.serve(&ctx, Self::list(Kind::ResourceTemplates, req))
                .await?,
        )
    }

    async fn call_tool(
        &self,
        req: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let tool = req.name.to_string();
        let req = Request::CallTool {
            name: tool.as_str().into(),
            // rmcp moves a request's `_meta` into the context; a transport that does not leaves
            // it in the params.
            schema: match reply::schema_of(Some(&ctx.meta)) {
                0 => reply::schema_of(req.meta.as_ref()),
                s => s,
            },
        };
        let result = reply::call(self.serve(&ctx, req).await?)?;
        if let Some(effects) = &self.shared.settings.call_effects {
            let server = super::Server {
                shared: self.shared.clone(),
            };
            if let Some(batch) = effects.batch(&tool, &server.catalog()) {
                server.apply(&batch).await;
            }
        }
        Ok(result.into())
    }

    async fn get_prompt(
        &self,
        req: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let req = Request::GetPrompt {
            name: req.name.as_str().into(),
        };
        reply::prompt(self.serve(&ctx, req).await?).map(Into::into)
    }

    async fn read_resource(
        &self,
        req: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let req = Request::ReadResource {
            uri: req.uri.as_str().into(),
        };
        reply::read(self.serve(&ctx, req).await?).map(Into::into)
    }

    async fn subscribe(
        &self,
        req: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let req = Request::Subscribe {
            uri: req.uri.as_str().into(),
        };
        reply::subscribed(self.serve(&ctx, req).await?)
    }

    async fn unsubscribe(
        &self,
        _req: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        // Core's registry keeps subscriptions for the session's lifetime; an unsubscribed
        // client ignores the updates it still gets.
        Ok(())
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        if self.era() != Era::V2026_07_28 {
            return None;
        }
        // Register now, before rmcp sends the acknowledgement, with exactly what rmcp will
        // accept (requested ∩ advertised).
        let accepted = requested.supported_by(&self.capabilities());
        // rmcp does not show this call the request: the caller is known only if the
        // connection is bound to one.
        let known = self
            .auth
            .or_else(|| lock(&self.conn.pinned).as_ref().map(|p| p.auth));
        let c = self.register_listen(&accepted, known);
        match tokio::task::try_id() {
            Some(task) => {
                lock(&self.conn.pending_listens).insert(task, c);
            }
            None => self.conn.end_session(c), // `listen` registers late and catches up
        }
        Some(requested.clone())
    }

    async fn listen(&self, ctx: SubscriptionContext) -> Result<(), McpError> {
        let registered =
            tokio::task::try_id().and_then(|task| lock(&self.conn.pending_listens).remove(&task));
        let auth = match self.auth {
            Some(auth) => auth,
            None => match self.conn.admit_caller(caller_of(ctx.request_context())) {
                Ok(auth) => auth,
                Err(refused) => {
                    if let Some(c) = registered {
                        self.conn.end_session(c);
                    }
                    return Err(refused);
                }
            },
        };
        let c = match registered {
            Some(c) => c,
            None => {
                // Registered only now: a commit since the acknowledgement could be missed, so
                // announce every accepted list once (over-notifying is sound). The catch-up
                // announces the ground truth as of just before the stream was registered (a
                // commit after that notifies the stream by itself, announcing its own version).
                let announces = self.shared.truth_version();
                let c = self.register_listen(ctx.accepted(), Some(auth));
                let a = ctx.accepted();
                let mut catch_up = Vec::new();
                for (flag, kind) in [
                    (a.tools_list_changed, Kind::Tools),
                    (a.prompts_list_changed, Kind::Prompts),
                    (a.resources_list_changed, Kind::Resources),
                ] {
                    if flag == Some(true) {
                        catch_up.push(super::Tagged {
                            note: listsync_core::wire::Notification::ListChanged {
                                kind,
                                sub: None,
                            },
                            announces,
                        });
                    }
                }
                if let Some(Outlet::Pending(q)) = lock(&self.shared.outlets).get_mut(&c) {
                    q.extend(catch_up);
                }
                c
            }
        };
        // From now on the stream hears only of changes its caller can see.
        self.shared.step(ServerInput::Identified(c, Some(auth)));
        self.shared
            .attach(c, Outlet::Sink(ctx.sink().clone()))
            .await;
        ctx.cancelled().await;
        self.conn.end_session(c);
        Ok(())
    }

    async fn on_initialized(&self, _ctx: NotificationContext<RoleServer>) {}
}
