//! Our own two hosts under test, started as `listsync own-host stale|careful --model URL
//! [--prompt TEXT] -- SERVER_COMMAND...`: each starts the MCP server on stdio, lists its tools
//! (following `nextCursor`), re-lists on every `notifications/tools/list_changed`, and runs a
//! model loop against an Anthropic Messages API (`POST URL/v1/messages`, plain JSON): it offers
//! tools, dispatches each `tool_use` to the server with `tools/call`, and passes the results
//! back, until the model ends its turn.
//!
//! - `careful` offers the model its current list at every turn and dispatches only what that
//!   list has (a call to any other name gets an error result, never reaches the server);
//! - `stale` offers, and dispatches by, the first list it got, forever (its MCP layer still
//!   re-lists: the list it keeps is never used) — the bug the host harness must catch.
//!
//! Diagnostics go to stderr through `tracing`; the process's exit status is the result.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{ChildStdin, Command};
use tokio::sync::{mpsc, oneshot};

/// Which host.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostMode {
    /// Offers and dispatches by the first list forever.
    Stale,
    /// Offers and dispatches by the current list.
    Careful,
}

/// The longest the host waits for one answer (server or model).
const ANSWER_BOUND: Duration = Duration::from_secs(30);
/// The most model turns of one session.
const MAX_TURNS: usize = 40;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// The MCP side: requests by id, the server's stdin.
struct Mcp {
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
    pending: Pending,
    next: std::sync::atomic::AtomicU64,
}

impl Mcp {
    async fn send(&self, msg: &Value) -> Result<(), String> {
        let mut line = msg.to_string();
        line.push('\n');
        let mut guard = self.stdin.lock().await;
        let w = guard.as_mut().ok_or("the server's stdin is closed")?;
        w.write_all(line.as_bytes())
            .await
            .map_err(|e| format!("server stdin: {e}"))?;
        w.flush().await.map_err(|e| format!("server stdin: {e}"))
    }

    /// Closes the server's stdin (how a host ends a stdio server).
    async fn close(&self) {
        self.stdin.lock().await.take();
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value, String> {
        let id = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, tx);
        self.send(&json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await?;
        match tokio::time::timeout(ANSWER_BOUND, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err(format!("{method}: the server went away")),
            Err(_) => Err(format!("{method}: no answer within {ANSWER_BOUND:?}")),
        }
    }

    /// A whole walk: every page, following `nextCursor`.
    async fn list_tools(&self) -> Result<Vec<Value>, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let r = self.request("tools/list", params).await?;
            let result = r
                .get("result")
                .ok_or_else(|| format!("tools/list failed: {}", r.get("error").unwrap_or(&r)))?;
            tools.extend(
                result
                    .get("tools")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default(),
            );
            cursor = result.get("nextCursor").filter(|c| !c.is_null()).cloned();
            if cursor.is_none() {
                return Ok(tools);
            }
        }
        Err("tools/list: more than 1000 pages".into())
    }
}

fn name_of(tool: &Value) -> &str {
    tool.get("name").and_then(Value::as_str).unwrap_or_default()
}

/// One POST of JSON to the model server; the answer's JSON.
async fn post(base: &str, path: &str, body: &Value) -> Result<Value, String> {
    let authority = base
        .strip_prefix("http://")
        .ok_or_else(|| format!("{base}: the model URL must be http://HOST:PORT"))?
        .trim_end_matches('/');
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|e| format!("model {authority}: {e}"))?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
            .await
            .map_err(|e| format!("model: {e}"))?;
    tokio::spawn(conn);
    let req = hyper::Request::post(path)
        .header(hyper::header::HOST, authority)
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header("x-api-key", "dummy")
        .header("anthropic-version", "2023-06-01")
        .body(Full::new(Bytes::from(body.to_string())))
        .map_err(|e| format!("model: {e}"))?;
    let resp = tokio::time::timeout(ANSWER_BOUND, sender.send_request(req))
        .await
        .map_err(|_| "model: no answer".to_owned())?
        .map_err(|e| format!("model: {e}"))?;
    let status = resp.status();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("model: {e}"))?
        .to_bytes();
    if !status.is_success() {
        return Err(format!(
            "model answered {status}: {}",
            String::from_utf8_lossy(&bytes)
        ));
    }
    serde_json::from_slice(&bytes).map_err(|e| format!("model: not JSON: {e}"))
}

/// Runs the host with its arguments (after `own-host`); the exit status.
pub fn main_with(args: &[String]) -> u8 {
    let usage =
        "usage: listsync own-host stale|careful --model URL [--prompt TEXT] -- SERVER_COMMAND...";
    let mut it = args.iter();
    let mode = match it.next().map(String::as_str) {
        Some("stale") => HostMode::Stale,
        Some("careful") => HostMode::Careful,
        _ => {
            tracing::error!("{usage}");
            return 2;
        }
    };
    let (mut model, mut prompt, mut server) = (None, "Go.".to_owned(), Vec::new());
    while let Some(a) = it.next() {
        match a.as_str() {
            "--model" => model = it.next().cloned(),
            "--prompt" => prompt = it.next().cloned().unwrap_or_default(),
            "--" => server = it.by_ref().cloned().collect(),
            _ => {
                tracing::error!("unexpected argument {a:?}; {usage}");
                return 2;
            }
        }
    }
    let (Some(model), false) = (model, server.is_empty()) else {
        tracing::error!("{usage}");
        return 2;
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("runtime: {e}");
            return 1;
        }
    };
    match rt.block_on(run(mode, &model, &prompt, &server)) {
        Ok(()) => 0,
        Err(e) => {
            tracing::error!("own-host: {e}");
            1
        }
    }
}

async fn run(mode: HostMode, model: &str, prompt: &str, server: &[String]) -> Result<(), String> {
    let mut child = Command::new(&server[0])
        .args(&server[1..])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("{}: {e}", server[0]))?;
    let stdin = child.stdin.take().ok_or("no server stdin")?;
    let stdout = child.stdout.take().ok_or("no server stdout")?;
    let mcp = Arc::new(Mcp {
        stdin: tokio::sync::Mutex::new(Some(stdin)),
        pending: Arc::default(),
        next: 1.into(),
    });
    let (notify_tx, mut notify_rx) = mpsc::unbounded_channel::<()>();
    let pending = mcp.pending.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let Some(id) = v.get("id").and_then(Value::as_u64)
                && v.get("method").is_none()
            {
                let tx = pending
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .remove(&id);
                if let Some(tx) = tx {
                    let _ = tx.send(v);
                }
            } else if v.get("method").and_then(Value::as_str)
                == Some("notifications/tools/list_changed")
            {
                let _ = notify_tx.send(());
            }
        }
        // The server is gone: every request still waiting fails at once.
        pending.lock().unwrap_or_else(|p| p.into_inner()).clear();
    });
    let init = mcp
        .request(
            "initialize",
            json!({"protocolVersion":"2025-11-25","capabilities":{},
                "clientInfo":{"name":format!("listsync-own-host-{mode:?}").to_lowercase(),"version":"1"}}),
        )
        .await?;
    if init.get("result").is_none() {
        return Err(format!("initialize failed: {init}"));
    }
    mcp.send(&json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await?;
    let first = mcp.list_tools().await?;
    let current = Arc::new(Mutex::new(first.clone()));
    // Re-lists on list_changed, one walk at a time, once more for notifications during a walk.
    let (m2, c2) = (mcp.clone(), current.clone());
    tokio::spawn(async move {
        while notify_rx.recv().await.is_some() {
            while notify_rx.try_recv().is_ok() {}
            match m2.list_tools().await {
                Ok(tools) => *c2.lock().unwrap_or_else(|p| p.into_inner()) = tools,
                Err(e) => tracing::warn!("re-list: {e}"),
            }
        }
    });
    let list = |mode: HostMode| -> Vec<Value> {
        match mode {
            HostMode::Stale => first.clone(),
            HostMode::Careful => current.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    };
    let mut messages = vec![json!({"role":"user","content":prompt})];
    for _ in 0..MAX_TURNS {
        let offered: Vec<Value> = list(mode)
            .iter()
            .map(|t| {
                json!({
                    "name": name_of(t),
                    "description": t.get("description").cloned().unwrap_or(json!("")),
                    "input_schema": t.get("inputSchema").cloned().unwrap_or(json!({"type":"object"})),
                })
            })
            .collect();
        let answer = post(
            model,
            "/v1/messages",
            &json!({"model":"scripted","max_tokens":1024,"messages":messages,"tools":offered}),
        )
        .await?;
        let content = answer.get("content").cloned().unwrap_or(json!([]));
        messages.push(json!({"role":"assistant","content":content}));
        let uses: Vec<Value> = content
            .as_array()
            .map(|a| {
                a.iter()
                    .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_use"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        if uses.is_empty() {
            break;
        }
        let mut results = Vec::new();
        for u in uses {
            let name = u.get("name").and_then(Value::as_str).unwrap_or_default();
            let id = u.get("id").cloned().unwrap_or(Value::Null);
            let known = list(mode).iter().any(|t| name_of(t) == name);
            let (text, is_error) = if known {
                let args = u.get("input").cloned().unwrap_or(json!({}));
                let r = mcp
                    .request("tools/call", json!({"name":name,"arguments":args}))
                    .await?;
                match r.get("result") {
                    Some(res) => (
                        res.get("content")
                            .and_then(Value::as_array)
                            .map(|c| {
                                c.iter()
                                    .filter_map(|x| x.get("text").and_then(Value::as_str))
                                    .collect::<Vec<_>>()
                                    .join(" ")
                            })
                            .unwrap_or_default(),
                        res.get("isError").and_then(Value::as_bool) == Some(true),
                    ),
                    None => (
                        format!("error: {}", r.get("error").unwrap_or(&Value::Null)),
                        true,
                    ),
                }
            } else {
                (format!("no tool named {name} in this host's list"), true)
            };
            results.push(
                json!({"type":"tool_result","tool_use_id":id,"content":text,"is_error":is_error}),
            );
        }
        messages.push(json!({"role":"user","content":results}));
    }
    // Ends the server as hosts do: close its stdin, give it a moment, then kill it.
    mcp.close().await;
    match tokio::time::timeout(Duration::from_secs(3), child.wait()).await {
        Ok(_) => {}
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
    }
    Ok(())
}
