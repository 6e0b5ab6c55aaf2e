//! A deliberately wrong variant, kept only so the loom tests can show that loom catches it.
//!
//! Do not use it. [`RacySnapshotCell`] checks the version, then writes under a separate lock:
//! check-then-act instead of compare-and-swap. Two publishers can both pass the check against the
//! same old snapshot, and the older one may write last (`no_stale_overwrite` broken).
//! `tests/loom_store.rs` runs loom on it and asserts that loom reports the violation.

use crate::{
    CellSnapshot, Published, Versioned,
    sync::{Arc, AtomicArc, Mutex, lock},
};

/// Known-bad [`crate::SnapshotCell`]: version check outside the write lock, then a plain store.
pub struct RacySnapshotCell<T: Versioned> {
    current: AtomicArc<CellSnapshot<T>>,
    write: Mutex<()>,
}

impl<T: Versioned> RacySnapshotCell<T> {
    /// A cell holding `initial`.
    pub fn new(initial: Arc<T>) -> Self {
        Self {
            current: AtomicArc::new(Arc::new(CellSnapshot::fresh(initial))),
            write: Mutex::new(()),
        }
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<CellSnapshot<T>> {
        self.current.load()
    }

    /// BROKEN: compares against a snapshot that may be replaced before the store below.
    pub fn publish(&self, value: Arc<T>) -> Published<T::Version> {
        let current = self.current.load();
        let version = value.version();
        if version < current.version() {
            return Published::Superseded {
                current: current.version(),
            };
        }
        // The lock serializes writers but not the check above with them.
        let _writer = lock(&self.write);
        self.current.store(Arc::new(CellSnapshot::fresh(value)));
        Published::Applied {
            previous: current.version(),
        }
    }
}
