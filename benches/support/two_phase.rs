//! A reference model for bench 4: two-phase commit (one transaction manager, `n` resource
//! managers, messages in an unordered set that never loses one), the classic example a model
//! checker is timed on, written here from the textbook protocol. Timing it in the same run as
//! our model gives a states-per-second ratio that holds on a noisy machine.
//!
//! The state is compact (one byte per resource manager, bit sets for the rest), so it shows
//! what the checker itself can do per state on this machine.

use stateright::{Model, Property};

/// At most this many resource managers.
pub const MAX_RMS: usize = 12;

/// A resource manager's state.
const WORKING: u8 = 0;
const PREPARED: u8 = 1;
const COMMITTED: u8 = 2;
const ABORTED: u8 = 3;

/// The transaction manager's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Tm {
    Init,
    Committed,
    Aborted,
}

/// The whole system.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct State {
    rm: [u8; MAX_RMS],
    tm: Tm,
    /// Resource managers whose `Prepared` the transaction manager has received.
    tm_prepared: u16,
    /// `Prepared` messages sent, one bit per resource manager.
    sent_prepared: u16,
    sent_commit: bool,
    sent_abort: bool,
}

/// One step.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Action {
    TmRcvPrepared(u8),
    TmCommit,
    TmAbort,
    RmPrepare(u8),
    RmChooseToAbort(u8),
    RmRcvCommit(u8),
    RmRcvAbort(u8),
}

/// Two-phase commit with `rms` resource managers.
pub struct TwoPhase {
    pub rms: u8,
}

impl TwoPhase {
    fn all(&self) -> u16 {
        (1u16 << self.rms) - 1
    }
}

impl Model for TwoPhase {
    type State = State;
    type Action = Action;

    fn init_states(&self) -> Vec<State> {
        assert!(usize::from(self.rms) <= MAX_RMS);
        vec![State {
            rm: [WORKING; MAX_RMS],
            tm: Tm::Init,
            tm_prepared: 0,
            sent_prepared: 0,
            sent_commit: false,
            sent_abort: false,
        }]
    }

    fn actions(&self, s: &State, actions: &mut Vec<Action>) {
        if s.tm == Tm::Init {
            if s.tm_prepared == self.all() {
                actions.push(Action::TmCommit);
            }
            actions.push(Action::TmAbort);
        }
        for r in 0..self.rms {
            let bit = 1u16 << r;
            if s.tm == Tm::Init && s.sent_prepared & bit != 0 && s.tm_prepared & bit == 0 {
                actions.push(Action::TmRcvPrepared(r));
            }
            let state = s.rm[usize::from(r)];
            if state == WORKING {
                actions.push(Action::RmPrepare(r));
                actions.push(Action::RmChooseToAbort(r));
            }
            if s.sent_commit && state != COMMITTED {
                actions.push(Action::RmRcvCommit(r));
            }
            if s.sent_abort && state != ABORTED {
                actions.push(Action::RmRcvAbort(r));
            }
        }
    }

    fn next_state(&self, s: &State, action: Action) -> Option<State> {
        let mut n = s.clone();
        match action {
            Action::TmRcvPrepared(r) => n.tm_prepared |= 1 << r,
            Action::TmCommit => {
                n.tm = Tm::Committed;
                n.sent_commit = true;
            }
            Action::TmAbort => {
                n.tm = Tm::Aborted;
                n.sent_abort = true;
            }
            Action::RmPrepare(r) => {
                n.rm[usize::from(r)] = PREPARED;
                n.sent_prepared |= 1 << r;
            }
            Action::RmChooseToAbort(r) | Action::RmRcvAbort(r) => n.rm[usize::from(r)] = ABORTED,
            Action::RmRcvCommit(r) => n.rm[usize::from(r)] = COMMITTED,
        }
        Some(n)
    }

    fn properties(&self) -> Vec<Property<Self>> {
        vec![Property::always("consistent", |m: &TwoPhase, s: &State| {
            let rms = &s.rm[..usize::from(m.rms)];
            !(rms.contains(&COMMITTED) && rms.contains(&ABORTED))
        })]
    }
}
