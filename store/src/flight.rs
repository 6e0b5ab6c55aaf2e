//! Single-flight refresh with a dirty flag: the pure transitions.
//!
//! [`FlightState`] is plain data with two *pure* transitions, [`FlightState::on_notify`] and
//! [`FlightState::on_finish`]. The sans-IO client state machine in `listsync-core` embeds it, so
//! the stateright model explores exactly these transitions, and rt's client runs them in its one
//! actor task: notifications and refresh completions reach that task as messages, one at a time,
//! so no two threads ever apply a transition at once and there is nothing atomic to arbitrate.
//! (An atomic form of the gate for callers that notify and refresh on different threads was
//! removed: nothing used it.)
//!
//! The rules (design properties `bounded_refresh` and `no_lost_wakeup`):
//!
//! * at most one refresh runs at a time;
//! * any number of notifications that arrive while a refresh runs cause exactly one more refresh;
//! * a notification is never lost: the dirty flag is cleared when the next refresh *starts*
//!   (`RunningDirty --finish--> Running` + "run again"), never after a refresh completes. A
//!   refresh that started after a notification was recorded therefore always observes the change
//!   that notification announced.

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
        let (mut state, start) = Idle.on_notify();
        assert!(start);
        for _ in 0..5 {
            let (next, start) = state.on_notify();
            assert!(!start, "coalesced");
            state = next;
        }
        assert_eq!(state, RunningDirty);
        let (state, again) = state.on_finish();
        assert!(again, "the burst causes one more refresh");
        assert_eq!(state, Running);
        let (state, again) = state.on_finish();
        assert!(!again, "and only one");
        assert_eq!(state, Idle);
    }
}
