//! The simulator's document: one [`Summary`] per campaign, single seed or scale run — what
//! `listsync sim --json` prints and `--report FILE` writes, and what `listsync report` renders
//! into `reports/sim.md` (one typed schema for both) — with the rule that decides whether a run
//! came out as expected, and its terminal rendering.

use crate::plan::FaultPlan;
use crate::stack::net::NetCounts;
use crate::stats::{Percentiles, Stats, percentiles};
use listsync_core::property::Property;
use listsync_core::situation::Situation;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Simulation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// core's machines on simulated time and network (no tokio).
    Machine,
    /// The runtime's tokio + rmcp code over a simulated transport and clock.
    Stack,
}

impl Level {
    /// `machine` or `stack`.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Machine => "machine",
            Level::Stack => "stack",
        }
    }
}

/// What a summary covers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Many seeds.
    Campaign,
    /// One seed.
    Seed,
    /// One scale run (a burst over many clients).
    Scale,
}

/// One violated property's line.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PropertySummary {
    /// Runs that violated it.
    pub runs: u64,
    /// The smallest seed that did.
    pub first_seed: u64,
    /// (machine level) The first failing seed shrunk to a trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceSummary>,
    /// (stack level) The recorded history and network log of the first failing seed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history: Option<String>,
}

/// What the simulated network did at the stack level (one run, or a campaign's totals).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct NetSummary {
    /// Lines delivered.
    pub lines_delivered: u64,
    /// Notifications delivered twice.
    pub notifications_duplicated: u32,
    /// Notifications lost.
    pub notifications_lost: u32,
    /// Notification streams broken.
    pub streams_broken: u32,
    /// List requests answered with an error.
    pub list_requests_failed: u32,
    /// List requests never answered.
    pub list_requests_unanswered: u32,
    /// Tool calls answered with an internal error by the network.
    #[serde(default)]
    pub tool_calls_failed: u32,
    /// Connections cut.
    pub connections_cut: u32,
    /// Connections opened.
    pub connections_opened: u32,
    /// Connections refused.
    pub connections_refused: u32,
}

impl NetSummary {
    /// The network's counts.
    pub fn of(n: &NetCounts) -> NetSummary {
        NetSummary {
            lines_delivered: n.delivered,
            notifications_duplicated: n.duplicated,
            notifications_lost: n.lost,
            streams_broken: n.broken,
            list_requests_failed: n.failed,
            list_requests_unanswered: n.swallowed,
            tool_calls_failed: n.calls_failed,
            connections_cut: n.cut,
            connections_opened: n.opened,
            connections_refused: n.refused,
        }
    }

    /// Adds another's counts (shards of one campaign).
    pub fn add(&mut self, o: &NetSummary) {
        self.lines_delivered += o.lines_delivered;
        self.notifications_duplicated += o.notifications_duplicated;
        self.notifications_lost += o.notifications_lost;
        self.streams_broken += o.streams_broken;
        self.list_requests_failed += o.list_requests_failed;
        self.list_requests_unanswered += o.list_requests_unanswered;
        self.tool_calls_failed += o.tool_calls_failed;
        self.connections_cut += o.connections_cut;
        self.connections_opened += o.connections_opened;
        self.connections_refused += o.connections_refused;
    }
}

/// A shrunk trace.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct TraceSummary {
    /// Where it was written.
    pub file: String,
    /// The seed it was shrunk from.
    pub seed: u64,
    /// Steps before shrinking.
    pub original_steps: usize,
    /// Steps after.
    pub steps: usize,
    /// Clients in its scenario.
    pub clients: usize,
    /// Whether it replays in the model with the same verdict.
    pub replays_in_model: bool,
    /// Whether the harness can replay it against the runtime (`listsync replay FILE
    /// --against reference@trace`).
    pub replays_in_harness: bool,
    /// Why it cannot, if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_unsupported: Option<String>,
}

/// The document of one campaign, seed or scale run.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Summary {
    /// The tool that wrote it.
    pub tool: String,
    /// Machine or stack.
    pub level: Level,
    /// Campaign, seed or scale.
    pub mode: Mode,
    /// Strategy label (`reference`, or the known-bad strategy's name).
    pub strategy: String,
    /// Every client's strategy.
    pub client_strategy: ClientStrategy,
    /// The server's strategy.
    pub server_strategy: ServerStrategy,
    /// Fault plan name.
    pub faults: String,
    /// What the fault plan does.
    pub faults_about: String,
    /// First seed.
    pub first_seed: u64,
    /// Seeds in the campaign (before sharding).
    pub seeds: u64,
    /// `K/M`.
    pub shard: String,
    /// Clients per run (a number, or a range drawn per run).
    pub clients: String,
    /// Server nodes (a number, or a range).
    pub nodes: String,
    /// (scale runs) Mutations in the burst.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
    /// (scale runs) Batches the burst's mutations were applied in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst_batches: Option<usize>,
    /// Worker threads.
    pub threads: usize,
    /// Runs done.
    pub runs: u64,
    /// Steps applied.
    pub steps: u64,
    /// History events observed.
    pub events: u64,
    /// Wall time.
    pub wall_seconds: f64,
    /// Events per second of wall time.
    pub events_per_second: f64,
    /// Steps per second of wall time.
    pub steps_per_second: f64,
    /// Runs per second of wall time.
    pub seeds_per_second: f64,
    /// Simulated time over all runs.
    pub simulated_seconds: f64,
    /// Violated properties.
    pub violations: BTreeMap<Property, PropertySummary>,
    /// List walks per committed change per client.
    pub refresh_amplification: f64,
    /// Walks per client after the first change, mean.
    pub walks_per_client_mean: f64,
    /// Walks per client after the first change, most.
    pub walks_per_client_max: u32,
    /// Simulated time from the last commit to each client's last publish.
    pub converge: Percentiles,
    /// Simulated time from the last commit to the end of a run.
    pub settle: Percentiles,
    /// Runs the simulator itself could not finish (stuck, step limit, refused step).
    pub anomalies: u64,
    /// Their seeds.
    pub anomaly_seeds: Vec<u64>,
    /// (scale runs) Peak resident memory of the process.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_rss_mib: Option<f64>,
    /// (scale runs) Most list walks a client may start after the burst: one for the burst's
    /// first notification, one more for all that arrived meanwhile (coalescing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub walk_bound: Option<u32>,
    /// Runs that watched for situations: at the machine level, runs of at most 16 clients; at
    /// the stack level, every run (as its network sees them, `sim::stack::seen`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub situation_runs: u64,
    /// Per situation (`core::situation`), how many of those runs reached it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub situations: BTreeMap<Situation, u64>,
    /// (stack level) What the simulated network did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<NetSummary>,
    /// What was expected: `no violation` or `<property> violated`.
    pub expected: String,
    /// Whether it came out that way.
    pub as_expected: bool,
    /// (shards, `--shard K/M`) What `listsync sim merge` needs besides the fields above to
    /// merge the shards into the summary one run of every seed would have written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub totals: Option<Totals>,
}

/// A shard's counts behind the summary's ratios and percentiles, and its smallest failing
/// seeds: with them, shards merge into exactly the summary of one run (`crate::merge`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
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
    /// Simulated time over all runs, µs.
    pub simulated_us: u64,
    /// Every client's time to converge (µs) as (value, how many), ascending.
    pub converge_us: Vec<(u64, u64)>,
    /// Every run's time to settle (µs) as (value, how many), ascending.
    pub settle_us: Vec<(u64, u64)>,
    /// The smallest failing seeds of each violated property (up to 8).
    pub failing: BTreeMap<Property, Vec<u64>>,
}

/// Samples as (value, how many), ascending.
fn histogram(samples: &[u64]) -> Vec<(u64, u64)> {
    let mut sorted = samples.to_vec();
    sorted.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for v in sorted {
        match out.last_mut() {
            Some((last, n)) if *last == v => *n += 1,
            _ => out.push((v, 1)),
        }
    }
    out
}

/// The samples of a histogram, ascending.
fn samples(h: &[(u64, u64)]) -> Vec<u64> {
    h.iter()
        .flat_map(|&(v, n)| std::iter::repeat_n(v, n as usize))
        .collect()
}

impl Totals {
    /// The totals of a shard's statistics and failing seeds.
    pub fn of(stats: &Stats, failing: &BTreeMap<Property, Vec<u64>>) -> Totals {
        Totals {
            commits: stats.commits,
            client_changes: stats.client_changes,
            walks: stats.walks,
            walks_after_change: stats.walks_after_change,
            clients_changed: stats.clients_changed,
            simulated_us: stats.sim_us,
            converge_us: histogram(&stats.converge),
            settle_us: histogram(&stats.settle),
            failing: failing.clone(),
        }
    }

    /// The statistics a shard's summary and its totals stand for (what its campaign
    /// accumulated), to merge with other shards'.
    pub fn stats(&self, s: &Summary) -> Stats {
        Stats {
            runs: s.runs,
            steps: s.steps,
            events: s.events,
            commits: self.commits,
            client_changes: self.client_changes,
            walks: self.walks,
            walks_after_change: self.walks_after_change,
            clients_changed: self.clients_changed,
            max_client_walks: s.walks_per_client_max,
            violations: s
                .violations
                .iter()
                .map(|(p, v)| {
                    (
                        *p,
                        crate::stats::PropertyCount {
                            runs: v.runs,
                            first_seed: v.first_seed,
                        },
                    )
                })
                .collect(),
            anomalies: s.anomalies,
            anomaly_seeds: s.anomaly_seeds.clone(),
            sim_us: self.simulated_us,
            converge: samples(&self.converge_us),
            settle: samples(&self.settle_us),
            situation_runs: s.situation_runs,
            situations: s.situations.clone(),
        }
    }
}

/// Whether a run with these strategies under this plan came out as expected: the reference
/// violates nothing the plan allows it to hold; a known-bad strategy is caught only when the
/// property its bug breaks is violated (a violation of another property does not count). A
/// plan that breaks convergence on purpose (lost notifications with no TTL) makes the
/// quiescence properties uncountable either way. No run may be a simulator anomaly.
pub fn as_expected(
    client: ClientStrategy,
    server: ServerStrategy,
    plan: &FaultPlan,
    violated: impl IntoIterator<Item = Property>,
    anomalies: u64,
) -> bool {
    let counted = |p: &Property| !(plan.breaks_convergence() && p.judged_at_rest());
    let expected = client.breaks().or(server.breaks());
    let ok = match expected {
        None => !violated.into_iter().any(|p| counted(&p)),
        Some(want) => violated.into_iter().any(|p| p == want && counted(&p)),
    };
    anomalies == 0 && ok
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The `expected` text of a summary.
pub fn expectation(client: ClientStrategy, server: ServerStrategy) -> String {
    match client.breaks().or(server.breaks()) {
        None => "no violation".into(),
        Some(p) => format!("{p} violated"),
    }
}

impl Summary {
    /// A summary of `stats` (violations, amplification, convergence) for these strategies and
    /// plan; the caller fills in traces, histories and the level's extras.
    #[allow(clippy::too_many_arguments)]
    pub fn of(
        level: Level,
        mode: Mode,
        strategies: crate::case::Strategies,
        plan: &FaultPlan,
        stats: &Stats,
        wall_seconds: f64,
        threads: usize,
        first_seed: u64,
        seeds: u64,
        shard: String,
        clients: Option<u32>,
        nodes: Option<u8>,
    ) -> Summary {
        let secs = wall_seconds.max(1e-9);
        let violations: BTreeMap<Property, PropertySummary> = stats
            .violations
            .iter()
            .map(|(p, c)| {
                (
                    *p,
                    PropertySummary {
                        runs: c.runs,
                        first_seed: c.first_seed,
                        trace: None,
                        history: None,
                    },
                )
            })
            .collect();
        let as_expected = as_expected(
            strategies.client,
            strategies.server,
            plan,
            violations.keys().copied(),
            stats.anomalies,
        );
        let mut converge = stats.converge.clone();
        let mut settle = stats.settle.clone();
        Summary {
            tool: "listsync sim".into(),
            level,
            mode,
            strategy: strategies.label().into(),
            client_strategy: strategies.client,
            server_strategy: strategies.server,
            faults: plan.name.into(),
            faults_about: plan.about.into(),
            first_seed,
            seeds,
            shard,
            clients: clients.map_or_else(|| "1-4".to_string(), |c| c.to_string()),
            nodes: match nodes {
                Some(n) => n.to_string(),
                None if strategies.server == ServerStrategy::ClusterNotifyBeforeVisible => {
                    "2-3".into()
                }
                None => "1".into(),
            },
            burst: None,
            burst_batches: None,
            threads,
            runs: stats.runs,
            steps: stats.steps,
            events: stats.events,
            wall_seconds: secs,
            events_per_second: stats.events as f64 / secs,
            steps_per_second: stats.steps as f64 / secs,
            seeds_per_second: stats.runs as f64 / secs,
            simulated_seconds: stats.sim_us as f64 / 1e6,
            violations,
            refresh_amplification: stats.amplification(),
            walks_per_client_mean: stats.walks_per_client(),
            walks_per_client_max: stats.max_client_walks,
            converge: percentiles(&mut converge),
            settle: percentiles(&mut settle),
            anomalies: stats.anomalies,
            anomaly_seeds: stats.anomaly_seeds.clone(),
            peak_rss_mib: None,
            walk_bound: None,
            situation_runs: stats.situation_runs,
            situations: stats.situations.clone(),
            stack: None,
            expected: expectation(strategies.client, strategies.server),
            as_expected,
            totals: None,
        }
    }
}

fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

/// The terminal rendering `listsync sim` prints.
impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self;
        writeln!(
            f,
            "listsync sim: {} level, strategy {}, faults {}, {} run(s) (seeds from {}, shard {}), clients {}, nodes {}{}, {} thread(s)",
            s.level.as_str(),
            s.strategy,
            s.faults,
            s.runs,
            s.first_seed,
            s.shard,
            s.clients,
            s.nodes,
            s.burst
                .map(|b| format!(
                    ", burst of {b} mutations in {} batch(es)",
                    s.burst_batches.unwrap_or(b as usize)
                ))
                .unwrap_or_default(),
            s.threads
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| runs | steps | events | wall | events/s | steps/s | seeds/s | simulated |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
        )?;
        writeln!(
            f,
            "| {} | {} | {} | {:.2} s | {} | {} | {} | {:.1} s |",
            s.runs,
            human(s.steps as f64),
            human(s.events as f64),
            s.wall_seconds,
            human(s.events_per_second),
            human(s.steps_per_second),
            human(s.seeds_per_second),
            s.simulated_seconds
        )?;
        writeln!(f)?;
        writeln!(
            f,
            "| property | runs violated | first seed | {} |\n|---|---:|---:|---|",
            match s.level {
                Level::Machine => "shrunk trace",
                Level::Stack => "recorded history",
            }
        )?;
        for p in Property::ALL {
            match s.violations.get(&p) {
                None => writeln!(f, "| {p} | 0 | | |")?,
                Some(v) => writeln!(
                    f,
                    "| {p} | {} | {} | {} |",
                    v.runs,
                    v.first_seed,
                    v.trace
                        .as_ref()
                        .map(|t| format!(
                            "{} ({} steps from {}, {} client(s){})",
                            t.file,
                            t.steps,
                            t.original_steps,
                            t.clients,
                            match (t.replays_in_model, t.replays_in_harness) {
                                (true, true) => ", replays in the model and the harness",
                                (true, false) => ", replays in the model; not in the harness",
                                (false, _) => ", DOES NOT REPLAY",
                            }
                        ))
                        .or_else(|| v.history.clone())
                        .unwrap_or_default()
                )?,
            }
        }
        writeln!(f)?;
        writeln!(
            f,
            "refresh amplification: {:.3} list walks per committed change per client; walks per client after the first change: mean {:.2}, max {}",
            s.refresh_amplification, s.walks_per_client_mean, s.walks_per_client_max
        )?;
        writeln!(
            f,
            "time to converge (simulated, last commit to a client's last publish): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; run settles: p50 {:.1} ms, p99 {:.1} ms",
            s.converge.p50_ms,
            s.converge.p99_ms,
            s.converge.max_ms,
            s.settle.p50_ms,
            s.settle.p99_ms
        )?;
        if s.situation_runs > 0 {
            let reached: Vec<String> = s
                .situations
                .iter()
                .map(|(sit, n)| format!("{sit} {n}"))
                .collect();
            writeln!(
                f,
                "situations reached (runs of {}): {}",
                s.situation_runs,
                if reached.is_empty() {
                    "none".into()
                } else {
                    reached.join(", ")
                }
            )?;
        }
        if let Some(b) = s.walk_bound {
            writeln!(
                f,
                "list walks per client after the burst: max {} (coalescing bound {b}: {})",
                s.walks_per_client_max,
                if s.walks_per_client_max <= b {
                    "within"
                } else {
                    "EXCEEDED"
                }
            )?;
        }
        if let Some(n) = &s.stack {
            writeln!(
                f,
                "network: {} lines delivered, {} notifications duplicated, {} lost, {} streams broken, {} list requests failed, {} unanswered, {} tool calls failed; connections: {} opened, {} cut, {} refused",
                n.lines_delivered,
                n.notifications_duplicated,
                n.notifications_lost,
                n.streams_broken,
                n.list_requests_failed,
                n.list_requests_unanswered,
                n.tool_calls_failed,
                n.connections_opened,
                n.connections_cut,
                n.connections_refused
            )?;
        }
        if let Some(m) = s.peak_rss_mib {
            writeln!(
                f,
                "peak memory: {m:.0} MiB; wall time {:.2} s",
                s.wall_seconds
            )?;
        }
        if s.anomalies > 0 {
            writeln!(
                f,
                "SIMULATOR ANOMALIES in {} run(s) (stuck, step limit, refused step): seeds {:?}",
                s.anomalies, s.anomaly_seeds
            )?;
        }
        writeln!(
            f,
            "{}: expected {} -> {}",
            s.strategy,
            s.expected,
            if s.as_expected {
                "as expected"
            } else {
                "NOT AS EXPECTED"
            }
        )
    }
}
