//! The reference world at size: three-page lists through four batches, half a million states or
//! more each (the largest of the default suite).

use super::Config;
use super::spec::{Spec, duplicate_cut_and_call, three_pages_four_batches};
use crate::Search;
use listsync_core::scenario::Transport;
use listsync_core::situation::Situation::*;
use listsync_core::vocab::Era;

/// The reference world's races at three pages and four batches, with faults and a call.
pub(super) fn large() -> Config {
    let mut s = Spec::new("reference-large");
    three_pages_four_batches(&mut s);
    let mut s = s.build();
    duplicate_cut_and_call(&mut s, 0);
    Config {
        scenario: s,
        about: "three-page lists through four batches (add, remove, update, add), a call to the tool being removed, a duplicated notification and a cut connection",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
    }
}

/// Two interchangeable clients at size.
pub(super) fn large_pair() -> Config {
    let mut s = Spec::new("reference-large-pair");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script.truncate(3);
    Config {
        scenario: s.build(),
        about: "two interchangeable clients (symmetry-reduced DFS) walking three-page lists through three batches (add, remove, update)",
        search: Search::DfsSymmetric,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
        ],
    }
}

/// The 2026-07-28 era at size.
pub(super) fn large_2026() -> Config {
    let mut s = Spec::new("reference-large-2026");
    three_pages_four_batches(&mut s);
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "2026-07-28 stateless over HTTP at size: listen, acknowledgement and three-page walks through four batches (add, remove, update, add), a call to the tool being removed",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            ChangeWhileAckInFlight,
            TtlExpiryRefetch,
        ],
    }
}

/// Streamable HTTP at size.
pub(super) fn large_http() -> Config {
    let mut s = Spec::new("reference-large-http");
    three_pages_four_batches(&mut s);
    s.transport = Transport::Http;
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "2025-11-25 over Streamable HTTP at size: requests, responses and notifications overtake one another through three-page walks and four batches, a call to the tool being removed",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
        ],
    }
}
