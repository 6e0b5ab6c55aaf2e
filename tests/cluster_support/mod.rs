//! What the multi-instance tests share: a Redis of their own (the cluster crate's test kit),
//! `listsync serve --http --redis --node` nodes as real processes driven through the harness
//! control channel, reference clients (rt's `ClientHandle`) connected to nodes through small TCP
//! forwarders that stand for a load balancer (so a client can be moved to another node), and the
//! history of the whole run, judged with core's checkers.
//!
//! # One history from several processes
//!
//! Clients record into one in-process [`SharedHistory`], in the order they step. Each node reports its
//! own events on its control channel, in its own order; they are merged by arrival. A node
//! records the store's commit of a version (`Committed`) when it takes that version, before the
//! notifications that announce it. Arrival order across processes is not causal order (a client
//! may publish a version before the control event of the node that took it has been read), so
//! each `Committed` is placed just before the first client event that needs it: a publication of
//! that version (or newer), or a quiescence point at that version. Commits are deduplicated by
//! version (every node reports every version it takes), and the test fails if two nodes report
//! different catalogs for one version. Node session ids are renamed per node (every node numbers
//! its sessions from the same base).

#![allow(dead_code)] // each test file uses a different part of this module

use listsync_cluster::store::RedisStore;
use listsync_cluster::testkit::TestRedis;
use listsync_core::history::{ClientId, Event};
use listsync_core::vocab::{AuthCtx, Catalog, Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle as Client, ClientSettings, Endpoint};
use listsync_rt::history::SharedHistory;
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream, UnixListener};
use tokio::sync::{oneshot, watch};
use tokio_util::sync::CancellationToken;

/// The longest any single wait may take before the test fails (generous: a loaded 2-core
/// machine runs several builds at once).
pub const LIMIT: Duration = Duration::from_secs(90);

/// Awaits `fut`, failing the test after [`LIMIT`].
pub async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// Polls `check` until it returns `Some`, failing the test after [`LIMIT`]. The pause between
/// polls only paces the loop; nothing is concluded from time passing.
pub async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    within(what, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

// ---------------------------------------------------------------------------------------------
// A TCP forwarder (a load balancer in front of nodes, or a network path to Redis).

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    To(SocketAddr),
    /// Accept, forward nothing, hold the connection open (a partition).
    Hold,
}

/// Forwards every TCP connection it accepts on a loopback port to a target that can change.
/// Changing the target (or partitioning) cuts every connection made before.
pub struct Forward {
    addr: SocketAddr,
    mode: watch::Sender<Mode>,
    generation: Arc<Mutex<CancellationToken>>,
    stop: CancellationToken,
}

impl Forward {
    /// A forwarder to `target` on a free port.
    pub async fn start(target: SocketAddr) -> Forward {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("addr");
        let (mode, rx) = watch::channel(Mode::To(target));
        let generation = Arc::new(Mutex::new(CancellationToken::new()));
        let stop = CancellationToken::new();
        let (g, s) = (generation.clone(), stop.clone());
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    a = listener.accept() => a,
                    _ = s.cancelled() => return,
                };
                let Ok((inbound, _)) = accepted else { continue };
                let cut = g.lock().unwrap().clone();
                let mode = *rx.borrow();
                tokio::spawn(async move {
                    match mode {
                        Mode::Hold => cut.cancelled().await,
                        Mode::To(target) => {
                            let Ok(mut outbound) = TcpStream::connect(target).await else {
                                return;
                            };
                            let mut inbound = inbound;
                            tokio::select! {
                                _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                                _ = cut.cancelled() => {}
                            }
                        }
                    }
                });
            }
        });
        Forward {
            addr,
            mode,
            generation,
            stop,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    fn cut(&self) {
        let old = std::mem::replace(
            &mut *self.generation.lock().unwrap(),
            CancellationToken::new(),
        );
        old.cancel();
    }

    /// Sends new connections to `target` and cuts the existing ones.
    pub fn switch(&self, target: SocketAddr) {
        self.mode.send_replace(Mode::To(target));
        self.cut();
    }

    /// Cuts every connection; new ones are accepted and hang (a network partition).
    pub fn partition(&self) {
        self.mode.send_replace(Mode::Hold);
        self.cut();
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.cancel();
        self.cut();
    }
}

// ---------------------------------------------------------------------------------------------
// Nodes: `listsync serve` processes under the control channel.

/// One node event as it arrived: from which node, and how many client events had been
/// recorded by then.
#[derive(Clone, Debug)]
struct Arrived {
    node: usize,
    at: usize,
    event: Event,
}

/// Events of every node, in arrival order.
#[derive(Default)]
struct NodeEvents {
    events: Mutex<Vec<Arrived>>,
}

/// A running `listsync serve --redis --node` process.
pub struct Node {
    /// Index in the rig (never reused, so session ids stay distinct).
    pub index: usize,
    /// Node name.
    pub name: String,
    /// Where it serves HTTP.
    pub addr: SocketAddr,
    child: tokio::process::Child,
    write: tokio::net::unix::OwnedWriteHalf,
    pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>>,
    next: u64,
    health: watch::Receiver<Value>,
    log: PathBuf,
    alive: bool,
}

impl Node {
    /// Sends a control command; returns the reply.
    pub async fn cmd(&mut self, mut cmd: Value) -> Value {
        self.next += 1;
        let what = format!("node {} {}", self.name, cmd["cmd"]);
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

/// A reference client and the forwarder it reaches its node through.
pub struct TestClient {
    /// History id.
    pub id: ClientId,
    /// The node the forwarder points at.
    pub node: usize,
    /// The forwarder.
    pub lb: Forward,
    /// The client.
    pub catalog: Client,
}

/// Options of a node process.
#[derive(Clone, Debug, Default)]
pub struct NodeSpec {
    /// `--strategy` (default reference).
    pub strategy: Option<String>,
    /// Reach Redis through this address instead of directly (a forwarder).
    pub redis_via: Option<SocketAddr>,
}

/// Redis, nodes, clients, and the run's history.
pub struct Rig {
    /// Protocol era of every node and client.
    pub era: Era,
    /// The Redis of this test.
    pub redis: TestRedis,
    /// The store, read directly (truth for waits and final checks).
    pub store: RedisStore,
    /// Every node started, by index (killed ones stay, marked dead).
    pub nodes: Vec<Node>,
    /// Every client.
    pub clients: Vec<TestClient>,
    /// Client events and quiescence points.
    pub history: SharedHistory,
    node_events: Arc<NodeEvents>,
    /// (index in `history`, version) of each quiescence point.
    quiescent: Vec<(usize, u64)>,
    dir: PathBuf,
    listener_seq: u32,
    /// Items per page.
    pub page_size: u16,
    initial: Value,
}

/// The initial catalog every test starts from: tools t0..t5.
pub fn initial_ops() -> Value {
    Value::Array(
        (0..6)
            .map(|i| json!({"op": "add", "kind": "tools", "name": format!("t{i}"), "description": format!("t{i} v1")}))
            .collect(),
    )
}

impl Rig {
    /// Starts Redis (nothing else yet).
    pub async fn start(era: Era, tag: &str) -> Rig {
        let redis = tokio::task::spawn_blocking(TestRedis::start)
            .await
            .expect("join")
            .unwrap_or_else(|e| no_redis(&e));
        let store = RedisStore::connect(&redis.url(), "listsync")
            .await
            .expect("connect to the test redis");
        let dir = std::env::temp_dir().join(format!(
            "listsync-cluster-{}-{tag}-{}",
            std::process::id(),
            era.as_str()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        Rig {
            era,
            redis,
            store,
            nodes: Vec::new(),
            clients: Vec::new(),
            history: SharedHistory::new(),
            node_events: Arc::default(),
            quiescent: Vec::new(),
            dir,
            listener_seq: 0,
            page_size: 2,
            initial: initial_ops(),
        }
    }

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
        cmd.args([
            "serve",
            "--http",
            "127.0.0.1:0",
            "--redis",
            &redis_url,
            "--node",
            name,
        ])
        .args(["--era", self.era.as_str()])
        .args(["--page-size", &self.page_size.to_string()])
        .arg("--initial")
        .arg(self.initial.to_string())
        .arg("--control")
        .arg(&sock);
        if let Some(s) = &spec.strategy {
            cmd.args(["--strategy", s]);
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
        let (r, write) = stream.into_split();
        let pending: Arc<Mutex<HashMap<u64, oneshot::Sender<Value>>>> = Arc::default();
        let (health_tx, health) = watch::channel(Value::Null);
        let (ready_tx, ready_rx) = oneshot::channel();
        let mut ready_tx = Some(ready_tx);
        let (p, events, history) = (
            pending.clone(),
            self.node_events.clone(),
            self.history.clone(),
        );
        tokio::spawn(async move {
            let mut lines = BufReader::new(r).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                let v: Value = serde_json::from_str(&line).expect("node sends JSON");
                if v["type"] == "reply" {
                    let id = v["id"].as_u64().expect("reply id");
                    if let Some(tx) = p.lock().unwrap().remove(&id) {
                        let _ = tx.send(v);
                    }
                    continue;
                }
                match v["event"].as_str() {
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
                }
            }
        });
        let ready = within("ready", ready_rx).await.expect("ready event");
        assert_eq!(ready["node"], name, "{ready}");
        self.nodes.push(Node {
            index,
            name: name.into(),
            addr,
            child,
            write,
            pending,
            next: 0,
            health,
            log,
            alive: true,
        });
        index
    }

    /// Starts a reference client reaching node `node` through its own forwarder.
    pub async fn add_client(&mut self, node: usize) -> ClientId {
        let id = self.clients.len() as ClientId;
        let lb = Forward::start(self.nodes[node].addr).await;
        let mut s = ClientSettings::new(self.era, KindSet::only(Kind::Tools));
        s.id = id;
        s.history = Some(self.history.clone());
        s.request_timeout = Duration::from_secs(10);
        s.connect_timeout = Duration::from_secs(10);
        s.reconnect_base = Duration::from_millis(20);
        s.reconnect_max = Duration::from_millis(300);
        s.probe_interval = Duration::from_millis(250);
        let catalog = Client::spawn(
            s,
            Endpoint::Http {
                url: format!("http://{}/mcp", lb.addr()),
            },
        );
        self.clients.push(TestClient {
            id,
            node,
            lb,
            catalog,
        });
        id
    }

    /// Points client `c`'s forwarder at node `node` (its open connections are cut) and waits
    /// until the client has opened a connection there and is past its handshake (2025-11-25)
    /// or listen acknowledgement (2026-07-28), so that what the test does next reaches it on
    /// its new node.
    pub async fn move_client(&mut self, c: ClientId, node: usize) {
        let addr = self.nodes[node].addr;
        let (history, era) = (self.history.clone(), self.era);
        // 2025-11-25: a new session (a connection opened); 2026-07-28: a new listen stream
        // acknowledged (requests are stateless, the stream is what ties a client to a node).
        let started = move || match era {
            Era::V2025_11_25 => 0,
            Era::V2026_07_28 => history
                .events()
                .iter()
                .filter(|e| matches!(e, Event::ListenAcked { client, .. } if *client == c))
                .count(),
        };
        let client = &mut self.clients[c as usize];
        let mut status = client.catalog.status();
        let connections = status.borrow_and_update().connections;
        let acked = started();
        client.node = node;
        client.lb.switch(addr);
        let what = format!("c{c} to start over on node {node}");
        eventually(&what, async || {
            let st = status.borrow().clone();
            let moved = match era {
                Era::V2025_11_25 => st.connections > connections,
                Era::V2026_07_28 => started() > acked,
            };
            (moved && st.ready).then_some(())
        })
        .await;
    }

    /// The store's version and catalog.
    pub async fn truth(&self) -> (u64, Catalog) {
        // The first read after a Redis restart may fail while the connection is re-made.
        eventually("the store to answer", async || self.store.load().await.ok()).await
    }

    /// Commits `ops` through node `node`'s control channel (see [`Node::mutate`]).
    pub async fn mutate(&mut self, node: usize, ops: &Value) -> u64 {
        self.nodes[node].mutate(ops).await
    }

    /// Waits until clients `which` hold the store's current version, are past their
    /// handshake and idle.
    pub async fn wait_clients(&self, which: &[ClientId], version: u64) {
        for &c in which {
            let client = &self.clients[c as usize];
            let mut status = client.catalog.status();
            let mut changes = client.catalog.changes();
            let waited = tokio::time::timeout(LIMIT, async {
                loop {
                    let view = client.catalog.tools();
                    let st = status.borrow_and_update().clone();
                    if view.version == Some(version) && !view.is_stale() && st.ready && st.idle {
                        return;
                    }
                    tokio::select! {
                        _ = status.changed() => {}
                        _ = changes.changed() => {}
                    }
                }
            })
            .await;
            if waited.is_err() {
                let view = client.catalog.tools();
                panic!(
                    "timed out waiting for c{c} (node {}) to hold v{version}: it holds {:?} (stale: {}), status {:?}",
                    client.node,
                    view.version,
                    view.is_stale(),
                    client.catalog.status().borrow()
                );
            }
        }
    }

    /// Waits until every client holds the store's current version, then records a quiescence
    /// point (every client's tools list must equal the store's). Returns the version.
    pub async fn quiesce(&mut self) -> u64 {
        let (v, _) = self.truth().await;
        let all: Vec<ClientId> = self.clients.iter().map(|c| c.id).collect();
        self.wait_clients(&all, v).await;
        let at = self
            .history
            .quiescent(all.iter().map(|c| (*c, Kind::Tools, AuthCtx(0))).collect());
        self.quiescent.push((at as usize, v));
        v
    }

    /// The run's history: client events with node events merged in (see the module doc).
    pub fn merged(&self) -> Vec<Event> {
        let client_events = self.history.events();
        let arrived = self.node_events.events.lock().unwrap().clone();
        let mut commits: BTreeMap<u64, Arc<Catalog>> = BTreeMap::new();
        for a in &arrived {
            if let Event::Committed { version, catalog } = &a.event {
                let prev = commits.entry(*version).or_insert_with(|| catalog.clone());
                assert_eq!(
                    prev, catalog,
                    "two nodes report different catalogs for v{version}"
                );
            }
        }
        let quiescent: HashMap<usize, u64> = self.quiescent.iter().copied().collect();
        let mut out = Vec::new();
        let mut pending = commits.into_iter().peekable();
        let mut ni = 0;
        for (i, e) in client_events.iter().enumerate() {
            while ni < arrived.len() && arrived[ni].at <= i {
                if !matches!(arrived[ni].event, Event::Committed { .. }) {
                    out.push(rename(arrived[ni].node, &arrived[ni].event));
                }
                ni += 1;
            }
            let need = match e {
                Event::Published { version, .. } => {
                    version.expect("the reference server puts the version in every list result")
                }
                Event::Quiescent { .. } => quiescent[&i],
                _ => 0,
            };
            while let Some((v, _)) = pending.peek()
                && *v <= need
            {
                let (version, catalog) = pending.next().expect("peeked");
                out.push(Event::Committed { version, catalog });
            }
            out.push(e.clone());
        }
        for a in &arrived[ni..] {
            if !matches!(a.event, Event::Committed { .. }) {
                out.push(rename(a.node, &a.event));
            }
        }
        out.extend(pending.map(|(version, catalog)| Event::Committed { version, catalog }));
        out
    }

    /// Each node's own events, in its order.
    pub fn node_stream(&self, node: usize) -> Vec<Event> {
        self.node_events
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.node == node)
            .map(|a| a.event.clone())
            .collect()
    }

    /// Judges the run: core's checkers on the merged history hold; on every node, each
    /// notification announces a version the node had taken (and made visible) before sending
    /// it; the versions each node took strictly increase; and the store's final catalog is the
    /// one the nodes report for its version. Returns the merged history.
    pub async fn judge(&self) -> Vec<Event> {
        let events = self.merged();
        let j = listsync_core::monitor::judge(&events);
        let keep = std::env::var_os("LISTSYNC_KEEP_HISTORY").is_some();
        if keep || !j.violations.is_empty() {
            let path = std::env::temp_dir().join(format!(
                "listsync-cluster-history-{}.txt",
                self.dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ));
            let text: Vec<String> = events
                .iter()
                .enumerate()
                .map(|(i, e)| format!("{i:5}: {e}"))
                .collect();
            let _ = std::fs::write(&path, text.join("\n"));
            eprintln!(
                "history ({} events) written to {}",
                events.len(),
                path.display()
            );
        }
        if !j.violations.is_empty() {
            let path = "(see above)";
            panic!(
                "violations: {:#?}\nhistory ({} events) {path}",
                &j.violations[..j.violations.len().min(5)],
                events.len(),
            );
        }
        for node in &self.nodes {
            let mut taken = 0u64;
            for e in self.node_stream(node.index) {
                match e {
                    Event::Committed { version, .. } => {
                        assert!(
                            version > taken,
                            "node {} took v{version} after v{taken}",
                            node.name
                        );
                        taken = version;
                    }
                    Event::Notified {
                        announces, visible, ..
                    } => {
                        assert!(
                            announces <= taken && announces <= visible,
                            "node {} announced v{announces} having taken v{taken} (visible v{visible})",
                            node.name
                        );
                    }
                    _ => {}
                }
            }
        }
        let (v, catalog) = self.truth().await;
        let reported = events.iter().rev().find_map(|e| match e {
            Event::Committed { version, catalog } if *version == v => Some(catalog.clone()),
            _ => None,
        });
        assert_eq!(
            reported.as_deref(),
            Some(&catalog),
            "the nodes' v{v} is not the store's"
        );
        events
    }

    /// Node `node`'s notifications in the merged run.
    pub fn notifications_of(&self, node: usize) -> usize {
        self.node_stream(node)
            .iter()
            .filter(|e| matches!(e, Event::Notified { .. }))
            .count()
    }

    /// Stops every client and node (their processes are killed on drop as well).
    pub async fn shutdown(mut self) {
        for c in &self.clients {
            c.catalog.shutdown();
        }
        for n in self.nodes.iter_mut().filter(|n| n.alive) {
            let r = n.cmd(json!({"cmd": "shutdown"})).await;
            assert_eq!(r["ok"], true, "{r}");
            let status = within("node exits", n.child.wait()).await.expect("status");
            assert!(status.success(), "node {} exited with {status}", n.name);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Ends the test process with one clear message when Redis cannot be started (a panic per
/// test, each with a backtrace, would bury it). Written to the process's stderr directly, past
/// the test harness's output capture.
fn no_redis(why: &str) -> ! {
    use std::io::Write as _;
    let _ = writeln!(
        std::io::stderr(),
        "\nerror: the multi-instance tests start a Redis of their own and could not: {why}\n"
    );
    std::process::exit(2)
}

/// Renames a node's session ids into a per-node range.
fn rename(node: usize, e: &Event) -> Event {
    let r = |c: &ClientId| (node as ClientId + 1) * 1_000_000 + c;
    let mut e = e.clone();
    match &mut e {
        Event::Connected { client }
        | Event::Notified { client, .. }
        | Event::Served { client, .. }
        | Event::Dispatched { client, .. }
        | Event::CallRejected { client, .. } => *client = r(client),
        _ => {}
    }
    e
}

fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

// ---------------------------------------------------------------------------------------------
// Batches.

/// Generates valid batches (checked adds, removes and updates) and tracks the catalog they
/// build, from a seed.
pub struct Batches {
    items: BTreeMap<String, u32>,
    next: u32,
    rng: u64,
}

impl Batches {
    /// Starting from [`initial_ops`].
    pub fn new(seed: u64) -> Batches {
        Batches {
            items: (0..6).map(|i| (format!("t{i}"), 1)).collect(),
            next: 6,
            rng: seed | 1,
        }
    }

    fn roll(&mut self, n: u64) -> u64 {
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        self.rng % n
    }

    /// The next batch: one to three ops on distinct names, keeping 3 to 12 tools.
    pub fn next_batch(&mut self) -> Value {
        let n = 1 + self.roll(3);
        let mut ops = Vec::new();
        let mut touched = Vec::new();
        for _ in 0..n {
            let len = self.items.len();
            let choice = if len <= 3 {
                0
            } else if len >= 12 {
                1
            } else {
                self.roll(3)
            };
            let free: Vec<String> = self
                .items
                .keys()
                .filter(|k| !touched.contains(*k))
                .cloned()
                .collect();
            match choice {
                1 | 2 if !free.is_empty() => {
                    let name = free[self.roll(free.len() as u64) as usize].clone();
                    touched.push(name.clone());
                    if choice == 1 {
                        self.items.remove(&name);
                        ops.push(json!({"op": "remove", "kind": "tools", "name": name}));
                    } else {
                        let rev = self.items.get_mut(&name).expect("present");
                        *rev += 1;
                        let d = format!("{name} v{rev}");
                        ops.push(json!({"op": "update", "kind": "tools", "name": name, "description": d}));
                    }
                }
                _ => {
                    let name = format!("t{}", self.next);
                    self.next += 1;
                    touched.push(name.clone());
                    self.items.insert(name.clone(), 1);
                    let d = format!("{name} v1");
                    ops.push(json!({"op": "add", "kind": "tools", "name": name, "description": d}));
                }
            }
        }
        Value::Array(ops)
    }

    /// The tool names the batches so far leave, sorted.
    pub fn names(&self) -> Vec<String> {
        self.items.keys().cloned().collect()
    }
}

/// Tool names of a catalog, sorted.
pub fn names_of(catalog: &Catalog) -> Vec<String> {
    let mut v: Vec<String> = catalog
        .visible(Kind::Tools, AuthCtx(0))
        .iter()
        .map(|i| i.name.to_string())
        .collect();
    v.sort();
    v
}
