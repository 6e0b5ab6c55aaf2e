//! Walks under a burst of commits (docs/design.md, "Version-bound walks", "Pacing"): a server
//! that keeps serving while its list changes two or three times in a row, with and without
//! version-bound cursors, with and without the client's pacing.

use super::Config;
use super::spec::{Spec, tools};
use crate::Search;
use listsync_core::client::Pacing;
use listsync_core::scenario::Transport;
use listsync_core::situation::Situation::*;
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::{Kind, Op};

/// Version-bound cursors through a burst: a walk is finished, not restarted.
pub(super) fn burst() -> Config {
    let mut s = Spec::new("reference-burst");
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
        vec![Op::add(Kind::Tools, "d", "d1")],
    ];
    s.pacing = Pacing::OFF;
    s.retain_versions = 1;
    Config {
        scenario: s.build(),
        about: "a server that keeps serving through a burst of three commits, cursors version-bound and declared so (one earlier walk version retained): a notification mid-walk does not restart the walk; it is finished, published if newer, and followed by one more walk (pacing off)",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyMidWalk,
            BurstDuringRefresh,
            DuplicateNotificationInFlight,
        ],
    }
}

/// Bare offset cursors through a burst: restarting the walk keeps every snapshot untorn.
pub(super) fn burst_unbound() -> Config {
    let mut s = Spec::new("reference-burst-unbound");
    s.server = ServerStrategy::OffsetCursor;
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
    ];
    s.pacing = Pacing::OFF;
    Config {
        scenario: s.build(),
        about: "the same burst from a server that promises nothing (bare offset cursors, no version) over stdio, where a notification always precedes the pages cut after its commit: restarting the walk on the notification keeps every snapshot untorn",
        search: Search::Bfs,
        violates: &[],
        situations: &[NotifyMidWalk, BurstDuringRefresh],
    }
}

/// The burst with the default pacing, its timers firing at any moment.
pub(super) fn burst_paced() -> Config {
    let mut s = Spec::new("reference-burst-paced");
    s.transport = Transport::Http;
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
        vec![Op::add(Kind::Tools, "d", "d1")],
    ];
    s.retain_versions = 1;
    let mut s = s.build();
    s.faults.duplicate = 1;
    Config {
        scenario: s,
        about: "the burst over Streamable HTTP with the default pacing (adaptive gap, storm back-off) and a duplicated notification: walks held back by a pacing timer that fires at any moment still converge and never lose a wake-up",
        search: Search::Bfs,
        violates: &[],
        situations: &[
            NotifyMidWalk,
            BurstDuringRefresh,
            DuplicateNotificationInFlight,
        ],
    }
}
