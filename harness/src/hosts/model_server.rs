//! The scripted model server: the Anthropic Messages API on 127.0.0.1 (`POST /v1/messages`, as
//! JSON or as a server-sent event stream when the request asks `"stream": true`), answering each
//! model turn as the host plan says and recording, for every request, the tools the host offered
//! (the **offered list**) and the tool results it passed back. A request counts as a model turn
//! when it offers tools (a `tools` array, even empty) and its conversation starts with the plan's
//! prompt; other requests (a host's side calls: warm-ups, sub-agents, titles) get a short text
//! answer and are recorded as side requests.
//! `count_tokens` gets a well-formed count; any other path is answered 404 and logged.
//!
//! A `before` change of a turn is handed to the [`ChangeHook`] when the turn's request arrives;
//! the answer follows `settle` after the hook returned.

use super::plan::{Plan, Role, Turn};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::{Request, Response, StatusCode};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::net::TcpListener;

/// The longest request body read (a host's whole conversation with its tool definitions).
pub const MAX_BODY_BYTES: usize = 16 << 20;

/// Commits a batch of ops at the server (the plan's `before` changes); returns when the server
/// answered.
pub type ChangeHook = Arc<
    dyn Fn(Vec<String>) -> Pin<Box<dyn Future<Output = Result<(), String>> + Send>> + Send + Sync,
>;

/// A tool result the host passed back to the model.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ToolResult {
    /// The `tool_use_id` it answers.
    pub tool_use_id: String,
    /// Whether the host marked it as an error.
    pub is_error: bool,
    /// Its text (text blocks joined), at most 300 characters.
    pub text: String,
}

/// What the model answered.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Reply {
    /// A `tool_use` of this name (as the host names it) with this id.
    Call {
        /// The name the model used.
        name: String,
        /// The plan's server tool.
        tool: String,
        /// The `tool_use` id.
        id: String,
    },
    /// Text, ending the turn.
    End,
}

/// One request the model server received.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ModelRequest {
    /// 0, 1, 2... in arrival order.
    pub seq: usize,
    /// The model turn it is (1-based), `None` for a side request.
    pub turn: Option<usize>,
    /// Wall-clock arrival, µs since the Unix epoch.
    pub t_unix_us: u64,
    /// Wall-clock time of its answer (after any change and settle), µs since the Unix epoch.
    pub replied_unix_us: u64,
    /// Whether it asked for a stream.
    pub stream: bool,
    /// The host's own names of every tool offered, in order.
    pub tools: Vec<String>,
    /// The offered list: the server's tools among them (the host's prefix removed, the host's
    /// own tools left out), in order.
    pub offered: Vec<String>,
    /// The tool results in its user messages after the last assistant message.
    pub results: Vec<ToolResult>,
    /// What the model answered.
    pub reply: Reply,
    /// The `before` ops committed before the answer (and the hook's error, if it failed).
    pub changed: Vec<String>,
}

/// Everything the model server saw (`model.json` of a kept host run reads back as one).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Recording {
    /// Requests in arrival order.
    pub requests: Vec<ModelRequest>,
    /// Requests to other paths (method and path), answered 404 or minimally.
    pub other_paths: Vec<String>,
}

impl Recording {
    /// The model turns only.
    pub fn turns(&self) -> impl Iterator<Item = &ModelRequest> {
        self.requests.iter().filter(|r| r.turn.is_some())
    }
}

/// Settings of one model server.
#[derive(Clone)]
pub struct ModelSettings {
    /// The plan.
    pub plan: Plan,
    /// How the host names a server tool: this prefix and the tool's name (`mcp__listsync__`).
    pub tool_prefix: String,
    /// The host's own tools (not the server's), left out of the offered list.
    pub own_tools: Vec<String>,
    /// Called with each turn's `before` ops.
    pub on_change: Option<ChangeHook>,
    /// Where to keep each request's body as it came (`request-NNN.json`), as evidence.
    pub keep_bodies: Option<std::path::PathBuf>,
}

struct State {
    settings: ModelSettings,
    recording: Mutex<Recording>,
    /// Requests and model turns numbered so far.
    counters: Mutex<(usize, usize)>,
}

/// A running model server.
pub struct ModelServer {
    addr: SocketAddr,
    state: Arc<State>,
    /// Stops the accept loop when it fires (or is dropped).
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl ModelServer {
    /// Binds 127.0.0.1 on a free port and serves until [`ModelServer::stop`].
    pub async fn start(settings: ModelSettings) -> std::io::Result<ModelServer> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State {
            settings,
            recording: Mutex::new(Recording::default()),
            counters: Mutex::new((0, 0)),
        });
        let (tx, mut rx) = tokio::sync::watch::channel(false);
        let st = state.clone();
        tokio::spawn(async move {
            loop {
                let conn = tokio::select! {
                    c = listener.accept() => c,
                    _ = rx.changed() => break,
                };
                let Ok((stream, _)) = conn else { continue };
                let st = st.clone();
                tokio::spawn(async move {
                    let svc = hyper::service::service_fn(move |req| {
                        let st = st.clone();
                        async move { Ok::<_, std::convert::Infallible>(handle(st, req).await) }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    if let Err(e) = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, svc)
                        .await
                    {
                        tracing::debug!("model server connection: {e}");
                    }
                });
            }
        });
        Ok(ModelServer {
            addr,
            state,
            shutdown: tx,
        })
    }

    /// `http://127.0.0.1:PORT` (the base URL a host is given).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A copy of what it recorded so far, requests in arrival order.
    pub fn recording(&self) -> Recording {
        let mut r = self
            .state
            .recording
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        r.requests.sort_by_key(|q| q.seq);
        r
    }

    /// Stops accepting; returns what it recorded.
    pub fn stop(self) -> Recording {
        let _ = self.shutdown.send(true);
        self.recording()
    }
}

fn now_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_micros()).unwrap_or(u64::MAX))
}

fn reply_json(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = status;
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("application/json"),
    );
    r
}

fn api_error(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    reply_json(
        status,
        &json!({"type":"error","error":{"type":"invalid_request_error","message":message}}),
    )
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let body = match Limited::new(req.into_body(), MAX_BODY_BYTES)
        .collect()
        .await
    {
        Ok(b) => b.to_bytes(),
        Err(e) => return api_error(StatusCode::PAYLOAD_TOO_LARGE, &e.to_string()),
    };
    match (method.as_str(), path.as_str()) {
        ("POST", "/v1/messages") => {}
        ("POST", "/v1/messages/count_tokens") => {
            let n = body.len() / 4;
            return reply_json(StatusCode::OK, &json!({"input_tokens": n.max(1)}));
        }
        _ => {
            tracing::info!("model server: {method} {path} (not served)");
            st.recording
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .other_paths
                .push(format!("{method} {path}"));
            return api_error(StatusCode::NOT_FOUND, "not served by the scripted model");
        }
    }
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return api_error(StatusCode::BAD_REQUEST, "the body is not JSON");
    };
    let arrived = now_us();
    let stream = v.get("stream").and_then(Value::as_bool) == Some(true);
    let model = v
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("scripted")
        .to_owned();
    let tools_field = v.get("tools").and_then(Value::as_array);
    let (tools, offered) = offered_tools(&st.settings, tools_field);
    let prefix = &st.settings.tool_prefix;
    let results = tool_results(&v);
    // Its number and turn, taken at arrival (a host may have several requests open at once).
    let is_turn = tools_field.is_some() && starts_with_prompt(&v, &st.settings.plan.prompt);
    let (seq, turn) = {
        let mut c = st.counters.lock().unwrap_or_else(|p| p.into_inner());
        c.0 += 1;
        if is_turn {
            c.1 += 1;
        }
        (c.0 - 1, is_turn.then_some(c.1))
    };
    if let Some(dir) = &st.settings.keep_bodies {
        let path = dir.join(format!("request-{seq:03}.json"));
        if let Err(e) = std::fs::write(&path, &body) {
            tracing::warn!("model server: {}: {e}", path.display());
        }
    }
    let planned = turn.and_then(|k| st.settings.plan.turns.get(k - 1).cloned());
    let changed = match &planned {
        Some(t) => change_before(&st.settings, t).await,
        None => Vec::new(),
    };
    let reply = match (&planned, turn) {
        (Some(t), Some(k)) if t.role != Role::End => {
            let tool = t.tool.clone().unwrap_or_default();
            Reply::Call {
                name: format!("{prefix}{tool}"),
                tool,
                id: format!("toolu_{k:02}_{seq:03}"),
            }
        }
        _ => Reply::End,
    };
    st.recording
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .requests
        .push(ModelRequest {
            seq,
            turn,
            t_unix_us: arrived,
            replied_unix_us: now_us(),
            stream,
            tools,
            offered,
            results,
            reply: reply.clone(),
            changed,
        });
    let msg_id = format!("msg_{seq:04}");
    let (content, stop) = match &reply {
        Reply::Call { name, id, .. } => (
            json!([{"type":"tool_use","id":id,"name":name,"input":{}}]),
            "tool_use",
        ),
        Reply::End => (
            json!([{"type":"text","text": if turn.is_some() { "Done." } else { "listsync" }}]),
            "end_turn",
        ),
    };
    if stream {
        message_stream(&msg_id, &model, &reply, &content, stop)
    } else {
        reply_json(
            StatusCode::OK,
            &json!({
                "id": msg_id, "type": "message", "role": "assistant", "model": model,
                "content": content, "stop_reason": stop, "stop_sequence": null,
                "usage": {"input_tokens": 1, "output_tokens": 1}
            }),
        )
    }
}

/// The tools a request offers the model (their names), and those of them that are the MCP
/// server's (the host's own tools left out, the host's prefix taken off).
fn offered_tools(
    settings: &ModelSettings,
    tools_field: Option<&Vec<Value>>,
) -> (Vec<String>, Vec<String>) {
    let tools: Vec<String> = tools_field
        .map(|a| {
            a.iter()
                .filter_map(|t| t.get("name").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let offered: Vec<String> = tools
        .iter()
        .filter(|t| !settings.own_tools.contains(t))
        .filter_map(|t| t.strip_prefix(settings.tool_prefix.as_str()))
        .map(str::to_owned)
        .collect();
    (tools, offered)
}

/// Applies the changes a planned turn makes before the model answers (through the settings'
/// hook), then waits the plan's settling time; returns what was changed (a failure noted).
async fn change_before(settings: &ModelSettings, t: &Turn) -> Vec<String> {
    if t.before.is_empty() {
        return Vec::new();
    }
    let mut changed = t.before.clone();
    if let Some(hook) = &settings.on_change
        && let Err(e) = hook(t.before.clone()).await
    {
        tracing::warn!("model server: turn {}: change failed: {e}", t.index);
        changed.push(format!("(failed: {e})"));
    }
    tokio::time::sleep(settings.plan.settle).await;
    changed
}

/// The answer as a Messages API event stream (server-sent events).
fn message_stream(
    msg_id: &str,
    model: &str,
    reply: &Reply,
    content: &Value,
    stop: &str,
) -> Response<Full<Bytes>> {
    let mut sse = String::new();
    let mut event = |name: &str, data: Value| {
        sse.push_str(&format!("event: {name}\ndata: {data}\n\n"));
    };
    event(
        "message_start",
        json!({"type":"message_start","message":{
            "id": msg_id, "type":"message","role":"assistant","model": model,
            "content": [], "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": 1, "output_tokens": 1}}}),
    );
    match reply {
        Reply::Call { name, id, .. } => {
            event(
                "content_block_start",
                json!({"type":"content_block_start","index":0,
                    "content_block":{"type":"tool_use","id":id,"name":name,"input":{}}}),
            );
            event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,
                    "delta":{"type":"input_json_delta","partial_json":"{}"}}),
            );
        }
        Reply::End => {
            event(
                "content_block_start",
                json!({"type":"content_block_start","index":0,
                    "content_block":{"type":"text","text":""}}),
            );
            event(
                "content_block_delta",
                json!({"type":"content_block_delta","index":0,
                    "delta":{"type":"text_delta","text": content[0]["text"]}}),
            );
        }
    }
    event(
        "content_block_stop",
        json!({"type":"content_block_stop","index":0}),
    );
    event(
        "message_delta",
        json!({"type":"message_delta","delta":{"stop_reason":stop,"stop_sequence":null},
            "usage":{"output_tokens":1}}),
    );
    event("message_stop", json!({"type":"message_stop"}));
    let mut r = Response::new(Full::new(Bytes::from(sse)));
    r.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static("text/event-stream"),
    );
    r
}

/// Whether the conversation starts with the plan's prompt: its first message is the user's and
/// carries the prompt (as its text, or in one of its text blocks). A host's side requests
/// (warm-ups, sub-agents, titles) start otherwise.
fn starts_with_prompt(v: &Value, prompt: &str) -> bool {
    let Some(first) = v
        .get("messages")
        .and_then(Value::as_array)
        .and_then(|m| m.first())
    else {
        return false;
    };
    match first.get("content") {
        Some(Value::String(s)) => s.contains(prompt),
        Some(Value::Array(blocks)) => blocks.iter().any(|b| {
            b.get("text")
                .and_then(Value::as_str)
                .is_some_and(|t| t.contains(prompt))
        }),
        _ => false,
    }
}

/// The tool results after the last assistant message the scripted model wrote (one with a
/// `tool_use` of ours, `toolu_...`; else the last assistant message): a host may put messages of
/// its own in between (pydantic-ai announces a new tool with a `search_tools` call and its
/// result of its own making).
fn tool_results(v: &Value) -> Vec<ToolResult> {
    let Some(messages) = v.get("messages").and_then(Value::as_array) else {
        return Vec::new();
    };
    let is_assistant = |m: &Value| m.get("role").and_then(Value::as_str) == Some("assistant");
    let ours = |m: &Value| {
        m.get("content").and_then(Value::as_array).is_some_and(|a| {
            a.iter().any(|b| {
                b.get("id")
                    .and_then(Value::as_str)
                    .is_some_and(|id| id.starts_with("toolu_"))
            })
        })
    };
    let from = messages
        .iter()
        .rposition(|m| is_assistant(m) && ours(m))
        .or_else(|| messages.iter().rposition(is_assistant))
        .map_or(0, |i| i + 1);
    let blocks: Vec<&Value> = messages[from..]
        .iter()
        .filter_map(|m| m.get("content").and_then(Value::as_array))
        .flatten()
        .collect();
    blocks
        .iter()
        .filter(|b| b.get("type").and_then(Value::as_str) == Some("tool_result"))
        .map(|b| {
            let text = match b.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(a)) => a
                    .iter()
                    .filter_map(|x| x.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            ToolResult {
                tool_use_id: b
                    .get("tool_use_id")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_owned(),
                is_error: b.get("is_error").and_then(Value::as_bool) == Some(true),
                text: text.chars().take(300).collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_are_read_after_the_scripted_models_last_call() {
        // pydantic-ai puts a call and a result of its own after the model's call.
        let v = json!({"messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01_000", "name": "x"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01_000",
                "content": [{"type": "text", "text": "done"}]}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "host_1", "name": "search_tools"}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "host_1", "is_error": true,
                "content": "found"}]},
        ]});
        let r = tool_results(&v);
        let ids: Vec<&str> = r.iter().map(|x| x.tool_use_id.as_str()).collect();
        assert_eq!(ids, ["toolu_01_000", "host_1"]);
        assert_eq!(r[0].text, "done");
        assert!(!r[0].is_error && r[1].is_error);
        // Without a call of ours, the last assistant message bounds them.
        let v = json!({"messages": [
            {"role": "assistant", "content": "hi"},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "t"}]},
        ]});
        assert_eq!(tool_results(&v).len(), 1);
    }
}
