//! Symmetry reduction's renumbering (`World::canonical`) in the states the symmetric
//! configurations reach: a renumbered client keeps its memoized hash, which must be the hash of
//! what it now is, and renumbering a canonical state changes nothing.

use listsync_core::shared::Shared;
use listsync_core::world::World;
use listsync_model::configs;
use listsync_model::graph::hash;
use std::collections::{HashSet, VecDeque};

/// `w` with every part rebuilt, so that every hash is computed afresh.
fn fresh(w: &World) -> World {
    let mut f = w.clone();
    f.nodes = w.nodes.iter().map(|n| Shared::new((**n).clone())).collect();
    f.clients = w
        .clients
        .iter()
        .map(|c| Shared::new((**c).clone()))
        .collect();
    f.links = w.links.iter().map(|l| Shared::new((**l).clone())).collect();
    f.monitor = Shared::new((*w.monitor).clone());
    f.truth.1 = Shared::new((*w.truth.1).clone());
    f
}

fn renumbering_keeps_hashes_true(name: &str, states: usize) {
    let c = configs::by_name(name).unwrap();
    let scn = &c.scenario;
    let mut seen = HashSet::new();
    let mut queue = VecDeque::from([World::new(scn)]);
    let mut renumbered = 0;
    while let Some(w) = queue.pop_front() {
        if seen.len() >= states || !seen.insert(hash(&w)) {
            continue;
        }
        let canonical = w.canonical();
        if canonical.clients != w.clients {
            renumbered += 1;
        }
        assert_eq!(hash(&canonical), hash(&fresh(&canonical)), "{name}");
        assert_eq!(hash(&canonical.canonical()), hash(&canonical), "{name}");
        let mut steps = Vec::new();
        w.enabled(scn, &mut steps);
        for s in steps {
            let mut next = w.clone();
            if next.apply(scn, &s, &mut ()).is_ok() {
                queue.push_back(next);
            }
        }
    }
    assert!(renumbered > 0, "{name}: no state was renumbered");
}

#[test]
fn renumbered_clients_hash_as_what_they_are() {
    renumbering_keeps_hashes_true("reference-multi-client", 20_000);
    renumbering_keeps_hashes_true("reference-large-pair", 20_000);
}
