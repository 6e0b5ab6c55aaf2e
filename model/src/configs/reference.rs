//! The reference world in each era and transport, with several clients and with faults: the
//! reference strategies keep one tools list current through a script of changes, and must hold
//! every property.

use super::Config;
use super::spec::Spec;
use crate::Search;
use listsync_core::scenario::{Faults, Transport};
use listsync_core::situation::Situation::*;
use listsync_core::vocab::Era;

/// The smallest world with every race of a list refresh: a notification mid-walk, a burst, a
/// call to the tool being removed, a duplicated notification.
pub(super) fn reference() -> Config {
    let mut s = Spec::new("reference").build();
    s.calls = vec![(0, "a".into())];
    s.faults.duplicate = 1;
    Config {
        scenario: s,
        about: "2025-11-25 over stdio: two-page lists, three batches (add, remove, update), a call to the tool being removed, one duplicated notification",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
        ],
    }
}

/// The reference world over Streamable HTTP, where messages overtake one another.
pub(super) fn http() -> Config {
    let mut s = Spec::new("reference-http");
    s.transport = Transport::Http;
    Config {
        scenario: s.build(),
        about: "2025-11-25 over Streamable HTTP: requests and responses overtake one another, notifications on their own stream; two-page lists, three batches",
        search: Search::Bfs,
        violates: &[],
        // Not `response_overtakes_response`: against version-bound cursors the reference client
        // keeps one list request in flight per list (a notification mid-walk no longer restarts
        // the walk), so two responses cannot race; naive clients reach it.
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
        ],
    }
}

/// The reference world in the stateless 2026-07-28 era: listen, acknowledgement, list.
pub(super) fn era_2026() -> Config {
    let mut s = Spec::new("reference-2026");
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    Config {
        scenario: s.build(),
        about: "2026-07-28 stateless over HTTP: listen, acknowledgement, list after it; two-page lists, three batches",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            ChangeWhileAckInFlight,
            TtlExpiryRefetch,
        ],
    }
}

/// 2026-07-28 with a lost notification: the list's time to live brings the client back.
pub(super) fn era_2026_lossy() -> Config {
    let mut s = Spec::new("reference-2026-lossy");
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    s.script.truncate(2);
    let mut s = s.build();
    s.faults.drop = 1;
    Config {
        scenario: s,
        about: "2026-07-28 with a lost notification: the list's ttlMs runs out and the client re-fetches, so it still converges",
        search: Search::Bfs,
        violates: &[],
        situations: &[NotifyDuringRefresh, TtlExpiryRefetch],
    }
}

/// Three interchangeable clients of one server.
pub(super) fn multi_client() -> Config {
    let mut s = Spec::new("reference-multi-client");
    s.clients = 3;
    s.page_size = 0;
    s.script.truncate(2);
    Config {
        scenario: s.build(),
        about: "three interchangeable clients on stdio (symmetry-reduced DFS), two batches",
        search: Search::DfsSymmetric,
        violates: &[],
        situations: &[NotifyDuringRefresh, BurstDuringRefresh],
    }
}

/// A duplicated notification and a cut connection.
pub(super) fn faults() -> Config {
    let mut s = Spec::new("reference-faults");
    s.script.truncate(2);
    let mut s = s.build();
    s.faults = Faults {
        duplicate: 1,
        drop: 0,
        disconnect: 1,
        call_error: 0,
        list_error: 0,
    };
    Config {
        scenario: s,
        about: "two pages, two batches, a duplicated notification and a cut connection (reconnect, re-initialize, re-list)",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyMidWalk,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
    }
}

/// List requests that fail: the client retries after a back-off.
pub(super) fn list_errors() -> Config {
    let mut s = Spec::new("reference-list-errors");
    s.script.truncate(2);
    let mut s = s.build();
    s.faults.list_error = 2;
    Config {
        scenario: s,
        about: "two pages, two batches, and two list requests (any page of any walk) that fail with an internal error: the client keeps the refresh running and retries it after a back-off, a second failure backing off again, and still converges",
        search: Search::Bfs,
        violates: &[],
        // Not `call_failed_otherwise`: its predicate (an internal error on its way to a client)
        // holds here too, but what it names is a failed tool call, and no tool is called.
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            RetryArmed,
        ],
    }
}
