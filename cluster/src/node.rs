//! A node's side of the cluster: follow the shared store. The node subscribes to the change
//! channel first and then reads the store, so no commit falls between the two; on every event
//! (and on a slow periodic poll, in case pub/sub dropped one) it loads the latest version and
//! hands it to its [`Installer`], which makes it visible to the node's list handlers and only
//! then notifies the node's clients. Duplicate and out-of-order events are ignored by version.
//! When Redis is unreachable the node keeps serving its last version and reports itself stale;
//! it never invents a version.

use crate::store::{RedisStore, StoreError};
use futures_util::StreamExt;
use listsync_core::vocab::Catalog;
use std::sync::Arc;
use std::time::Duration;
use tokio::task::JoinHandle;

/// How a node stands with the shared store.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
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

/// What a node does with the store's versions.
pub trait Installer: Send + Sync + 'static {
    /// Make `catalog` (cluster version `version`, newer than anything installed before)
    /// visible to list requests, then notify this node's clients.
    fn install(&self, version: u64, catalog: Arc<Catalog>);
    /// The node's standing changed.
    fn health(&self, health: Health);
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
        let mut local = 0u64;
        let mut backoff = timing.backoff;
        loop {
            let err = session(&store, installer.as_ref(), timing, &mut local).await;
            installer.health(Health::Stale {
                version: local,
                reason: err.to_string(),
            });
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(timing.max_backoff);
        }
    })
}

/// One connected stretch: subscribe, catch up, follow events until the connection fails.
async fn session(
    store: &RedisStore,
    installer: &dyn Installer,
    timing: Follow,
    local: &mut u64,
) -> StoreError {
    let mut pubsub =
        match tokio::time::timeout(Duration::from_secs(2), store.client().get_async_pubsub()).await
        {
            Ok(Ok(p)) => p,
            Ok(Err(e)) => return e.into(),
            Err(_) => return StoreError::Corrupt("timed out connecting to redis".into()),
        };
    if let Err(e) = pubsub.subscribe(&store.keys().channel).await {
        return e.into();
    }
    if let Err(e) = catch_up(store, installer, local).await {
        return e;
    }
    installer.health(Health::Current { version: *local });
    let mut events = pubsub.into_on_message();
    let mut tick = tokio::time::interval(timing.poll);
    tick.tick().await;
    loop {
        tokio::select! {
            msg = events.next() => match msg {
                Some(m) => {
                    let v: u64 = m.get_payload().unwrap_or(u64::MAX);
                    if v > *local
                        && let Err(e) = catch_up(store, installer, local).await
                    {
                        return e;
                    }
                }
                None => return StoreError::Corrupt("redis closed the subscription".into()),
            },
            _ = tick.tick() => {
                if let Err(e) = catch_up(store, installer, local).await {
                    return e;
                }
            }
        }
    }
}

/// Loads the store and installs its version if it is newer than what the node serves.
async fn catch_up(
    store: &RedisStore,
    installer: &dyn Installer,
    local: &mut u64,
) -> Result<(), StoreError> {
    let (v, catalog) = store.load().await?;
    if v > *local {
        *local = v;
        installer.install(v, Arc::new(catalog));
    }
    Ok(())
}
