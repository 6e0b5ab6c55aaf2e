//! The deep suite (`listsync check --deep`): the reference machines in worlds far larger than the
//! default suite's, run by hand and bounded (`--max-states`: none finishes in hours); their
//! figures are committed in reports/model-check.md.

use super::Config;
use super::spec::{Spec, duplicate_cut_and_call, three_pages_four_batches};
use crate::Search;
use listsync_core::scenario::Cluster;
use listsync_core::situation::Situation::*;
use listsync_core::vocab::{AuthCtx, Kind, Op, Scope};

/// Three interchangeable clients at size, with a duplicated notification and a cut connection.
pub(super) fn clients() -> Config {
    let mut s = Spec::new("deep-clients");
    three_pages_four_batches(&mut s);
    s.clients = 3;
    let mut s = s.build();
    s.faults.duplicate = 1;
    s.faults.disconnect = 1;
    Config {
        scenario: s,
        about: "three interchangeable clients (symmetry-reduced DFS) walking three-page lists through four batches, with a duplicated notification and a cut connection",
        search: Search::DfsSymmetric,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
    }
}

/// Two clients at size under an authorization switch, one calling the tool being removed.
pub(super) fn auth() -> Config {
    let mut s = Spec::new("deep-auth");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script[3] = vec![Op::Add {
        kind: Kind::Tools,
        name: "s".into(),
        def: "s1".into(),
        scope: Scope::Only(AuthCtx(1)),
    }];
    let mut s = s.build();
    s.auth_changes = vec![(0, AuthCtx(1)), (0, AuthCtx(0))];
    duplicate_cut_and_call(&mut s, 1);
    Config {
        scenario: s,
        about: "two clients (random walks), three-page lists, four batches (the last one seen only by auth1) while client 0 switches to auth1 and back and client 1 calls the tool being removed; a duplicated notification and a cut connection",
        // Random walks: a breadth-first frontier of this world outgrows the machine's memory (at
        // depth 12, 0.84M states, it holds 3 GiB), and a bounded depth-first search spends client
        // 1's one call before the client has listed, so the call never meets the removal in the
        // 19M states it explores (nor in any order of the steps tried: natural, reversed, shuffled).
        search: Search::Walks,
        violates: &[],
        situations: &[
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            AuthSwitchDuringRefresh,
            CutWithChangePending,
        ],
    }
}

/// Two nodes at size on a faulty bus, a client moved to the other node mid-walk.
pub(super) fn cluster() -> Config {
    let mut s = Spec::new("deep-cluster");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script.truncate(3);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0, 1, 0],
        bus_duplicate: 1,
        bus_drop: 1,
        migrate: 1,
    });
    Config {
        scenario: s,
        about: "two nodes (DFS) on a bus that duplicates, reorders and loses events, one client per node walking three-page lists, three batches through both nodes, and a client moved to the other node mid-walk",
        search: Search::Dfs,
        violates: &[],
        situations: &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            NodeBehindStore,
        ],
    }
}
