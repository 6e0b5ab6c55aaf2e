//! The progress check: from every reachable state of a configuration, some quiescent state
//! stays reachable. `converges` is "quiescent ⇒ equal", so a livelock, an endless restart loop or
//! a server that never lets a walk finish would make it hold vacuously; this pass finds such a
//! state (docs/design.md, "Properties").
//!
//! It explores the configuration's whole graph breadth-first with the same [`ListModel`] the
//! checker runs (the shipped machines), keeps each state's fingerprint and its predecessors,
//! then walks the edges backwards from every quiescent state. A state not reached that way is
//! stuck; the shallowest one is reported with the steps that lead to it.

use crate::{ListModel, Search};
use listsync_core::world::World;
use serde::{Deserialize, Serialize};
use stateright::Model;
use std::collections::VecDeque;
use std::collections::hash_map::{Entry, HashMap};
use std::fmt::Display;
use std::hash::Hash;

/// The outcome of the progress pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// States explored (the same state space the checker explores).
    pub states: usize,
    /// Quiescent states among them.
    pub quiescent: usize,
    /// States from which no quiescent state is reachable.
    pub stuck: usize,
    /// Wall time of the pass (it is not part of the checker's time).
    pub seconds: f64,
    /// The steps to the shallowest stuck state, if any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stuck_path: Vec<String>,
}

impl Progress {
    /// Whether quiescence stays reachable from every state.
    pub fn holds(&self) -> bool {
        self.stuck == 0
    }
}

/// The explored graph: states by breadth-first id, with fingerprint, parent (itself for an
/// initial state) and whether quiescent, and every edge as (from, to).
#[derive(Default)]
struct Graph {
    ids: HashMap<u64, u32, Fingerprints>,
    prints: Vec<u64>,
    parent: Vec<u32>,
    edges: Vec<(u32, u32)>,
    quiescent: Vec<bool>,
}

impl Graph {
    /// The id of the state with fingerprint `f`, and whether it is new (then added, reached
    /// from `parent`).
    fn add(
        &mut self,
        f: u64,
        parent: Option<u32>,
        quiescent: impl FnOnce() -> bool,
    ) -> (u32, bool) {
        let next = self.prints.len() as u32;
        match self.ids.entry(f) {
            Entry::Occupied(e) => (*e.get(), false),
            Entry::Vacant(e) => {
                e.insert(next);
                self.prints.push(f);
                self.parent.push(parent.unwrap_or(next));
                self.quiescent.push(quiescent());
                (next, true)
            }
        }
    }

    /// The predecessors of every state, as one array of ids and each state's range in it.
    fn predecessors(&self) -> (Vec<u32>, Vec<u32>) {
        let n = self.prints.len();
        let mut start = vec![0u32; n + 1];
        for &(_, to) in &self.edges {
            start[to as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut preds = vec![0u32; self.edges.len()];
        for &(from, to) in &self.edges {
            preds[fill[to as usize] as usize] = from;
            fill[to as usize] += 1;
        }
        (preds, start)
    }
}

/// The hasher of fingerprints and of the fingerprint table: ahash with fixed seeds (the one
/// stateright fingerprints with), several times faster than the std SipHash on these states.
type Fingerprints = ahash::RandomState;

fn hash<S: Hash>(s: &S) -> u64 {
    ahash::RandomState::with_seeds(0x6c69_7374, 0x7379_6e63, 0x7072_6f67, 0x7265_7373).hash_one(s)
}

/// Runs the progress pass on a configuration's whole state space; with the symmetric search,
/// states are identified up to interchangeable clients, as the checker does (quiescence does
/// not depend on which client is which).
pub fn check(model: &ListModel, search: Search) -> Progress {
    match search {
        Search::Bfs => check_model(model, World::quiescent, hash::<World>),
        Search::DfsSymmetric => {
            check_model(model, World::quiescent, |w: &World| hash(&w.canonical()))
        }
    }
}

/// The progress pass on any model: `quiescent` marks the states to reach, `fingerprint`
/// identifies states.
pub fn check_model<M>(
    model: &M,
    quiescent: impl Fn(&M::State) -> bool,
    fingerprint: impl Fn(&M::State) -> u64,
) -> Progress
where
    M: Model,
    M::Action: Display + Clone,
{
    let start = std::time::Instant::now();
    let mut g = Graph::default();
    let mut queue: VecDeque<(u32, M::State)> = VecDeque::new();
    let mut actions = Vec::new();
    for w in model.init_states() {
        if let (id, true) = g.add(fingerprint(&w), None, || quiescent(&w)) {
            queue.push_back((id, w));
        }
    }
    while let Some((id, w)) = queue.pop_front() {
        actions.clear();
        model.actions(&w, &mut actions);
        for a in actions.drain(..) {
            let Some(next) = model.next_state(&w, a) else {
                continue;
            };
            let (to, new) = g.add(fingerprint(&next), Some(id), || quiescent(&next));
            if new {
                queue.push_back((to, next));
            }
            if to != id {
                g.edges.push((id, to));
            }
        }
    }
    let (preds, range) = g.predecessors();
    let Graph {
        prints,
        parent,
        quiescent,
        ..
    } = g;
    // Backwards from every quiescent state.
    let n = prints.len();
    let mut live = quiescent.clone();
    let mut back: VecDeque<u32> = (0..n as u32).filter(|i| quiescent[*i as usize]).collect();
    while let Some(i) = back.pop_front() {
        let i = i as usize;
        for &p in &preds[range[i] as usize..range[i + 1] as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                back.push_back(p);
            }
        }
    }
    let stuck = live.iter().filter(|l| !**l).count();
    // Ids are in breadth-first order: the first stuck id is a shallowest one.
    let stuck_path = match live.iter().position(|l| !*l) {
        None => Vec::new(),
        Some(first) => path_to(model, &fingerprint, first as u32, &parent, &prints),
    };
    Progress {
        states: n,
        quiescent: quiescent.iter().filter(|q| **q).count(),
        stuck,
        seconds: start.elapsed().as_secs_f64(),
        stuck_path,
    }
}

/// The steps from the initial state to state `target`, found by replaying the parent chain.
fn path_to<M>(
    model: &M,
    fingerprint: &impl Fn(&M::State) -> u64,
    target: u32,
    parent: &[u32],
    prints: &[u64],
) -> Vec<String>
where
    M: Model,
    M::Action: Display + Clone,
{
    let mut chain = vec![target];
    while parent[*chain.last().unwrap() as usize] != *chain.last().unwrap() {
        chain.push(parent[*chain.last().unwrap() as usize]);
    }
    chain.reverse();
    let Some(mut w) = model
        .init_states()
        .into_iter()
        .find(|w| fingerprint(w) == prints[chain[0] as usize])
    else {
        return Vec::new();
    };
    let mut steps = Vec::new();
    for want in &chain[1..] {
        let mut actions: Vec<M::Action> = Vec::new();
        model.actions(&w, &mut actions);
        let found = actions.into_iter().find_map(|a| {
            let next = model.next_state(&w, a.clone())?;
            (fingerprint(&next) == prints[*want as usize]).then_some((a, next))
        });
        match found {
            Some((a, next)) => {
                steps.push(a.to_string());
                w = next;
            }
            None => break,
        }
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A counter from 0: `inc` up to `top`, `reset` back to 0 from `top`; quiescent at `goal`.
    struct Counter {
        top: u8,
        goal: u8,
        trap: bool,
    }

    impl Model for Counter {
        type State = u8;
        type Action = u8;
        fn init_states(&self) -> Vec<u8> {
            vec![0]
        }
        fn actions(&self, s: &u8, out: &mut Vec<u8>) {
            if *s < self.top {
                out.push(s + 1);
            }
            if *s == self.top && !self.trap {
                out.push(0);
            }
            // With `trap`, state `top` loops on itself forever.
            if *s == self.top && self.trap {
                out.push(self.top);
            }
        }
        fn next_state(&self, _: &u8, a: u8) -> Option<u8> {
            Some(a)
        }
    }

    fn run(m: &Counter) -> Progress {
        check_model(m, |s| *s == m.goal, |s| u64::from(*s))
    }

    #[test]
    fn a_cycle_through_quiescence_holds() {
        let p = run(&Counter {
            top: 4,
            goal: 2,
            trap: false,
        });
        assert_eq!((p.states, p.quiescent, p.stuck), (5, 1, 0));
        assert!(p.holds());
    }

    #[test]
    fn a_livelock_past_quiescence_is_stuck_with_its_path() {
        let p = run(&Counter {
            top: 4,
            goal: 2,
            trap: true,
        });
        // 3 and 4 can never come back to 2.
        assert_eq!(p.stuck, 2);
        assert!(!p.holds());
        assert_eq!(p.stuck_path, ["1", "2", "3"]);
    }
}
