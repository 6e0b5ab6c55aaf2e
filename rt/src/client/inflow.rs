//! Notifications on their way from the network to the actor, coalesced.
//!
//! A server decides how many notifications it sends; the client must not let that decide how
//! much memory it uses. Notifications are idempotent — two `tools/list_changed` pending at once
//! ask for exactly what one asks for, and two `resources/updated` of one URI likewise — so the
//! rmcp handler and the listen-stream readers do not queue each one: they add it to a small set
//! of distinct pending notifications (one entry per connection epoch and message, with how many
//! arrived) and wake the actor once. The actor takes the whole set at its next turn. The
//! actor's inbox therefore holds at most one wake-up for any number of notifications, and the set
//! at most [`MAX_DISTINCT`] entries besides those the client cannot do without (every list
//! notification, and `resources/updated` of a watched URI); past that, updates of URIs nobody
//! watches are dropped and counted.
//!
//! Delivering a set instead of the sequence changes nothing the reference machine relies on: rmcp
//! already runs each inbound notification in its own task, so their order was never guaranteed,
//! and the machine treats a notification as "something changed since it arrived", which the first
//! of several identical pending ones already says.
//!
//! The known-bad strategies are another matter: `naive` refreshes once per notification, and the
//! harness replays it in lockstep with the model, so merging two would change the bug it
//! reproduces. For them every notification stays an entry of its own (nothing is merged), and
//! the entries are capped at [`MAX_PENDING`]: past that, notifications are dropped and counted.

use super::actor::Input;
use listsync_core::vocab::Name;
use listsync_core::wire::{Notification, ServerMsg};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;

/// Most distinct pending notifications kept for URIs the client does not watch.
pub const MAX_DISTINCT: usize = 256;
/// Most pending notifications of a client that does not coalesce (a known-bad strategy).
pub const MAX_PENDING: usize = 65_536;

/// One distinct notification, and how many times it arrived since the actor last looked.
#[derive(Clone, Debug)]
pub(crate) struct Arrival {
    pub(crate) epoch: u32,
    pub(crate) msg: ServerMsg,
    pub(crate) method: &'static str,
    pub(crate) uri: Option<String>,
    pub(crate) count: u64,
}

#[derive(Default)]
struct Pending {
    arrivals: Vec<Arrival>,
    /// A wake-up is in the actor's inbox.
    woken: bool,
    /// Notifications dropped since the actor last looked.
    dropped: u64,
}

/// The coalescing buffer between the network and the actor (cheap to clone).
#[derive(Clone)]
pub(crate) struct Inflow {
    pending: Arc<Mutex<Pending>>,
    tx: mpsc::UnboundedSender<Input>,
    watched: Arc<[Name]>,
    /// Merge identical pending notifications (the reference strategy).
    coalesce: bool,
}

impl Inflow {
    pub(crate) fn new(
        tx: mpsc::UnboundedSender<Input>,
        watched: &[Name],
        coalesce: bool,
    ) -> Inflow {
        Inflow {
            pending: Arc::default(),
            tx,
            watched: watched.into(),
            coalesce,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A notification arrived on the connection of `epoch`. Returns false once the actor is gone.
    pub(crate) fn push(
        &self,
        epoch: u32,
        msg: ServerMsg,
        method: &'static str,
        uri: Option<String>,
    ) -> bool {
        let mut p = self.lock();
        if !self.coalesce {
            if p.arrivals.len() < MAX_PENDING {
                p.arrivals.push(Arrival {
                    epoch,
                    msg,
                    method,
                    uri,
                    count: 1,
                });
            } else {
                p.dropped += 1;
            }
        } else if let Some(a) = p
            .arrivals
            .iter_mut()
            .find(|a| a.epoch == epoch && a.msg == msg)
        {
            a.count += 1;
        } else if p.arrivals.len() < MAX_DISTINCT || self.needed(&msg) {
            p.arrivals.push(Arrival {
                epoch,
                msg,
                method,
                uri,
                count: 1,
            });
        } else {
            p.dropped += 1;
        }
        if p.woken {
            return !self.tx.is_closed();
        }
        p.woken = true;
        drop(p);
        self.tx.send(Input::Arrived).is_ok()
    }

    /// Whether a notification must be kept however many are pending: every list change, and
    /// content updates of watched URIs (finitely many of each).
    fn needed(&self, msg: &ServerMsg) -> bool {
        match msg {
            ServerMsg::Notification(Notification::ResourceUpdated { uri, .. }) => {
                self.watched.contains(uri)
            }
            _ => true,
        }
    }

    /// Everything pending, in first-arrival order, and how many were dropped.
    pub(crate) fn take(&self) -> (Vec<Arrival>, u64) {
        let mut p = self.lock();
        p.woken = false;
        (
            std::mem::take(&mut p.arrivals),
            std::mem::take(&mut p.dropped),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listsync_core::vocab::Kind;

    fn list_changed(kind: Kind) -> ServerMsg {
        ServerMsg::Notification(Notification::ListChanged { kind, sub: None })
    }

    fn updated(uri: &str) -> ServerMsg {
        ServerMsg::Notification(Notification::ResourceUpdated {
            uri: uri.into(),
            sub: None,
        })
    }

    #[test]
    fn a_flood_is_one_wake_up_and_one_entry_per_distinct_notification() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let inflow = Inflow::new(tx, &["file:///watched".into()], true);
        for _ in 0..100_000 {
            assert!(inflow.push(1, list_changed(Kind::Tools), "t", None));
            assert!(inflow.push(1, list_changed(Kind::Prompts), "p", None));
        }
        assert!(matches!(rx.try_recv(), Ok(Input::Arrived)));
        assert!(rx.try_recv().is_err(), "one wake-up only");
        let (arrivals, dropped) = inflow.take();
        assert_eq!(dropped, 0);
        let counts: Vec<u64> = arrivals.iter().map(|a| a.count).collect();
        assert_eq!(counts, [100_000, 100_000]);
        // After the actor looked, the next notification wakes it again.
        assert!(inflow.push(2, list_changed(Kind::Tools), "t", None));
        assert!(matches!(rx.try_recv(), Ok(Input::Arrived)));
    }

    #[test]
    fn a_known_bad_strategy_gets_every_notification_up_to_the_cap() {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let inflow = Inflow::new(tx, &[], false);
        for _ in 0..3 {
            inflow.push(1, list_changed(Kind::Tools), "t", None);
        }
        assert!(matches!(rx.try_recv(), Ok(Input::Arrived)));
        let (arrivals, dropped) = inflow.take();
        assert_eq!((arrivals.len(), dropped), (3, 0));
        for _ in 0..MAX_PENDING + 10 {
            inflow.push(1, list_changed(Kind::Tools), "t", None);
        }
        let (arrivals, dropped) = inflow.take();
        assert_eq!((arrivals.len(), dropped), (MAX_PENDING, 10));
    }

    #[test]
    fn distinct_unwatched_uris_are_capped_watched_ones_and_lists_are_not() {
        let (tx, _rx) = mpsc::unbounded_channel();
        let inflow = Inflow::new(tx, &["file:///watched".into()], true);
        for i in 0..10_000 {
            inflow.push(1, updated(&format!("file:///{i}")), "u", None);
        }
        inflow.push(1, updated("file:///watched"), "u", None);
        inflow.push(1, list_changed(Kind::Resources), "r", None);
        let (arrivals, dropped) = inflow.take();
        assert_eq!(arrivals.len(), MAX_DISTINCT + 2);
        assert_eq!(dropped, 10_000 - MAX_DISTINCT as u64);
        assert!(arrivals.iter().any(|a| a.msg == updated("file:///watched")));
    }
}
