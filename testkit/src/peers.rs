//! Fake MCP servers for the tests that need a server to misbehave: a tools-only rmcp server that
//! announces `tools/list_changed`, keeps each session's peer (to send notifications later), and
//! answers `tools/list` with whatever the test's [`Lister`] returns — a lie, a storm, a cursor
//! that loops. The rest of the protocol is rmcp's. [`serve_in_memory`] runs any rmcp server
//! (ours or a fake) on an in-memory pipe, for taps and clients that read its other end.

use rmcp::model::{
    Implementation, InitializeRequestParams, InitializeResult, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext, RoleServer};
use rmcp::{ErrorData as McpError, ServerHandler, ServiceExt};
use std::future::Future;
use std::sync::{Arc, Mutex};

/// What a fake server answers to `tools/list`.
pub trait Lister: Send + Sync + 'static {
    /// The answer to a `tools/list` with `cursor`, asked on the session of `peer`.
    fn list(
        &self,
        cursor: Option<String>,
        peer: &Peer<RoleServer>,
    ) -> impl Future<Output = Result<ListToolsResult, McpError>> + Send;
}

/// A tools-only server named `name` whose lists come from `lister`.
pub struct FakeServer<L> {
    name: &'static str,
    lister: Arc<L>,
    peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
}

impl<L: Lister> FakeServer<L> {
    /// A server named `name`; `peers` collects the peer of every session it initializes.
    pub fn new(
        name: &'static str,
        lister: Arc<L>,
        peers: Arc<Mutex<Vec<Peer<RoleServer>>>>,
    ) -> FakeServer<L> {
        FakeServer {
            name,
            lister,
            peers,
        }
    }
}

impl<L: Lister> ServerHandler for FakeServer<L> {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tool_list_changed()
                .build(),
        );
        info.server_info = Implementation::new(self.name.to_owned(), "1".to_owned());
        info
    }

    async fn initialize(
        &self,
        req: InitializeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        let result = self.negotiate_initialize(&req)?;
        ctx.peer.set_peer_info(req);
        self.peers.lock().unwrap().push(ctx.peer.clone());
        Ok(result)
    }

    async fn list_tools(
        &self,
        req: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.lister
            .list(req.and_then(|r| r.cursor), &ctx.peer)
            .await
    }
}

/// A tool named `name` with an object input schema.
pub fn tool(name: &str, description: &str) -> Tool {
    let schema = serde_json::json!({"type": "object"})
        .as_object()
        .cloned()
        .expect("an object");
    Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema))
}

/// One page of tools, with the cursor of the next page if any.
pub fn page(tools: Vec<Tool>, next: Option<String>) -> ListToolsResult {
    let mut r = ListToolsResult::with_all_items(tools);
    r.next_cursor = next;
    r
}

/// Serves `server` on one end of an in-memory pipe (64 KiB each way), in a task of its own
/// until the other end closes; returns the other end.
pub fn serve_in_memory<S: ServerHandler>(server: S) -> tokio::io::DuplexStream {
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    ours
}
