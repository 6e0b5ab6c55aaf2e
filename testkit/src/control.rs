//! The harness's end of a control channel, as tests drive it (`docs/harness-protocol.md`): send a
//! command, await its reply; every other line (events, logs) goes to the caller's handler in the
//! order the adapter sent it.

use crate::within;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::sync::oneshot;

type Pending = Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>;

/// One accepted control connection, seen from the harness's side.
pub struct ControlPeer {
    write: tokio::net::unix::OwnedWriteHalf,
    pending: Pending,
    next: u64,
    label: String,
}

impl ControlPeer {
    /// Takes over a connected control socket. `label` names the peer in timeouts; `on_event`
    /// receives every line that is not a reply, parsed (a line that is not JSON fails the test).
    pub fn new(
        stream: UnixStream,
        label: impl Into<String>,
        mut on_event: impl FnMut(Value) + Send + 'static,
    ) -> ControlPeer {
        let label = label.into();
        let (read, write) = stream.into_split();
        let pending: Pending = Arc::default();
        let (p, who) = (pending.clone(), label.clone());
        tokio::spawn(async move {
            let mut lines = BufReader::new(read).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("{who} sent a line that is not JSON ({e}): {line}"));
                if v["type"] == "reply" {
                    let id = v["id"].as_u64().expect("reply id");
                    if let Some(tx) = p.lock().unwrap().remove(&id) {
                        let _ = tx.send(v);
                    }
                    continue;
                }
                on_event(v);
            }
        });
        ControlPeer {
            write,
            pending,
            next: 0,
            label,
        }
    }

    /// Sends `cmd` (an object with at least `"cmd"`), numbered; returns the reply.
    pub async fn cmd(&mut self, mut cmd: Value) -> Value {
        self.next += 1;
        let what = format!("{} {}", self.label, cmd["cmd"]);
        cmd["type"] = json!("cmd");
        cmd["id"] = json!(self.next);
        let (tx, rx) = oneshot::channel();
        self.pending.lock().unwrap().insert(self.next, tx);
        let mut line = cmd.to_string();
        line.push('\n');
        self.write
            .write_all(line.as_bytes())
            .await
            .expect("control write");
        within(&what, rx).await.expect("reply")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_reply_reaches_its_command_and_events_reach_the_handler() {
        let (ours, theirs) = UnixStream::pair().unwrap();
        let events = Arc::new(Mutex::new(Vec::new()));
        let seen = events.clone();
        let mut peer = ControlPeer::new(ours, "adapter", move |v| seen.lock().unwrap().push(v));
        // The adapter: an event, then the reply to command 1 (echoing its `cmd`).
        tokio::spawn(async move {
            let (r, mut w) = theirs.into_split();
            let mut lines = BufReader::new(r).lines();
            let line = lines.next_line().await.unwrap().unwrap();
            let cmd: Value = serde_json::from_str(&line).unwrap();
            let ev = json!({"type": "event", "event": "ready"}).to_string() + "\n";
            w.write_all(ev.as_bytes()).await.unwrap();
            let reply = json!({"type": "reply", "id": cmd["id"], "ok": true, "echo": cmd["cmd"]})
                .to_string();
            w.write_all((reply + "\n").as_bytes()).await.unwrap();
            let _ = lines.next_line().await;
        });
        let r = peer.cmd(json!({"cmd": "catalog"})).await;
        assert_eq!(r["id"], 1);
        assert_eq!(r["echo"], "catalog");
        assert_eq!(
            events.lock().unwrap().as_slice(),
            &[json!({"type": "event", "event": "ready"})]
        );
    }
}
