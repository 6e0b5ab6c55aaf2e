//! Loom model checks for listsync-store's `SnapshotCell`: the publish CAS loop
//! (`no_stale_overwrite`), whole snapshots for readers (`no_torn_snapshot`), the cell as rt's
//! client uses it (one writer — the client's actor — publishing and marking stale while
//! application threads read), and proof that loom catches the known-bad cell in `racy`.
//!
//! Compiled only with `--cfg loom`; a normal `cargo test` builds this file empty and skips it:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p listsync-store --test loom_store -- --nocapture
//! ```
//!
//! Each test prints its execution count and time with `--nocapture`. The small models (two
//! threads, or a fixed schedule around the race) are explored exhaustively. The larger models are
//! too large for that within a CI budget, so they run with a *preemption bound*: loom then
//! explores every interleaving that needs at most that many preemptions (switches away from a
//! thread that could have continued). The bound is stated on each test and can be raised with
//! `LOOM_MAX_PREEMPTIONS`.
//!
//! Under loom the cell is the mutex stand-in from `listsync_store::sync`, not arc-swap: these
//! tests verify the arbitration above the cell; arc-swap's own correctness is taken from arc-swap.
#![cfg(loom)]

use listsync_store::{
    Published, SnapshotCell, Versioned,
    racy::RacySnapshotCell,
    sync::{Arc, AtomicU64, Ordering, thread},
};
use std::{
    panic::{AssertUnwindSafe, catch_unwind},
    time::Instant,
};

/// The test harness shares its fixtures between loom threads with a *std* `Arc`: its reference
/// count is not code under test, and as a loom `Arc` every clone and drop would be one more point
/// for loom to branch on. Snapshots inside the cell are loom `Arc`s (`sync::Arc`), as in the crate.
type Shared<T> = std::sync::Arc<T>;

/// Runs `model` under loom, exhaustively, or with `preemption_bound` unless
/// `LOOM_MAX_PREEMPTIONS` overrides it. Prints and returns the number of executions explored.
fn check(
    name: &str,
    preemption_bound: Option<usize>,
    model: impl Fn() + Sync + Send + 'static,
) -> usize {
    // Counted with a std atomic: invisible to loom, it only tallies executions.
    let iterations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = iterations.clone();
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = preemption_bound;
    }
    let bound = builder.preemption_bound;
    let started = Instant::now();
    builder.check(move || {
        counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        model();
    });
    let n = iterations.load(std::sync::atomic::Ordering::Relaxed);
    println!(
        "loom {name}: {n} executions, preemption bound {bound:?}, {:.2?}",
        started.elapsed()
    );
    n
}

/// Runs a model that must fail; returns loom's panic message and the executions it took.
fn expect_violation(name: &str, model: impl Fn() + Sync + Send + 'static) -> (String, usize) {
    let iterations = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = iterations.clone();
    let started = Instant::now();
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        // Exhaustive unless LOOM_MAX_PREEMPTIONS is set: a pass would mean the bug does not exist.
        loom::model::Builder::new().check(move || {
            counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            model();
        });
    }));
    let n = iterations.load(std::sync::atomic::Ordering::Relaxed);
    let payload = outcome.expect_err("loom explored every interleaving and found no violation");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    println!(
        "loom {name}: violation found at execution {n} after {:.2?}: {message}",
        started.elapsed()
    );
    (message, n)
}

// ---------------------------------------------------------------------------------------------
// Snapshot cell
// ---------------------------------------------------------------------------------------------

/// A list whose contents are derived from its version, so a reader can detect a torn snapshot.
/// `checksum` is written with a relaxed store *after* construction, before publishing: a reader
/// sees the right value only if publishing gives it a happens-before edge, which loom checks.
struct Items {
    version: u64,
    items: Vec<u64>,
    checksum: AtomicU64,
}

impl Items {
    fn items_for(version: u64) -> Vec<u64> {
        // Never empty: an empty list would be a "flash" the property forbids.
        (0..=version % 3).map(|i| version * 10 + i).collect()
    }

    fn checksum_for(version: u64) -> u64 {
        Self::items_for(version).iter().sum::<u64>() + 1
    }

    fn build(version: u64) -> Arc<Items> {
        let catalog = Items {
            version,
            items: Self::items_for(version),
            checksum: AtomicU64::new(0),
        };
        catalog
            .checksum
            .store(Self::checksum_for(version), Ordering::Relaxed);
        Arc::new(catalog)
    }

    fn assert_whole(&self) {
        assert_eq!(
            self.items,
            Self::items_for(self.version),
            "no_torn_snapshot: items"
        );
        assert_eq!(
            self.checksum.load(Ordering::Relaxed),
            Self::checksum_for(self.version),
            "no_torn_snapshot: snapshot published before it was fully written"
        );
    }
}

impl Versioned for Items {
    type Version = u64;
    fn version(&self) -> u64 {
        self.version
    }
}

/// What a publisher may legitimately be told.
fn assert_outcome(version: u64, outcome: Published<u64>) {
    match outcome {
        Published::Applied { previous } => {
            assert!(
                previous < version,
                "no_stale_overwrite: {version} replaced {previous}"
            )
        }
        Published::Superseded { current } => {
            assert!(current > version, "{version} rejected for older {current}")
        }
        Published::Unchanged => panic!("versions are distinct, {version} cannot be Unchanged"),
    }
}

/// (a) Versions 1, 2, 3 published concurrently in any order end at 3; every applied publish
/// replaced an older version; a concurrent reader's versions never decrease.
/// Threads: 3 publishers + 1 reader (4). Preemption bound 3.
#[test]
fn no_stale_overwrite_concurrent_publishes() {
    check("no_stale_overwrite_concurrent_publishes", Some(3), || {
        let cell = Shared::new(SnapshotCell::new(Items::build(0)));
        let publishers: Vec<_> = [1, 2]
            .into_iter()
            .map(|v| {
                let cell = cell.clone();
                thread::spawn(move || assert_outcome(v, cell.publish(Items::build(v))))
            })
            .collect();
        let reader = {
            let cell = cell.clone();
            thread::spawn(move || {
                let mut seen = Vec::new();
                for _ in 0..3 {
                    seen.push(cell.version());
                }
                seen
            })
        };
        let outcome = cell.publish(Items::build(3));
        assert!(
            outcome.is_applied(),
            "the newest version always lands: {outcome:?}"
        );
        assert_outcome(3, outcome);
        for publisher in publishers {
            publisher.join().unwrap();
        }
        let seen = reader.join().unwrap();
        assert!(
            seen.windows(2).all(|w| w[0] <= w[1]),
            "no_stale_overwrite: reader saw {seen:?}"
        );
        assert_eq!(
            cell.version(),
            3,
            "no_stale_overwrite: ended at {}",
            cell.version()
        );
    });
}

/// (b) A reader only ever sees whole snapshots (items and checksum derived from the version),
/// including stale-marked copies, while a publisher publishes 1 then 2 and another thread marks
/// the current snapshot stale. The mark never changes a version or a value.
/// Threads: publisher + marker + reader (main). Preemption bound 4.
#[test]
fn no_torn_snapshot_reader_sees_whole_snapshots() {
    check(
        "no_torn_snapshot_reader_sees_whole_snapshots",
        Some(4),
        || {
            let cell = Shared::new(SnapshotCell::new(Items::build(0)));
            let publisher = {
                let cell = cell.clone();
                thread::spawn(move || {
                    for v in [1, 2] {
                        assert_eq!(
                            cell.publish(Items::build(v)),
                            Published::Applied { previous: v - 1 }
                        );
                    }
                })
            };
            let marker = {
                let cell = cell.clone();
                thread::spawn(move || {
                    let before = cell.version();
                    assert!(cell.mark_stale(), "nobody else marks");
                    assert!(cell.version() >= before);
                })
            };
            let mut last = 0;
            for _ in 0..2 {
                let snapshot = cell.load();
                assert_eq!(snapshot.version(), snapshot.value().version);
                snapshot.assert_whole();
                assert!(snapshot.version() >= last, "no_stale_overwrite");
                last = snapshot.version();
            }
            publisher.join().unwrap();
            marker.join().unwrap();
            let end = cell.load();
            assert_eq!(end.version(), 2);
            end.assert_whole();
        },
    );
}

/// (e) The cell as rt's client uses it (`rt/src/client/views.rs`): one writer, the client's
/// actor, publishes 1, marks it stale (a refresh failed), then publishes 2, each publish applied
/// at once (nobody else writes); an application thread reads meanwhile and sees only whole
/// snapshots, versions that never go back, and a stale flag only on version 1.
/// Threads: writer + reader (main). Exhaustive.
#[test]
fn single_writer_with_readers_as_rt_uses_it() {
    check("single_writer_with_readers_as_rt_uses_it", None, || {
        let cell = Shared::new(SnapshotCell::new(Items::build(0)));
        let writer = {
            let cell = cell.clone();
            thread::spawn(move || {
                assert_eq!(
                    cell.publish(Items::build(1)),
                    Published::Applied { previous: 0 }
                );
                assert!(cell.mark_stale(), "the only writer marks once");
                assert_eq!(
                    cell.publish(Items::build(2)),
                    Published::Applied { previous: 1 }
                );
            })
        };
        let mut last = 0;
        for _ in 0..3 {
            let snapshot = cell.load();
            snapshot.assert_whole();
            assert!(snapshot.version() >= last, "no_stale_overwrite");
            assert!(
                !snapshot.is_stale() || snapshot.version() == 1,
                "only version 1 was marked stale, read {} stale",
                snapshot.version()
            );
            last = snapshot.version();
        }
        writer.join().unwrap();
        let end = cell.load();
        assert_eq!((end.version(), end.is_stale()), (2, false));
    });
}

/// The cell operations the stale-overwrite model needs, so the same model runs on the correct
/// cell and on the racy one.
trait PublishCell: Send + Sync + 'static {
    fn new(initial: Arc<Items>) -> Self;
    fn publish(&self, value: Arc<Items>) -> Published<u64>;
    fn version(&self) -> u64;
}

impl PublishCell for SnapshotCell<Items> {
    fn new(initial: Arc<Items>) -> Self {
        SnapshotCell::new(initial)
    }
    fn publish(&self, value: Arc<Items>) -> Published<u64> {
        SnapshotCell::publish(self, value)
    }
    fn version(&self) -> u64 {
        SnapshotCell::version(self)
    }
}

impl PublishCell for RacySnapshotCell<Items> {
    fn new(initial: Arc<Items>) -> Self {
        RacySnapshotCell::new(initial)
    }
    fn publish(&self, value: Arc<Items>) -> Published<u64> {
        RacySnapshotCell::publish(self, value)
    }
    fn version(&self) -> u64 {
        self.load().version()
    }
}

/// Two completions, versions 1 and 2, race; the cell must end at 2.
fn two_publishers_model<C: PublishCell>() {
    let cell = Shared::new(C::new(Items::build(0)));
    let older = {
        let cell = cell.clone();
        thread::spawn(move || cell.publish(Items::build(1)))
    };
    let _ = cell.publish(Items::build(2));
    let _ = older.join().unwrap();
    let end = cell.version();
    assert_eq!(
        end, 2,
        "no_stale_overwrite violated: version 1 overwrote 2, cell ends at {end}"
    );
}

/// The two-publisher race on the real cell: exhaustive, passes.
#[test]
fn no_stale_overwrite_two_publishers() {
    check(
        "no_stale_overwrite_two_publishers",
        None,
        two_publishers_model::<SnapshotCell<Items>>,
    );
}

/// (d) The same model on the check-then-store cell: loom must find the stale overwrite.
#[test]
fn racy_cell_is_caught_by_loom() {
    let (message, _) = expect_violation(
        "racy_cell_is_caught_by_loom",
        two_publishers_model::<RacySnapshotCell<Items>>,
    );
    assert!(
        message.contains("no_stale_overwrite violated"),
        "loom failed for another reason: {message}"
    );
}
