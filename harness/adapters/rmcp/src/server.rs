//! The rmcp server adapter: the pattern rmcp documents for tools that change at runtime — a
//! `ToolRouter` behind a lock, served by `#[tool_handler(router = self.current())]`, mutated
//! with `add_route` / `remove_route` (an update is a remove and an add), its notifier bound to
//! the session peer (`bind_peer_notifier`, 2025-11-25) or to the `subscriptions/listen` sinks
//! (`set_notifier`, 2026-07-28). Variants:
//!
//! - `router` (default): notifications are whatever the router sends by itself (rmcp sends
//!   none for `add_route` / `remove_route`).
//! - `router-notify`: after each batch the adapter sends one `tools/list_changed` with the
//!   SDK's explicit API (`Peer::notify_tool_list_changed`, or each sink's), as an application
//!   would.
//!
//! Tools only (prompts and resources get `ok:false`). `tools/list` is the macro's: the whole
//! list, cursor ignored (`LISTSYNC_PAGE_SIZE` has no effect; logged). A tool returns
//! `"<name>:<description>"`; `dispatched` reports whether the router held the tool when its
//! handler started.

use crate::control::{Channel, CommandHandler, Failure, Outbox, str_field};
use crate::{Env, RMCP_VERSION};
use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::model::{
    CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig,
    SubscriptionFilter, Tool,
};
use rmcp::service::{NotificationContext, Peer, SubscriptionContext, SubscriptionSink};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt, tool_handler};
use serde_json::{Map, Value, json};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, RwLock};
use tokio::sync::oneshot;

/// Gates: park the next invocation of a tool until released.
#[derive(Default)]
struct Gates {
    next: u64,
    armed: HashMap<String, VecDeque<u64>>,
    parked: HashMap<u64, oneshot::Sender<()>>,
    released: Vec<u64>,
}

struct Shared {
    out: Outbox,
    notify_after_batch: bool,
    modern: bool,
    peer: Mutex<Option<Peer<RoleServer>>>,
    sinks: Mutex<Vec<SubscriptionSink>>,
    gates: Mutex<Gates>,
}

/// The server handler.
#[derive(Clone)]
pub struct RmcpServer {
    live: Arc<RwLock<ToolRouter<RmcpServer>>>,
    shared: Arc<Shared>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RmcpServer {
    /// The router as it is now (a clone of `Arc`ed routes: no lock held across an await).
    fn current(&self) -> ToolRouter<RmcpServer> {
        self.live.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn route(name: &str, description: &str) -> ToolRoute<RmcpServer> {
        let mut schema = Map::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), json!({}));
        let tool = Tool::new(name.to_owned(), description.to_owned(), Arc::new(schema));
        let (name, description) = (name.to_owned(), description.to_owned());
        ToolRoute::new_dyn(tool, move |ctx: ToolCallContext<'_, RmcpServer>| {
            let srv = ctx.service.clone();
            let (name, description) = (name.clone(), description.clone());
            Box::pin(async move {
                let present = {
                    let r = srv.current();
                    r.has_route(&name) && !r.is_disabled(&name)
                };
                srv.shared
                    .out
                    .event("dispatched", json!({"tool": name, "present": present}));
                srv.pass_gate(&name).await;
                srv.shared.out.event("call_done", json!({ "tool": name }));
                Ok(CallToolResult::success(vec![ContentBlock::text(format!(
                    "{name}:{description}"
                ))])
                .into())
            })
        })
    }

    async fn pass_gate(&self, tool: &str) {
        let wait = {
            let mut g = lock(&self.shared.gates);
            let Some(gate) = g.armed.get_mut(tool).and_then(VecDeque::pop_front) else {
                return;
            };
            self.shared
                .out
                .event("call_parked", json!({"tool": tool, "gate": gate}));
            if let Some(i) = g.released.iter().position(|r| *r == gate) {
                g.released.remove(i);
                return;
            }
            let (tx, rx) = oneshot::channel();
            g.parked.insert(gate, tx);
            rx
        };
        let _ = wait.await;
    }

    /// Applies a batch of control ops (checked first: nothing is applied if one does not fit).
    fn apply(&self, ops: &[Value]) -> Result<(), Failure> {
        let mut view: HashMap<String, String> = self
            .current()
            .list_all()
            .into_iter()
            .map(|t| {
                (
                    t.name.to_string(),
                    t.description.unwrap_or_default().to_string(),
                )
            })
            .collect();
        for op in ops {
            let kind = str_field(op, "kind")?;
            if kind != "tools" {
                return Err(Failure::new(format!(
                    "the rmcp adapter serves tools only (ToolRouter); '{kind}' is not supported"
                )));
            }
            let name = str_field(op, "name")?.to_owned();
            match str_field(op, "op")? {
                "add" if view.contains_key(&name) => {
                    return Err(Failure::new(format!("tools '{name}' already exists")));
                }
                "remove" | "update" if !view.contains_key(&name) => {
                    return Err(Failure::new(format!("tools '{name}' does not exist")));
                }
                "add" | "update" => {
                    view.insert(
                        name,
                        str_field(op, "description").unwrap_or_default().to_owned(),
                    );
                }
                "remove" => {
                    view.remove(&name);
                }
                other => return Err(Failure::new(format!("unknown op '{other}'"))),
            }
        }
        let mut router = self.live.write().unwrap_or_else(|e| e.into_inner());
        for op in ops {
            let name = op["name"].as_str().unwrap_or_default();
            let description = op
                .get("description")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match op["op"].as_str() {
                Some("add") => router.add_route(Self::route(name, description)),
                Some("remove") => router.remove_route(name),
                Some("update") => {
                    router.remove_route(name);
                    router.add_route(Self::route(name, description));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// Sends `tools/list_changed` with rmcp's explicit API to the session or every listen sink.
    async fn notify_tools(&self) -> Result<usize, Failure> {
        if self.shared.modern {
            let sinks: Vec<SubscriptionSink> = lock(&self.shared.sinks).clone();
            let mut n = 0;
            for s in sinks {
                if s.notify_tool_list_changed().await.is_ok() {
                    n += 1;
                }
            }
            Ok(n)
        } else {
            let peer = lock(&self.shared.peer).clone();
            match peer {
                Some(p) => p
                    .notify_tool_list_changed()
                    .await
                    .map(|_| 1)
                    .map_err(|e| Failure::new(e.to_string())),
                None => Err(Failure::new("no initialized session to notify yet")),
            }
        }
    }

    fn catalog(&self) -> Vec<Value> {
        self.current()
            .list_all()
            .into_iter()
            .map(|t| json!({"name": t.name, "description": t.description.unwrap_or_default()}))
            .collect()
    }
}

#[tool_handler(router = self.current())]
impl ServerHandler for RmcpServer {
    fn get_info(&self) -> ServerConfig {
        // Declared the documented way, so clients that honour the capability listen.
        let caps = ServerCapabilities::builder()
            .enable_tools()
            .enable_tool_list_changed()
            .build();
        let mut info = ServerConfig::new(caps);
        info.server_info = Implementation::new("listsync-rmcp-server", env!("CARGO_PKG_VERSION"));
        info
    }

    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        self.live
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .bind_peer_notifier(&ctx.peer);
        *lock(&self.shared.peer) = Some(ctx.peer);
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, ctx: SubscriptionContext) -> Result<(), McpError> {
        let sink = ctx.sink().clone();
        let id = sink.id().clone();
        lock(&self.shared.sinks).push(sink);
        ctx.cancelled().await;
        lock(&self.shared.sinks).retain(|s| *s.id() != id);
        Ok(())
    }
}

fn command(srv: RmcpServer) -> CommandHandler {
    Arc::new(move |cmd, v| {
        let srv = srv.clone();
        Box::pin(async move {
            match cmd.as_str() {
                "mutate" => {
                    let ops = v
                        .get("ops")
                        .and_then(Value::as_array)
                        .ok_or_else(|| Failure::new("mutate needs ops: [...]"))?;
                    srv.apply(ops)?;
                    if srv.shared.notify_after_batch && !ops.is_empty() {
                        srv.notify_tools().await?;
                    }
                    Ok(json!({}))
                }
                "notify" => match str_field(&v, "kind")? {
                    "tools" => Ok(json!({ "sessions": srv.notify_tools().await? })),
                    k => Err(Failure::new(format!(
                        "the rmcp adapter notifies tools only, not '{k}'"
                    ))),
                },
                "catalog" => match str_field(&v, "kind")? {
                    "tools" => Ok(json!({ "items": srv.catalog() })),
                    "prompts" | "resources" | "resource_templates" => Ok(json!({ "items": [] })),
                    k => Err(Failure::new(format!("unknown kind '{k}'"))),
                },
                "gate_call" => {
                    let tool = str_field(&v, "tool")?.to_owned();
                    let mut g = lock(&srv.shared.gates);
                    g.next += 1;
                    let gate = g.next;
                    g.armed.entry(tool).or_default().push_back(gate);
                    Ok(json!({ "gate": gate }))
                }
                "release" => {
                    let gate = v
                        .get("gate")
                        .and_then(Value::as_u64)
                        .ok_or_else(|| Failure::new("missing gate"))?;
                    let mut g = lock(&srv.shared.gates);
                    if let Some(tx) = g.parked.remove(&gate) {
                        let _ = tx.send(());
                        Ok(json!({}))
                    } else if g.armed.values().any(|q| q.contains(&gate)) {
                        g.released.push(gate);
                        Ok(json!({}))
                    } else {
                        Err(Failure::new(format!("unknown gate {gate}")))
                    }
                }
                "shutdown" => Ok(json!({})),
                other => Err(Failure::new(format!("unknown command '{other}'"))),
            }
        })
    })
}

/// Runs the server role until stdin closes or the control channel ends.
pub async fn run(env: Env, out: Outbox, channel: Channel) -> i32 {
    let variant = env.variant.clone().unwrap_or_else(|| "router".into());
    let notify_after_batch = match variant.as_str() {
        "router" => false,
        "router-notify" => true,
        other => {
            out.log(format!(
                "unknown LISTSYNC_VARIANT '{other}' (router, router-notify)"
            ));
            return 2;
        }
    };
    if env.page_size > 0 {
        out.log(format!(
            "the #[tool_handler] tools/list ignores cursors: LISTSYNC_PAGE_SIZE={} has no effect",
            env.page_size
        ));
    }
    let modern = env.era != "2025-11-25";
    let shared = Arc::new(Shared {
        out: out.clone(),
        notify_after_batch,
        modern,
        peer: Mutex::new(None),
        sinks: Mutex::new(Vec::new()),
        gates: Mutex::new(Gates::default()),
    });
    let srv = RmcpServer {
        live: Arc::new(RwLock::new(ToolRouter::new())),
        shared: shared.clone(),
    };
    if modern {
        // 2026-07-28: the router's notifier reaches the listen streams.
        let s = shared.clone();
        srv.live
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .set_notifier(move || {
                for sink in lock(&s.sinks).clone() {
                    tokio::spawn(async move {
                        let _ = sink.notify_tool_list_changed().await;
                    });
                }
            });
    }
    if let Err(f) = srv.apply(&env.initial) {
        out.log(format!("initial catalog: {}", f.error));
        return 2;
    }
    let service = srv.clone();
    let (done_tx, mut done_rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    tokio::spawn(async move {
        match service.serve(rmcp::transport::stdio()).await {
            Ok(running) => {
                let _ = running.waiting().await;
            }
            Err(e) => tracing::error!("[listsync-rmcp-adapter server] serve: {e}"),
        }
        let _ = done_tx.send(());
    });
    out.event(
        "ready",
        json!({
            "impl": "rmcp",
            "role": "server",
            "sdk": "rmcp",
            "sdk_version": RMCP_VERSION,
            "era_requested": env.era,
            "variant": variant,
            "page_size": env.page_size,
        }),
    );
    let ctl = tokio::spawn(crate::control::serve(channel, command(srv)));
    tokio::select! {
        _ = ctl => {}
        _ = done_rx.recv() => {}
    }
    out.flush().await;
    0
}
