//! A list request that fails with an internal error (`Step::FailList`, the `list_error` fault)
//! is not a list change and does not end the refresh: the reference client arms a retry timer,
//! and when it fires (`Step::Retry`) the walk runs again and the client publishes what the
//! server lists. Without the fault budget the world never offers the step.

mod common;

use common::{one_client, settle};
use listsync_core::property::Property;
use listsync_core::record::Log;
use listsync_core::scenario::{Faults, Scenario};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, ItemList, Kind, Op};
use listsync_core::wire::Request;
use listsync_core::world::{Link, Step, World};
use std::collections::{HashSet, VecDeque};

/// One stdio client of tools `a`, `b` listed in two pages (one item a page), a batch adding `c`,
/// and `list_error` failed list requests allowed.
fn scenario(list_error: u32) -> Scenario {
    let mut scn = one_client(
        "list-errors",
        ClientStrategy::Reference,
        vec![
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "b", "b1"),
        ],
        vec![vec![Op::add(Kind::Tools, "c", "c1")]],
        &[],
    );
    scn.server.page_size = 1;
    scn.faults = Faults {
        list_error,
        ..Faults::default()
    };
    scn
}

fn enabled(w: &World, scn: &Scenario) -> Vec<Step> {
    let mut steps = Vec::new();
    w.enabled(scn, &mut steps);
    steps
}

/// Delivers the first deliverable message until a step `want` selects is enabled; returns it.
fn deliver_until(w: &mut World, scn: &Scenario, want: impl Fn(&Step) -> bool) -> Step {
    for _ in 0..100 {
        let steps = enabled(w, scn);
        if let Some(s) = steps.iter().find(|s| want(s)) {
            return s.clone();
        }
        let d = steps
            .into_iter()
            .find(|s| matches!(s, Step::Deliver { .. }))
            .expect("nothing left to deliver");
        w.apply(scn, &d, &mut Log::default()).unwrap();
    }
    panic!("the step never became enabled");
}

/// The client's published tools against what the server lists.
fn published_matches_server(w: &World) -> bool {
    let listed: ItemList = w.server().catalog().visible(Kind::Tools, AuthCtx(0)).into();
    w.clients[0]
        .snapshot(Kind::Tools)
        .is_some_and(|s| s.items == listed && !s.stale)
}

#[test]
fn a_failed_page_is_retried_after_the_back_off_and_the_refresh_completes() {
    let scn = scenario(1);
    let mut w = World::new(&scn);
    // The first page is served; the request for the second page fails in the server's place.
    deliver_until(&mut w, &scn, |s| matches!(s, Step::FailList { .. }));
    assert!(matches!(
        w.links[0].up[0].req,
        Request::List { cursor: None, .. }
    ));
    let deliver = Step::Deliver {
        client: 0,
        link: Link::Up,
        index: 0,
    };
    w.apply(&scn, &deliver, &mut Log::default()).unwrap();
    let second = deliver_until(&mut w, &scn, |s| matches!(s, Step::FailList { .. }));
    assert!(matches!(
        w.links[0].up[0].req,
        Request::List {
            cursor: Some(_),
            ..
        }
    ));
    let mut log = Log::default();
    w.apply(&scn, &second, &mut log).unwrap();
    assert_eq!(w.used[4], 1);
    assert!(
        log.lines
            .iter()
            .any(|l| l.contains("list of tools fails with an internal error")),
        "{:?}",
        log.lines
    );
    // The budget is spent: no list request can fail any more.
    assert!(
        !enabled(&w, &scn)
            .iter()
            .any(|s| matches!(s, Step::FailList { .. }))
    );
    assert!(w.apply(&scn, &second, &mut Log::default()).is_err());
    // The error reaches the client, which arms its retry timer: the world offers it.
    settle(&mut w, &scn, &mut Log::default());
    let retry = Step::Retry {
        client: 0,
        kind: Kind::Tools,
        auth: AuthCtx(0),
    };
    assert!(
        enabled(&w, &scn).contains(&retry),
        "{:?}",
        enabled(&w, &scn)
    );
    assert!(w.clients[0].retry_armed(Kind::Tools, AuthCtx(0)));
    assert!(
        !w.quiescent(),
        "a refresh waiting for its retry is not done"
    );
    // The timer fires: the walk runs again and the refresh completes.
    w.apply(&scn, &retry, &mut Log::default()).unwrap();
    settle(&mut w, &scn, &mut Log::default());
    assert!(!enabled(&w, &scn).contains(&retry));
    assert!(w.quiescent(), "{:?}", enabled(&w, &scn));
    assert!(published_matches_server(&w));
    for p in Property::ALL {
        assert!(w.holds(p), "{p}");
    }
    // A later change is still listed: the retry left the client in order.
    w.apply(&scn, &Step::Mutate { batch: 0 }, &mut Log::default())
        .unwrap();
    settle(&mut w, &scn, &mut Log::default());
    assert!(w.quiescent());
    assert!(published_matches_server(&w));
    assert_eq!(w.clients[0].snapshot(Kind::Tools).unwrap().items.len(), 3);
}

/// Every state reachable in `scn` (breadth-first, at most `cap` states), with the steps enabled
/// in it.
fn explore(scn: &Scenario, cap: usize) -> Vec<Vec<Step>> {
    let start = World::new(scn);
    let mut seen = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([start]);
    let mut out = Vec::new();
    while let Some(w) = queue.pop_front() {
        let steps = enabled(&w, scn);
        for s in &steps {
            let mut next = w.clone();
            next.apply(scn, s, &mut ()).unwrap();
            if seen.len() < cap && seen.insert(next.clone()) {
                queue.push_back(next);
            }
        }
        out.push(steps);
    }
    out
}

#[test]
fn without_a_budget_no_list_request_fails() {
    let fails = |steps: &Vec<Step>| steps.iter().any(|s| matches!(s, Step::FailList { .. }));
    let none = explore(&scenario(0), 20_000);
    assert!(none.len() > 10, "{} states", none.len());
    assert!(!none.iter().any(fails));
    assert!(
        !none
            .iter()
            .flatten()
            .any(|s| matches!(s, Step::Retry { .. })),
        "no retry is ever armed without a failure"
    );
    let step = Step::FailList {
        client: 0,
        index: 0,
    };
    let scn = scenario(0);
    let mut w = World::new(&scn);
    assert!(w.apply(&scn, &step, &mut Log::default()).is_err());
    // With a budget of one, the same world offers it.
    assert!(explore(&scenario(1), 20_000).iter().any(fails));
}
