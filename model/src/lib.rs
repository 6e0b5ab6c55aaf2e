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

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod at_size;
pub mod configs;
pub mod graph;
pub mod memory;
pub mod pacing;
pub mod progress;
pub mod reduction;
pub mod suite;
pub mod symmetry;

use graph::GraphRecorder;
use listsync_core::client::CatalogClient;
use listsync_core::machine::ClientMachine;
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::scenario::Scenario;
use listsync_core::situation::Situation;
use listsync_core::trace::Trace;
use listsync_core::world::{Step, World};
use serde::{Deserialize, Serialize};
use stateright::{Checker, Model, Property as SrProperty};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A scenario as a stateright model, its clients running machine `C`.
#[derive(Debug)]
pub struct ListModel<C = CatalogClient> {
    /// The world being explored.
    pub scenario: Scenario,
    /// Keeps the first counterexample per property (see [`Latch`]).
    pub latch: Arc<Latch>,
    /// Counts the states in each watched situation.
    pub situations: Arc<SituationCounts>,
    /// Records the explored graph for the progress pass, when set.
    pub graph: Option<Arc<GraphRecorder>>,
    /// Set when the exploration must stop (the memory limit was passed): no state is expanded
    /// any more, so the checker finishes with what it has.
    pub stop: Arc<AtomicBool>,
    machine: PhantomData<fn() -> C>,
}

impl<C> Clone for ListModel<C> {
    fn clone(&self) -> Self {
        ListModel {
            scenario: self.scenario.clone(),
            latch: self.latch.clone(),
            situations: self.situations.clone(),
            graph: self.graph.clone(),
            stop: self.stop.clone(),
            machine: PhantomData,
        }
    }
}

impl ListModel {
    /// A model of `scenario` that reports every violating state (for the Explorer).
    pub fn new(scenario: Scenario) -> Self {
        ListModel::of_machine(scenario)
    }

    /// A model of `scenario` that reports only the first violating state per property.
    pub fn first_only(scenario: Scenario) -> Self {
        ListModel::first_only_of_machine(scenario)
    }
}

impl<C: ClientMachine> ListModel<C> {
    /// A model of `scenario` whose clients run machine `C`, reporting every violating state.
    pub fn of_machine(scenario: Scenario) -> Self {
        ListModel {
            scenario,
            latch: Arc::new(Latch::default()),
            situations: Arc::new(SituationCounts::default()),
            graph: None,
            stop: Arc::new(AtomicBool::new(false)),
            machine: PhantomData,
        }
    }

    /// A model of `scenario` whose clients run machine `C`, reporting only the first violating
    /// state per property.
    pub fn first_only_of_machine(scenario: Scenario) -> Self {
        ListModel {
            latch: Arc::new(Latch {
                bits: AtomicU32::new(0),
                enabled: true,
            }),
            ..ListModel::of_machine(scenario)
        }
    }

    /// The same model, counting the states of each of `watched` (the other situations are not
    /// evaluated).
    pub fn watching(mut self, watched: &[Situation]) -> Self {
        self.situations = Arc::new(SituationCounts::of(watched));
        self
    }

    /// The same model, recording the graph a checker explores with `search` (states identified
    /// as that search identifies them; for random walks the states only, to count the distinct
    /// ones).
    pub fn recording(mut self, search: Search) -> Self {
        self.graph = Some(Arc::new(GraphRecorder::new(
            search == Search::DfsSymmetric,
            search != Search::Walks,
        )));
        self
    }
}

/// How many unique states of an exploration were in each watched situation.
#[derive(Debug, Default)]
pub struct SituationCounts {
    watched: u32,
    /// The situations already reported to the checker.
    reported: AtomicU32,
    states: [AtomicU64; Situation::ALL.len()],
}

impl SituationCounts {
    fn of(watched: &[Situation]) -> Self {
        SituationCounts {
            watched: watched.iter().fold(0, |m, s| m | 1 << s.index()),
            ..SituationCounts::default()
        }
    }

    /// Whether `s` is watched.
    pub fn watches(&self, s: Situation) -> bool {
        self.watched & (1 << s.index()) != 0
    }

    /// States found in `s` so far.
    pub fn states(&self, s: Situation) -> u64 {
        self.states[s.index()].load(Ordering::Relaxed)
    }

    /// Evaluates a watched situation on a state (stateright calls each property once per
    /// state it visits), counting the states it holds in; whether the checker should record
    /// this state as the situation's discovery: only the first found is.
    ///
    /// stateright records a `sometimes` discovery (the path to the state, cloned) each time the
    /// condition holds, overwriting the last one: reported every time, a situation would cost
    /// a path copy per state in it and keep the *last* state found, in breadth-first order
    /// one of the deepest. Reported once, the discovery is the first state found, in
    /// breadth-first order a shallowest one, and its depth is the depth the situation is
    /// first reached at.
    fn visit<C: ClientMachine>(&self, s: Situation, scn: &Scenario, w: &World<C>) -> bool {
        if !self.watches(s) || !s.holds(scn, w) {
            return false;
        }
        self.states[s.index()].fetch_add(1, Ordering::Relaxed);
        first_time(&self.reported, s.index())
    }
}

/// Sets bit `i` of `bits`; whether it was clear (this thread is the first to set it).
fn first_time(bits: &AtomicU32, i: usize) -> bool {
    let bit = 1u32 << i;
    bits.fetch_or(bit, Ordering::Relaxed) & bit == 0
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
    bits: AtomicU32,
    enabled: bool,
}

impl Latch {
    /// Whether a violation of `p` in some state should be reported now.
    fn report(&self, p: Property) -> bool {
        if !self.enabled {
            return true;
        }
        first_time(&self.bits, p.index())
    }
}

macro_rules! always {
    ($p:expr) => {
        (
            $p,
            SrProperty::always($p.as_str(), |m: &ListModel<C>, s: &World<C>| {
                s.holds($p) || !m.latch.report($p)
            }),
        )
    };
}

macro_rules! sometimes {
    ($s:expr) => {
        (
            $s,
            SrProperty::sometimes($s.as_str(), |m: &ListModel<C>, w: &World<C>| {
                m.situations.visit($s, &m.scenario, w)
            }),
        )
    };
}

impl<C: ClientMachine> Model for ListModel<C> {
    type State = World<C>;
    type Action = Step;

    fn init_states(&self) -> Vec<World<C>> {
        vec![World::start(&self.scenario)]
    }

    fn actions(&self, state: &World<C>, actions: &mut Vec<Step>) {
        if self.stop.load(Ordering::Relaxed) {
            return;
        }
        if let Some(g) = &self.graph {
            g.expanding(state);
        }
        state.enabled(&self.scenario, actions);
    }

    fn next_state(&self, last: &World<C>, action: Step) -> Option<World<C>> {
        let mut next = last.clone();
        next.apply(&self.scenario, &action, &mut ()).ok()?;
        if let Some(g) = &self.graph {
            g.successor(&next);
        }
        Some(next)
    }

    /// Every property of core that applies to the scenario, and a `sometimes` per watched
    /// situation. stateright looks each property it is given up in a map shared by its threads
    /// on every state it visits, so what cannot be reported is left out: inapplicable properties
    /// (their verdict is n/a whatever the states) and unwatched situations.
    fn properties(&self) -> Vec<SrProperty<Self>> {
        let properties = [
            always!(Property::NoTornSnapshot),
            always!(Property::NoStaleOverwrite),
            always!(Property::Converges),
            always!(Property::NoLostWakeup),
            always!(Property::NotifyAfterCommit),
            always!(Property::NoCallToRemoved),
            always!(Property::BoundedRefresh),
            always!(Property::AuthIsolation),
            always!(Property::ListenThenList),
            always!(Property::NoSpuriousNotify),
            always!(Property::ErrorsNotChanges),
            always!(Property::ConsumersAgree),
            always!(Property::ApprovalNotInherited),
            always!(Property::NoStaleArguments),
            always!(Property::NoNameCollision),
        ];
        let mut all: Vec<SrProperty<Self>> = properties
            .into_iter()
            .filter(|(p, _)| self.scenario.applicable(*p))
            .map(|(_, sr)| sr)
            .collect();
        let situations = [
            sometimes!(Situation::NotifyDuringRefresh),
            sometimes!(Situation::NotifyMidWalk),
            sometimes!(Situation::BurstDuringRefresh),
            sometimes!(Situation::ResponseOvertakesResponse),
            sometimes!(Situation::CallInFlightDuringRemoval),
            sometimes!(Situation::CursorRefusedAfterChange),
            sometimes!(Situation::AuthSwitchDuringRefresh),
            sometimes!(Situation::NodeBehindStore),
            sometimes!(Situation::ChangeWhileAckInFlight),
            sometimes!(Situation::TtlExpiryRefetch),
            sometimes!(Situation::ContentUpdateInFlight),
            sometimes!(Situation::DuplicateNotificationInFlight),
            sometimes!(Situation::CutWithChangePending),
            sometimes!(Situation::CallRefusedAsGone),
            sometimes!(Situation::CallFailedOtherwise),
            sometimes!(Situation::RetryArmed),
            sometimes!(Situation::ApprovedDefinitionChanged),
            sometimes!(Situation::CallWaitsForSettle),
            sometimes!(Situation::CallInFlightDuringSchemaChange),
            sometimes!(Situation::OneNameTwoServers),
        ];
        all.extend(
            situations
                .into_iter()
                .filter(|(s, _)| self.situations.watches(*s))
                .map(|(_, p)| p),
        );
        all
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
    /// Depth-first: memory grows with the depth and the branching instead of the breadth-first
    /// frontier, so worlds too wide to hold a frontier of (the deep suite's) can be explored;
    /// counterexamples need not be shortest.
    Dfs,
    /// Random walks (stateright's simulation checker, uniform choice, seeded with
    /// [`WALK_SEED`]): each walk runs from the initial state until no step is enabled or a state
    /// repeats on it, then the next begins, until the bound (`--max-states`, else
    /// [`WALK_STATES`]). A bounded depth-first search stays in the subtree of its first choices
    /// (a one-shot step such as a client's call, taken before the client has listed, is spent for
    /// the whole run); walks spread over the whole world instead, at no depth exhaustively. States
    /// are counted as visited (repeats included) and as distinct fingerprints.
    Walks,
}

/// The seed of the first walk of [`Search::Walks`] (stateright derives the others from it; with
/// more than one thread, which walks run depends on the threads' timing).
pub const WALK_SEED: u64 = 0x6c69_7374_7379_6e63;

/// States [`Search::Walks`] visits when no bound is given: walks never end by themselves.
pub const WALK_STATES: usize = 40_000_000;

/// The outcome of checking one configuration.
#[derive(Clone, Debug, Serialize)]
pub struct CheckResult {
    /// Configuration name.
    pub name: String,
    /// Protocol era.
    pub era: String,
    /// Client and server strategies.
    pub strategies: StrategyNames,
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
    /// What cut it short, when not the state bound: the memory limit.
    pub stopped: Option<String>,
    /// Verdict per property (n/a where it does not apply).
    pub verdicts: Verdicts,
    /// Per violated property: the counterexample's depth and trace.
    pub counterexamples: Vec<Counterexample>,
    /// Per watched situation: how many unique states were in it and the depth of the first
    /// (breadth-first: a shallowest) one; zero states means unreached.
    pub situations: Vec<SituationReach>,
    /// Whether quiescence stays reachable from every state ([`progress`]); not judged (all
    /// zero) when the exploration was bounded.
    pub progress: progress::Progress,
}

/// How a watched situation was reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SituationReach {
    /// The situation.
    pub situation: Situation,
    /// Unique states in it (random walks: visits to it, repeats included).
    pub states: u64,
    /// Steps to the first state found in it (a shallowest, in breadth-first search).
    pub depth: Option<usize>,
}

impl fmt::Display for Search {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Search::Bfs => "bfs",
            Search::DfsSymmetric => "dfs_symmetric",
            Search::Dfs => "dfs",
            Search::Walks => "walks",
        })
    }
}

/// Strategy names of a configuration.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct StrategyNames {
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

impl CheckResult {
    /// The properties the exploration found violated.
    pub fn violated(&self) -> Vec<Property> {
        Property::ALL
            .into_iter()
            .filter(|p| self.verdicts.get(p) == Some(&Verdict::Violated))
            .collect()
    }

    /// The watched situations the exploration never reached.
    pub fn unreached(&self) -> Vec<Situation> {
        self.situations
            .iter()
            .filter(|s| s.states == 0)
            .map(|s| s.situation)
            .collect()
    }

    /// The counterexample of `p`, if the exploration found `p` violated.
    pub fn counterexample(&self, p: Property) -> Option<&Counterexample> {
        self.counterexamples.iter().find(|c| c.property == p)
    }

    /// Panics, naming each violated property with its counterexample's steps, unless every
    /// applicable property held; also unless the whole state space was explored. The
    /// `assert_properties` of a `cargo test` (docs/library.md).
    #[track_caller]
    pub fn assert_holds(&self) {
        let mut why = String::new();
        if !self.exhaustive {
            why.push_str("the exploration was cut short by its bound: nothing was shown\n");
        }
        for c in &self.counterexamples {
            why.push_str(&format!(
                "{} violated in {} steps{}:\n",
                c.property,
                c.depth,
                c.trace
                    .detail
                    .as_deref()
                    .map(|d| format!(" ({d})"))
                    .unwrap_or_default()
            ));
            for (i, step) in c.trace.steps.iter().enumerate() {
                why.push_str(&format!("  {i:>3} {step}\n"));
            }
        }
        assert!(why.is_empty(), "{}: {why}", self.name);
    }
}

/// Checks client machine `C` in `scenario`: the whole state space, breadth-first (each
/// counterexample a shortest), on every core; the verdict of every property, and a trace per
/// violated one. The one call a crate that writes its own refresh algorithm needs
/// (docs/library.md):
///
/// ```ignore
/// let result = listsync_model::check_client::<MyClient>(&scenario);
/// result.assert_holds();
/// ```
pub fn check_client<C: ClientMachine>(scenario: &Scenario) -> CheckResult {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    check_machine::<C>(scenario, Search::Bfs, &[], threads, None, &mut |_, _| {})
}

/// [`check_client`] in one of listsync's named configurations ([`configs::list_refresh`],
/// [`configs::by_name`]), explored the way `listsync check` explores it (its search, with
/// symmetry reduction where its clients are interchangeable) and counting the situations it
/// must reach. A situation the exploration does not reach leaves a verdict unsupported: see
/// [`CheckResult::unreached`].
pub fn check_client_in<C: ClientMachine>(config: &configs::Config) -> CheckResult {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    check_machine::<C>(
        &config.scenario,
        config.search,
        config.situations,
        threads,
        None,
        &mut |_, _| {},
    )
}

/// Runs stateright's checker on `model` with `threads` threads until it is done (or, with
/// `max_states`, until it has generated that many states); returns it with its wall time.
fn run_checker<C: ClientMachine>(
    model: ListModel<C>,
    search: Search,
    threads: usize,
    max_states: Option<usize>,
    progress: &mut dyn FnMut(usize, f64),
) -> (Box<dyn Checker<ListModel<C>>>, f64) {
    let start = Instant::now();
    let stop = model.stop.clone();
    let mut builder = model.checker().threads(threads);
    if let Some(n) = max_states {
        builder = builder.target_state_count(n);
    }
    let mut checker: Box<dyn Checker<ListModel<C>>> = match search {
        Search::Bfs => Box::new(builder.spawn_bfs()),
        Search::DfsSymmetric => Box::new(builder.symmetry_fn(symmetry::representative).spawn_dfs()),
        Search::Dfs => Box::new(builder.spawn_dfs()),
        Search::Walks => Box::new(builder.spawn_simulation(WALK_SEED, stateright::UniformChooser)),
    };
    // Poll often (the wall time of a small configuration is measured here), report at most
    // every 50 ms.
    let mut reported = Instant::now();
    while !checker.is_done() {
        std::thread::sleep(Duration::from_millis(1));
        if reported.elapsed() >= Duration::from_millis(50) {
            progress(checker.unique_state_count(), start.elapsed().as_secs_f64());
            reported = Instant::now();
            if let (Some(limit), Some(now)) = (memory::limit(), memory::current_bytes())
                && now > limit
            {
                stop.store(true, Ordering::Relaxed);
            }
        }
    }
    // Its threads finish what they hold (nothing, once stopped) before anyone reads it.
    for h in checker.handles() {
        let _ = h.join();
    }
    (checker, start.elapsed().as_secs_f64())
}

/// Explores `scenario` exhaustively and collects verdicts, counterexamples and how each of
/// the `situations` was reached.
pub fn check(
    scenario: &Scenario,
    search: Search,
    situations: &[Situation],
    threads: usize,
    progress: &mut dyn FnMut(usize, f64),
) -> CheckResult {
    check_bounded(scenario, search, situations, threads, None, progress)
}

/// [`check`], stopped once the checker has generated `max_states` states (repeats included:
/// stateright's target state count), if it has not finished before. A bounded exploration
/// that stopped early is not exhaustive ([`CheckResult::exhaustive`]): a violation it found is
/// real, "holds" only means none was found among the states explored, and the progress pass
/// is not run (an unexpanded state would look stuck). The graph is recorded either way, since
/// the exploration may finish before the bound.
pub fn check_bounded(
    scenario: &Scenario,
    search: Search,
    situations: &[Situation],
    threads: usize,
    max_states: Option<usize>,
    progress: &mut dyn FnMut(usize, f64),
) -> CheckResult {
    check_machine::<CatalogClient>(scenario, search, situations, threads, max_states, progress)
}

/// [`check_bounded`] with the clients running machine `C` (listsync's own, [`CatalogClient`],
/// or one written outside listsync: docs/library.md). A counterexample's trace names a machine
/// of another crate and holds its clients' tapes ([`listsync_core::tape`]), so that `listsync
/// trace show` and `listsync replay` can use it where `C` is not compiled in.
pub fn check_machine<C: ClientMachine>(
    scenario: &Scenario,
    search: Search,
    situations: &[Situation],
    threads: usize,
    max_states: Option<usize>,
    progress: &mut dyn FnMut(usize, f64),
) -> CheckResult {
    let model = ListModel::<C>::first_only_of_machine(scenario.clone())
        .watching(situations)
        .recording(search);
    let counts = model.situations.clone();
    let walks = search == Search::Walks;
    let max_states = max_states.or(walks.then_some(WALK_STATES));
    let (checker, seconds) =
        run_checker(model.clone(), search, threads.max(1), max_states, progress);
    // The checker is done: expanding states again lets it rebuild its counterexamples' paths
    // (it replays `actions` from the initial state).
    let stopped = model.stop.swap(false, Ordering::Relaxed);
    let exhaustive = !walks && !stopped && max_states.is_none_or(|n| checker.state_count() < n);
    // Walks visit a state as often as they pass it: the distinct ones are counted by the
    // recorder (each visit is recorded when the walk expands it, each state once).
    let distinct = model
        .graph
        .as_ref()
        .filter(|_| walks)
        .map(|graph| graph.distinct());
    // The progress pass judges the graph the checker recorded, if it is the whole graph.
    let quiescence = match model.graph.as_ref().filter(|_| exhaustive) {
        Some(graph) => {
            let started = Instant::now();
            let init: Vec<u64> = model
                .init_states()
                .iter()
                .map(|w| graph.fingerprint(w))
                .collect();
            progress::judge(
                &model,
                |w| graph.fingerprint(w),
                &init,
                graph.finish(),
                started,
            )
        }
        None => progress::Progress::default(),
    };
    let mut verdicts = Verdicts::new();
    let mut counterexamples = Vec::new();
    for p in Property::ALL {
        let verdict = match checker.discovery(p.as_str()) {
            None => Verdict::Holds,
            Some(path) => {
                let steps: Vec<Step> = path.into_actions();
                let depth = steps.len();
                let trace = Trace::record_with::<C>("model", scenario.clone(), steps, Some(p))
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
    let situations = situations
        .iter()
        .map(|s| SituationReach {
            situation: *s,
            states: counts.states(*s),
            depth: checker
                .discovery(s.as_str())
                .map(|p| p.into_actions().len()),
        })
        .collect();
    CheckResult {
        situations,
        progress: quiescence,
        name: scenario.name.clone(),
        era: scenario.era.to_string(),
        strategies: StrategyNames {
            client: scenario.client_strategy().to_string(),
            server: scenario.server_strategy().to_string(),
        },
        search,
        unique_states: distinct.unwrap_or_else(|| checker.unique_state_count()),
        states: checker.state_count(),
        max_depth: checker.max_depth(),
        seconds,
        exhaustive,
        stopped: stopped.then(|| {
            format!(
                "the memory limit ({} MiB of resident memory)",
                memory::limit().unwrap_or_default() >> 20
            )
        }),
        verdicts: scenario.mask(&verdicts),
        counterexamples,
    }
}
