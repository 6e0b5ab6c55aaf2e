//! The progress check: from every reachable state of a configuration, some quiescent state
//! stays reachable. `converges` is "quiescent ⇒ equal", so a livelock, an endless restart loop or
//! a server that never lets a walk finish would make it hold vacuously; this pass finds such a
//! state (docs/design.md, "Properties").
//!
//! It judges the graph the checker explored, recorded as it went ([`crate::graph`]): each
//! state's fingerprint, whether it is quiescent, and every edge. It walks the edges backwards
//! from every quiescent state; a state not reached that way is stuck, and the shallowest one is
//! reported with the steps that lead to it. [`check_model`] explores a model itself first (any
//! model; the tests compare it with the recorded graph).

use crate::graph::Recorded;
use serde::{Deserialize, Serialize};
use stateright::Model;
use std::collections::HashMap;
use std::collections::VecDeque;
use std::fmt::Display;
use std::time::Instant;

/// The outcome of the progress pass.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Progress {
    /// States judged (the state space the checker explored).
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

/// Ids of fingerprints: ahash (fixed seeds), several times faster than SipHash here.
type Ids = HashMap<u64, u32, ahash::RandomState>;

/// One direction of the edges in compressed form: the neighbours of state `i` are
/// `list[start[i]..start[i + 1]]`.
struct Adjacency {
    list: Vec<u32>,
    start: Vec<u32>,
}

impl Adjacency {
    /// The edges `(from, to)` among `n` states, listed by `from`.
    fn of(n: usize, edges: impl Iterator<Item = (u32, u32)> + Clone) -> Self {
        let mut start = vec![0u32; n + 1];
        for (from, _) in edges.clone() {
            start[from as usize + 1] += 1;
        }
        for i in 0..n {
            start[i + 1] += start[i];
        }
        let mut fill = start.clone();
        let mut list = vec![0u32; start[n] as usize];
        for (from, to) in edges {
            list[fill[from as usize] as usize] = to;
            fill[from as usize] += 1;
        }
        Adjacency { list, start }
    }

    fn of_state(&self, i: usize) -> &[u32] {
        &self.list[self.start[i] as usize..self.start[i + 1] as usize]
    }
}

/// Judges a graph: `init` are the fingerprints of the initial states, `fingerprint` identifies a
/// state of `model` as the graph does (to replay the path to a stuck state). An edge to a state
/// that was never expanded counts that state as stuck (its successors are unknown).
pub fn judge<M>(
    model: &M,
    fingerprint: impl Fn(&M::State) -> u64,
    init: &[u64],
    graph: Recorded,
    started: Instant,
) -> Progress
where
    M: Model,
    M::Action: Display + Clone,
{
    let Recorded { states, edges } = graph;
    let mut ids = Ids::with_capacity_and_hasher(states.len(), ahash::RandomState::new());
    let mut prints = Vec::with_capacity(states.len());
    let mut quiescent = Vec::with_capacity(states.len());
    let mut id_of = |f: u64, q: bool, prints: &mut Vec<u64>, quiescent: &mut Vec<bool>| {
        let next = prints.len() as u32;
        *ids.entry(f).or_insert_with(|| {
            prints.push(f);
            quiescent.push(q);
            next
        })
    };
    for (f, q) in states {
        id_of(f, q, &mut prints, &mut quiescent);
    }
    let edges: Vec<(u32, u32)> = edges
        .into_iter()
        .map(|(from, to)| {
            (
                id_of(from, false, &mut prints, &mut quiescent),
                id_of(to, false, &mut prints, &mut quiescent),
            )
        })
        .collect();
    let roots: Vec<u32> = init
        .iter()
        .map(|f| id_of(*f, false, &mut prints, &mut quiescent))
        .collect();
    let n = prints.len();
    // Backwards from every quiescent state.
    let backward = Adjacency::of(n, edges.iter().map(|&(from, to)| (to, from)));
    let mut live = quiescent.clone();
    let mut queue: VecDeque<u32> = (0..n as u32).filter(|i| quiescent[*i as usize]).collect();
    while let Some(i) = queue.pop_front() {
        for &p in backward.of_state(i as usize) {
            if !live[p as usize] {
                live[p as usize] = true;
                queue.push_back(p);
            }
        }
    }
    drop(backward);
    let stuck = live.iter().filter(|l| !**l).count();
    let stuck_path = if stuck == 0 {
        Vec::new()
    } else {
        // Forwards from the initial states, breadth-first: the first stuck state met is a
        // shallowest one.
        let forward = Adjacency::of(n, edges.iter().copied());
        let mut parent: Vec<u32> = vec![u32::MAX; n];
        for r in &roots {
            parent[*r as usize] = *r;
        }
        let mut queue: VecDeque<u32> = roots.iter().copied().collect();
        let mut first = None;
        while let Some(i) = queue.pop_front() {
            if !live[i as usize] {
                first = Some(i);
                break;
            }
            for &s in forward.of_state(i as usize) {
                if parent[s as usize] == u32::MAX {
                    parent[s as usize] = i;
                    queue.push_back(s);
                }
            }
        }
        match first {
            Some(first) => path_to(model, &fingerprint, first, &parent, &prints),
            None => Vec::new(),
        }
    };
    Progress {
        states: n,
        quiescent: quiescent.iter().filter(|q| **q).count(),
        stuck,
        seconds: started.elapsed().as_secs_f64(),
        stuck_path,
    }
}

/// The progress pass on any model, exploring it breadth-first itself: `quiescent` marks the
/// states to reach, `fingerprint` identifies states.
pub fn check_model<M>(
    model: &M,
    quiescent: impl Fn(&M::State) -> bool,
    fingerprint: impl Fn(&M::State) -> u64,
) -> Progress
where
    M: Model,
    M::Action: Display + Clone,
{
    let started = Instant::now();
    let mut seen = std::collections::HashSet::new();
    let mut graph = Recorded::default();
    let mut queue: VecDeque<M::State> = VecDeque::new();
    let init: Vec<u64> = model.init_states().iter().map(&fingerprint).collect();
    for w in model.init_states() {
        if seen.insert(fingerprint(&w)) {
            queue.push_back(w);
        }
    }
    let mut actions = Vec::new();
    while let Some(w) = queue.pop_front() {
        let from = fingerprint(&w);
        graph.states.push((from, quiescent(&w)));
        model.actions(&w, &mut actions);
        for a in actions.drain(..) {
            let Some(next) = model.next_state(&w, a) else {
                continue;
            };
            let to = fingerprint(&next);
            if to != from {
                graph.edges.push((from, to));
            }
            if seen.insert(to) {
                queue.push_back(next);
            }
        }
    }
    judge(model, fingerprint, &init, graph, started)
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
