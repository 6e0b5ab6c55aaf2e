//! The race the burst configurations exist for — a `list_changed` that arrives while a walk has
//! pages in hand — is reached, and handled as docs/design.md says: a version-bound walk is
//! finished, published, and followed by one more walk; a walk over cursors that promise nothing
//! starts again. Each test drives one configuration's world through that interleaving step by
//! step and reads what happened from the recorded history.

use listsync_core::history::{Event, RefreshOutcome, Restart};
use listsync_core::monitor::Monitor;
use listsync_core::property::{Verdict, Verdicts};
use listsync_core::record::{Log, Recorder};
use listsync_core::world::{Link, Step, World};
use listsync_model::configs;

fn deliver(link: Link) -> Step {
    Step::Deliver {
        client: 0,
        link,
        index: 0,
    }
}

/// Handshake, first page of a walk in hand, then batch 0 (a removal) commits and its
/// notification reaches the client before the second page does.
fn notified_mid_walk(config: &str) -> (World, Log) {
    let c = configs::by_name(config).unwrap();
    let scn = &c.scenario;
    let mut log = Log::default();
    let mut w = World::new_recorded(scn, &mut log);
    let steps = [
        deliver(Link::Up),   // initialize
        deliver(Link::Down), // initialized: the client lists
        deliver(Link::Up),   // first page request
        deliver(Link::Down), // first page in hand; second page requested
        Step::Mutate { batch: 0 },
        deliver(Link::Up),   // the second page request, served after the commit
        deliver(Link::Down), // the notification (sent before that page)
    ];
    for s in &steps {
        w.apply(scn, s, &mut log)
            .unwrap_or_else(|e| panic!("{config}: {s}: {e}"));
    }
    (w, log)
}

/// Runs the world to quiescence delivering messages in order (no further batch), then judges
/// that end: the verdicts of the world's monitor fed the quiescent end (`converges`,
/// `no_lost_wakeup` and `listen_then_list` are judged there, and hold by default without it).
fn settle(config: &str, w: &mut World, log: &mut Log) -> Verdicts {
    let c = configs::by_name(config).unwrap();
    let scn = &c.scenario;
    for _ in 0..200 {
        if w.quiescent() {
            let expect = w.expectations();
            assert!(!expect.is_empty(), "{config}: nothing to judge at the end");
            let end = Event::Quiescent { expect };
            log.event(&end);
            let mut monitor: Monitor = (*w.monitor).clone();
            let violations = monitor.observe(&end);
            assert!(violations.is_empty(), "{config}: {violations:?}");
            return monitor.verdicts();
        }
        let mut enabled = Vec::new();
        w.enabled(scn, &mut enabled);
        let step = enabled
            .into_iter()
            .find(|s| matches!(s, Step::Deliver { .. } | Step::WalkDue { .. }))
            .expect("something to deliver");
        w.apply(scn, &step, log).unwrap();
    }
    panic!("{config}: not quiescent");
}

fn published(log: &Log) -> Vec<Option<u64>> {
    log.events
        .iter()
        .filter_map(|e| match e {
            Event::Published { version, .. } => Some(*version),
            _ => None,
        })
        .collect()
}

#[test]
fn a_version_bound_walk_is_finished_then_walked_once_more() {
    let (mut w, mut log) = notified_mid_walk("reference-burst");
    let verdicts = settle("reference-burst", &mut w, &mut log);
    assert!(
        !log.events
            .iter()
            .any(|e| matches!(e, Event::WalkRestarted { .. })),
        "no walk restarts: {:#?}",
        log.lines
    );
    // The interrupted walk finished at v1 (the server kept serving it), was published, and one
    // more walk fetched v2.
    assert_eq!(published(&log), [Some(1), Some(2)], "{:#?}", log.lines);
    let ended: Vec<_> = log
        .events
        .iter()
        .filter_map(|e| match e {
            Event::RefreshEnded { outcome, .. } => Some(*outcome),
            _ => None,
        })
        .collect();
    assert_eq!(
        ended,
        [RefreshOutcome::Published, RefreshOutcome::Published]
    );
    assert!(
        verdicts.values().all(|v| *v == Verdict::Holds),
        "{verdicts:?}"
    );
}

#[test]
fn a_walk_over_unbound_cursors_starts_again_on_the_notification() {
    let (mut w, mut log) = notified_mid_walk("reference-burst-unbound");
    assert!(
        log.events.iter().any(|e| matches!(
            e,
            Event::WalkRestarted {
                reason: Restart::NotifiedMidWalk,
                ..
            }
        )),
        "{:#?}",
        log.lines
    );
    let verdicts = settle("reference-burst-unbound", &mut w, &mut log);
    // Only the list after the removal was ever published: the observer dates it by the
    // committed version it equals (v2; this server puts no version on its pages).
    assert_eq!(published(&log), [Some(2)], "{:#?}", log.lines);
    assert!(
        verdicts.values().all(|v| *v == Verdict::Holds),
        "{verdicts:?}"
    );
}
