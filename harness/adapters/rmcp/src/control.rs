//! The adapter side of the harness control protocol (`docs/harness-protocol.md`): connects to
//! the Unix socket in `LISTSYNC_CONTROL`, sends events and exactly one reply per command, runs
//! each command in its own task (a call parked at a gate must not block the `release` that
//! frees it), and answers malformed lines with `ok:false` instead of failing.

use serde_json::{Map, Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::{mpsc, oneshot};

enum Out {
    Line(String),
    Flush(oneshot::Sender<()>),
}

/// Sends events and replies (cheap to clone).
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
}

/// A failed command.
#[derive(Debug, Clone)]
pub struct Fail {
    /// Message.
    pub error: String,
    /// JSON-RPC code of a failed MCP request.
    pub code: Option<i64>,
}

impl Fail {
    /// A failure without a code.
    pub fn new(error: impl Into<String>) -> Fail {
        Fail {
            error: error.into(),
            code: None,
        }
    }
}

impl Outbox {
    fn line(&self, v: Value) {
        let _ = self.tx.send(Out::Line(v.to_string()));
    }

    /// An event `{"type":"event","event":name,...fields}`.
    pub fn event(&self, name: &str, fields: Value) {
        let mut m = match fields {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        m.insert("type".into(), json!("event"));
        m.insert("event".into(), json!(name));
        self.line(Value::Object(m));
    }

    /// A `log` event.
    pub fn log(&self, message: impl Into<String>) {
        self.event("log", json!({ "message": message.into() }));
    }

    fn reply(&self, id: Value, r: Result<Value, Fail>) {
        let mut m = Map::new();
        m.insert("type".into(), json!("reply"));
        m.insert("id".into(), id);
        match r {
            Ok(Value::Object(f)) => {
                m.insert("ok".into(), json!(true));
                m.extend(f);
            }
            Ok(_) => {
                m.insert("ok".into(), json!(true));
            }
            Err(f) => {
                m.insert("ok".into(), json!(false));
                m.insert("error".into(), json!(f.error));
                if let Some(c) = f.code {
                    m.insert("code".into(), json!(c));
                }
            }
        }
        self.line(Value::Object(m));
    }

    /// Waits until everything sent so far is written.
    pub async fn flush(&self) {
        let (tx, rx) = oneshot::channel();
        if self.tx.send(Out::Flush(tx)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// A command handler: (command name, whole command) → reply fields.
pub type Handler = Arc<
    dyn Fn(String, Value) -> Pin<Box<dyn Future<Output = Result<Value, Fail>> + Send>>
        + Send
        + Sync,
>;

/// Connects to the harness's control socket.
pub async fn connect(path: &str) -> std::io::Result<(Outbox, OwnedReadHalf)> {
    let stream = UnixStream::connect(path).await?;
    let (r, mut w) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
    tokio::spawn(async move {
        let mut open = true;
        while let Some(o) = rx.recv().await {
            match o {
                Out::Line(mut l) if open => {
                    l.push('\n');
                    open = w.write_all(l.as_bytes()).await.is_ok() && w.flush().await.is_ok();
                }
                Out::Line(_) => {}
                Out::Flush(done) => {
                    let _ = done.send(());
                }
            }
        }
    });
    Ok((Outbox { tx }, r))
}

/// Serves commands until the socket closes or a `shutdown` was answered.
pub async fn serve(r: OwnedReadHalf, out: Outbox, handler: Handler) {
    let mut lines = BufReader::new(r).lines();
    let (done_tx, mut done_rx) = mpsc::unbounded_channel::<()>();
    loop {
        let line = tokio::select! {
            l = lines.next_line() => l,
            _ = done_rx.recv() => break,
        };
        let Ok(Some(line)) = line else { break };
        if line.trim().is_empty() {
            continue;
        }
        let v: Value = match serde_json::from_str(&line) {
            Ok(v) => v,
            Err(e) => {
                out.reply(Value::Null, Err(Fail::new(format!("invalid JSON: {e}"))));
                continue;
            }
        };
        let id = v.get("id").cloned().unwrap_or(Value::Null);
        let cmd = match (
            v.get("type").and_then(Value::as_str),
            v.get("cmd").and_then(Value::as_str),
        ) {
            (Some("cmd"), Some(c)) => c.to_owned(),
            _ => {
                out.reply(
                    id,
                    Err(Fail::new(
                        "expected {\"type\":\"cmd\",\"id\":N,\"cmd\":\"...\"}",
                    )),
                );
                continue;
            }
        };
        let fut = handler(cmd.clone(), v);
        let out = out.clone();
        let done = done_tx.clone();
        tokio::spawn(async move {
            let r = fut.await;
            out.reply(id, r);
            if cmd == "shutdown" {
                out.flush().await;
                let _ = done.send(());
            }
        });
    }
    out.flush().await;
}

/// A string field of a command.
pub fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, Fail> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Fail::new(format!("missing string field '{name}'")))
}
