//! Symmetry reduction is sound only if the world is symmetric: renumbering the clients of a
//! reachable state gives a reachable state, and a canonical representative
//! (`World::canonical`) stands for exactly one orbit (the state's renumberings). These tests
//! explore small worlds of interchangeable clients completely, without the reduction, and check
//! both, then check that a reduced search (one state per canonical representative, as
//! stateright's symmetric depth-first search does) reaches every orbit.
//!
//! Before the monitor left the wording of a violation out of its equality (the text names
//! clients), `notify-on-noop×2` had 50,980 of 129,914 states whose renumbering was unreachable,
//! and the reduced search reached 63,890 of 90,669 classes.

use listsync_core::history::ClientId;
use listsync_core::world::{Step, World};
use listsync_model::configs::{self, Config};
use listsync_model::reduction::twins;
use std::collections::{HashSet, VecDeque};

/// The soundness run's configuration `name` (`NAME×2` for a known-bad one with a twin client),
/// with `extra` more clients just like its first.
fn config(name: &str, extra: usize) -> Config {
    let (with, _) = twins(configs::all());
    let mut c = with
        .into_iter()
        .find(|c| c.name() == name)
        .unwrap_or_else(|| panic!("{name} is not a soundness-run configuration"));
    for _ in 0..extra {
        let first = c.scenario.clients[0].clone();
        c.scenario.clients.push(first);
    }
    c
}

/// Every reachable state.
fn reachable(c: &Config) -> HashSet<World> {
    let scn = &c.scenario;
    let start: World = World::new(scn);
    let mut seen = HashSet::from([start.clone()]);
    let mut queue = VecDeque::from([start]);
    let mut steps: Vec<Step> = Vec::new();
    while let Some(w) = queue.pop_front() {
        steps.clear();
        w.enabled(scn, &mut steps);
        for s in &steps {
            let mut next = w.clone();
            if next.apply(scn, s, &mut ()).is_ok() && seen.insert(next.clone()) {
                queue.push_back(next);
            }
        }
    }
    seen
}

/// The canonical representatives a reduced search reaches: from the start, each successor
/// expanded only if its representative is new.
fn reduced(c: &Config) -> HashSet<World> {
    let scn = &c.scenario;
    let start: World = World::new(scn);
    let mut reps = HashSet::from([start.canonical()]);
    let mut stack = vec![start];
    let mut steps: Vec<Step> = Vec::new();
    while let Some(w) = stack.pop() {
        steps.clear();
        w.enabled(scn, &mut steps);
        for s in &steps {
            let mut next = w.clone();
            if next.apply(scn, s, &mut ()).is_ok() && reps.insert(next.canonical()) {
                stack.push(next);
            }
        }
    }
    reps
}

/// Every permutation of `0..n` (n ≤ 3 here).
fn permutations(n: usize) -> Vec<Vec<ClientId>> {
    if n == 0 {
        return vec![Vec::new()];
    }
    let mut out = Vec::new();
    for p in permutations(n - 1) {
        for at in 0..=p.len() {
            let mut q = p.clone();
            q.insert(at, (n - 1) as ClientId);
            out.push(q);
        }
    }
    out
}

fn check(name: &str, extra: usize) {
    let c = config(name, extra);
    let all = reachable(&c);
    let perms = permutations(c.scenario.clients.len());
    let mut classes = HashSet::new();
    for w in &all {
        let canonical = w.canonical();
        for p in &perms {
            let renumbered = w.relabel(p);
            assert!(
                all.contains(&renumbered),
                "{name} (+{extra}): a reachable state renumbered by {p:?} is unreachable: the world is not symmetric"
            );
            assert!(
                renumbered.canonical() == canonical,
                "{name} (+{extra}): a state and its renumbering by {p:?} have different canonical representatives"
            );
        }
        classes.insert(canonical);
    }
    let reps = reduced(&c);
    assert_eq!(
        reps.len(),
        classes.len(),
        "{name} (+{extra}): the reduced search reaches {} of {} classes ({} states)",
        reps.len(),
        classes.len(),
        all.len()
    );
}

#[test]
fn a_known_bad_world_of_two_clients_is_symmetric_and_the_reduction_reaches_every_class() {
    for name in ["notify-on-noop×2", "offset-cursor×2", "lying-client×2"] {
        check(name, 0);
    }
}

#[test]
fn a_world_of_three_clients_is_symmetric_and_the_reduction_reaches_every_class() {
    check("clear-then-fetch×2", 1);
}
