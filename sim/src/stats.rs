//! Statistics over runs: work done, violations by property, refresh amplification (list walks
//! per committed change per client) and time to converge (simulated), mergeable across threads
//! in any order with the same result.

use crate::engine::RunResult;
use listsync_core::property::Property;
use listsync_core::situation::Situation;
use serde::Serialize;
use std::collections::BTreeMap;

/// Runs that violated one property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct PropertyCount {
    /// Runs that violated it.
    pub runs: u64,
    /// Smallest seed that violated it.
    pub first_seed: u64,
}

/// Accumulated statistics.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    /// Runs.
    pub runs: u64,
    /// Steps applied.
    pub steps: u64,
    /// History events.
    pub events: u64,
    /// Committed changes.
    pub commits: u64,
    /// Sum over runs of committed changes × clients.
    pub client_changes: u64,
    /// Walks started.
    pub walks: u64,
    /// Walks started at or after the first batch.
    pub walks_after_change: u64,
    /// Sum over runs of clients (runs with at least one commit).
    pub clients_changed: u64,
    /// Most walks one client started after the first batch, over all runs.
    pub max_client_walks: u32,
    /// Violations by property.
    pub violations: BTreeMap<Property, PropertyCount>,
    /// Runs that ended stuck, hit the step limit, or had a step refused (scheduler bugs).
    pub anomalies: u64,
    /// Seeds of those runs (the first few).
    pub anomaly_seeds: Vec<u64>,
    /// Simulated time, summed.
    pub sim_us: u64,
    /// Per client per run: last commit to its last publish (µs).
    pub converge: Vec<u64>,
    /// Per run: last commit to the end of the run (µs).
    pub settle: Vec<u64>,
    /// Runs that watched for situations.
    pub situation_runs: u64,
    /// Per situation, the runs that reached it.
    pub situations: BTreeMap<Situation, u64>,
}

/// Percentiles of a sample, in milliseconds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, serde::Deserialize)]
pub struct Percentiles {
    /// Samples.
    pub n: u64,
    /// Median.
    pub p50_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
}

/// Percentiles of microsecond samples (sorts them).
pub fn percentiles(samples: &mut [u64]) -> Percentiles {
    if samples.is_empty() {
        return Percentiles::default();
    }
    samples.sort_unstable();
    let at = |q: usize| samples[(samples.len() - 1) * q / 100] as f64 / 1000.0;
    Percentiles {
        n: samples.len() as u64,
        p50_ms: at(50),
        p99_ms: at(99),
        max_ms: samples[samples.len() - 1] as f64 / 1000.0,
    }
}

impl Stats {
    /// Adds one run.
    pub fn add(&mut self, seed: u64, o: &RunResult) {
        self.runs += 1;
        self.steps += o.steps;
        self.events += o.events;
        self.commits += u64::from(o.commits);
        self.client_changes += u64::from(o.commits) * u64::from(o.clients);
        self.walks += o.walks;
        self.walks_after_change += o.walks_after_change;
        if o.commits > 0 {
            self.clients_changed += u64::from(o.clients);
        }
        self.max_client_walks = self.max_client_walks.max(o.max_client_walks);
        for f in &o.found {
            let e = self.violations.entry(f.property).or_insert(PropertyCount {
                runs: 0,
                first_seed: seed,
            });
            e.runs += 1;
            e.first_seed = e.first_seed.min(seed);
        }
        if o.stuck.is_some() || o.aborted || o.refused > 0 {
            self.anomalies += 1;
            if self.anomaly_seeds.len() < 16 {
                self.anomaly_seeds.push(seed);
            }
        }
        self.sim_us += o.end_us;
        self.converge.extend_from_slice(&o.converge_us);
        self.settle.extend(o.settle_us);
        if let Some(reached) = &o.situations {
            self.situation_runs += 1;
            for s in reached {
                *self.situations.entry(*s).or_default() += 1;
            }
        }
    }

    /// Merges another accumulator (order does not matter).
    pub fn merge(&mut self, o: Stats) {
        self.runs += o.runs;
        self.steps += o.steps;
        self.events += o.events;
        self.commits += o.commits;
        self.client_changes += o.client_changes;
        self.walks += o.walks;
        self.walks_after_change += o.walks_after_change;
        self.clients_changed += o.clients_changed;
        self.max_client_walks = self.max_client_walks.max(o.max_client_walks);
        for (p, c) in o.violations {
            let e = self.violations.entry(p).or_insert(PropertyCount {
                runs: 0,
                first_seed: c.first_seed,
            });
            e.runs += c.runs;
            e.first_seed = e.first_seed.min(c.first_seed);
        }
        self.anomalies += o.anomalies;
        self.anomaly_seeds.extend(o.anomaly_seeds);
        self.anomaly_seeds.sort_unstable();
        self.anomaly_seeds.truncate(16);
        self.sim_us += o.sim_us;
        self.converge.extend(o.converge);
        self.settle.extend(o.settle);
        self.situation_runs += o.situation_runs;
        for (s, n) in o.situations {
            *self.situations.entry(s).or_default() += n;
        }
    }

    /// List walks per committed change per client (after the first batch).
    pub fn amplification(&self) -> f64 {
        if self.client_changes == 0 {
            0.0
        } else {
            self.walks_after_change as f64 / self.client_changes as f64
        }
    }

    /// Mean walks per client after the first batch (runs with a change).
    pub fn walks_per_client(&self) -> f64 {
        if self.clients_changed == 0 {
            0.0
        } else {
            self.walks_after_change as f64 / self.clients_changed as f64
        }
    }

    /// Runs that violated any property.
    pub fn violating_properties(&self) -> impl Iterator<Item = (&Property, &PropertyCount)> {
        self.violations.iter()
    }
}
