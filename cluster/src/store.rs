//! The shared catalog store on Redis: the cluster-wide catalog and its version live in two keys;
//! a batch commits atomically and bumps the version exactly once (a Lua script that checks the
//! version it was computed from, so two admins on two nodes never lose a batch) and publishes the
//! new version *with its catalog* on a channel, so a node that hears it installs it without a
//! read of its own. The store also holds the cluster's catalog identity (the version space every
//! node's list results name), set once by the node that seeds it.
//!
//! What one change costs Redis (`INFO commandstats`, which counts the commands scripts run):
//! one `EVALSHA` from the committing node (when its guess of the current version is right, which
//! it is unless another node committed since it last heard), running `GET`, `MSET` and `PUBLISH`
//! inside: 4 commands, 1 round trip. Followers read nothing: the event carries the catalog. The
//! followers' once-a-second safety poll is one `GET` of the version, and a full read only when
//! that shows a version the node missed.

use listsync_core::vocab::{Catalog, Op};
use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, Script};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Redis could not be reached or answered with an error.
    #[error("redis: {0}")]
    Redis(#[from] redis::RedisError),
    /// The connection to Redis was lost or could not be made in time.
    #[error("redis: {0}")]
    Unreachable(String),
    /// The stored catalog is not readable.
    #[error("the catalog stored in redis is not valid: {0}")]
    Corrupt(String),
    /// Too many concurrent commits in a row got in the way.
    #[error("gave up after {0} attempts: other commits kept landing first")]
    Contended(u32),
    /// The store holds an older version than a node already serves (its data was lost or
    /// replaced): the node keeps what it has rather than go back.
    #[error("the store is at v{store}, behind v{node} that this node serves: refusing to go back")]
    Behind {
        /// Version in the store.
        store: u64,
        /// Version the node serves.
        node: u64,
    },
}

/// Why [`RedisStore::commit_with`] did not commit.
#[derive(Debug, thiserror::Error)]
pub enum CommitError<E> {
    /// The batch was refused by the caller's check against the current catalog.
    #[error("{0}")]
    Refused(E),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a commit produced.
#[derive(Clone, Debug)]
pub struct Committed {
    /// The version that holds the batch.
    pub version: u64,
    /// The catalog at that version.
    pub catalog: Arc<Catalog>,
    /// Whether this call made the version (false: the batch changed nothing, and `version`
    /// is the one it was checked against).
    pub landed: bool,
}

/// Names of the keys and channel of one logical server.
#[derive(Clone, Debug)]
pub struct Keys {
    /// Cluster-wide catalog version.
    pub version: String,
    /// Catalog at that version (JSON: the ops that build it).
    pub catalog: String,
    /// Pub/sub channel carrying each new version.
    pub channel: String,
    /// Catalog identity (version space) of this logical server.
    pub id: String,
}

impl Keys {
    /// Keys under `prefix` (one logical server per prefix).
    pub fn new(prefix: &str) -> Keys {
        Keys {
            version: format!("{prefix}:version"),
            catalog: format!("{prefix}:catalog"),
            channel: format!("{prefix}:events"),
            id: format!("{prefix}:id"),
        }
    }
}

/// Compare-and-set: writes version + 1 and the catalog if the store is still at the expected
/// version, and publishes `"<version> <catalog JSON>"` (just `"<version>"` for a catalog longer
/// than ARGV[4] bytes); otherwise answers with the current version and catalog (read
/// atomically), so the caller retries without a read of its own.
const COMMIT: &str = r#"
local current = tonumber(redis.call('GET', KEYS[1]) or '0')
if current ~= tonumber(ARGV[1]) then
  return {0, current, redis.call('GET', KEYS[2]) or ''}
end
local v = current + 1
redis.call('MSET', KEYS[1], v, KEYS[2], ARGV[2])
if string.len(ARGV[2]) <= tonumber(ARGV[4]) then
  redis.call('PUBLISH', ARGV[3], v .. ' ' .. ARGV[2])
else
  redis.call('PUBLISH', ARGV[3], v)
end
return {1, v, ''}
"#;

/// The largest catalog (JSON bytes) a change event carries. A larger one is announced by version
/// alone and each node reads it (the same bytes over the node's own connection), which keeps
/// every pub/sub message far below Redis's output buffer limit for subscribers (32 MB by
/// default), past which Redis would disconnect them.
pub const EVENT_CATALOG_LIMIT: usize = 1 << 20;

const LOAD: &str = r#"
return {tonumber(redis.call('GET', KEYS[1]) or '0'), redis.call('GET', KEYS[2]) or ''}
"#;

const IDENTIFY: &str = r#"
redis.call('SET', KEYS[1], ARGV[1], 'NX')
return redis.call('GET', KEYS[1])
"#;

/// Counts of Redis round trips, for the "Redis operations per change" figure.
#[derive(Debug, Default)]
pub struct OpCounts {
    /// Round trips made by commits (loads and compare-and-set scripts).
    pub commit_round_trips: AtomicU64,
    /// Commits that landed.
    pub commits: AtomicU64,
    /// Round trips made by loads outside commits (node catch-up).
    pub load_round_trips: AtomicU64,
}

/// The shared catalog store of one logical server.
#[derive(Clone)]
pub struct RedisStore {
    client: Client,
    conn: ConnectionManager,
    keys: Arc<Keys>,
    commit: Arc<Script>,
    load: Arc<Script>,
    identify: Arc<Script>,
    counts: Arc<OpCounts>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("keys", &self.keys)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// Connects to `url` (e.g. `redis://127.0.0.1:6379/`) for the logical server `prefix`.
    pub async fn connect(url: &str, prefix: &str) -> Result<RedisStore, StoreError> {
        let client = Client::open(url)?;
        let cfg = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(2)))
            .set_response_timeout(Some(Duration::from_secs(2)))
            .set_number_of_retries(2)
            .set_max_delay(Duration::from_millis(500));
        let conn = ConnectionManager::new_with_config(client.clone(), cfg).await?;
        Ok(RedisStore {
            client,
            conn,
            keys: Arc::new(Keys::new(prefix)),
            commit: Arc::new(Script::new(COMMIT)),
            load: Arc::new(Script::new(LOAD)),
            identify: Arc::new(Script::new(IDENTIFY)),
            counts: Arc::new(OpCounts::default()),
        })
    }

    /// The Redis client (for pub/sub connections).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Key names.
    pub fn keys(&self) -> &Keys {
        &self.keys
    }

    /// Round-trip counters.
    pub fn counts(&self) -> &OpCounts {
        &self.counts
    }

    /// Reads the version and the catalog at that version, atomically. An empty store is
    /// version 0 with an empty catalog.
    pub async fn load(&self) -> Result<(u64, Catalog), StoreError> {
        self.counts.load_round_trips.fetch_add(1, Ordering::Relaxed);
        self.load_inner().await
    }

    async fn load_inner(&self) -> Result<(u64, Catalog), StoreError> {
        let mut conn = self.conn.clone();
        let (version, json): (u64, String) = self
            .load
            .key(&self.keys.version)
            .key(&self.keys.catalog)
            .invoke_async(&mut conn)
            .await?;
        Ok((version, parse_catalog(&json)?))
    }

    /// The store's version alone (one `GET`): what a follower's safety poll asks before it
    /// reads a whole catalog.
    pub async fn version(&self) -> Result<u64, StoreError> {
        self.counts.load_round_trips.fetch_add(1, Ordering::Relaxed);
        let mut conn = self.conn.clone();
        let v: Option<u64> = redis::cmd("GET")
            .arg(&self.keys.version)
            .query_async(&mut conn)
            .await?;
        Ok(v.unwrap_or(0))
    }

    /// Sets the catalog if the store is empty (first node up seeds it). Returns the version.
    pub async fn seed(&self, initial: &Catalog) -> Result<u64, StoreError> {
        let (v, _) = self.load_inner().await?;
        if v > 0 {
            return Ok(v);
        }
        match self.compare_and_set(0, initial).await? {
            Ok(v) => Ok(v),
            Err((v, _)) => Ok(v),
        }
    }

    /// How many times Redis ran each command so far (`INFO commandstats`, lower-case names,
    /// commands run by scripts included), for counting the Redis work a change costs.
    pub async fn command_stats(
        &self,
    ) -> Result<std::collections::BTreeMap<String, u64>, StoreError> {
        let mut conn = self.conn.clone();
        let info: String = redis::cmd("INFO")
            .arg("commandstats")
            .query_async(&mut conn)
            .await?;
        Ok(parse_command_stats(&info))
    }

    /// The catalog identity of this logical server: set once (the first caller's proposal
    /// wins), the same for every node afterwards.
    pub async fn catalog_id(&self, proposal: u64) -> Result<u64, StoreError> {
        let mut conn = self.conn.clone();
        let id: String = self
            .identify
            .key(&self.keys.id)
            .arg(proposal.max(1))
            .invoke_async(&mut conn)
            .await?;
        id.parse()
            .map_err(|_| StoreError::Corrupt(format!("catalog id {id:?} is not a number")))
    }

    /// Applies a batch atomically: exactly one new version if it changes anything, none if it
    /// changes nothing. Concurrent batches from other nodes are retried on top of each other,
    /// so every batch lands and versions strictly increase. Returns the version that holds the
    /// batch.
    pub async fn commit(&self, ops: &[Op]) -> Result<u64, StoreError> {
        let done = self
            .commit_with(|current| {
                let mut next = current.clone();
                for op in ops {
                    next.apply(op);
                }
                Ok::<_, std::convert::Infallible>(next)
            })
            .await;
        match done {
            Ok(c) => Ok(c.version),
            Err(CommitError::Store(e)) => Err(e),
            Err(CommitError::Refused(never)) => match never {},
        }
    }

    /// Commits the catalog `next` computes from the current one, atomically: `next` runs again
    /// on the newer catalog whenever another commit lands first (so a check inside it always
    /// sees the catalog it is applied to). One new version if the result differs from the
    /// current catalog, none otherwise.
    pub async fn commit_with<E>(
        &self,
        next: impl Fn(&Catalog) -> Result<Catalog, E>,
    ) -> Result<Committed, CommitError<E>> {
        self.commit_on(None, next).await
    }

    /// [`commit_with`](Self::commit_with), starting from `guess`, the version and catalog the
    /// caller believes current (a node's: the ones it serves), instead of a read. A right guess
    /// commits in one round trip. Only a landed compare-and-set proves a guess right (the store
    /// was at that version, and a version's catalog never changes), so a batch that `next`
    /// refuses, or finds changes nothing, on a guess is judged again on a fresh read before
    /// that is the answer; a wrong guess costs nothing extra, as the refused compare-and-set
    /// answers with the current version and catalog.
    pub async fn commit_on<E>(
        &self,
        guess: Option<(u64, Arc<Catalog>)>,
        next: impl Fn(&Catalog) -> Result<Catalog, E>,
    ) -> Result<Committed, CommitError<E>> {
        const ATTEMPTS: u32 = 64;
        let mut base = match guess {
            Some((version, catalog)) => Base {
                version,
                catalog,
                guessed: true,
            },
            None => self.read_base().await?,
        };
        let mut attempts = 0;
        while attempts < ATTEMPTS {
            let after = match next(&base.catalog) {
                Ok(after) => after,
                Err(_) if base.guessed => {
                    base = self.read_base().await?;
                    continue;
                }
                Err(e) => return Err(CommitError::Refused(e)),
            };
            if after == *base.catalog {
                if base.guessed {
                    base = self.read_base().await?;
                    continue;
                }
                return Ok(Committed {
                    version: base.version,
                    catalog: base.catalog,
                    landed: false,
                });
            }
            attempts += 1;
            self.counts
                .commit_round_trips
                .fetch_add(1, Ordering::Relaxed);
            match self.compare_and_set(base.version, &after).await? {
                Ok(v) => {
                    self.counts.commits.fetch_add(1, Ordering::Relaxed);
                    return Ok(Committed {
                        version: v,
                        catalog: Arc::new(after),
                        landed: true,
                    });
                }
                Err((version, catalog)) => {
                    base = Base {
                        version,
                        catalog: Arc::new(catalog),
                        guessed: false,
                    };
                }
            }
        }
        Err(StoreError::Contended(ATTEMPTS).into())
    }

    /// The current version and catalog, read (not guessed).
    async fn read_base(&self) -> Result<Base, StoreError> {
        self.counts
            .commit_round_trips
            .fetch_add(1, Ordering::Relaxed);
        let (version, catalog) = self.load_inner().await?;
        Ok(Base {
            version,
            catalog: Arc::new(catalog),
            guessed: false,
        })
    }

    /// Writes `next` as version `expected + 1` if the store is still at `expected`; otherwise
    /// returns the store's current version and catalog.
    async fn compare_and_set(
        &self,
        expected: u64,
        next: &Catalog,
    ) -> Result<Result<u64, (u64, Catalog)>, StoreError> {
        let json = serde_json::to_string(next).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let mut conn = self.conn.clone();
        let (ok, v, current): (u8, u64, String) = self
            .commit
            .key(&self.keys.version)
            .key(&self.keys.catalog)
            .arg(expected)
            .arg(json)
            .arg(&self.keys.channel)
            .arg(EVENT_CATALOG_LIMIT)
            .invoke_async(&mut conn)
            .await?;
        if ok == 1 {
            Ok(Ok(v))
        } else {
            Ok(Err((v, parse_catalog(&current)?)))
        }
    }
}

/// The version and catalog a commit attempt computes from.
struct Base {
    version: u64,
    catalog: Arc<Catalog>,
    /// The caller's belief, not (yet) confirmed by the store.
    guessed: bool,
}

/// A stored catalog (empty text: the empty catalog of an empty store).
fn parse_catalog(json: &str) -> Result<Catalog, StoreError> {
    if json.is_empty() {
        return Ok(Catalog::default());
    }
    serde_json::from_str(json).map_err(|e| StoreError::Corrupt(e.to_string()))
}

/// A change event's payload, `"<version> <catalog JSON>"` as the commit script publishes it:
/// the version, and the catalog at that version if the payload carries a readable one.
pub fn parse_event(payload: &str) -> Option<(u64, Option<Catalog>)> {
    let (version, json) = payload.split_once(' ').unwrap_or((payload, ""));
    let version = version.parse().ok()?;
    Some((
        version,
        parse_catalog(json).ok().filter(|_| !json.is_empty()),
    ))
}

/// `cmdstat_<name>:calls=<n>,...` lines of `INFO commandstats` → name → calls.
fn parse_command_stats(info: &str) -> std::collections::BTreeMap<String, u64> {
    info.lines()
        .filter_map(|l| {
            let (name, rest) = l.trim().strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest
                .split(',')
                .find_map(|kv| kv.strip_prefix("calls="))?
                .parse()
                .ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{parse_command_stats, parse_event};
    use listsync_core::vocab::{Catalog, Kind, Op};

    #[test]
    fn events_carry_a_version_and_maybe_its_catalog() {
        let mut catalog = Catalog::default();
        catalog.apply(&Op::add(Kind::Tools, "t0", "first"));
        let json = serde_json::to_string(&catalog).unwrap();
        assert_eq!(
            parse_event(&format!("7 {json}")),
            Some((7, Some(catalog.clone())))
        );
        assert_eq!(parse_event("8"), Some((8, None)), "a large catalog's event");
        assert_eq!(parse_event("9 {not json"), Some((9, None)), "read instead");
        assert_eq!(parse_event("x 1"), None);
    }

    #[test]
    fn command_stats_are_parsed() {
        let info = "# Commandstats\r\ncmdstat_evalsha:calls=12,usec=300,usec_per_call=25.00,rejected_calls=0,failed_calls=0\r\ncmdstat_get:calls=30,usec=9,usec_per_call=0.30,rejected_calls=0,failed_calls=0\r\nnoise\r\n";
        let m = parse_command_stats(info);
        assert_eq!(m.get("evalsha"), Some(&12));
        assert_eq!(m.get("get"), Some(&30));
        assert_eq!(m.len(), 2);
    }
}
