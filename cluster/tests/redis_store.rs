//! The Redis-backed catalog store and node follower against a real `redis-server` (started by
//! the test on a free loopback port): atomic commits with exactly one version each, concurrent
//! admins on two nodes, followers that install versions in order, a Redis restart that loses
//! nothing, and a partitioned node that keeps its last version without inventing one.

use listsync_cluster::node::{Follow, Installer, Installing, Standing, follow};
use listsync_cluster::store::RedisStore;
use listsync_cluster::testkit::TestRedis;
use listsync_core::vocab::{Catalog, Kind, Op};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;

/// Records what a node installs.
struct Recorder {
    installed: Mutex<Vec<u64>>,
    catalog: Mutex<Catalog>,
    health: watch::Sender<Option<Standing>>,
    version: watch::Sender<u64>,
}

impl Recorder {
    fn new() -> Arc<Recorder> {
        Arc::new(Recorder {
            installed: Mutex::new(Vec::new()),
            catalog: Mutex::new(Catalog::default()),
            health: watch::channel(None).0,
            version: watch::channel(0).0,
        })
    }

    async fn wait_version(&self, want: u64) {
        let mut rx = self.version.subscribe();
        tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|v| *v >= want))
            .await
            .unwrap_or_else(|_| panic!("node never reached v{want}"))
            .expect("sender alive");
    }

    async fn wait_health(&self, pred: impl Fn(&Standing) -> bool) -> Standing {
        let mut rx = self.health.subscribe();
        let h = tokio::time::timeout(
            Duration::from_secs(20),
            rx.wait_for(|h| h.as_ref().is_some_and(&pred)),
        )
        .await
        .expect("health never changed as expected")
        .expect("sender alive");
        h.clone().expect("some")
    }
}

impl Installer for Recorder {
    fn version(&self) -> u64 {
        *self.version.borrow()
    }
    fn install(&self, version: u64, catalog: Arc<Catalog>) -> Installing<'_> {
        Box::pin(async move {
            self.installed.lock().unwrap().push(version);
            *self.catalog.lock().unwrap() = (*catalog).clone();
            self.version.send_replace(version);
        })
    }
    fn health(&self, health: Standing) {
        self.health.send_replace(Some(health));
    }
}

fn add(name: &str) -> Vec<Op> {
    vec![Op::add(Kind::Tools, name, &format!("{name}1"))]
}

fn fast() -> Follow {
    Follow {
        poll: Duration::from_millis(200),
        backoff: Duration::from_millis(20),
        max_backoff: Duration::from_millis(200),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_commits_on_two_nodes_all_land_with_one_version_each() {
    let redis = TestRedis::start().expect("redis");
    let a = RedisStore::connect(&redis.url(), "t1").await.unwrap();
    let b = RedisStore::connect(&redis.url(), "t1").await.unwrap();
    assert_eq!(a.seed(&Catalog::from_ops(&add("seed"))).await.unwrap(), 1);
    let run = |s: RedisStore, tag: &'static str| async move {
        let mut versions = Vec::new();
        for i in 0..20 {
            versions.push(s.commit(&add(&format!("{tag}{i}"))).await.unwrap());
        }
        versions
    };
    let (va, vb) = tokio::join!(run(a.clone(), "a"), run(b.clone(), "b"));
    for v in [&va, &vb] {
        assert!(
            v.windows(2).all(|w| w[0] < w[1]),
            "versions must increase: {v:?}"
        );
    }
    let mut all: Vec<u64> = va.iter().chain(&vb).copied().collect();
    all.sort();
    all.dedup();
    assert_eq!(
        all,
        (2..=41).collect::<Vec<_>>(),
        "one distinct version per batch"
    );
    let (v, cat) = a.load().await.unwrap();
    assert_eq!(v, 41);
    assert_eq!(cat.visible(Kind::Tools, Default::default()).len(), 41);
    // A batch that changes nothing makes no version.
    assert_eq!(a.commit(&add("a0")).await.unwrap(), 41);
    assert_eq!(a.load().await.unwrap().0, 41);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follower_installs_versions_in_order_and_catches_up() {
    let redis = TestRedis::start().expect("redis");
    let store = RedisStore::connect(&redis.url(), "t2").await.unwrap();
    store.seed(&Catalog::from_ops(&add("seed"))).await.unwrap();
    let rec = Recorder::new();
    let task = follow(store.clone(), rec.clone(), fast());
    rec.wait_version(1).await;
    let mut last = 1;
    for i in 0..10 {
        last = store.commit(&add(&format!("t{i}"))).await.unwrap();
    }
    rec.wait_version(last).await;
    let installed = rec.installed.lock().unwrap().clone();
    assert!(installed.windows(2).all(|w| w[0] < w[1]), "{installed:?}");
    assert_eq!(*installed.last().unwrap(), last);
    let stored = store.load().await.unwrap().1;
    assert_eq!(*rec.catalog.lock().unwrap(), stored);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_restart_loses_nothing_and_a_partitioned_node_keeps_its_version() {
    let mut redis = TestRedis::start().expect("redis");
    let store = RedisStore::connect(&redis.url(), "t3").await.unwrap();
    store.seed(&Catalog::from_ops(&add("seed"))).await.unwrap();
    let v = store.commit(&add("before")).await.unwrap();
    let rec = Recorder::new();
    let task = follow(store.clone(), rec.clone(), fast());
    rec.wait_version(v).await;

    // Partition: the node keeps serving v, reports itself stale, installs nothing new.
    redis.stop();
    let h = rec
        .wait_health(|h| matches!(h, Standing::Stale { .. }))
        .await;
    assert!(
        matches!(h, Standing::Stale { version, .. } if version == v),
        "{h:?}"
    );
    assert_eq!(*rec.installed.lock().unwrap().last().unwrap(), v);

    // Redis comes back with its data; a commit made after the restart reaches the node.
    redis.restart().unwrap();
    let after = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match store.commit(&add("after")).await {
                Ok(v) => break v,
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    })
    .await
    .expect("commit after restart");
    assert_eq!(after, v + 1, "the restart kept the version");
    rec.wait_version(after).await;
    let cat = rec.catalog.lock().unwrap().clone();
    let names: Vec<_> = cat
        .visible(Kind::Tools, Default::default())
        .into_iter()
        .map(|i| i.name.to_string())
        .collect();
    assert_eq!(names, ["after", "before", "seed"]);
    task.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_catalog_id_is_set_once_and_a_refused_batch_applies_nothing() {
    let redis = TestRedis::start().expect("redis");
    let a = RedisStore::connect(&redis.url(), "t4").await.unwrap();
    let b = RedisStore::connect(&redis.url(), "t4").await.unwrap();
    let id = a.catalog_id(77).await.unwrap();
    assert_eq!(id, 77);
    assert_eq!(
        b.catalog_id(99).await.unwrap(),
        77,
        "the first proposal wins"
    );
    a.seed(&Catalog::from_ops(&add("seed"))).await.unwrap();
    let refused = a
        .commit_with(|_| Err::<Catalog, _>("no"))
        .await
        .expect_err("refused");
    assert!(
        matches!(refused, listsync_cluster::store::CommitError::Refused("no")),
        "{refused:?}"
    );
    assert_eq!(a.load().await.unwrap().0, 1);
    let done = b
        .commit_with(|c| {
            let mut next = c.clone();
            next.apply(&add("x")[0]);
            Ok::<_, ()>(next)
        })
        .await
        .unwrap();
    assert!(done.landed);
    assert_eq!(done.version, 2);
    assert_eq!(*done.catalog, a.load().await.unwrap().1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_that_lost_its_data_does_not_take_a_node_back() {
    let redis = TestRedis::start().expect("redis");
    let store = RedisStore::connect(&redis.url(), "t5").await.unwrap();
    store.seed(&Catalog::from_ops(&add("seed"))).await.unwrap();
    let mut v = 1;
    for i in 0..3 {
        v = store.commit(&add(&format!("t{i}"))).await.unwrap();
    }
    let rec = Recorder::new();
    let task = follow(store.clone(), rec.clone(), fast());
    rec.wait_version(v).await;
    // The data goes away and a new history starts at v1, then v2.
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = redis::cmd("FLUSHALL").query_async(&mut conn).await.unwrap();
    store.seed(&Catalog::from_ops(&add("other"))).await.unwrap();
    let newer = store.commit(&add("other2")).await.unwrap();
    assert!(newer < v);
    let h = rec
        .wait_health(|h| matches!(h, Standing::Stale { reason, .. } if reason.contains("behind")))
        .await;
    assert!(
        matches!(h, Standing::Stale { version, .. } if version == v),
        "{h:?}"
    );
    assert_eq!(*rec.installed.lock().unwrap().last().unwrap(), v);
    task.abort();
}
