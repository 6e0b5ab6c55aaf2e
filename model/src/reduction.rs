//! The soundness runs of the checker's reduction: every configuration of a suite whose clients
//! are interchangeable (and every single-client known-bad one given a twin client), explored
//! depth-first twice, with symmetry reduction over its clients
//! ([`crate::symmetry`]) and without, side by side. A sound reduction gives the same verdict
//! for every property, reaches every situation the unreduced run reaches, keeps the progress
//! verdict, and each counterexample it finds replays through core's world as recorded
//! (`Trace::check`, what `listsync trace show` and `listsync replay` start from); only the state
//! counts (and a counterexample's length) may differ. `listsync check --reduction` runs it and
//! writes [`ReductionReport`] (`model-check-reduction.json`), which `listsync report` renders
//! as the "Reduction soundness" table of `reports/model-check.md`.

use crate::Search;
use crate::configs::Config;
use crate::suite::{self, SuiteReport};
use listsync_core::property::{Property, Verdict};
use listsync_core::scenario::Scenario;
use serde::{Deserialize, Serialize};

/// The file `listsync check --reduction` writes.
pub const FILE: &str = "model-check-reduction.json";

/// The document of one soundness run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReductionReport {
    /// The reduction judged.
    pub reduction: String,
    /// The configurations explored with it (depth-first, symmetry-reduced).
    pub with: SuiteReport,
    /// The same configurations without it (depth-first).
    pub without: SuiteReport,
    /// Every counterexample the reduced run found, replayed.
    pub replays: Vec<ReplayCheck>,
    /// Clients of each configuration (a class of states holds at most `clients!` of them).
    pub clients: std::collections::BTreeMap<String, usize>,
}

/// One counterexample of the reduced run, replayed through core's world.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ReplayCheck {
    /// Configuration.
    pub config: String,
    /// The property it shows.
    pub property: Property,
    /// Its steps.
    pub steps: usize,
    /// Why it did not replay to its violation (None: it did).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// One configuration's comparison.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Comparison {
    /// Configuration.
    pub config: String,
    /// Unique states with and without the reduction.
    pub states: (u64, u64),
    /// Properties whose verdicts differ.
    pub verdicts_differ: Vec<Property>,
    /// Situations the unreduced run reached and the reduced one did not.
    pub situations_lost: Vec<String>,
    /// Whether the progress verdicts agree.
    pub progress_agrees: bool,
    /// Counterexamples replayed (ok, total).
    pub replayed: (usize, usize),
    /// The most the reduction can divide the states by: the clients' renumberings (n!). More
    /// than that merges states that differ in more than their numbering.
    pub bound: u64,
}

impl Comparison {
    /// Whether the reduction was sound here.
    pub fn sound(&self) -> bool {
        self.verdicts_differ.is_empty()
            && self.within_bound()
            && self.situations_lost.is_empty()
            && self.progress_agrees
            && self.replayed.0 == self.replayed.1
    }
}

impl Comparison {
    /// Whether the states without the reduction are at most `bound` times those with it.
    pub fn within_bound(&self) -> bool {
        self.states.1 <= self.states.0.saturating_mul(self.bound)
    }
}

impl ReductionReport {
    /// Per configuration, what differs between the two runs.
    pub fn compare(&self) -> Vec<Comparison> {
        self.with
            .configs
            .iter()
            .zip(&self.without.configs)
            .map(|(w, o)| {
                let verdict =
                    |c: &suite::ConfigReport, p: &Property| c.properties.get(p).map(|r| r.verdict);
                let verdicts_differ = Property::ALL
                    .iter()
                    .filter(|p| verdict(w, p) != verdict(o, p))
                    .copied()
                    .collect();
                let situations_lost = o
                    .situations
                    .iter()
                    .filter(|(s, r)| {
                        r.states > 0 && w.situations.get(s).is_none_or(|x| x.states == 0)
                    })
                    .map(|(s, _)| s.to_string())
                    .collect();
                let mine: Vec<&ReplayCheck> =
                    self.replays.iter().filter(|r| r.config == w.name).collect();
                Comparison {
                    config: w.name.clone(),
                    states: (w.unique_states, o.unique_states),
                    verdicts_differ,
                    situations_lost,
                    progress_agrees: w.progress.holds() == o.progress.holds(),
                    replayed: (
                        mine.iter().filter(|r| r.error.is_none()).count(),
                        mine.len(),
                    ),
                    bound: (1..=self.clients.get(&w.name).copied().unwrap_or(1) as u64).product(),
                }
            })
            .collect()
    }
}

/// Whether a scenario's clients are interchangeable, so that symmetry reduction over them is
/// meaningful: two or more clients of one configuration, one server (no cluster, no combined
/// listing), and nothing scripted for one client in particular (auth changes, calls, approvals).
pub fn interchangeable(scn: &Scenario) -> bool {
    scn.clients.len() >= 2
        && scn.clients.windows(2).all(|w| w[0] == w[1])
        && scn.cluster.is_none()
        && scn.aggregate.is_none()
        && scn.auth_changes.is_empty()
        && scn.calls.is_empty()
        && scn.approvals.is_empty()
}

/// The configurations the soundness runs judge, twice (symmetry-reduced depth-first, and plain
/// depth-first): those of `suite` whose clients are interchangeable, and each known-bad one of
/// a single client given a second client just like it (named `NAME×2`), so that the reduction
/// is also judged where properties fail and counterexamples are found.
pub fn twins(suite: Vec<Config>) -> (Vec<Config>, Vec<Config>) {
    let doubled = suite
        .iter()
        .filter(|c| !c.violates.is_empty() && c.scenario.clients.len() == 1)
        .map(|c| {
            let mut c = c.clone();
            c.scenario.name = format!("{}×2", c.scenario.name);
            c.scenario.clients.push(c.scenario.clients[0].clone());
            c
        })
        .collect::<Vec<_>>();
    let with: Vec<Config> = suite
        .into_iter()
        .chain(doubled)
        .filter(|c| interchangeable(&c.scenario) && c.scenario.validate().is_ok())
        .map(|mut c| {
            c.search = Search::DfsSymmetric;
            c
        })
        .collect();
    let without = with
        .iter()
        .cloned()
        .map(|mut c| {
            c.search = Search::Dfs;
            c
        })
        .collect();
    (with, without)
}

/// Replays every counterexample of `run` (the reduced one) step by step through core's world,
/// which knows nothing of the reduction: each must still end with its property violated.
pub fn replays(run: &suite::SuiteRun) -> Vec<ReplayCheck> {
    let mut out = Vec::new();
    for (c, r) in run.configs.iter().zip(&run.results) {
        for x in &r.counterexamples {
            if r.verdicts.get(&x.property) != Some(&Verdict::Violated) {
                continue;
            }
            let error = match x.trace.replay() {
                Err(e) => Some(e.to_string()),
                Ok(r) if r.verdicts.get(&x.property) != Some(&Verdict::Violated) => Some(format!(
                    "replayed without the reduction, its steps leave {} holding",
                    x.property
                )),
                Ok(_) => None,
            };
            out.push(ReplayCheck {
                config: c.name().to_owned(),
                property: x.property,
                steps: x.trace.steps.len(),
                error,
            });
        }
    }
    out
}
