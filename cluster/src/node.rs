//! A node's side of the cluster: follow the shared store. The node subscribes to the change
//! channel first and then reads the store, so no commit falls between the two; every event
//! carries a committed version and its catalog (published by the commit script, atomically with
//! the commit), which the node hands to its [`Installer`] if it is newer than what it serves: the
//! installer makes it visible to the node's list handlers and only then notifies the node's
//! clients. An event without a readable catalog makes the node read the store instead. A slow
//! periodic poll of the version (in case pub/sub dropped an event) reads the whole catalog only
//! when the version moved. Duplicate and out-of-order events are ignored by version.
//! When Redis is unreachable the node keeps serving its last version and reports itself stale;
//! it never invents a version, and it never goes back to an older one (a store that lost its
//! data leaves the node stale at the version it has).

use crate::store::{RedisStore, StoreError, parse_event};
use futures_util::StreamExt;
use listsync_core::vocab::Catalog;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How a node stands with the shared store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Standing {
    /// Following the store; serving `version`.
    Current {
        /// Version served.
        version: u64,
    },
    /// Cut off from the store; still serving `version`, which may be out of date.
    Stale {
        /// Version served.
        version: u64,
        /// Why.
        reason: String,
    },
}

/// What [`Installer::install`] returns: resolves once the node's clients were notified.
pub type Installing<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What a node does with the store's versions.
pub trait Installer: Send + Sync + 'static {
    /// The version the node serves now (installs may also come from elsewhere, e.g. the node's
    /// own commits).
    fn version(&self) -> u64;
    /// Make `catalog` (cluster version `version`) visible to list requests if it is newer than
    /// what the node serves, then notify this node's clients. The follower awaits it before it
    /// installs anything else.
    fn install(&self, version: u64, catalog: Arc<Catalog>) -> Installing<'_>;
    /// The node's standing changed (reported on every failure, and on every reconnect).
    fn health(&self, health: Standing);
}

/// Timings of a node's store follower.
#[derive(Clone, Copy, Debug)]
pub struct Follow {
    /// Periodic re-read of the store (a safety net for lost pub/sub messages).
    pub poll: Duration,
    /// First reconnect delay (doubles up to `max_backoff`).
    pub backoff: Duration,
    /// Largest reconnect delay.
    pub max_backoff: Duration,
}

impl Default for Follow {
    fn default() -> Self {
        Follow {
            poll: Duration::from_secs(1),
            backoff: Duration::from_millis(50),
            max_backoff: Duration::from_secs(2),
        }
    }
}

/// Starts following the store; the task runs until aborted.
pub fn follow(store: RedisStore, installer: Arc<dyn Installer>, timing: Follow) -> JoinHandle<()> {
    tokio::spawn(async move {
        let mut backoff = timing.backoff;
        loop {
            let (err, was_current) = session(&store, installer.as_ref(), timing).await;
            installer.health(Standing::Stale {
                version: installer.version(),
                reason: err.to_string(),
            });
            if was_current {
                backoff = timing.backoff;
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(timing.max_backoff);
        }
    })
}

/// One connected stretch: subscribe, catch up, follow events until the connection fails.
/// Returns why it ended, and whether it got as far as following.
async fn session(
    store: &RedisStore,
    installer: &dyn Installer,
    timing: Follow,
) -> (StoreError, bool) {
    let connect = tokio::time::timeout(Duration::from_secs(2), store.client().get_async_pubsub());
    let mut pubsub = match connect.await {
        Ok(Ok(p)) => p,
        Ok(Err(e)) => return (e.into(), false),
        Err(_) => {
            return (
                StoreError::Unreachable("timed out connecting".into()),
                false,
            );
        }
    };
    let subscribe = tokio::time::timeout(
        Duration::from_secs(2),
        pubsub.subscribe(&store.keys().channel),
    );
    match subscribe.await {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return (e.into(), false),
        Err(_) => {
            return (
                StoreError::Unreachable("timed out subscribing to the change channel".into()),
                false,
            );
        }
    }
    if let Err(e) = catch_up(store, installer).await {
        return (e, false);
    }
    installer.health(Standing::Current {
        version: installer.version(),
    });
    let mut events = pubsub.into_on_message();
    let mut tick = tokio::time::interval(timing.poll);
    tick.tick().await;
    loop {
        tokio::select! {
            msg = events.next() => match msg {
                Some(m) => {
                    let payload: String = m.get_payload().unwrap_or_default();
                    // A payload that is not a version still means "something changed".
                    let (v, catalog) = parse_event(&payload).unwrap_or((u64::MAX, None));
                    if v <= installer.version() {
                        continue;
                    }
                    match catalog {
                        Some(catalog) => installer.install(v, Arc::new(catalog)).await,
                        None => {
                            if let Err(e) = catch_up(store, installer).await {
                                return (e, true);
                            }
                        }
                    }
                }
                None => {
                    return (
                        StoreError::Unreachable("the change subscription was closed".into()),
                        true,
                    );
                }
            },
            _ = tick.tick() => {
                if let Err(e) = poll(store, installer).await {
                    return (e, true);
                }
            }
        }
    }
}

/// Reads the store's version and catches up if it moved past the node's (or fails if it went
/// behind it).
async fn poll(store: &RedisStore, installer: &dyn Installer) -> Result<(), StoreError> {
    let v = store.version().await?;
    let local = installer.version();
    if v == local {
        return Ok(());
    }
    catch_up(store, installer).await
}

/// Loads the store and installs its version if it is newer than what the node serves.
async fn catch_up(store: &RedisStore, installer: &dyn Installer) -> Result<(), StoreError> {
    let (v, catalog) = store.load().await?;
    let local = installer.version();
    if v > local {
        installer.install(v, Arc::new(catalog)).await;
    } else if v < local {
        return Err(StoreError::Behind {
            store: v,
            node: local,
        });
    }
    Ok(())
}
