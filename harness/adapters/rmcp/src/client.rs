//! The rmcp client adapter: the pattern rmcp documents for following a server's tools —
//! `ClientHandler::on_tool_list_changed` re-lists with `Peer::list_all_tools()` and the result
//! replaces the application's snapshot (2025-11-25; rmcp runs each notification's callback in
//! its own task, so refreshes overlap and the last to finish wins). On 2026-07-28 the client
//! discovers (`ClientLifecycleMode::Discover`), opens `Peer::listen` for tools, lists after the
//! acknowledgement, and re-lists on each notification the subscription yields, one after the
//! other. Nothing is added that rmcp lacks: no single-flight, no version guard; rmcp's response
//! cache keeps its default configuration.

use crate::control::{Channel, CommandHandler, Failure, Outbox, str_field};
use crate::{Env, RMCP_VERSION};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
    SubscriptionFilter,
};
use rmcp::service::{NotificationContext, Peer, RunningService};
use rmcp::{ClientHandler, ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};

struct Shared {
    out: Outbox,
    snapshot: Mutex<Option<Vec<Value>>>,
}

/// The client handler.
#[derive(Clone)]
pub struct RmcpClient {
    shared: Arc<Shared>,
}

impl RmcpClient {
    /// Re-lists the tools (every page) and publishes the result.
    async fn refresh(&self, peer: &Peer<RoleClient>, source: &str) -> Result<Vec<Value>, Failure> {
        self.shared
            .out
            .event("refresh_started", json!({"kind": "tools"}));
        match peer.list_all_tools().await {
            Ok(tools) => {
                let items: Vec<Value> = tools
                    .iter()
                    .map(|t| json!({"name": t.name, "description": t.description.clone().unwrap_or_default()}))
                    .collect();
                *self
                    .shared
                    .snapshot
                    .lock()
                    .unwrap_or_else(|e| e.into_inner()) = Some(items.clone());
                self.shared.out.event(
                    "published",
                    json!({"kind": "tools", "items": items, "source": source}),
                );
                Ok(items)
            }
            Err(e) => {
                self.shared.out.event(
                    "refresh_failed",
                    json!({"kind": "tools", "error": e.to_string()}),
                );
                Err(Failure::new(e.to_string()))
            }
        }
    }
}

impl ClientHandler for RmcpClient {
    fn get_info(&self) -> ClientConfig {
        ClientConfig::new(
            ClientCapabilities::default(),
            Implementation::new("listsync-rmcp-client", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn on_tool_list_changed(&self, ctx: NotificationContext<RoleClient>) {
        self.shared.out.event(
            "notification",
            json!({"method": "notifications/tools/list_changed", "params": null}),
        );
        let _ = self.refresh(&ctx.peer, "on_tool_list_changed").await;
    }
}

/// Opens a tools listen stream and re-lists on each of its notifications, in order.
async fn listen(client: RmcpClient, peer: Peer<RoleClient>) -> Result<Value, Failure> {
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut sub = peer
        .listen(filter)
        .await
        .map_err(|e| Failure::new(e.to_string()))?;
    let honored = serde_json::to_value(sub.acknowledged()).unwrap_or(Value::Null);
    tokio::spawn(async move {
        while let Ok(Some(n)) = sub.next().await {
            let method = serde_json::to_value(&n)
                .ok()
                .and_then(|v| v.get("method").cloned())
                .unwrap_or(Value::Null);
            client
                .shared
                .out
                .event("notification", json!({"method": method, "params": null}));
            let _ = client.refresh(&peer, "listen").await;
        }
    });
    Ok(json!({ "honored": honored }))
}

fn command(client: RmcpClient, peer: Peer<RoleClient>, modern: bool) -> CommandHandler {
    Arc::new(move |cmd, v| {
        let (client, peer) = (client.clone(), peer.clone());
        Box::pin(async move {
            match cmd.as_str() {
                "snapshot" => match str_field(&v, "kind")? {
                    "tools" => Ok(
                        json!({ "items": client.shared.snapshot.lock().unwrap_or_else(|e| e.into_inner()).clone() }),
                    ),
                    _ => Ok(json!({ "items": null })),
                },
                "refresh" => match str_field(&v, "kind")? {
                    "tools" => {
                        let items = client.refresh(&peer, "refresh").await?;
                        Ok(json!({"items": items, "pages": null}))
                    }
                    k => Err(Failure::new(format!(
                        "the rmcp adapter keeps tools only, not '{k}'"
                    ))),
                },
                "call" => {
                    let tool = str_field(&v, "tool")?.to_owned();
                    let mut params = CallToolRequestParams::new(tool.clone());
                    if let Some(Value::Object(a)) = v.get("arguments") {
                        params.arguments = Some(a.clone());
                    }
                    match peer.call_tool(params).await {
                        Ok(r) => {
                            let is_error = r.is_error.unwrap_or(false);
                            let text: String = r
                                .content
                                .iter()
                                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                                .collect();
                            client
                                .shared
                                .out
                                .event("call_done", json!({"tool": tool, "is_error": is_error}));
                            Ok(json!({"is_error": is_error, "text": text}))
                        }
                        Err(rmcp::ServiceError::McpError(e)) => {
                            client.shared.out.event(
                                "call_done",
                                json!({"tool": tool, "is_error": true, "code": e.code.0}),
                            );
                            Err(Failure {
                                error: e.message.to_string(),
                                code: Some(i64::from(e.code.0)),
                            })
                        }
                        Err(e) => Err(Failure::new(e.to_string())),
                    }
                }
                "listen" if modern => listen(client, peer).await,
                "listen" => Err(Failure::new(
                    "subscriptions/listen needs a 2026-07-28 connection",
                )),
                "subscribe" => Err(Failure::new(
                    "the rmcp adapter does not subscribe to resources",
                )),
                "shutdown" => Ok(json!({})),
                other => Err(Failure::new(format!("unknown command '{other}'"))),
            }
        })
    })
}

/// Runs the client role until stdin closes or the control channel ends.
pub async fn run(env: Env, out: Outbox, channel: Channel) -> i32 {
    let variant = env.variant.clone().unwrap_or_else(|| "list-all".into());
    if variant != "list-all" {
        out.log(format!("unknown LISTSYNC_VARIANT '{variant}' (list-all)"));
        return 2;
    }
    let modern = env.era != "2025-11-25";
    let client = RmcpClient {
        shared: Arc::new(Shared {
            out: out.clone(),
            snapshot: Mutex::new(None),
        }),
    };
    let started: Result<RunningService<RoleClient, RmcpClient>, String> = if modern {
        client
            .clone()
            .serve_with_lifecycle(
                rmcp::transport::stdio(),
                ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                },
            )
            .await
            .map_err(|e| e.to_string())
    } else {
        client
            .clone()
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| e.to_string())
    };
    let running = match started {
        Ok(r) => r,
        Err(e) => {
            out.log(format!("start-up failed: {e}"));
            return 2;
        }
    };
    let peer = running.peer().clone();
    let negotiated = peer.peer_info().map(|i| i.protocol_version.to_string());
    out.event("negotiated", json!({ "protocol_version": negotiated }));
    out.event(
        "ready",
        json!({
            "impl": "rmcp",
            "role": "client",
            "sdk": "rmcp",
            "sdk_version": RMCP_VERSION,
            "era_requested": env.era,
            "variant": variant,
            "protocol_version": negotiated,
        }),
    );
    let ctl = tokio::spawn(crate::control::serve(
        channel,
        command(client.clone(), peer.clone(), modern),
    ));
    // Initial list, the documented way; on 2026-07-28 after the listen acknowledgement.
    let init = {
        let (client, peer) = (client.clone(), peer.clone());
        tokio::spawn(async move {
            if modern && let Err(e) = listen(client.clone(), peer.clone()).await {
                client.shared.out.log(format!("listen failed: {}", e.error));
            }
            let _ = client.refresh(&peer, "initial").await;
        })
    };
    tokio::select! {
        _ = ctl => {}
        _ = running.waiting() => {}
    }
    init.abort();
    out.flush().await;
    0
}
