//! Errors are not changes (docs/design.md, "Errors are not changes"): a failed call makes the
//! reference client list tools again only when the error says the tool is gone and its snapshot
//! still lists it; an internal error or a lost connection starts no refresh; and the
//! `errors_not_changes` judge, fed by the world's own observation of the wire, tells the
//! difference.

mod common;

use common::{one_client, settle};
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::record::Log;
use listsync_core::scenario::{Faults, Scenario};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Kind, Op};
use listsync_core::world::{Link, Step, World};

/// One stdio client of tools `a`, `b`; a batch removing `a`; calls of `a` and `b` by name.
fn scenario(strategy: ClientStrategy) -> Scenario {
    let mut scn = one_client(
        "call-errors",
        strategy,
        vec![
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "b", "b1"),
        ],
        vec![vec![Op::remove(Kind::Tools, "a")]],
        &["a", "b", "a"],
    );
    scn.clients[0].calls_by_name = true;
    scn.faults = Faults {
        call_error: 1,
        drop: 1,
        ..Faults::default()
    };
    scn
}

fn step(w: &mut World, scn: &Scenario, s: Step) -> Vec<Event> {
    let mut log = Log::default();
    w.apply(scn, &s, &mut log).unwrap();
    settle(w, scn, &mut log);
    log.events
}

fn failures(events: &[Event]) -> Vec<(bool, bool)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::CallFailed { gone, relisted, .. } => {
                Some((*gone, relisted.contains(Kind::Tools)))
            }
            _ => None,
        })
        .collect()
}

/// The administrator removes `a` (its notification stays on the link) and the server takes a
/// call of `a` (its refusal goes on the link behind the notification).
fn remove_a_and_call_it(w: &mut World, scn: &Scenario, log: &mut Log) {
    w.apply(scn, &Step::Mutate { batch: 0 }, log).unwrap();
    w.apply(scn, &Step::Call { call: 0 }, log).unwrap();
    let deliver = Step::Deliver {
        client: 0,
        link: Link::Up,
        index: 0,
    };
    w.apply(scn, &deliver, log).unwrap();
}

/// Runs the story: listed; the server removes `a` but the client is not told yet; a call of
/// `a` is refused as unknown; a call of `b` fails with an internal error; `a` is called again
/// after the snapshot dropped it. Returns each failure's (gone, relisted) and the world.
fn story(strategy: ClientStrategy) -> (Vec<(bool, bool)>, World) {
    let scn = scenario(strategy);
    let mut w = World::new(&scn);
    settle(&mut w, &scn, &mut Log::default());
    let mut events = Vec::new();
    // The removal is committed; its notification stays on the link while the call runs.
    let mut log = Log::default();
    remove_a_and_call_it(&mut w, &scn, &mut log);
    events.extend(log.events);
    events.extend(step(&mut w, &scn, Step::Call { call: 1 }));
    let mut log = Log::default();
    w.apply(&scn, &Step::Call { call: 2 }, &mut log).unwrap();
    events.extend(log.events);
    events.extend(step(
        &mut w,
        &scn,
        Step::FailCall {
            client: 0,
            index: 0,
        },
    ));
    (failures(&events), w)
}

#[test]
fn only_a_gone_tool_the_snapshot_still_lists_is_worth_a_relist() {
    let scn = scenario(ClientStrategy::Reference);
    let mut w = World::new(&scn);
    settle(&mut w, &scn, &mut Log::default());
    let mut log = Log::default();
    // The call is refused and the removal's notification is lost: the refusal is the news.
    remove_a_and_call_it(&mut w, &scn, &mut log);
    w.apply(
        &scn,
        &Step::Drop {
            client: 0,
            link: Link::Down,
        },
        &mut log,
    )
    .unwrap();
    settle(&mut w, &scn, &mut log);
    assert_eq!(
        failures(&log.events),
        [(true, true)],
        "a refusal of a listed tool re-lists tools once"
    );
    // Listed since: `a` is gone from the snapshot, so a refusal of it is no news.
    let events = step(&mut w, &scn, Step::Call { call: 2 });
    assert_eq!(failures(&events), [(true, false)], "{events:?}");
    // An internal error is not a change.
    let mut log = Log::default();
    w.apply(&scn, &Step::Call { call: 1 }, &mut log).unwrap();
    w.apply(
        &scn,
        &Step::FailCall {
            client: 0,
            index: 0,
        },
        &mut log,
    )
    .unwrap();
    settle(&mut w, &scn, &mut log);
    assert_eq!(failures(&log.events), [(false, false)]);
    assert!(!w.monitor.violated(Property::ErrorsNotChanges));
}

#[test]
fn a_client_that_refreshes_on_any_error_is_caught() {
    let (seen, w) = story(ClientStrategy::RefreshOnAnyError);
    assert!(seen.contains(&(false, true)), "{seen:?}");
    assert!(w.monitor.violated(Property::ErrorsNotChanges));
    let (seen, w) = story(ClientStrategy::Reference);
    assert!(!seen.iter().any(|(gone, relisted)| !gone && *relisted));
    assert!(!w.monitor.violated(Property::ErrorsNotChanges), "{seen:?}");
}

#[test]
fn relisting_for_a_tool_the_snapshot_already_lacks_is_a_violation() {
    use listsync_core::monitor::judge;
    use listsync_core::vocab::{AuthCtx, Catalog, KindSet};
    use std::sync::Arc;
    let v1 = Catalog::from_ops(&[
        Op::add(Kind::Tools, "a", "a1"),
        Op::add(Kind::Tools, "b", "b1"),
    ]);
    let v2 = Catalog::from_ops(&[Op::add(Kind::Tools, "b", "b1")]);
    let published = Event::Published {
        client: 0,
        kind: Kind::Tools,
        auth: AuthCtx(0),
        items: v2.visible(Kind::Tools, AuthCtx(0)).into(),
        version: Some(2),
    };
    let failed = |gone| Event::CallFailed {
        client: 0,
        tool: "a".into(),
        auth: AuthCtx(0),
        gone,
        relisted: KindSet::only(Kind::Tools),
    };
    let history = |last: Event| {
        vec![
            Event::Committed {
                version: 1,
                catalog: Arc::new(v1.clone()),
            },
            Event::Committed {
                version: 2,
                catalog: Arc::new(v2.clone()),
            },
            published.clone(),
            last,
        ]
    };
    let verdict = |h: Vec<Event>| judge(&h).verdicts[&Property::ErrorsNotChanges];
    use listsync_core::property::Verdict::*;
    assert_eq!(
        verdict(history(failed(true))),
        Violated,
        "no news: a loop's seed"
    );
    assert_eq!(verdict(history(failed(false))), Violated, "not a change");
    // While the snapshot still lists the tool, one re-list is what the rule allows.
    let mut h = history(failed(true));
    h.remove(2);
    assert_eq!(verdict(h), Holds);
}
