//! Several server nodes sharing a versioned store, told of changes by a bus that may duplicate,
//! reorder and lose events: a client must never see a node's older list replace a newer one.

use super::Config;
use super::spec::Spec;
use crate::Search;
use listsync_core::scenario::Cluster;
use listsync_core::situation::Situation::*;

/// Two nodes, one client on each, batches through both, a faulty bus.
pub(super) fn cluster() -> Config {
    let mut s = Spec::new("reference-cluster");
    s.clients = 2;
    s.page_size = 0;
    s.script.truncate(2);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0, 1],
        bus_duplicate: 1,
        bus_drop: 1,
        migrate: 0,
    });
    Config {
        scenario: s,
        about: "two nodes sharing a versioned store; a bus that duplicates, reorders and loses events (nodes catch up by reading the store); one client per node; two batches through different nodes",
        search: Search::Bfs,
        violates: &[],
        situations: &[NotifyDuringRefresh, BurstDuringRefresh, NodeBehindStore],
    }
}

/// A client moved mid-walk to a node that may lag behind.
pub(super) fn cluster_migrate() -> Config {
    let mut s = Spec::new("reference-cluster-migrate");
    s.clients = 2;
    s.page_size = 1;
    s.script.truncate(1);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0],
        migrate: 1,
        ..Cluster::default()
    });
    Config {
        scenario: s,
        about: "two nodes; a client moved to the other node (which may lag behind) mid-walk: its cursor is refused there, and an older list never replaces a newer one",
        search: Search::Bfs,
        violates: &[],
        situations: &[NodeBehindStore, CursorRefusedAfterChange],
    }
}
