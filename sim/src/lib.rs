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
use listsync_core::scenario::Scenario;
use plan::FaultPlan;

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
        Case {
            scenario: case::scenario(&shape, params.strategies, &params.plan),
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
        Engine::new(&self.scenario, plan, self.shape.seed, self.budget, opts).run()
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
