//! The harness side of the control protocol (`docs/harness-protocol.md`): one Unix socket
//! listener per adapter, JSON lines both ways. Commands carry ids and get exactly one reply;
//! events arrive unsolicited and are recorded on the run's timeline, as are the commands and
//! replies themselves. A line that is not JSON, not an object, or of no known type is recorded
//! as bad input and reported; a silent or vanished adapter turns into a timeout or a closed
//! channel, never a hang. Lines are encoded and decoded by the protocol's one codec
//! (`listsync-control`), the one the reference runtime and the Rust adapter speak.

use crate::timeline::{Body, Hub, HubState, Side};
use listsync_control::{Incoming, Line, Malformed, read_line};
use serde_json::Value;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::net::unix::OwnedWriteHalf;
use tokio::sync::oneshot;

/// Longest control line accepted.
const MAX_CONTROL_LINE: usize = 4 << 20;

/// Why a command did not succeed.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum CmdError {
    /// No reply within the bound.
    #[error("no reply to '{0}' within {1:?}")]
    Timeout(String, Duration),
    /// The control channel is closed (the adapter exited).
    #[error("control channel closed before '{0}' was answered")]
    Closed(String),
    /// The adapter answered `ok:false`.
    #[error("{error}{}", code.map(|c| format!(" (code {c})")).unwrap_or_default())]
    Failed {
        /// The adapter's message.
        error: String,
        /// JSON-RPC code, if an MCP request failed.
        code: Option<i64>,
    },
}

/// One adapter's control channel.
pub struct Control {
    side: Side,
    hub: Arc<Hub>,
    writer: tokio::sync::Mutex<OwnedWriteHalf>,
    pending: Mutex<HashMap<u64, oneshot::Sender<Value>>>,
    next_id: AtomicU64,
    closed: AtomicBool,
}

/// Binds a listener at `path` (removing a stale socket file first).
pub fn listen(path: &Path) -> std::io::Result<UnixListener> {
    let _ = std::fs::remove_file(path);
    UnixListener::bind(path)
}

impl Control {
    /// Waits (at most `bound`) for the adapter to connect, then serves the channel.
    pub async fn accept(
        listener: UnixListener,
        side: Side,
        hub: Arc<Hub>,
        bound: Duration,
    ) -> Result<Arc<Control>, String> {
        let (stream, _) = match tokio::time::timeout(bound, listener.accept()).await {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return Err(format!("{} control socket: {e}", side.as_str())),
            Err(_) => {
                return Err(format!(
                    "the {} adapter did not connect to its control socket within {bound:?}",
                    side.as_str()
                ));
            }
        };
        let (r, w) = stream.into_split();
        let control = Arc::new(Control {
            side,
            hub,
            writer: tokio::sync::Mutex::new(w),
            pending: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            closed: AtomicBool::new(false),
        });
        tokio::spawn(read_loop(control.clone(), r));
        Ok(control)
    }

    /// Which adapter.
    pub fn side(&self) -> Side {
        self.side
    }

    /// Whether the channel closed.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }

    /// Sends a command and waits (at most `bound`) for its reply. `fields` must be an object.
    pub async fn cmd(&self, cmd: &str, fields: Value, bound: Duration) -> Result<Value, CmdError> {
        let rx = self.send(cmd, fields).await?;
        let reply = match tokio::time::timeout(bound, rx).await {
            Ok(Ok(v)) => v,
            Ok(Err(_)) => return Err(CmdError::Closed(cmd.into())),
            Err(_) => return Err(CmdError::Timeout(cmd.into(), bound)),
        };
        if reply.get("ok").and_then(Value::as_bool) == Some(true) {
            Ok(reply)
        } else {
            Err(CmdError::Failed {
                error: reply
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or("(no message)")
                    .to_owned(),
                code: reply.get("code").and_then(Value::as_i64),
            })
        }
    }

    /// Sends a command; the receiver gets its reply (whatever `ok` says).
    pub async fn send(
        &self,
        cmd: &str,
        fields: Value,
    ) -> Result<oneshot::Receiver<Value>, CmdError> {
        if self.is_closed() {
            return Err(CmdError::Closed(cmd.into()));
        }
        let id = self.next_id.fetch_add(1, Ordering::SeqCst);
        let obj = listsync_control::command(id, cmd, fields);
        let (tx, rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(id, tx);
        self.hub.record(Body::Command {
            to: self.side,
            cmd: obj.clone(),
        });
        let mut line = obj.to_string();
        line.push('\n');
        let mut w = self.writer.lock().await;
        if w.write_all(line.as_bytes()).await.is_err() || w.flush().await.is_err() {
            self.pending
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            return Err(CmdError::Closed(cmd.into()));
        }
        Ok(rx)
    }

    /// Closes the sending half (the adapter exits when its control socket closes).
    pub async fn close(&self) {
        let _ = self.writer.lock().await.shutdown().await;
    }
}

async fn read_loop(c: Arc<Control>, r: tokio::net::unix::OwnedReadHalf) {
    let mut r = BufReader::new(r);
    let mut buf = Vec::new();
    let from = format!("control {}", c.side.as_str());
    let bad = |what: String| {
        c.hub.record(Body::Bad {
            from: from.clone(),
            what,
        })
    };
    loop {
        let line = match read_line(&mut r, &mut buf, MAX_CONTROL_LINE).await {
            Ok(Some(Line::Text(line))) => line,
            Ok(Some(Line::TooLong(n))) => {
                bad(format!("a control line of {n} bytes: dropped"));
                continue;
            }
            Ok(Some(Line::NotUtf8)) => {
                bad("a control line that is not UTF-8: dropped".into());
                continue;
            }
            Ok(None) | Err(_) => break,
        };
        if line.trim().is_empty() {
            continue;
        }
        match Incoming::decode(&line) {
            Ok(Incoming::Reply { id, body }) => {
                c.hub.record(Body::Reply {
                    from: c.side,
                    reply: body.clone(),
                });
                let waiter = id.and_then(|id| {
                    c.pending
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .remove(&id)
                });
                match waiter {
                    Some(w) => {
                        let _ = w.send(body);
                    }
                    None => {
                        bad(format!("a reply to no pending command (id {id:?})"));
                    }
                }
            }
            Ok(Incoming::Event { body, .. }) => {
                c.hub.record(Body::Event {
                    from: c.side,
                    event: body,
                });
            }
            Err(Malformed::NotJson(e)) => {
                let shown: String = line.chars().take(200).collect();
                bad(format!("not JSON ({e}): {shown}"));
            }
            Ok(Incoming::Command { body: v, .. }) => {
                bad(format!("neither a reply nor an event: {}", truncate(&v)));
            }
            Err(Malformed::Unknown(_)) => {
                let v = serde_json::from_str(&line).unwrap_or(Value::Null);
                bad(format!("neither a reply nor an event: {}", truncate(&v)));
            }
        }
    }
    c.closed.store(true, Ordering::SeqCst);
    // Fail every pending command: dropping the senders wakes the waiters.
    c.pending.lock().unwrap_or_else(|e| e.into_inner()).clear();
    c.hub.record(Body::Note {
        text: format!("{} control channel closed", c.side.as_str()),
    });
}

fn truncate(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

/// The events of `side` named `name`, in order (with their sequence numbers).
pub fn events<'a>(
    st: &'a HubState,
    side: Side,
    name: &'a str,
) -> impl Iterator<Item = (u64, &'a Value)> + 'a {
    st.records.iter().filter_map(move |r| match &r.body {
        Body::Event { from, event }
            if *from == side && event.get("event").and_then(Value::as_str) == Some(name) =>
        {
            Some((r.seq, event))
        }
        _ => None,
    })
}
