//! [`SnapshotCell`]: publishes a client's list snapshot atomically and never lets an older one
//! replace a newer one.
//!
//! A refresh builds a complete snapshot (every page of one list at one catalog version) off to the
//! side and hands it to [`SnapshotCell::publish`] as one `Arc`. Readers get that `Arc` whole or
//! the previous one whole (`no_torn_snapshot`), and `publish` is a compare-and-swap loop that
//! re-checks the version against whatever is current at the instant of the swap, so concurrent
//! completions can land in any order and the published version still never goes backwards
//! (`no_stale_overwrite`).
//!
//! The cell also carries a *stale* flag: a refresh that failed marks the current snapshot stale
//! ([`SnapshotCell::mark_stale`]) instead of clearing it (the design's reference client keeps the
//! old snapshot, marked stale, and retries). Flag, version and value live in one [`CellSnapshot`]
//! behind one pointer, so they too are read together.
//!
//! Change notification is not here: the runtime layers a `tokio::sync::watch` on top and signals
//! it when `publish` returns [`Published::Applied`].

use crate::sync::{Arc, AtomicArc};
use std::{fmt, ops::Deref};

/// A value that knows its place in publication order.
///
/// `Version` is compared with `Ord`; a snapshot is published only if its version is not older
/// than the current one. Choose it as follows:
///
/// * server with catalog versions (the reference server's `_meta` version): that number;
/// * server without versions (plain 2025-11-25 list results): the client's *refresh generation*,
///   a local counter taken when the refresh **started**, not when it finished. With single-flight
///   refresh ([`crate::FlightState`]) refreshes start in a total order, so the generation orders
///   them as the server served them; a publish-time counter would let any late completion win.
///
/// Do not mix the two kinds of version in one cell: they are not comparable. (The design shows a
/// client request counter does not order server serve times; the generation works only because
/// single-flight makes refreshes sequential.)
pub trait Versioned {
    /// The ordering key.
    type Version: Ord + Copy + fmt::Debug;

    /// This value's version.
    fn version(&self) -> Self::Version;
}

/// What a [`SnapshotCell`] holds: a value, its version (read once at publish), and the stale flag.
///
/// Dereferences to the value.
pub struct CellSnapshot<T: Versioned> {
    value: Arc<T>,
    version: T::Version,
    stale: bool,
}

impl<T: Versioned> CellSnapshot<T> {
    pub(crate) fn fresh(value: Arc<T>) -> Self {
        Self {
            version: value.version(),
            value,
            stale: false,
        }
    }

    /// The published value.
    pub fn value(&self) -> &Arc<T> {
        &self.value
    }

    /// The value's version, as read when it was published.
    pub fn version(&self) -> T::Version {
        self.version
    }

    /// Whether a refresh failed after this snapshot was published (a retry should be pending).
    pub fn is_stale(&self) -> bool {
        self.stale
    }
}

impl<T: Versioned> Deref for CellSnapshot<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.value
    }
}

impl<T: Versioned + fmt::Debug> fmt::Debug for CellSnapshot<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CellSnapshot")
            .field("version", &self.version)
            .field("stale", &self.stale)
            .field("value", &self.value)
            .finish()
    }
}

/// The outcome of [`SnapshotCell::publish`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[must_use]
pub enum Published<V> {
    /// The snapshot is now current. `previous` is the version it replaced (older, or equal when
    /// it replaced a stale-marked snapshot of the same version).
    Applied {
        /// The version that was current before.
        previous: V,
    },
    /// A fresh (not stale) snapshot of the same version is already current; it was kept, so
    /// readers holding it see no spurious change.
    Unchanged,
    /// A newer snapshot is already current; the offered one was dropped.
    Superseded {
        /// The newer current version.
        current: V,
    },
}

impl<V> Published<V> {
    /// Whether the offered snapshot became current.
    pub fn is_applied(&self) -> bool {
        matches!(self, Published::Applied { .. })
    }
}

/// Holds a client's current snapshot of one list.
///
/// Readers get a whole [`CellSnapshot`] (value, version and stale flag together) or the previous
/// one, never a mix (`no_torn_snapshot`); [`publish`](Self::publish) never replaces a newer
/// snapshot with an older one, whatever order concurrent completions arrive in
/// (`no_stale_overwrite`).
///
/// Reads ([`load`](Self::load), [`read`](Self::read)) are wait-free in a normal build. Writes
/// ([`publish`](Self::publish), [`mark_stale`](Self::mark_stale)) are lock-free CAS loops: one
/// retries only because another write succeeded in between.
pub struct SnapshotCell<T: Versioned> {
    current: AtomicArc<CellSnapshot<T>>,
}

impl<T: Versioned> SnapshotCell<T> {
    /// A cell whose current snapshot is `initial`, not stale. Use a value of the lowest version
    /// (for example an empty list at version 0) for "nothing fetched yet".
    pub fn new(initial: Arc<T>) -> Self {
        Self {
            current: AtomicArc::new(Arc::new(CellSnapshot::fresh(initial))),
        }
    }

    /// The current snapshot. Costs one atomic reference-count increment.
    pub fn load(&self) -> Arc<CellSnapshot<T>> {
        self.current.load()
    }

    /// Calls `f` with the current snapshot without touching its reference count (cheapest read;
    /// keep `f` short, see [`AtomicArc::with`]).
    pub fn read<R>(&self, f: impl FnOnce(&CellSnapshot<T>) -> R) -> R {
        self.current.with(|snapshot| f(snapshot))
    }

    /// The current snapshot's version.
    pub fn version(&self) -> T::Version {
        self.read(CellSnapshot::version)
    }

    /// Publishes `value` unless a newer snapshot is already current.
    ///
    /// * newer than current: replaces it ([`Published::Applied`]);
    /// * same version as current, current stale: replaces it, clearing the flag (a retry fetched
    ///   the same catalog version again) ([`Published::Applied`]);
    /// * same version, current fresh: keeps the current one ([`Published::Unchanged`]);
    /// * older: drops `value` ([`Published::Superseded`]).
    ///
    /// The comparison is made against the snapshot that the compare-and-swap then replaces; if
    /// another write lands in between, the CAS fails and the loop compares again against that.
    pub fn publish(&self, value: Arc<T>) -> Published<T::Version> {
        let version = value.version();
        let mut current = self.current.load();
        // Built on the first attempt that needs it and reused across retries.
        let mut next: Option<Arc<CellSnapshot<T>>> = None;
        let mut value = Some(value);
        loop {
            match version.cmp(&current.version) {
                std::cmp::Ordering::Less => {
                    return Published::Superseded {
                        current: current.version,
                    };
                }
                std::cmp::Ordering::Equal if !current.stale => return Published::Unchanged,
                _ => {}
            }
            let candidate = next
                .get_or_insert_with(|| {
                    let value = value.take().expect("value is taken once");
                    Arc::new(CellSnapshot {
                        value,
                        version,
                        stale: false,
                    })
                })
                .clone();
            match self.current.compare_and_swap(&current, candidate) {
                Ok(()) => {
                    return Published::Applied {
                        previous: current.version,
                    };
                }
                Err(actual) => current = actual,
            }
        }
    }

    /// Marks the current snapshot stale, keeping its value and version. Returns `false` if it
    /// already was.
    ///
    /// Whatever snapshot is current when the flag is set gets it, even one a concurrent publish
    /// installed after the caller's refresh failed. That is the conservative choice: the flag
    /// only says "may be behind the server, a retry is pending", and the next publish of the same
    /// or a newer version clears it. (With single-flight refresh no publish can race a failure.)
    pub fn mark_stale(&self) -> bool {
        let mut current = self.current.load();
        loop {
            if current.stale {
                return false;
            }
            let marked = Arc::new(CellSnapshot {
                value: Arc::clone(&current.value),
                version: current.version,
                stale: true,
            });
            match self.current.compare_and_swap(&current, marked) {
                Ok(()) => return true,
                Err(actual) => current = actual,
            }
        }
    }
}

impl<T: Versioned + fmt::Debug> fmt::Debug for SnapshotCell<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("SnapshotCell").field(&*self.load()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list whose contents are a function of its version, so a reader can check consistency.
    #[derive(Debug, PartialEq, Eq)]
    pub(crate) struct Page {
        pub version: u64,
        pub items: Vec<u64>,
    }

    impl Page {
        pub fn new(version: u64) -> Arc<Self> {
            Arc::new(Self {
                version,
                items: (0..version % 7).map(|i| version * 100 + i).collect(),
            })
        }

        pub fn consistent(&self) -> bool {
            self.items == Page::new(self.version).items
        }
    }

    impl Versioned for Page {
        type Version = u64;
        fn version(&self) -> u64 {
            self.version
        }
    }

    #[test]
    fn publish_orders_by_version() {
        let cell = SnapshotCell::new(Page::new(0));
        assert_eq!(
            cell.publish(Page::new(2)),
            Published::Applied { previous: 0 }
        );
        assert_eq!(
            cell.publish(Page::new(1)),
            Published::Superseded { current: 2 }
        );
        assert_eq!(cell.version(), 2);
        assert_eq!(
            cell.publish(Page::new(5)),
            Published::Applied { previous: 2 }
        );
        assert_eq!(cell.load().items, Page::new(5).items);
        assert!(!cell.load().is_stale());
    }

    #[test]
    fn equal_version_is_kept_unless_stale() {
        let cell = SnapshotCell::new(Page::new(3));
        let before = cell.load();
        assert_eq!(cell.publish(Page::new(3)), Published::Unchanged);
        assert!(
            Arc::ptr_eq(&before, &cell.load()),
            "fresh snapshot kept as is"
        );

        assert!(cell.mark_stale());
        assert!(!cell.mark_stale(), "already stale");
        let stale = cell.load();
        assert!(stale.is_stale());
        assert_eq!(stale.version(), 3);
        assert!(Arc::ptr_eq(stale.value(), before.value()), "value kept");

        assert_eq!(
            cell.publish(Page::new(3)),
            Published::Applied { previous: 3 }
        );
        assert!(
            !cell.load().is_stale(),
            "re-fetching the same version clears stale"
        );
    }

    #[test]
    fn stale_snapshot_is_replaced_by_newer_and_not_by_older() {
        let cell = SnapshotCell::new(Page::new(4));
        assert!(cell.mark_stale());
        assert_eq!(
            cell.publish(Page::new(2)),
            Published::Superseded { current: 4 }
        );
        assert!(cell.load().is_stale());
        assert_eq!(
            cell.publish(Page::new(6)),
            Published::Applied { previous: 4 }
        );
        assert!(!cell.load().is_stale());
    }

    #[test]
    fn read_borrows_current() {
        let cell = SnapshotCell::new(Page::new(9));
        assert_eq!(cell.read(|s| (s.version(), s.items.len())), (9, 2));
        assert!(cell.read(|s| s.consistent()));
    }

    /// Std threads publish interleaved versions (thread `t` publishes `t, t + T, t + 2T, ...`,
    /// shuffled by the scheduler) while others mark stale and read. Deterministic assertions only:
    /// every reader sees versions that never decrease and consistent contents, every `Applied`
    /// replaced an older-or-equal version, and the cell ends at the maximum.
    #[cfg(not(loom))]
    #[test]
    fn concurrent_publish_under_std_threads() {
        use crate::sync::thread;

        const WRITERS: u64 = 3;
        const PER_WRITER: u64 = 3_000;
        let cell = Arc::new(SnapshotCell::new(Page::new(0)));

        thread::scope(|scope| {
            for t in 0..WRITERS {
                let cell = &cell;
                scope.spawn(move || {
                    for i in 0..PER_WRITER {
                        let v = 1 + t + i * WRITERS;
                        match cell.publish(Page::new(v)) {
                            Published::Applied { previous } => assert!(previous < v),
                            Published::Superseded { current } => assert!(current > v),
                            Published::Unchanged => panic!("versions are distinct"),
                        }
                        if i % 16 == 0 {
                            let _ = cell.mark_stale();
                        }
                    }
                });
            }
            for _ in 0..2 {
                let cell = &cell;
                scope.spawn(move || {
                    let mut last = 0;
                    for _ in 0..PER_WRITER {
                        let snapshot = cell.load();
                        assert!(snapshot.version() >= last, "version went backwards");
                        assert!(snapshot.consistent(), "torn snapshot");
                        assert_eq!(snapshot.version(), snapshot.value().version);
                        last = snapshot.version();
                    }
                });
            }
        });
        assert_eq!(cell.version(), WRITERS * PER_WRITER);
    }
}
