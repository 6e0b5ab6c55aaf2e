//! Interop with unmodified rmcp peers over `tokio::io::duplex` (2025-11-25):
//!
//! - the reference client against a `ToolRouter`-based rmcp server written the way rmcp
//!   documents runtime tool changes (`#[tool_handler(router = ...)]` over a router behind a lock,
//!   `add_route` / `remove_route`, then `Peer::notify_tool_list_changed`);
//! - the reference server against rmcp's own client following the SDK's pattern: re-list with
//!   `list_all_tools` from `on_tool_list_changed`.
//!
//! Each side must see every change the other makes.

mod common;

use common::{client_settings, within};
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::client::{ClientHandle, Endpoint};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, Peer};
use rmcp::{ClientHandler, RoleClient, RoleServer, ServerHandler, ServiceExt, tool_handler};
use serde_json::{Map, json};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::watch;

/// A `ToolRouter`-based rmcp server whose routes change at runtime.
#[derive(Clone)]
struct RouterServer {
    live: Arc<RwLock<ToolRouter<RouterServer>>>,
    peer: Arc<Mutex<Option<Peer<RoleServer>>>>,
}

impl RouterServer {
    fn new(names: &[&str]) -> Self {
        let mut router = ToolRouter::new();
        for n in names {
            router.add_route(Self::route(n));
        }
        RouterServer {
            live: Arc::new(RwLock::new(router)),
            peer: Arc::new(Mutex::new(None)),
        }
    }

    fn current(&self) -> ToolRouter<RouterServer> {
        self.live.read().expect("router lock").clone()
    }

    fn route(name: &str) -> ToolRoute<RouterServer> {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        let tool = Tool::new(name.to_owned(), format!("{name} tool"), Arc::new(schema));
        let text = name.to_owned();
        ToolRoute::new_dyn(tool, move |_ctx: ToolCallContext<'_, RouterServer>| {
            let text = text.clone();
            Box::pin(
                async move { Ok(CallToolResult::success(vec![ContentBlock::text(text)]).into()) },
            )
        })
    }

    /// Changes the routes, then notifies the session the documented way.
    async fn change(&self, add: &[&str], remove: &[&str]) {
        {
            let mut router = self.live.write().expect("router lock");
            for n in remove {
                router.remove_route(n);
            }
            for n in add {
                router.add_route(Self::route(n));
            }
        }
        let peer = self.peer.lock().expect("peer lock").clone();
        peer.expect("an initialized session")
            .notify_tool_list_changed()
            .await
            .expect("notification sent");
    }
}

#[tool_handler(router = self.current())]
impl ServerHandler for RouterServer {
    fn get_info(&self) -> ServerConfig {
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new("rmcp-tool-router", "1");
        info
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        *self.peer.lock().expect("peer lock") = Some(ctx.peer);
    }
}

fn tool_names(catalog: &ClientHandle) -> Vec<String> {
    catalog.tools().names()
}

async fn wait_tools(catalog: &ClientHandle, want: &[&str]) {
    let mut changes = catalog.changes();
    within(&format!("the client to list {want:?}"), async {
        while tool_names(catalog) != want {
            changes.changed().await.expect("client alive");
        }
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_follows_an_rmcp_tool_router_server() {
    let srv = RouterServer::new(&["alpha", "beta"]);
    let serving = srv.clone();
    let endpoint = Endpoint::duplex(move |_auth| {
        let srv = serving.clone();
        async move {
            let (ours, theirs) = tokio::io::duplex(1 << 16);
            tokio::spawn(async move {
                if let Ok(running) = srv.serve(theirs).await {
                    let _ = running.waiting().await;
                }
            });
            Ok(ours)
        }
    });
    let history = SharedHistory::new();
    let settings = client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, &history);
    let catalog = ClientHandle::spawn(settings, endpoint);
    wait_tools(&catalog, &["alpha", "beta"]).await;

    srv.change(&["gamma"], &[]).await;
    wait_tools(&catalog, &["alpha", "beta", "gamma"]).await;
    srv.change(&["delta"], &["alpha"]).await;
    wait_tools(&catalog, &["beta", "delta", "gamma"]).await;

    // Calls go through the client's snapshot to rmcp's router.
    let done = within("call", catalog.call("delta")).await.expect("call");
    assert_eq!(done.text, "delta");
    assert!(!done.is_error);
    catalog.shutdown();
}

/// rmcp's client pattern: keep the list `list_all_tools` returned after each notification.
#[derive(Clone)]
struct ListingClient {
    tools: Arc<watch::Sender<Vec<String>>>,
}

impl ClientHandler for ListingClient {
    async fn on_tool_list_changed(&self, ctx: NotificationContext<RoleClient>) {
        if let Ok(tools) = ctx.peer.list_all_tools().await {
            let mut names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
            names.sort();
            self.tools.send_replace(names);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_client_follows_the_reference_server() {
    let server = Server::new(
        ServerSettings::new(Era::V2025_11_25, 2),
        &[
            Op::add(Kind::Tools, "t0", "t0 v1"),
            Op::add(Kind::Tools, "t1", "t1 v1"),
            Op::add(Kind::Tools, "t2", "t2 v1"),
        ],
        None,
    );
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let service = server.service();
    tokio::spawn(async move {
        if let Ok(running) = service.serve(theirs).await {
            let _ = running.waiting().await;
        }
    });
    let (tx, mut rx) = watch::channel(Vec::new());
    let client = ListingClient {
        tools: Arc::new(tx),
    };
    let running = within("initialize", client.serve(ours))
        .await
        .expect("rmcp client connects");

    // The first list walks both pages of the version-bound cursor.
    let first: Vec<String> = within("list", running.list_all_tools())
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name.to_string())
        .collect();
    assert_eq!(first, ["t0", "t1", "t2"]);

    for (batch, want) in [
        (
            vec![Op::add(Kind::Tools, "t3", "t3 v1")],
            vec!["t0", "t1", "t2", "t3"],
        ),
        (
            vec![
                Op::remove(Kind::Tools, "t0"),
                Op::update(Kind::Tools, "t1", "t1 v2"),
            ],
            vec!["t1", "t2", "t3"],
        ),
    ] {
        within("apply", server.apply(&batch)).await;
        within(&format!("rmcp's client to list {want:?}"), async {
            rx.wait_for(|names| *names == want).await.map(|_| ())
        })
        .await
        .expect("listing client alive");
    }
    let result = within(
        "call",
        running.call_tool(rmcp::model::CallToolRequestParams::new("t3")),
    )
    .await
    .expect("tools/call on the reference server");
    assert_ne!(result.is_error, Some(true));
    let _ = running.cancel().await;
}
