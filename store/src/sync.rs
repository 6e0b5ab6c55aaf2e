//! The sync facade: the one place that chooses between std and loom types.
//!
//! Everything in this crate that is shared between threads (`Arc`, atomics, `Mutex`, thread
//! spawning, and the snapshot cell primitive [`AtomicArc`]) is imported from here, never from
//! `std::sync` or `loom` directly. Building with `RUSTFLAGS="--cfg loom"` swaps every one of them
//! for its loom counterpart, so the loom tests in `tests/loom_store.rs` model-check the same code
//! that ships, under every interleaving loom explores. (This mirrors tokio's `src/loom` module.)
//!
//! The public re-exports are part of the crate's API on purpose: [`crate::SnapshotCell::publish`]
//! takes an [`Arc`] from here. In a normal build that is `std::sync::Arc`, so callers see no
//! difference; under loom it is `loom::sync::Arc`, as loom requires.
//!
//! # What loom does and does not verify
//!
//! In a normal build [`AtomicArc`] is a thin wrapper over [`arc_swap::ArcSwap`]: readers are
//! wait-free (they never block on, nor retry because of, a concurrent writer) and writers get a
//! pointer compare-and-swap. arc-swap is not loom-aware (its internals use std atomics and
//! `unsafe`, which loom cannot see), so under `--cfg loom` [`AtomicArc`] is a stand-in with the
//! same small API — `load`, `store`, `compare_and_swap` — built from a `loom::sync::Mutex<Arc<T>>`.
//! Each operation takes the lock once, so each is a single linearization point, which is the
//! contract arc-swap documents for its own operations.
//!
//! Loom therefore verifies the *arbitration logic above the cell*: the publish CAS loop (never
//! replace a newer snapshot with an older one), the stale marking, and that a reader sees a
//! whole snapshot built before its publication. The correctness of arc-swap's own lock-free implementation is *not* checked here; it
//! is taken from arc-swap (which has its own test suite and, separately, its own model checks).

#[cfg(not(loom))]
pub use std::{
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    thread,
};

#[cfg(loom)]
pub use loom::{
    sync::{
        Arc, Mutex, MutexGuard,
        atomic::{AtomicU64, Ordering},
    },
    thread,
};

pub use cell_impl::AtomicArc;

/// Locks `mutex`, ignoring poisoning.
///
/// Every critical section in this crate only clones or replaces an `Arc`, which cannot panic, so
/// a poisoned lock still guards a consistent value.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(not(loom))]
mod cell_impl {
    use super::Arc;
    use std::fmt;

    /// An atomically replaceable `Arc<T>`: the snapshot cell primitive.
    ///
    /// Normal build: a wrapper over [`arc_swap::ArcSwap`] (wait-free [`load`](Self::load)).
    /// Under `--cfg loom`: a loom-modelled stand-in with the same API (see the module docs).
    pub struct AtomicArc<T> {
        inner: arc_swap::ArcSwap<T>,
        /// The value the last successful replacement took out, kept until the next one. A
        /// reader that loaded it just before it was replaced then drops a reference the writer
        /// still shares, so the writer, not the reader, frees it: reads never pay for a
        /// deallocation (the tail of bench 2 at one reader). Costs one extra live value.
        retired: arc_swap::ArcSwapOption<T>,
    }

    impl<T> AtomicArc<T> {
        /// Creates a cell holding `value`.
        pub fn new(value: Arc<T>) -> Self {
            Self {
                inner: arc_swap::ArcSwap::new(value),
                retired: arc_swap::ArcSwapOption::empty(),
            }
        }

        /// Returns the current value (wait-free; one reference-count increment).
        pub fn load(&self) -> Arc<T> {
            self.inner.load_full()
        }

        /// Calls `f` with the current value without touching its reference count.
        ///
        /// This is the cheapest read: arc-swap protects the pointer with a per-thread debt slot
        /// instead of incrementing the shared count. Keep `f` short; a long-held borrow makes a
        /// concurrent writer pay for it when it drops the old value.
        pub fn with<R>(&self, f: impl FnOnce(&Arc<T>) -> R) -> R {
            f(&self.inner.load())
        }

        /// Unconditionally replaces the value. Only the known-bad [`crate::racy`] cell uses this.
        pub fn store(&self, value: Arc<T>) {
            self.inner.store(value);
        }

        /// Replaces the value with `new` if it is still (pointer-)identical to `current`.
        ///
        /// On failure returns the value actually found, so a CAS loop can retry without
        /// reloading. Comparing pointers is ABA-safe here: the caller holds `current` alive, so
        /// its allocation cannot be freed and reused by a different value meanwhile.
        pub fn compare_and_swap(&self, current: &Arc<T>, new: Arc<T>) -> Result<(), Arc<T>> {
            let previous = self.inner.compare_and_swap(current, new);
            if Arc::ptr_eq(&previous, current) {
                self.retired
                    .store(Some(arc_swap::Guard::into_inner(previous)));
                Ok(())
            } else {
                Err(arc_swap::Guard::into_inner(previous))
            }
        }
    }

    impl<T: fmt::Debug> fmt::Debug for AtomicArc<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_tuple("AtomicArc")
                .field(&*self.inner.load())
                .finish()
        }
    }
}

#[cfg(loom)]
mod cell_impl {
    use super::{Arc, Mutex, lock};
    use std::fmt;

    /// Loom stand-in for the arc-swap cell: one `loom::sync::Mutex<Arc<T>>`.
    ///
    /// Each operation takes the lock exactly once, so loom sees one linearization point per
    /// operation and explores every order of them between threads, and the lock's
    /// acquire/release gives the happens-before edge a reader relies on to see a fully built
    /// snapshot. It is *not* wait-free; it only models arc-swap's observable contract.
    pub struct AtomicArc<T> {
        inner: Mutex<Arc<T>>,
    }

    impl<T> AtomicArc<T> {
        /// Creates a cell holding `value`.
        pub fn new(value: Arc<T>) -> Self {
            Self {
                inner: Mutex::new(value),
            }
        }

        /// Returns the current value.
        pub fn load(&self) -> Arc<T> {
            Arc::clone(&lock(&self.inner))
        }

        /// Calls `f` with the current value (loaded first, so `f` runs outside the lock).
        pub fn with<R>(&self, f: impl FnOnce(&Arc<T>) -> R) -> R {
            f(&self.load())
        }

        /// Unconditionally replaces the value.
        pub fn store(&self, value: Arc<T>) {
            let old = std::mem::replace(&mut *lock(&self.inner), value);
            drop(old);
        }

        /// Replaces the value with `new` if it is still (pointer-)identical to `current`.
        pub fn compare_and_swap(&self, current: &Arc<T>, new: Arc<T>) -> Result<(), Arc<T>> {
            let mut slot = lock(&self.inner);
            if Arc::ptr_eq(&slot, current) {
                let old = std::mem::replace(&mut *slot, new);
                drop(slot);
                drop(old);
                Ok(())
            } else {
                Err(Arc::clone(&slot))
            }
        }
    }

    impl<T: fmt::Debug> fmt::Debug for AtomicArc<T> {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_tuple("AtomicArc").field(&*self.load()).finish()
        }
    }
}
