//! The rig of one test: its Redis (started through the cluster crate's test kit, which
//! provisions `redis-server` on first use), the store read directly as the truth, the nodes and
//! clients it starts, moving a client to another node, waiting for clients to hold a version,
//! quiescence points, and shutting everything down.

use super::forward::Forward;
use super::node::{Node, NodeEvents};
use super::{LIMIT, eventually, within};
use listsync_cluster::store::RedisStore;
use listsync_cluster::testkit::TestRedis;
use listsync_core::client::Pacing;
use listsync_core::history::{ClientId, Event};
use listsync_core::vocab::{AuthCtx, Catalog, Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle as Client, ClientSettings, Endpoint};
use listsync_rt::history::SharedHistory;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

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
    pub(super) node_events: Arc<NodeEvents>,
    /// (index in `history`, version) of each quiescence point.
    pub(super) quiescent: Vec<(usize, u64)>,
    pub(super) dir: PathBuf,
    pub(super) listener_seq: u32,
    /// Items per page.
    pub page_size: u16,
    /// Pacing of the clients added from now on (default: the reference client's).
    pub client_pacing: Pacing,
    pub(super) initial: Value,
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
            client_pacing: Pacing::default(),
            initial: initial_ops(),
        }
    }

    /// Starts a reference client reaching node `node` through its own forwarder.
    pub async fn add_client(&mut self, node: usize) -> ClientId {
        let id = self.clients.len() as ClientId;
        let lb = Forward::start(self.nodes[node].addr).await;
        let mut s = ClientSettings::new(self.era, KindSet::only(Kind::Tools));
        s.id = id;
        s.client.pacing = self.client_pacing;
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

pub(super) fn read(path: &PathBuf) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}
