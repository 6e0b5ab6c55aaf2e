//! The state graph of a check, recorded while stateright's checker explores it, so that the
//! progress pass ([`crate::progress`]) judges the very graph the checker walked without
//! exploring it a second time.
//!
//! stateright expands a state by asking the model for its actions and then, on the same thread,
//! for the successor of each action. The [`GraphRecorder`] notes the state on the first call (its
//! fingerprint and whether it is quiescent) and an edge on each of the others. States are
//! identified by their own fingerprint, or with the symmetric search by that of their
//! canonical renumbering, as the checker identifies them. For random walks, which are never
//! exhaustive (no progress pass), it keeps only the set of distinct fingerprints, to count them.

use listsync_core::machine::ClientMachine;
use listsync_core::world::World;
use std::cell::{Cell, RefCell};
use std::collections::{HashMap, HashSet};
use std::hash::Hash;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// The fingerprint of a state in the recorded graph: ahash with fixed seeds (several times
/// faster than the std SipHash on these states, and the same in every run).
pub fn hash<S: Hash>(s: &S) -> u64 {
    ahash::RandomState::with_seeds(0x6c69_7374, 0x7379_6e63, 0x7072_6f67, 0x7265_7373).hash_one(s)
}

/// Locks the recording is spread over (by the fingerprint of the state being expanded), so that
/// the checker's threads rarely wait for one another.
const SHARDS: usize = 16;

thread_local! {
    /// The fingerprint of the state this thread is expanding.
    static EXPANDING: Cell<u64> = const { Cell::new(0) };
    /// (symmetric search) The graph identities of the successors this thread generated
    /// lately, by their own fingerprint: a depth-first checker mostly expands one of them next,
    /// which then need not be renumbered again.
    static RECENT: RefCell<HashMap<u64, u64, ahash::RandomState>> = RefCell::default();
}

/// Successors remembered in [`RECENT`] before it is emptied.
const RECENT_CAP: usize = 1 << 16;

/// Records the states a checker expands and the edges between them, or only which distinct
/// states it expanded.
#[derive(Debug)]
pub struct GraphRecorder {
    symmetric: bool,
    /// The graph is recorded (the progress pass needs it); otherwise only the distinct
    /// fingerprints, which is all that counting the distinct states of random walks needs: a
    /// walk passes the shallow states again and again, and a list of visits would grow with the
    /// visits (6·10⁷ in the deep suite) instead of with the states.
    keep_graph: bool,
    on: AtomicBool,
    shards: Vec<Mutex<Shard>>,
}

/// One lock's share of a recording.
#[derive(Debug, Default)]
struct Shard {
    graph: Recorded,
    distinct: HashSet<u64, ahash::RandomState>,
}

/// A recorded graph (or one shard of it): each expanded state's fingerprint and whether it is
/// quiescent, and each edge between two different states as a pair of fingerprints.
#[derive(Debug, Default)]
pub struct Recorded {
    /// Expanded states: (fingerprint, quiescent).
    pub states: Vec<(u64, bool)>,
    /// Edges: (from, to), self-loops left out.
    pub edges: Vec<(u64, u64)>,
}

impl GraphRecorder {
    /// A recorder identifying states by their fingerprint, or with `symmetric` by that of their
    /// canonical renumbering; recording the graph with `keep_graph`, else only the distinct
    /// states ([`GraphRecorder::distinct`]).
    pub fn new(symmetric: bool, keep_graph: bool) -> Self {
        GraphRecorder {
            symmetric,
            keep_graph,
            on: AtomicBool::new(true),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
        }
    }

    /// The identity of `w` in the graph.
    pub fn fingerprint<C: ClientMachine>(&self, w: &World<C>) -> u64 {
        if !self.symmetric {
            return hash(w);
        }
        let own = hash(w);
        RECENT
            .with_borrow(|r| r.get(&own).copied())
            .unwrap_or_else(|| hash(&w.canonical()))
    }

    fn shard(&self, from: u64) -> std::sync::MutexGuard<'_, Shard> {
        self.shards[from as usize % SHARDS]
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// The checker expands `w` on this thread: the edges recorded next on it start there.
    pub fn expanding<C: ClientMachine>(&self, w: &World<C>) {
        if !self.on.load(Ordering::Relaxed) {
            return;
        }
        let f = self.fingerprint(w);
        if !self.keep_graph {
            self.shard(f).distinct.insert(f);
            return;
        }
        EXPANDING.set(f);
        self.shard(f).graph.states.push((f, w.quiescent()));
    }

    /// The state being expanded on this thread has `next` as a successor.
    pub fn successor<C: ClientMachine>(&self, next: &World<C>) {
        if !self.keep_graph || !self.on.load(Ordering::Relaxed) {
            return;
        }
        let from = EXPANDING.get();
        let to = if self.symmetric {
            let own = hash(next);
            let to = hash(&crate::symmetry::canonical_remembered(next, own));
            RECENT.with_borrow_mut(|r| {
                if r.len() >= RECENT_CAP {
                    r.clear();
                }
                r.insert(own, to);
            });
            to
        } else {
            hash(next)
        };
        if from != to {
            self.shard(from).graph.edges.push((from, to));
        }
    }

    /// Stops recording (the checker is done; replaying a counterexample calls the model again)
    /// and hands over the graph (empty if only the distinct states were recorded).
    pub fn finish(&self) -> Recorded {
        self.on.store(false, Ordering::Relaxed);
        let mut all = Recorded::default();
        for s in &self.shards {
            let mut s = s.lock().unwrap_or_else(|e| e.into_inner());
            all.states.append(&mut s.graph.states);
            all.edges.append(&mut s.graph.edges);
        }
        all
    }

    /// Stops recording and counts the distinct states expanded (recorded without the graph).
    pub fn distinct(&self) -> usize {
        self.on.store(false, Ordering::Relaxed);
        self.shards
            .iter()
            .map(|s| s.lock().unwrap_or_else(|e| e.into_inner()).distinct.len())
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_start_at_the_state_expanded_on_the_same_thread() {
        let scn = crate::configs::by_name("reference").unwrap().scenario;
        let w = World::new(&scn);
        let r = GraphRecorder::new(false, true);
        r.expanding(&w);
        let mut steps = Vec::new();
        w.enabled(&scn, &mut steps);
        let mut next = w.clone();
        next.apply(&scn, &steps[0], &mut ()).unwrap();
        r.successor(&next);
        r.successor(&w); // a self-loop is left out
        let g = r.finish();
        assert_eq!(g.states, [(hash(&w), w.quiescent())]);
        assert_eq!(g.edges, [(hash(&w), hash(&next))]);
        // Finished: nothing more is recorded.
        r.expanding(&next);
        assert!(r.finish().states.is_empty());
    }

    #[test]
    fn without_the_graph_a_state_expanded_twice_counts_once() {
        let scn = crate::configs::by_name("reference").unwrap().scenario;
        let w = World::new(&scn);
        let mut steps = Vec::new();
        w.enabled(&scn, &mut steps);
        let mut next = w.clone();
        next.apply(&scn, &steps[0], &mut ()).unwrap();
        let r = GraphRecorder::new(false, false);
        for v in [&w, &next, &w, &w, &next] {
            r.expanding(v);
            r.successor(v);
        }
        assert_eq!(r.distinct(), 2);
        assert!(r.finish().states.is_empty() && r.finish().edges.is_empty());
    }
}
