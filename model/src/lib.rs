//! The stateright model of listsync.
//!
//! A [`ListModel`] is a [`Scenario`] seen as a stateright [`Model`]: its state is core's
//! [`World`] (the shipped server and client machines plus the links between them and the
//! property monitor), its actions are the world's [`Step`]s, and its properties are the
//! properties of docs/design.md, each an `always` (`converges` as `always(quiescent ⇒ equal)`).
//! Nothing protocol-related is declared here: the model only lets stateright choose which step
//! the environment takes next.
//!
//! [`configs`] names the configurations `listsync check` runs, each with its expected verdicts;
//! [`check`] runs one and reports states, depth, time and a counterexample trace per violated
//! property.

pub mod configs;
pub mod pacing;
pub mod suite;
pub mod symmetry;

use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::scenario::Scenario;
use listsync_core::trace::Trace;
use listsync_core::world::{Step, World};
use serde::{Deserialize, Serialize};
use stateright::{Checker, Model, Property as SrProperty};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU16, Ordering};
use std::time::{Duration, Instant};

/// A scenario as a stateright model.
#[derive(Clone, Debug)]
pub struct ListModel {
    /// The world being explored.
    pub scenario: Scenario,
    /// Keeps the first counterexample per property (see [`Latch`]).
    pub latch: Arc<Latch>,
}

impl ListModel {
    /// A model of `scenario` that reports every violating state (for the Explorer).
    pub fn new(scenario: Scenario) -> Self {
        ListModel {
            scenario,
            latch: Arc::new(Latch::default()),
        }
    }

    /// A model of `scenario` that reports only the first violating state per property.
    pub fn first_only(scenario: Scenario) -> Self {
        ListModel {
            scenario,
            latch: Arc::new(Latch {
                bits: AtomicU16::new(0),
                enabled: true,
            }),
        }
    }
}

/// Once a violation of a property has been reported, the model stops reporting it.
///
/// A violation stays recorded in the monitor of every later state, and stateright's checkers
/// overwrite an `always` discovery each time they visit another violating state, so without the
/// latch the counterexample kept is the *last* violating state visited — in breadth-first order,
/// one of the deepest. With it, the kept counterexample is the first found: in breadth-first
/// order, a shortest one.
#[derive(Debug, Default)]
pub struct Latch {
    bits: AtomicU16,
    enabled: bool,
}

impl Latch {
    /// Whether a violation of `p` in some state should be reported now.
    fn report(&self, p: Property) -> bool {
        if !self.enabled {
            return true;
        }
        let bit = 1u16 << p.index();
        self.bits.fetch_or(bit, Ordering::Relaxed) & bit == 0
    }
}

macro_rules! always {
    ($p:expr) => {
        SrProperty::always($p.as_str(), |m: &ListModel, s: &World| {
            s.holds($p) || !m.latch.report($p)
        })
    };
}

impl Model for ListModel {
    type State = World;
    type Action = Step;

    fn init_states(&self) -> Vec<World> {
        vec![World::new(&self.scenario)]
    }

    fn actions(&self, state: &World, actions: &mut Vec<Step>) {
        state.enabled(&self.scenario, actions);
    }

    fn next_state(&self, last: &World, action: Step) -> Option<World> {
        let mut next = last.clone();
        next.apply(&self.scenario, &action, &mut ()).ok()?;
        Some(next)
    }

    fn properties(&self) -> Vec<SrProperty<Self>> {
        vec![
            always!(Property::NoTornSnapshot),
            always!(Property::NoStaleOverwrite),
            always!(Property::Converges),
            always!(Property::NoLostWakeup),
            always!(Property::NotifyAfterCommit),
            always!(Property::NoCallToRemoved),
            always!(Property::BoundedRefresh),
            always!(Property::AuthIsolation),
            always!(Property::ListenThenList),
        ]
    }

    fn format_action(&self, action: &Step) -> String {
        action.to_string()
    }
}

/// How to explore a configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Search {
    /// Breadth-first: counterexamples are shortest.
    Bfs,
    /// Depth-first with symmetry reduction over interchangeable clients.
    DfsSymmetric,
}

/// The outcome of checking one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    /// Configuration name.
    pub name: String,
    /// Protocol era.
    pub era: String,
    /// Client and server strategies.
    pub strategies: Strategies,
    /// Search used.
    pub search: Search,
    /// Distinct states explored.
    pub unique_states: usize,
    /// States generated (with repeats).
    pub states: usize,
    /// Deepest path explored.
    pub max_depth: usize,
    /// Wall time.
    pub seconds: f64,
    /// Whether the whole state space was explored (no bound cut it short).
    pub exhaustive: bool,
    /// Verdict per property (n/a where it does not apply).
    pub verdicts: Verdicts,
    /// Per violated property: the counterexample's depth and trace.
    pub counterexamples: Vec<Counterexample>,
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Search::Bfs => "bfs",
            Search::DfsSymmetric => "dfs_symmetric",
        })
    }
}

/// Strategy names of a configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Strategies {
    /// Client strategy.
    pub client: String,
    /// Server strategy.
    pub server: String,
}

/// One counterexample.
#[derive(Clone, Debug, Serialize)]
pub struct Counterexample {
    /// Violated property.
    pub property: Property,
    /// Number of steps.
    pub depth: usize,
    /// The trace.
    #[serde(skip)]
    pub trace: Trace,
}

/// Explores `scenario` exhaustively and collects verdicts and counterexamples.
pub fn check(
    scenario: &Scenario,
    search: Search,
    threads: usize,
    progress: &mut dyn FnMut(usize, f64),
) -> CheckResult {
    let model = ListModel::first_only(scenario.clone());
    let start = Instant::now();
    let builder = model.checker().threads(threads.max(1));
    let checker: Box<dyn Checker<ListModel>> = match search {
        Search::Bfs => Box::new(builder.spawn_bfs()),
        Search::DfsSymmetric => Box::new(builder.symmetry_fn(symmetry::representative).spawn_dfs()),
    };
    // Poll often (the wall time of a small configuration is measured here), report at most
    // every 50 ms.
    let mut reported = Instant::now();
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(1));
        if reported.elapsed() >= Duration::from_millis(50) {
            progress(checker.unique_state_count(), start.elapsed().as_secs_f64());
            reported = Instant::now();
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    let mut verdicts = Verdicts::new();
    let mut counterexamples = Vec::new();
    for p in Property::ALL {
        let verdict = match checker.discovery(p.as_str()) {
            None => Verdict::Holds,
            Some(path) => {
                let steps: Vec<Step> = path.into_actions();
                let depth = steps.len();
                let trace = Trace::record("model", scenario.clone(), steps, Some(p))
                    .expect("a path the checker found replays");
                counterexamples.push(Counterexample {
                    property: p,
                    depth,
                    trace,
                });
                Verdict::Violated
            }
        };
        verdicts.insert(p, verdict);
    }
    CheckResult {
        name: scenario.name.clone(),
        era: scenario.era.to_string(),
        strategies: Strategies {
            client: scenario.client_strategy().to_string(),
            server: scenario.server_strategy().to_string(),
        },
        search,
        unique_states: checker.unique_state_count(),
        states: checker.state_count(),
        max_depth: checker.max_depth(),
        seconds,
        exhaustive: true,
        verdicts: scenario.mask(&verdicts),
        counterexamples,
    }
}
