//! Single-flight refresh with a dirty flag: the pure transitions and their atomic application.
//!
//! [`FlightState`] is plain data with two *pure* transitions, [`FlightState::on_notify`] and
//! [`FlightState::on_finish`]. The sans-IO client state machine in `listsync-core` embeds it, so
//! the stateright model explores exactly these transitions. [`RefreshGate`] applies the very same
//! functions to an `AtomicU8` with compare-and-swap loops, for callers that notify and refresh on
//! different threads; the loom tests check it under every interleaving.
//!
//! The rules (design properties `bounded_refresh` and `no_lost_wakeup`):
//!
//! * at most one refresh runs at a time;
//! * any number of notifications that arrive while a refresh runs cause exactly one more refresh;
//! * a notification is never lost: the dirty flag is cleared when the next refresh *starts*
//!   (`RunningDirty --finish--> Running` + "run again"), never after a refresh completes. A
//!   refresh that started after a notification was recorded therefore always observes the change
//!   that notification announced.

use crate::sync::{AtomicU8, Ordering};
use std::fmt;

/// Where a single-flight refresher stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FlightState {
    /// No refresh is running.
    #[default]
    Idle,
    /// A refresh is running and no notification arrived since it started.
    Running,
    /// A refresh is running and at least one notification arrived since it started: one more
    /// refresh must follow it.
    RunningDirty,
}

impl FlightState {
    /// Every state, for exhaustive tests and model checkers.
    pub const ALL: [FlightState; 3] = [
        FlightState::Idle,
        FlightState::Running,
        FlightState::RunningDirty,
    ];

    /// A list-changed notification arrived. Returns the next state and whether the caller must
    /// start a refresh now (only from [`Idle`](Self::Idle)).
    ///
    /// | from | to | start refresh |
    /// |---|---|---|
    /// | `Idle` | `Running` | yes |
    /// | `Running` | `RunningDirty` | no |
    /// | `RunningDirty` | `RunningDirty` | no (coalesced) |
    #[must_use]
    pub const fn on_notify(self) -> (Self, bool) {
        match self {
            FlightState::Idle => (FlightState::Running, true),
            FlightState::Running | FlightState::RunningDirty => (FlightState::RunningDirty, false),
        }
    }

    /// The running refresh finished (successfully or not). Returns the next state and whether
    /// the caller must run one more refresh right away.
    ///
    /// | from | to | run again |
    /// |---|---|---|
    /// | `Running` | `Idle` | no |
    /// | `RunningDirty` | `Running` | yes: the dirty flag is cleared as the next refresh starts |
    /// | `Idle` | `Idle` | no |
    ///
    /// Finishing while `Idle` is a caller bug (a finish without a matching start). The pure
    /// transition is total and leaves the state unchanged so a model checker can explore it
    /// without panicking; use [`is_running`](Self::is_running) to assert it away.
    /// [`RefreshGate::finish`] panics on it.
    #[must_use]
    pub const fn on_finish(self) -> (Self, bool) {
        match self {
            FlightState::Idle => (FlightState::Idle, false),
            FlightState::Running => (FlightState::Idle, false),
            FlightState::RunningDirty => (FlightState::Running, true),
        }
    }

    /// Whether a refresh is running.
    #[must_use]
    pub const fn is_running(self) -> bool {
        !matches!(self, FlightState::Idle)
    }

    pub(crate) const fn to_bits(self) -> u8 {
        match self {
            FlightState::Idle => 0,
            FlightState::Running => 1,
            FlightState::RunningDirty => 2,
        }
    }

    pub(crate) const fn from_bits(bits: u8) -> Self {
        match bits {
            0 => FlightState::Idle,
            1 => FlightState::Running,
            2 => FlightState::RunningDirty,
            // Only `to_bits` values are ever stored.
            _ => panic!("RefreshGate holds an invalid FlightState encoding"),
        }
    }
}

/// [`FlightState`] shared between threads: the same pure transitions, applied atomically.
///
/// Typical use: whoever gets `true` from [`notify`](Self::notify) runs the refresh loop.
///
/// ```
/// # use listsync_store::RefreshGate;
/// # fn refresh() {}
/// let gate = RefreshGate::new();
/// if gate.notify() {
///     loop {
///         refresh();
///         if !gate.finish() {
///             break;
///         }
///     }
/// }
/// ```
///
/// # Memory ordering
///
/// Every transition, including the ones that leave the state unchanged (a coalesced notification
/// `RunningDirty -> RunningDirty`), is a successful read-modify-write with `AcqRel`. So whatever a
/// notifier wrote before calling `notify` happens-before the refresh that the notification
/// causes or is coalesced into, whichever thread runs it. Skipping the write when the state does
/// not change would break this: a coalesced notifier would then not synchronize with the
/// refresher, which could re-run and still miss its write (loom finds that).
pub struct RefreshGate {
    state: AtomicU8,
}

impl RefreshGate {
    /// A gate in [`FlightState::Idle`].
    pub fn new() -> Self {
        Self {
            state: AtomicU8::new(FlightState::Idle.to_bits()),
        }
    }

    /// Records a notification. Returns `true` if the caller must start a refresh now; `false`
    /// if one is running and will be followed by exactly one more.
    #[must_use = "if true, the caller must start a refresh"]
    pub fn notify(&self) -> bool {
        self.apply(FlightState::on_notify).1
    }

    /// Records the end of the running refresh. Returns `true` if the caller must run one more
    /// refresh (notifications arrived meanwhile); the gate stays `Running` for it.
    ///
    /// # Panics
    ///
    /// If no refresh is running (a finish without a matching start).
    #[must_use = "if true, the caller must run one more refresh"]
    pub fn finish(&self) -> bool {
        let (from, again) = self.apply(FlightState::on_finish);
        assert!(
            from.is_running(),
            "RefreshGate::finish called while no refresh is running"
        );
        again
    }

    /// The current state (a snapshot that may be out of date as soon as it is returned).
    pub fn state(&self) -> FlightState {
        FlightState::from_bits(self.state.load(Ordering::Acquire))
    }

    /// Applies a pure transition with a CAS loop; returns the state it was applied to and the
    /// transition's output.
    fn apply(&self, transition: fn(FlightState) -> (FlightState, bool)) -> (FlightState, bool) {
        // Relaxed is enough for the first guess: the successful CAS below carries the ordering.
        let mut bits = self.state.load(Ordering::Relaxed);
        loop {
            let from = FlightState::from_bits(bits);
            let (to, output) = transition(from);
            match self.state.compare_exchange_weak(
                bits,
                to.to_bits(),
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return (from, output),
                Err(actual) => bits = actual,
            }
        }
    }
}

impl Default for RefreshGate {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for RefreshGate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RefreshGate").field(&self.state()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::FlightState::{self, Idle, Running, RunningDirty};

    #[derive(Clone, Copy, Debug)]
    enum Event {
        Notify,
        Finish,
    }

    /// The whole transition table, written out independently of the implementation.
    fn expected(state: FlightState, event: Event) -> (FlightState, bool) {
        match (state, event) {
            (Idle, Event::Notify) => (Running, true),
            (Running, Event::Notify) => (RunningDirty, false),
            (RunningDirty, Event::Notify) => (RunningDirty, false),
            (Idle, Event::Finish) => (Idle, false),
            (Running, Event::Finish) => (Idle, false),
            (RunningDirty, Event::Finish) => (Running, true),
        }
    }

    #[test]
    fn transitions_exhaustive_over_states_and_events() {
        for state in FlightState::ALL {
            for event in [Event::Notify, Event::Finish] {
                let got = match event {
                    Event::Notify => state.on_notify(),
                    Event::Finish => state.on_finish(),
                };
                assert_eq!(got, expected(state, event), "{state:?} on {event:?}");
            }
        }
    }

    #[test]
    fn bits_round_trip() {
        for state in FlightState::ALL {
            assert_eq!(FlightState::from_bits(state.to_bits()), state);
        }
    }

    /// Walks every event sequence up to length 8 and checks the invariants the transitions
    /// exist for: a refresh is started only from `Idle`; after a notification the machine never
    /// reaches `Idle` without a refresh that started after it (no lost wakeup); a burst of
    /// notifications during one refresh yields exactly one "run again".
    #[test]
    fn sequences_start_only_from_idle_and_never_lose_a_notification() {
        fn walk(state: FlightState, depth: usize, pending: bool, reruns_owed: u32) {
            // `pending`: a notification arrived that no started refresh has covered yet.
            // `reruns_owed`: "run again"s owed to the current refresh (0 or 1).
            assert!(reruns_owed <= 1);
            if state == Idle {
                assert!(!pending, "idle with an uncovered notification");
            }
            if depth == 0 {
                return;
            }
            // Notify.
            let (next, start) = state.on_notify();
            assert_eq!(start, state == Idle, "start only from Idle");
            let (pending_n, owed_n) = if start {
                (false, 0) // the refresh starting now covers it
            } else {
                (true, 1)
            };
            walk(next, depth - 1, pending_n, owed_n.max(reruns_owed));
            // Finish (only meaningful while running).
            if state.is_running() {
                let (next, again) = state.on_finish();
                assert_eq!(
                    again,
                    reruns_owed == 1,
                    "exactly one rerun per dirty refresh"
                );
                // A rerun starts now and covers every notification so far.
                walk(next, depth - 1, pending && !again, 0);
            }
        }
        walk(Idle, 8, false, 0);
    }

    #[test]
    fn burst_during_refresh_causes_exactly_one_more() {
        let gate = super::RefreshGate::new();
        assert!(gate.notify());
        for _ in 0..5 {
            assert!(!gate.notify());
        }
        assert_eq!(gate.state(), RunningDirty);
        assert!(gate.finish(), "the burst causes one more refresh");
        assert_eq!(gate.state(), Running);
        assert!(!gate.finish(), "and only one");
        assert_eq!(gate.state(), Idle);
    }

    #[test]
    #[should_panic(expected = "no refresh is running")]
    fn finish_without_start_panics() {
        let gate = super::RefreshGate::new();
        let _ = gate.finish();
    }

    /// Std threads: each notifier commits a change, then notifies and runs the refresh loop if
    /// told to. Assertions are about outcomes only (no timing): never two refreshes at once, and
    /// the last refresh saw every committed change.
    #[cfg(not(loom))]
    #[test]
    fn gate_under_std_threads() {
        use crate::sync::{Arc, AtomicU64, AtomicUsize, Ordering, thread};

        const THREADS: u64 = 4;
        const PER_THREAD: u64 = 2_000;

        let gate = Arc::new(super::RefreshGate::new());
        let committed = Arc::new(AtomicU64::new(0));
        let running = Arc::new(AtomicUsize::new(0));
        let refreshes = Arc::new(AtomicU64::new(0));
        let last_seen = Arc::new(AtomicU64::new(0));

        let handles: Vec<_> = (0..THREADS)
            .map(|_| {
                let (gate, committed, running, refreshes, last_seen) = (
                    gate.clone(),
                    committed.clone(),
                    running.clone(),
                    refreshes.clone(),
                    last_seen.clone(),
                );
                thread::spawn(move || {
                    for _ in 0..PER_THREAD {
                        committed.fetch_add(1, Ordering::Relaxed);
                        if gate.notify() {
                            loop {
                                assert_eq!(running.fetch_add(1, Ordering::Relaxed), 0);
                                last_seen
                                    .store(committed.load(Ordering::Relaxed), Ordering::Relaxed);
                                refreshes.fetch_add(1, Ordering::Relaxed);
                                running.fetch_sub(1, Ordering::Relaxed);
                                if !gate.finish() {
                                    break;
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().expect("notifier panicked");
        }
        let total = THREADS * PER_THREAD;
        assert_eq!(gate.state(), Idle);
        assert_eq!(last_seen.load(Ordering::Relaxed), total, "lost wakeup");
        let refreshes = refreshes.load(Ordering::Relaxed);
        assert!((1..=total).contains(&refreshes), "{refreshes} refreshes");
    }
}
