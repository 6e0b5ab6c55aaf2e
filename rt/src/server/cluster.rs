//! A node of a multi-instance server: the reference server whose catalog lives in Redis
//! (`listsync_cluster`), shared by every node of one logical server.
//!
//! * An administrator's batch on any node commits in the store — atomically, one new version,
//!   checked against the catalog it lands on — and is then installed here like any other
//!   version.
//! * Every version, whether this node committed it or learned it from the store's change
//!   channel (or a catch-up read), goes through [`Shared::install`]: under the registry lock the
//!   registry takes it if it is newer than what the node serves (duplicates and out-of-order
//!   events are ignored by version), records it, and makes it visible to list handlers; only
//!   after unlocking are this node's sessions notified (`list_changed` in 2025-11-25, the listen
//!   streams in 2026-07-28). The store is the ground truth: the node's observer records the
//!   store's commit of a version (`Committed`) once, when the node first reads it (a commit's
//!   result or the follower's read), before the registry is offered it.
//! * List results and cursors carry the cluster-wide version and the cluster's catalog identity
//!   (kept in the store), so a client moved to another node keeps comparing versions in one
//!   space, and a cursor the new node cannot serve gets -32602.
//! * Cut off from Redis, the node keeps serving its last version and reports itself stale
//!   ([`Server::health`], a log line); it never invents a version and never goes back to an
//!   older one. Batches sent to it meanwhile fail without committing anything.

use super::{
    Applied, Backend, BatchError, Committing, Server, ServerSettings, Shared, check_op,
    fresh_catalog_id, lock,
};
use crate::history::SharedHistory;
use crate::items;
use listsync_cluster::node::{Installer, Installing, Standing, follow};
use listsync_cluster::store::{CommitError, RedisStore, StoreError};
use listsync_core::server::{Registry, ServerInput};
use listsync_core::vocab::{Catalog, Op};
use std::sync::Arc;
use tokio::task::JoinHandle;

pub use listsync_cluster::node::Follow;

/// Where a node finds its cluster.
#[derive(Clone, Debug)]
pub struct NodeOptions {
    /// Redis URL, e.g. `redis://127.0.0.1:6379/`.
    pub redis: String,
    /// This node's name (logs, health).
    pub node: String,
    /// Key prefix of the logical server in Redis (one logical server per prefix).
    pub prefix: String,
    /// Follower timings.
    pub follow: Follow,
}

impl NodeOptions {
    /// Node `node` of the logical server `listsync` in the Redis at `redis`.
    pub fn new(redis: &str, node: &str) -> Self {
        NodeOptions {
            redis: redis.into(),
            node: node.into(),
            prefix: "listsync".into(),
            follow: Follow::default(),
        }
    }
}

/// A running node: its server (serve it like any other) and the task following the store.
/// Dropping it stops following.
pub struct Node {
    server: Server,
    store: RedisStore,
    follower: JoinHandle<()>,
}

impl Node {
    /// Connects to the store, seeds it with `initial` if it is empty (the first node up does),
    /// takes the store's catalog identity and latest version, and starts following it. A node
    /// that cannot reach Redis does not start: it has no version to serve.
    pub async fn join(
        mut settings: ServerSettings,
        initial: &[Op],
        history: Option<SharedHistory>,
        opts: NodeOptions,
    ) -> Result<Node, StoreError> {
        let store = RedisStore::connect(&opts.redis, &opts.prefix).await?;
        let mut seed = Catalog::default();
        for op in initial {
            let op = items::normalize(op, &seed);
            seed.apply(&op);
        }
        let id = store.catalog_id(fresh_catalog_id()).await?;
        store.seed(&seed).await?;
        let (version, catalog) = store.load().await?;
        settings.core.catalog_id = id;
        let catalog = Arc::new(catalog);
        let backend: Arc<dyn Backend> = Arc::new(StoreBackend {
            store: store.clone(),
        });
        let server = if version <= 1 {
            // The store's first version: the registry starts there.
            let registry = Registry::new(settings.core, (*catalog).clone());
            let server =
                Server::assemble(settings, registry, history, Some(backend), Some(opts.node));
            server.shared.learn(1, catalog);
            server
        } else {
            let registry = Registry::new(settings.core, Catalog::default());
            let server =
                Server::assemble(settings, registry, history, Some(backend), Some(opts.node));
            server.shared.install(version, catalog).await;
            server
        };
        let installer = Arc::new(NodeInstaller {
            shared: server.shared.clone(),
        });
        let follower = follow(store.clone(), installer, opts.follow);
        Ok(Node {
            server,
            store,
            follower,
        })
    }

    /// The node's server.
    pub fn server(&self) -> &Server {
        &self.server
    }

    /// The shared store.
    pub fn store(&self) -> &RedisStore {
        &self.store
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.follower.abort();
    }
}

impl Shared {
    /// Makes store version `version` visible if it is newer than what this node serves, then
    /// notifies this node's sessions and waits for the notifications to be written. Returns
    /// how many were written (0 if the version was not newer).
    pub(crate) async fn install(self: &Arc<Self>, version: u64, catalog: Arc<Catalog>) -> usize {
        let (out, announces) = {
            let mut reg = lock(&self.registry);
            // The store committed this version (ground truth), whatever the registry makes of
            // it; the registry's own outputs, the notifications of it, come after.
            let announces = self.learn(version, catalog.clone());
            let mut out = Vec::new();
            if !reg.install(version, catalog, &mut out) {
                return 0;
            }
            self.record(&out);
            (out, announces)
        };
        let notified = self.deliver(out, announces).await;
        if self.settings.core.strategy.installs_after_notifying() {
            // The known-bad variant: the announced version becomes visible only after the
            // notifications went out (a commit gate can hold it longer).
            #[cfg(feature = "harness")]
            self.gates
                .checkpoint(&crate::gate::GateTarget::Commit)
                .await;
            self.step(ServerInput::CommitStaged);
        }
        notified
    }

    /// Records a change of standing, logging it.
    fn set_standing(self: &Arc<Self>, standing: &Standing) {
        let stale = match standing {
            Standing::Current { .. } => None,
            Standing::Stale { reason, .. } => Some(reason.clone()),
        };
        let changed = self.stale.send_if_modified(|s| {
            if *s == stale {
                false
            } else {
                *s = stale.clone();
                true
            }
        });
        if changed {
            let health = Server {
                shared: self.clone(),
            }
            .health();
            if health.is_stale() {
                tracing::warn!("{health}");
            } else {
                tracing::info!("{health}");
            }
        }
    }
}

/// Commits batches in the store.
struct StoreBackend {
    store: RedisStore,
}

impl Backend for StoreBackend {
    fn commit<'a>(&'a self, shared: &'a Arc<Shared>, ops: &'a [Op], check: bool) -> Committing<'a> {
        Box::pin(async move {
            // The version this node serves is the store's current one unless another node
            // committed since this one heard: start from it, and a right guess commits in one
            // round trip (the store checks it).
            let guess = {
                let reg = lock(&shared.registry);
                (reg.version(), reg.catalog().clone())
            };
            let done = self
                .store
                .commit_on(Some(guess), |current| {
                    let mut view = current.clone();
                    for op in ops {
                        if check {
                            check_op(op, &view)?;
                        }
                        let op = items::normalize(op, &view);
                        view.apply(&op);
                    }
                    Ok(view)
                })
                .await;
            match done {
                Ok(c) => {
                    let notified = shared.install(c.version, c.catalog).await;
                    Ok(Applied {
                        version: c.version,
                        notified,
                    })
                }
                Err(CommitError::Refused(e)) => Err(e),
                Err(CommitError::Store(e)) => Err(BatchError::Store(e.to_string())),
            }
        })
    }
}

/// The follower's view of this node.
struct NodeInstaller {
    shared: Arc<Shared>,
}

impl Installer for NodeInstaller {
    fn version(&self) -> u64 {
        lock(&self.shared.registry).version()
    }

    fn install(&self, version: u64, catalog: Arc<Catalog>) -> Installing<'_> {
        Box::pin(async move {
            self.shared.install(version, catalog).await;
        })
    }

    fn health(&self, health: Standing) {
        self.shared.set_standing(&health);
    }
}
