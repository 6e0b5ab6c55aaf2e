//! listsync's deterministic simulator.
//!
//! The model checker proves the algorithm within small bounds; the simulator runs the shipped
//! state machines far beyond them — many clients, long random schedules, faults — on simulated
//! time, with every run reproduced exactly by its seed. A failing run is shrunk (proptest
//! shrinks its shape, then its steps are delta-debugged) and written as a trace in the model's
//! versioned format, which `Trace::check`, `listsync trace show` and the harness replay.
//!
//! - [`plan`]: named fault plans (`none`, `default`, `storm`, `crashy`, `lossy`);
//! - [`case`]: run shapes (a proptest strategy) and the scenarios built from them;
//! - [`engine`]: the machine-level scheduler over core's `World`;
//! - [`shrink`]: shrinking a failing run to a short trace;
//! - [`stack`]: the full-stack level — the runtime's tokio + rmcp code on a paused clock over a
//!   simulated network;
//! - [`campaign`]: many seeds on many threads, with statistics;
//! - [`summary`]: the JSON summary of a campaign, seed or scale run, and its expected-outcome rule;
//! - [`driver`]: what `listsync sim` runs, as one call;
//! - [`merge`]: the summaries of a campaign's shards merged into one (`listsync sim merge`).

pub mod campaign;
pub mod case;
pub mod driver;
pub mod engine;
pub mod merge;
pub mod plan;
pub mod shrink;
pub mod stack;
pub mod stats;
pub mod summary;

use case::{Params, Shape};
use engine::{Budget, Engine, RunOpts, RunResult};
use listsync_core::client::CatalogClient;
use listsync_core::machine::ClientMachine;
use listsync_core::scenario::Scenario;
use plan::FaultPlan;

/// Simulates client machine `C` (docs/library.md): every seed of `seeds` drawn with `params`
/// (e.g. [`Params::tools_only`]), on every core; the campaign's statistics and, per violated
/// property, its smallest failing seeds. A failing seed shrinks to a trace with
/// [`shrink::shrink_machine`].
///
/// ```ignore
/// let params = Params::tools_only(FaultPlan::default());
/// let seeds: Vec<u64> = (0..2000).collect();
/// let result = listsync_sim::check_client::<MyClient>(&params, &seeds);
/// assert!(result.failing.is_empty(), "{:?}", result.failing);
/// ```
pub fn check_client<C: ClientMachine>(params: &Params, seeds: &[u64]) -> campaign::CampaignResult {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    campaign::run_machine::<C>(params, seeds, threads, &|_| {})
}

/// One run's world and environment: a shape, the scenario built from it, and the fault counts
/// its schedule uses.
#[derive(Clone, Debug)]
pub struct Case {
    /// The knobs (and the seed).
    pub shape: Shape,
    /// The world.
    pub scenario: Scenario,
    /// Cut connections, crashes, slow messages.
    pub budget: Budget,
}

impl Case {
    /// The case of a shape.
    pub fn of(shape: Shape, params: &Params) -> Case {
        let mut scenario = case::scenario(&shape, params.strategies, &params.plan);
        if params.tools_only {
            for c in &mut scenario.clients {
                c.known.clear();
                c.ask_approval = false;
            }
            scenario.approvals.clear();
            scenario.aggregate = None;
        }
        Case {
            scenario,
            budget: Budget {
                disconnects: shape.disconnects,
                crashes: shape.crashes,
                breaks: if params.plan.silent_drops {
                    0
                } else {
                    shape.drops
                },
                slow: shape.slow,
                migrations: if shape.nodes > 1 { shape.migrations } else { 0 },
            },
            shape,
        }
    }

    /// The case seed `seed` draws.
    pub fn draw(seed: u64, params: &Params) -> Case {
        use proptest::strategy::ValueTree;
        Case::of(Shape::draw(seed, params).current(), params)
    }

    /// Runs it.
    pub fn run(&self, plan: &FaultPlan, opts: RunOpts) -> RunResult {
        self.run_machine::<CatalogClient>(plan, opts)
    }

    /// Runs it with the clients running machine `C`.
    pub fn run_machine<C: ClientMachine>(&self, plan: &FaultPlan, opts: RunOpts) -> RunResult {
        Engine::<C>::new(&self.scenario, plan, self.shape.seed, self.budget, opts).run()
    }

    /// Runs this case at the full-stack level: the runtime's code on a paused clock over the
    /// simulated network, its schedule and faults drawn from the case's seed.
    pub fn run_stack(&self, plan: &FaultPlan, opts: RunOpts) -> (RunResult, stack::StackReport) {
        let how = stack::StackRun::of(self, plan);
        // Each application of the stack level is one client: the combined listing of an
        // application with several servers is run at the machine level and in rt's tests
        // (rt/tests/many_servers.rs), so the stack level leaves it out.
        let scn = Scenario {
            aggregate: None,
            ..self.scenario.clone()
        };
        stack::run(&scn, plan, self.shape.seed, &how, opts)
    }
}
