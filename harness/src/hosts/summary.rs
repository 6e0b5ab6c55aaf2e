//! The summary of one host's runs (`listsync host HOST --report DIR` writes
//! `DIR/hosts/NAME-VERSION.json`): per plan how often each property's verdict came. One typed
//! document shared by its writer (the host crate) and its renderer (the render crate's hosts
//! table in `reports/hosts.md`).

use serde::{Deserialize, Serialize};

/// Every plan run of one host version.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostSummary {
    /// The manifest's name (`pydantic-ai`).
    pub name: String,
    /// The version run (empty for a host built into listsync).
    pub version: String,
    /// The manifest's description.
    pub description: String,
    /// The protocol era of the server.
    pub era: String,
    /// The plans run, in the order run (a later report of the same plan replaces it).
    pub plans: Vec<PlanSummary>,
}

/// The runs of one plan.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanSummary {
    /// The plan's name.
    pub plan: String,
    /// How many runs.
    pub runs: usize,
    /// Shortest and longest run, seconds.
    pub seconds: (f64, f64),
    /// How the host ended, with how many runs ended so (`exit status: 0` ×5).
    pub host_exits: Vec<Count>,
    /// Model requests that were no model turn, over all runs.
    pub side_requests: usize,
    /// The host properties, in report order.
    pub host: Vec<VerdictCounts>,
    /// The audit's properties (the MCP side) that some run judged.
    pub audit: Vec<VerdictCounts>,
}

/// A value and how many runs gave it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    /// The value.
    pub value: String,
    /// In how many runs.
    pub runs: usize,
}

/// How often one property's verdicts came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictCounts {
    /// The property's name.
    pub property: String,
    /// Runs where it was violated.
    pub violated: usize,
    /// Runs where it held as observed.
    pub holds: usize,
    /// Runs where it was not observed.
    pub not_observed: usize,
    /// The first violation's detail (else the first run's).
    pub detail: String,
}

impl HostSummary {
    /// `name@version` (or the name alone).
    pub fn label(&self) -> String {
        if self.version.is_empty() {
            self.name.clone()
        } else {
            format!("{}@{}", self.name, self.version)
        }
    }

    /// Adds or replaces a plan's runs.
    pub fn put(&mut self, plan: PlanSummary) {
        match self.plans.iter_mut().find(|p| p.plan == plan.plan) {
            Some(p) => *p = plan,
            None => self.plans.push(plan),
        }
    }
}
