//! Tests of the monitor as a whole and of checkers beyond their own files' tests: the
//! monitor's state (equality, hashing, renumbering, its count of events) and the histories
//! that pin what a mutation of a checker would otherwise leave unseen. They sit apart from
//! the monitor's code so that adding one leaves the checked source as it was (the mutation
//! report keys its mutants by the source they were made from).

use super::testing::*;
use super::*;
use crate::vocab::Op;
use std::hash::BuildHasher;

/// Client 0 published v1's tool list (a and b) in its refresh 0, then v2 (a, b and c) was
/// committed.
fn listed_v1_then_v2() -> Vec<Event> {
    vec![
        v1(),
        started(0, 0),
        publish(0, &[("a", "a1"), ("b", "b1")]),
        ended(0, 0),
        v2(),
    ]
}

#[test]
fn a_clean_history_holds_everything() {
    let mut h = listed_v1_then_v2();
    h.extend([
        wake(0),
        started(0, 1),
        publish(0, &[("b", "b1"), ("c", "c1"), ("a", "a1")]),
        ended(0, 1),
        quiescent(0),
    ]);
    assert_eq!(violated(&h), []);
}

fn fold(events: &[Event]) -> Monitor {
    let mut m = Monitor::new();
    for e in events {
        m.observe(e);
    }
    m
}

/// The same history with its two clients' ids swapped, renumbered back, is the same state:
/// equal and hashed alike, although the explanations of its violations name other clients.
#[test]
fn a_renumbered_monitor_is_the_same_state_whatever_its_explanations_say() {
    let history = |torn: ClientId, fine: ClientId| {
        fold(&[
            v1(),
            v2(),
            publish(fine, &[("a", "a1"), ("b", "b1"), ("c", "c1")]),
            publish(torn, &[("a", "a1"), ("c", "c1")]),
        ])
    };
    let a = history(0, 1);
    let b = history(1, 0);
    assert_ne!(a, b, "client 0 and client 1 did different things");
    let back = b.relabel(&[1, 0]);
    assert_ne!(
        a.first_violation(Property::NoTornSnapshot),
        back.first_violation(Property::NoTornSnapshot)
    );
    assert_eq!(a, back);
    let s = std::hash::RandomState::new();
    assert_eq!(s.hash_one(&a), s.hash_one(&back));
    let client = |m: &Monitor, c: ClientId| {
        let mut h = s.build_hasher();
        m.hash_client(c, &mut h);
        h.finish()
    };
    assert_eq!(client(&a, 0), client(&b, 1));
    assert_ne!(client(&a, 0), client(&a, 1));
    // What the monitor remembers of client 0 does not depend on what client 1 did.
    let alone = |other: &[Event]| {
        let mut m = Monitor::new();
        for e in [v1(), started(0, 0), wake(0), notify(0, 1)]
            .iter()
            .chain(other)
        {
            m.observe(e);
        }
        client(&m, 0)
    };
    assert_eq!(
        alone(&[]),
        alone(&[
            started(1, 0),
            wake(1),
            notify(1, 1),
            publish(1, &[("a", "a1"), ("b", "b1")]),
            ended(1, 0),
            Event::Approved {
                client: 1,
                tool: "a".into(),
                auth: AuthCtx(0),
            },
        ])
    );
}

/// The monitor counts the events it observed (the simulator reads new violations when
/// the count moves).
#[test]
fn the_monitor_counts_what_it_observed() {
    let mut m = Monitor::new();
    assert_eq!(m.observed(), 0);
    for e in [v1(), started(0, 0), ended(0, 0)] {
        m.observe(&e);
    }
    assert_eq!(m.observed(), 3);
}

/// auth_isolation learns the scopes of every committed version, however late: an item a later
/// version scoped to another context is foreign to a snapshot that caches it as public, even
/// when an earlier snapshot was judged before that version was committed.
#[test]
fn auth_isolation_knows_the_scopes_of_versions_committed_after_a_judged_snapshot() {
    let a = || Op::add(Kind::Tools, "a", "a1");
    let h = [
        commit(1, &[a()]),
        publish(0, &[("a", "a1")]),
        commit(2, &[a(), scoped("s", "s1", 1)]),
        publish(0, &[("a", "a1"), ("s", "s1")]),
    ];
    // (It matches no version its context sees, either: torn too.)
    assert!(violated(&h).contains(&Property::AuthIsolation));
    // Judged after both commits at once, the same.
    let late = [h[0].clone(), h[2].clone(), h[3].clone()];
    assert!(violated(&late).contains(&Property::AuthIsolation));
}

/// converges compares a snapshot at rest with the latest committed version even when that
/// version was committed after the snapshot was last matched (the monitor's memo of digests is
/// then behind): a list that stayed at v1 after v2 has not converged.
#[test]
fn a_snapshot_left_behind_by_a_later_commit_does_not_converge() {
    let mut h = listed_v1_then_v2();
    h.push(quiescent(0));
    assert!(
        violated(&h).contains(&Property::Converges),
        "{:?}",
        violated(&h)
    );
}

/// no_lost_wakeup credits a walk begun again only to the refresh of that list that is still
/// running: a restart naming a refresh of the list that already ended, or a refresh only
/// another list of the client has open, fetches nothing of this list as of now. The client
/// stays at v1 after v2 was committed and listed nothing since: its wakeup is lost.
#[test]
fn a_walk_begun_again_is_credited_only_to_its_own_running_refresh() {
    use crate::history::Restart;
    let restart = |kind, refresh| Event::WalkRestarted {
        client: 0,
        kind,
        refresh,
        reason: Restart::NotifiedMidWalk,
    };
    let prompts_started = Event::RefreshStarted {
        client: 0,
        kind: Kind::Prompts,
        auth: AuthCtx(0),
        refresh: 1,
    };
    let behind = |then: Vec<Event>| {
        let mut h = listed_v1_then_v2();
        h.extend(then);
        h.push(quiescent(0));
        violated(&h)
    };
    // The tool list's refresh 0 ended before v2: a restart naming it is no fetch of v2.
    assert!(behind(vec![restart(Kind::Tools, 0)]).contains(&Property::NoLostWakeup));
    // Refresh 1 is the prompt list's: a restart of the tool list naming it is no fetch either.
    assert!(
        behind(vec![prompts_started, restart(Kind::Tools, 1)]).contains(&Property::NoLostWakeup)
    );
    // The tool list's own refresh, started before v2 and begun again after it, does fetch v2
    // (converges alone is left to judge what it published); without the restart it did not.
    let h = [
        v1(),
        started(0, 0),
        publish(0, &[("a", "a1"), ("b", "b1")]),
        ended(0, 0),
        started(0, 1),
        v2(),
        restart(Kind::Tools, 1),
    ];
    let at_rest = |h: &[Event]| violated(&[h, &[quiescent(0)]].concat());
    assert!(!at_rest(&h).contains(&Property::NoLostWakeup));
    assert!(at_rest(&h[..6]).contains(&Property::NoLostWakeup));
}

/// no_spurious_notify gives the benefit of the doubt only past the contexts a server keeps per
/// session: a session that listed under exactly that many is still judged, and a notification
/// that changes nothing under any of them is spurious.
#[test]
fn a_session_at_the_servers_limit_of_contexts_is_still_judged() {
    use crate::server::MAX_SESSION_CONTEXTS;
    let a = Op::add(Kind::Tools, "a", "a1");
    let p = Op::add(Kind::Prompts, "p", "p1");
    let history = |contexts: usize| {
        let mut h = vec![commit(1, std::slice::from_ref(&a))];
        for auth in 0..contexts {
            h.push(serve(0, u8::try_from(auth).unwrap(), 1));
        }
        // v2 changes the prompts only: nothing of the tool list, under any context.
        h.extend([commit(2, &[a.clone(), p.clone()]), notify(0, 2)]);
        violated(&h)
    };
    assert_eq!(history(MAX_SESSION_CONTEXTS), [Property::NoSpuriousNotify]);
    // One context more than a server keeps: the history says too little, not judged.
    assert_eq!(history(MAX_SESSION_CONTEXTS + 1), []);
}
