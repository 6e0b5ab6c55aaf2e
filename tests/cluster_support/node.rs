//! Nodes: `listsync serve --http --redis --node` processes started by the rig, driven through
//! the harness control channel (commands and replies, health and history events), and killed or
//! shut down by the test.

use super::rig::{Rig, read};
use super::within;
use listsync_core::history::Event;
use listsync_testkit::control::ControlPeer;
use serde_json::{Value, json};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Mutex;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener};
use tokio::sync::{oneshot, watch};

/// One node event as it arrived: from which node, and how many client events had been
/// recorded by then.
#[derive(Clone, Debug)]
pub(super) struct Arrived {
    pub(super) node: usize,
    pub(super) at: usize,
    pub(super) event: Event,
}

/// Events of every node, in arrival order.
#[derive(Default)]
pub(super) struct NodeEvents {
    pub(super) events: Mutex<Vec<Arrived>>,
}

/// A running `listsync serve --redis --node` process.
pub struct Node {
    /// Index in the rig (never reused, so session ids stay distinct).
    pub index: usize,
    /// Node name.
    pub name: String,
    /// Where it serves HTTP.
    pub addr: SocketAddr,
    pub(super) child: tokio::process::Child,
    control: ControlPeer,
    health: watch::Receiver<Value>,
    log: PathBuf,
    pub(super) alive: bool,
}

impl Node {
    /// Sends a control command; returns the reply.
    pub async fn cmd(&mut self, cmd: Value) -> Value {
        self.control.cmd(cmd).await
    }

    /// Commits `ops` through this node's control channel; returns the version that holds the
    /// batch. While the store is unreachable (a Redis restart) the node refuses without
    /// committing anything, and the batch is sent again.
    pub async fn mutate(&mut self, ops: &Value) -> u64 {
        let what = format!("batch through node {}", self.name);
        within(&what, async {
            loop {
                let r = self.cmd(json!({"cmd": "mutate", "ops": ops})).await;
                if r["ok"] == true {
                    return r["version"].as_u64().expect("version");
                }
                let err = r["error"].as_str().unwrap_or_default();
                assert!(
                    err.contains("shared catalog store failed"),
                    "node {} refused {ops}: {r}",
                    self.name
                );
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// The version this node serves (control channel `catalog`).
    pub async fn version(&mut self) -> u64 {
        let r = self.cmd(json!({"cmd": "catalog", "kind": "tools"})).await;
        r["version"].as_u64().expect("version")
    }

    /// Waits until the node's last `health` event satisfies `pred`; returns it.
    pub async fn wait_health(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let what = format!("node {} health: {what}", self.name);
        within(&what, self.health.wait_for(|h| pred(h)))
            .await
            .expect("node alive")
            .clone()
    }

    /// `GET /health`: (status code, body).
    pub async fn http_health(&self) -> (u16, Value) {
        let mut s = TcpStream::connect(self.addr).await.expect("connect");
        s.write_all(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            .await
            .expect("write");
        let mut buf = Vec::new();
        within("GET /health", s.read_to_end(&mut buf))
            .await
            .expect("read");
        let text = String::from_utf8_lossy(&buf);
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .expect("status line");
        let body = text.split("\r\n\r\n").nth(1).unwrap_or("");
        (status, serde_json::from_str(body).expect("health JSON"))
    }

    /// What the node logged on stderr so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the process (SIGKILL) and waits for it.
    pub async fn kill(&mut self) {
        let _ = self.child.start_kill();
        let _ = within("node exits", self.child.wait()).await;
        self.alive = false;
    }

    /// Whether the process is (still) ours to talk to.
    pub fn alive(&self) -> bool {
        self.alive
    }
}

/// Options of a node process.
#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    /// `--strategy` (default reference).
    pub strategy: Option<String>,
    /// Reach Redis through this address instead of directly (a forwarder).
    pub redis_via: Option<SocketAddr>,
    /// `--retain-versions` (default: the server's).
    pub retain_versions: Option<u8>,
    /// A server of its own, without Redis (`listsync serve --http` alone): the single-node
    /// baseline the cluster bench measures beside the cluster.
    pub standalone: bool,
}

impl Rig {
    /// Starts a node process named `name`; returns its index.
    pub async fn add_node(&mut self, name: &str, spec: NodeSpec) -> usize {
        let index = self.nodes.len();
        self.listener_seq += 1;
        let sock = self.dir.join(format!("control-{}.sock", self.listener_seq));
        let listener = UnixListener::bind(&sock).expect("bind control socket");
        let redis_url = match spec.redis_via {
            Some(a) => format!("redis://{a}/"),
            None => self.redis.url(),
        };
        let log = self.dir.join(format!("node-{index}-{name}.log"));
        let mut cmd = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"));
        cmd.args(["serve", "--http", "127.0.0.1:0"]);
        if !spec.standalone {
            cmd.args(["--redis", &redis_url, "--node", name]);
        }
        cmd.args(["--era", self.era.as_str()])
            .args(["--page-size", &self.page_size.to_string()])
            .arg("--initial")
            .arg(self.initial.to_string())
            .arg("--control")
            .arg(&sock);
        if let Some(s) = &spec.strategy {
            cmd.args(["--strategy", s]);
        }
        if let Some(r) = spec.retain_versions {
            cmd.args(["--retain-versions", &r.to_string()]);
        }
        let mut child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).expect("log file"))
            .kill_on_drop(true)
            .spawn()
            .expect("spawn listsync serve");
        let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let url = within("the node's URL", out.next_line())
            .await
            .expect("read stdout")
            .unwrap_or_else(|| panic!("node {name} exited:\n{}", read(&log)));
        let addr: SocketAddr = url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .parse()
            .expect("node address");
        let (stream, _) = within("control connection", listener.accept())
            .await
            .expect("accept");
        let (health_tx, health) = watch::channel(Value::Null);
        let (ready_tx, ready_rx) = oneshot::channel();
        let mut ready_tx = Some(ready_tx);
        let (events, history) = (self.node_events.clone(), self.history.clone());
        let control =
            ControlPeer::new(
                stream,
                format!("node {name}"),
                move |v: Value| match v["event"].as_str() {
                    Some("history") => {
                        let event: Event =
                            serde_json::from_value(v["entry"].clone()).expect("history entry");
                        events.events.lock().unwrap().push(Arrived {
                            node: index,
                            at: history.len(),
                            event,
                        });
                    }
                    Some("health") => {
                        health_tx.send_replace(v);
                    }
                    Some("ready") => {
                        if let Some(tx) = ready_tx.take() {
                            let _ = tx.send(v);
                        }
                    }
                    _ => {}
                },
            );
        let ready = within("ready", ready_rx).await.expect("ready event");
        if !spec.standalone {
            assert_eq!(ready["node"], name, "{ready}");
        }
        self.nodes.push(Node {
            index,
            name: name.into(),
            addr,
            child,
            control,
            health,
            log,
            alive: true,
        });
        index
    }
}
