//! Known-bad server strategies: each puts one bug of a real server (or of the registry behind
//! it) in the reference world, and must be caught by the properties it names.

use super::Config;
use super::spec::{A_X, A_Y, Spec, tools};
use crate::Search;
use listsync_core::property::Property::*;
use listsync_core::scenario::{Cluster, Transport};
use listsync_core::situation::Situation::*;
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::{Kind, Op};

/// list_changed sent before the change is committed.
pub(super) fn notify_before_commit() -> Config {
    let mut s = Spec::bad("notify-before-commit");
    s.server = ServerStrategy::NotifyBeforeCommit;
    s.page_size = 0;
    s.script.truncate(1);
    Config {
        scenario: s.build(),
        about: "list_changed sent before the commit: the client re-lists, sees the old list, and is never told again (its refresh began after the change was committed, so no wake-up was lost: the server's fault, not the client's)",
        search: Search::Bfs,
        violates: &[NotifyAfterCommit, Converges],
        situations: &[NotifyDuringRefresh],
    }
}

/// Bare offset cursors: a removal between two pages skips an item.
pub(super) fn offset_cursor() -> Config {
    let mut s = Spec::bad("offset-cursor");
    s.server = ServerStrategy::OffsetCursor;
    s.transport = Transport::Http;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    Config {
        scenario: s.build(),
        about: "bare offset cursors and no version: a removal between two pages makes the walk skip an item",
        search: Search::Bfs,
        violates: &[NoTornSnapshot],
        situations: &[NotifyMidWalk, ResponseOvertakesResponse],
    }
}

/// One notification per mutation of a batch.
pub(super) fn notify_per_mutation() -> Config {
    let mut s = Spec::bad("notify-per-mutation");
    s.server = ServerStrategy::NotifyPerMutation;
    s.page_size = 0;
    s.script = vec![vec![
        Op::add(Kind::Tools, "c", "c1"),
        Op::remove(Kind::Tools, "a"),
    ]];
    Config {
        scenario: s.build(),
        about: "one list_changed per mutation of a batch: a batch of two sends two",
        search: Search::Bfs,
        violates: &[BoundedRefresh],
        situations: &[BurstDuringRefresh],
    }
}

/// Calls dispatched through a tool table captured when the session began.
pub(super) fn stale_dispatch() -> Config {
    let mut s = Spec::bad("stale-dispatch");
    s.server = ServerStrategy::StaleDispatch;
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "dispatch through the session's captured tool table runs a tool the registry no longer has",
        search: Search::Bfs,
        violates: &[NoCallToRemoved],
        situations: &[CallInFlightDuringRemoval],
    }
}

/// A cluster node that notifies on the bus event before it can serve the new version.
pub(super) fn cluster_notify_before_visible() -> Config {
    let mut s = Spec::bad("cluster-notify-before-visible");
    s.server = ServerStrategy::ClusterNotifyBeforeVisible;
    s.clients = 2;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0],
        ..Cluster::default()
    });
    Config {
        scenario: s,
        about: "a node that notifies its clients on the bus event before loading the new version: they re-list, see the old one, and are not told again",
        search: Search::Bfs,
        violates: &[NotifyAfterCommit, Converges],
        situations: &[NodeBehindStore],
    }
}

/// A registry that lies about what it has committed and what it runs.
pub(super) fn lying_registry() -> Config {
    let mut s = Spec::bad("lying-registry");
    s.server = ServerStrategy::LyingRegistry;
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "a registry that notifies before commit and runs a removed tool while claiming the announced version is visible and the tool present: the world's observer judges the wire, so both are caught",
        search: Search::Bfs,
        violates: &[NotifyAfterCommit, NoCallToRemoved, Converges],
        situations: &[CallInFlightDuringRemoval],
    }
}

/// Every list announced after every batch, changed or not.
pub(super) fn notify_on_noop() -> Config {
    let mut s = Spec::bad("notify-on-noop");
    s.server = ServerStrategy::NotifyOnNoop;
    s.page_size = 0;
    s.initial.push(Op::add(Kind::Prompts, "p", "p1"));
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", "a1")],
        vec![Op::add(Kind::Tools, "c", "c1")],
    ];
    let mut s = s.build();
    s.clients[0].kinds = [Kind::Tools, Kind::Prompts].into_iter().collect();
    Config {
        scenario: s,
        about: "a server that announces every list after every batch: a rebuild that changes nothing, and a tool added, send prompts/list_changed too, for a prompts list that did not change (over stdio, so the harness replays it)",
        search: Search::Bfs,
        violates: &[NoSpuriousNotify],
        situations: &[NotifyDuringRefresh],
    }
}

/// Calls run without checking their arguments against the tool's current input schema.
pub(super) fn unvalidated_dispatch() -> Config {
    let mut s = Spec::bad("unvalidated-dispatch");
    s.server = ServerStrategy::UnvalidatedDispatch;
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![vec![Op::update(Kind::Tools, "a", A_Y)]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "a server that runs every call of a tool it has without checking its arguments: a call built for a's old input schema, in flight while the schema changes, runs against the new one",
        search: Search::Bfs,
        violates: &[NoStaleArguments],
        situations: &[CallInFlightDuringSchemaChange],
    }
}
