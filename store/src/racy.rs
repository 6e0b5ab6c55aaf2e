//! Deliberately wrong variants, kept only so the loom tests can show that loom catches them.
//!
//! Do not use these. Each reproduces a bug class from the design's known-bad strategies:
//!
//! * [`RacySnapshotCell`] checks the version, then writes under a separate lock: check-then-act
//!   instead of compare-and-swap. Two publishers can both pass the check against the same old
//!   snapshot, and the older one may write last (`no_stale_overwrite` broken).
//! * [`LossyRefreshGate`] finishes a refresh with a load followed by a plain store instead of a
//!   CAS, so a notification recorded between the two is overwritten (`no_lost_wakeup` broken; the
//!   threaded form of the `flag-cleared-after-await` client strategy).
//!
//! `tests/loom_store.rs` runs loom on each and asserts that loom reports the violation.

use crate::{
    FlightState, Published, Snapshot, Versioned,
    sync::{Arc, AtomicArc, AtomicU8, Mutex, Ordering, lock},
};

/// Known-bad [`crate::SnapshotCell`]: version check outside the write lock, then a plain store.
pub struct RacySnapshotCell<T: Versioned> {
    current: AtomicArc<Snapshot<T>>,
    write: Mutex<()>,
}

impl<T: Versioned> RacySnapshotCell<T> {
    /// A cell holding `initial`.
    pub fn new(initial: Arc<T>) -> Self {
        Self {
            current: AtomicArc::new(Arc::new(Snapshot::fresh(initial))),
            write: Mutex::new(()),
        }
    }

    /// The current snapshot.
    pub fn load(&self) -> Arc<Snapshot<T>> {
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
        self.current.store(Arc::new(Snapshot::fresh(value)));
        Published::Applied {
            previous: current.version(),
        }
    }
}

/// Known-bad [`crate::RefreshGate`]: `finish` is a load then a store, not a CAS.
pub struct LossyRefreshGate {
    state: AtomicU8,
}

impl LossyRefreshGate {
    /// A gate in [`FlightState::Idle`].
    pub fn new() -> Self {
        Self {
            state: AtomicU8::new(FlightState::Idle.to_bits()),
        }
    }

    /// Correct (CAS loop), as in [`crate::RefreshGate::notify`].
    pub fn notify(&self) -> bool {
        let mut bits = self.state.load(Ordering::Relaxed);
        loop {
            let (to, start) = FlightState::from_bits(bits).on_notify();
            match self.state.compare_exchange_weak(
                bits,
                to.to_bits(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return start,
                Err(actual) => bits = actual,
            }
        }
    }

    /// BROKEN: a notification between the load and the store is overwritten by `Idle`.
    pub fn finish(&self) -> bool {
        let from = FlightState::from_bits(self.state.load(Ordering::Acquire));
        let (to, again) = from.on_finish();
        self.state.store(to.to_bits(), Ordering::Release);
        again
    }

    /// The current state.
    pub fn state(&self) -> FlightState {
        FlightState::from_bits(self.state.load(Ordering::Acquire))
    }
}

impl Default for LossyRefreshGate {
    fn default() -> Self {
        Self::new()
    }
}
