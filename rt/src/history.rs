//! A shared, sequence-numbered recorder of core history events.
//!
//! The server records what its observer sees (`server::observe`): commits and dispatches under
//! its registry lock, so they are in commit order, and each `list_changed` once it was handed to
//! a transport; each client actor records as it steps its machine. Events that are causally ordered (a page served after
//! a commit, then published) therefore land in that order. Tests and the harness judge the
//! recording with core's [`judge`], the same checkers the model and the simulator use.

use listsync_core::history::{ClientId, Event};
use listsync_core::monitor::{Judgement, judge};
use listsync_core::vocab::{AuthCtx, Kind};
use std::sync::{Arc, Mutex, MutexGuard};

/// One recorded event and its position in the history.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stamped {
    /// Position (0-based, dense).
    pub seq: u64,
    /// The event.
    pub event: Event,
}

/// A history shared by a server and its clients. Cheap to clone (one `Arc`).
#[derive(Clone, Debug, Default)]
pub struct SharedHistory {
    inner: Arc<Mutex<Vec<Stamped>>>,
}

impl SharedHistory {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Stamped>> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Appends an event; returns its sequence number.
    pub fn record(&self, event: &Event) -> u64 {
        let mut events = self.lock();
        let seq = events.len() as u64;
        events.push(Stamped {
            seq,
            event: event.clone(),
        });
        seq
    }

    /// Every event so far, in order.
    pub fn events(&self) -> Vec<Event> {
        self.lock().iter().map(|s| s.event.clone()).collect()
    }

    /// Every event so far, with sequence numbers.
    pub fn stamped(&self) -> Vec<Stamped> {
        self.lock().clone()
    }

    /// Number of events recorded.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Records that the system is quiescent and these (client, kind, auth) snapshots must equal
    /// the server's.
    pub fn quiescent(&self, expect: Vec<(ClientId, Kind, AuthCtx)>) -> u64 {
        self.record(&Event::Quiescent { expect })
    }

    /// Judges the history so far with core's property checkers.
    pub fn judge(&self) -> Judgement {
        let events = self.events();
        judge(&events)
    }

    /// The history as readable lines (`seq: event`), for failure messages.
    pub fn render(&self) -> String {
        self.lock()
            .iter()
            .map(|s| format!("{:4}: {}", s.seq, s.event))
            .collect::<Vec<_>>()
            .join("\n")
    }
}
