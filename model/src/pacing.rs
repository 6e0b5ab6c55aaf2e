//! The storm check: a client's walks stay bounded against a server that never stops announcing
//! changes (docs/design.md, "Pacing").
//!
//! The world is [`storm`]: a server that answers every list request with the list *and* a
//! `list_changed` for it (`ServerConfig::notify_on_list`), one client, one real batch that may
//! land at any moment. The notification stream never ends, and request and refresh ids grow
//! with it, so the state space is infinite: [`check`] explores it breadth-first to a depth
//! bound. Along every path it counts the walks the client starts (refreshes started and walks
//! restarted) since time last passed — since a pacing timer with a non-zero delay fired, or a
//! retry or TTL timer. A client that walks whenever it is told to has no bound (the count grows
//! with the depth); a pacing client starts at most a few walks before it must wait, and each
//! wait is a storm delay that doubles up to `Pacing::storm_max_ms`. The model's clock stands
//! still, so the delays themselves are the machine's arithmetic ([`Pacing::storm_bound`]) and
//! rt's storm test, which counts a real client's requests on a paused clock.

use listsync_core::client::{ClientConfig, Limits, Pacing};
use listsync_core::history::Event;
use listsync_core::record::Log;
use listsync_core::scenario::{Faults, Scenario, Transport};
use listsync_core::server::ServerConfig;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{Era, Kind, Op};
use listsync_core::world::{Step, World};
use std::collections::HashMap;
use std::sync::Arc;

/// The storm world: a `notify_on_list` server over stdio with a two-page tools list, one client
/// pacing as `pacing`, one batch (an update) at any moment.
pub fn storm(pacing: Pacing) -> Scenario {
    let era = Era::V2025_11_25;
    let client = ClientConfig {
        limits: Limits {
            max_restarts: 3,
            max_retries: 2,
            ..Limits::default()
        },
        pacing,
        ..ClientConfig::tools(ClientStrategy::Reference, era)
    };
    Scenario {
        name: "notify-on-list".into(),
        era,
        transport: Transport::Stdio,
        server: ServerConfig {
            strategy: ServerStrategy::Reference,
            era,
            page_size: 1,
            ttl_ms: None,
            catalog_id: 1,
            retain_versions: 1,
            notify_on_list: true,
        },
        initial: vec![
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Tools, "b", "b1"),
        ],
        clients: vec![client],
        script: vec![vec![Op::update(Kind::Tools, "b", "b2")]],
        auth_changes: Vec::new(),
        calls: Vec::new(),
        approvals: Vec::new(),
        faults: Faults::default(),
        cluster: None,
        aggregate: None,
    }
}

/// What [`check`] found.
#[derive(Clone, Debug)]
pub struct StormResult {
    /// Distinct (state, count) pairs explored.
    pub states: usize,
    /// Depth explored to.
    pub depth: usize,
    /// Most walks started on one path since time last passed.
    pub max_walks: u32,
    /// A shortest path that reaches `max_walks`.
    pub path: Vec<Step>,
}

/// Whether `step` lets time pass for its client: a retry or TTL timer, or a pacing timer whose
/// delay is not 0 (the model's clock stands at 0, so a held walk's due time is its delay).
fn time_passes(w: &World, step: &Step) -> bool {
    match step {
        Step::Retry { .. } | Step::TtlExpire { .. } => true,
        Step::WalkDue { client, kind, auth } => w.clients[*client as usize]
            .held_walks()
            .any(|(k, a, due)| k == *kind && a == *auth && due > 0),
        _ => false,
    }
}

/// A node of the storm search: the state, the walks counted so far, and the parent index and
/// step that led here (none for the start).
type Node = (Arc<World>, u32, Option<(usize, Step)>);

/// Explores `scn` breadth-first to `depth` steps, counting along every path the walks client 0
/// starts since time last passed.
pub fn check(scn: &Scenario, depth: usize) -> StormResult {
    let start = World::new(scn);
    // (state, count) -> (parent index, step that led here)
    let mut seen: HashMap<(World, u32), usize> = HashMap::new();
    let mut nodes: Vec<Node> = Vec::new();
    seen.insert((start.clone(), 0), 0);
    nodes.push((Arc::new(start), 0, None));
    let mut frontier = vec![0usize];
    let mut best = 0usize;
    let mut steps = Vec::new();
    for _ in 0..depth {
        let mut next = Vec::new();
        for &i in &frontier {
            let (w, count) = (nodes[i].0.clone(), nodes[i].1);
            steps.clear();
            w.enabled(scn, &mut steps);
            for step in &steps {
                let mut n = (*w).clone();
                let mut log = Log::default();
                let passes = time_passes(&n, step);
                if n.apply(scn, step, &mut log).is_err() {
                    continue;
                }
                let walks = log
                    .events
                    .iter()
                    .filter(|e| {
                        matches!(
                            e,
                            Event::RefreshStarted { client: 0, .. }
                                | Event::WalkRestarted { client: 0, .. }
                        )
                    })
                    .count() as u32;
                let c = if passes { walks } else { count + walks };
                let key = (n, c);
                if seen.contains_key(&key) {
                    continue;
                }
                let idx = nodes.len();
                seen.insert(key.clone(), idx);
                nodes.push((Arc::new(key.0), c, Some((i, step.clone()))));
                if c > nodes[best].1 {
                    best = idx;
                }
                next.push(idx);
            }
        }
        if next.is_empty() {
            break;
        }
        frontier = next;
    }
    let mut path = Vec::new();
    let mut at = best;
    while let Some((parent, step)) = nodes[at].2.clone() {
        path.push(step);
        at = parent;
    }
    path.reverse();
    StormResult {
        states: nodes.len(),
        depth,
        max_walks: nodes[best].1,
        path,
    }
}
