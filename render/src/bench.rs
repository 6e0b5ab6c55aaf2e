//! The bench figures file: what `cargo bench` measures, in a form `listsync report` renders.
//!
//! Each bench target (one per group) writes its group to `target/listsync-bench/<group>.json`
//! as a [`BenchFile`] holding just that group; `listsync report` merges the groups it finds
//! there into the committed `reports/bench.json` (a group replaces the committed one only if it
//! is newer) and renders `reports/bench.md` and its plots from that. Times are in the unit their
//! field names say; counts are per iteration unless the name says otherwise.
//!
//! Every group has one typed schema here, written by its bench (`benches/`) and read by the
//! renderers: an unknown group or field, or a missing one, makes reading the file fail with the
//! serde error that names it, so a field renamed on one side only fails loudly.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

/// `format` of a bench file.
pub const BENCH_FORMAT: &str = "listsync-bench";
/// Schema version.
pub const BENCH_VERSION: u32 = 1;

/// Every group's figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchFile {
    /// Always [`BENCH_FORMAT`].
    pub format: String,
    /// [`BENCH_VERSION`].
    pub version: u32,
    /// (1) Refresh contention.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<Group<RefreshRow>>,
    /// (2) Snapshot reads under churn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub churn: Option<Group<ChurnRow>>,
    /// (3) Fan-out.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fanout: Option<Group<FanoutRow>>,
    /// (4) Model-checking throughput.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<Group<ModelRow>>,
    /// (5) Replay throughput.
    #[serde(
        default,
        rename = "replay_throughput",
        skip_serializing_if = "Option::is_none"
    )]
    pub replay: Option<Group<ReplayRow>>,
    /// (6) Cluster fan-out: commit to convergence, beside a single node.
    #[serde(
        default,
        rename = "cluster_convergence",
        skip_serializing_if = "Option::is_none"
    )]
    pub cluster: Option<Group<ClusterRow>>,
    /// (7) Simulator throughput: events and seeds per second at both levels.
    #[serde(
        default,
        rename = "sim_throughput",
        skip_serializing_if = "Option::is_none"
    )]
    pub sim: Option<Group<SimRow>>,
}

/// One group's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Group<R> {
    /// How it was run.
    pub run: RunInfo,
    /// What drives the system under measurement (for example "core machines, in-process
    /// tokio driver"), so a reader knows what the numbers are of.
    pub driver: String,
    /// Remarks the report prints with the group.
    #[serde(default)]
    pub notes: Vec<String>,
    /// The measurements, all from this one run.
    pub rows: Vec<R>,
}

/// When and how a group ran.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunInfo {
    /// Seconds since the Unix epoch at the start of the run.
    pub started_unix: u64,
    /// Quick mode (`LISTSYNC_BENCH_QUICK=1` or `--quick`).
    pub quick: bool,
    /// CPUs available to the process.
    pub cpus: usize,
    /// Wall time of the whole group, seconds.
    pub seconds: f64,
}

/// Summary of a sample of durations or counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dist {
    /// Samples.
    pub n: u64,
    /// Mean.
    pub mean: f64,
    /// Smallest.
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest.
    pub max: f64,
    /// A 95 % confidence interval of the median, distribution-free (two order statistics of
    /// the sample); absent below 6 samples, and in files written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p50_ci: Option<(f64, f64)>,
}

impl Dist {
    /// Summarizes `samples` (sorts them). Empty samples give all zeros.
    pub fn of(samples: &mut [f64]) -> Dist {
        if samples.is_empty() {
            return Dist::default();
        }
        samples.sort_by(f64::total_cmp);
        let n = samples.len();
        let at = |q: f64| samples[(((n - 1) as f64) * q).round() as usize];
        Dist {
            n: n as u64,
            mean: samples.iter().sum::<f64>() / n as f64,
            min: samples[0],
            p50: at(0.50),
            p90: at(0.90),
            p99: at(0.99),
            p999: at(0.999),
            max: samples[n - 1],
            p50_ci: median_ci(samples),
        }
    }

    /// Whether the medians of two samples cannot be told apart: their 95 % intervals overlap
    /// (false when either has none).
    pub fn median_ties(&self, other: &Dist) -> bool {
        match (self.p50_ci, other.p50_ci) {
            (Some((lo, hi)), Some((olo, ohi))) => lo <= ohi && olo <= hi,
            _ => false,
        }
    }
}

/// The 95 % confidence interval of the median of sorted `samples`: the order statistics of
/// ranks n/2 ± 1.96·√n/2 (normal approximation of the binomial; no assumption about the
/// distribution of the samples). None below 6 samples, where it would be the whole range.
fn median_ci(sorted: &[f64]) -> Option<(f64, f64)> {
    let n = sorted.len();
    if n < 6 {
        return None;
    }
    let half = 1.96 * (n as f64).sqrt() / 2.0;
    let lo = ((n as f64) / 2.0 - half).floor().max(1.0) as usize;
    let hi = ((n as f64) / 2.0 + half + 1.0).ceil().min(n as f64) as usize;
    Some((sorted[lo - 1], sorted[hi - 1]))
}

/// (1) One cell of the refresh-contention matrix.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RefreshRow {
    /// Strategy name (`reference`, `reference-gap-off`, `reference-gap-5ms`, `naive`,
    /// `debounce-300ms`, ...).
    pub strategy: String,
    /// Notifications in the burst.
    pub k: u32,
    /// Pages of the list.
    pub pages: u32,
    /// Concurrent readers.
    pub readers: u32,
    /// Whether the server served the client's list requests while the burst was arriving
    /// (otherwise they waited with the refresh in flight until the whole burst was in).
    #[serde(default)]
    pub served_during_burst: bool,
    /// Milliseconds between the burst's commits, with no refresh in flight when it starts (0:
    /// back to back, a refresh in flight).
    #[serde(default)]
    pub spacing_ms: u32,
    /// Whether each iteration ran beside a neighbour: another client of the same strategy in
    /// the same process, walking another (unchanging) server's one-page list every
    /// millisecond; false in figures written before the bench had one.
    #[serde(default)]
    pub neighbour: bool,
    /// Iterations measured.
    pub iterations: u64,
    /// Iterations whose client converged to the final list before the deadline.
    pub converged: u64,
    /// Converged iterations in which the first answer carrying the final list was the answer to
    /// the request in flight when the burst began (not to a request sent during the burst);
    /// absent from figures written before the bench counted it.
    #[serde(default)]
    pub final_from_in_flight: Option<u64>,
    /// List walks (first-page `list` requests) the server received per burst, from the
    /// burst's first mutation until the client was idle again.
    pub walks: Dist,
    /// All `list` requests (pages) the server received per burst.
    pub requests: Dist,
    /// Last mutation of the burst to the final list published, milliseconds (converged
    /// iterations only).
    pub converge_ms: Dist,
    /// One snapshot read by a reader, nanoseconds (empty without readers).
    pub read_ns: Dist,
}

/// (2) Read latency of one store under continuous publishing.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChurnRow {
    /// `SnapshotCell`, `RwLock<Arc<_>>`, `Mutex<Arc<_>>`, or `timer only` (the cost of timing
    /// an empty read, for reference).
    pub store: String,
    /// Reader threads (the writer is one more thread).
    pub readers: u32,
    /// One read, nanoseconds (timer overhead included; see the `timer only` row).
    pub read_ns: Dist,
    /// Reads per second per reader thread, from criterion's mean.
    pub reads_per_sec: f64,
    /// Publishes per second the writer achieved meanwhile.
    pub publishes_per_sec: f64,
}

/// (3) One fan-out run size.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FanoutRow {
    /// Client strategy.
    pub strategy: String,
    /// Clients.
    pub clients: u32,
    /// Iterations measured.
    pub iterations: u64,
    /// Iterations in which every client converged before the deadline.
    pub converged: u64,
    /// Mutation to the last client's publish of the new list, milliseconds.
    pub converge_ms: Dist,
    /// `list` requests served per mutation, all clients together (ideal: one per client per
    /// page).
    pub requests: Dist,
}

/// (4) One model-checking configuration, search and thread count.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelRow {
    /// Configuration name.
    pub config: String,
    /// `bfs`, `dfs_symmetric` or `dfs`.
    pub search: String,
    /// Checker threads.
    pub threads: u32,
    /// Unique states explored.
    pub unique_states: u64,
    /// Seconds per exhaustive check.
    pub seconds: Dist,
    /// Unique states per second (from the mean time).
    pub states_per_sec: f64,
}

/// (5) Replays of one trace set against one adapter.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplayRow {
    /// Adapter (subject) replayed against.
    pub adapter: String,
    /// Trace set (`corpus`, or one trace's file name).
    pub traces: String,
    /// Replays run (one per trace per iteration).
    pub replays: u64,
    /// Replays that did not complete (diverged or failed).
    pub not_completed: u64,
    /// Traces replayed per second (from the mean).
    pub traces_per_sec: f64,
    /// Seconds per replay: mean.
    pub seconds_mean: f64,
    /// Median.
    pub seconds_p50: f64,
    /// 90th percentile.
    pub seconds_p90: f64,
    /// Largest.
    pub seconds_max: f64,
}

/// (6) What serves the clients of a fan-out row.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Setup {
    /// Three `serve --redis` nodes: the batch goes to node A, the clients are on node C.
    Cluster,
    /// One `serve` process without Redis: batch and clients on it.
    SingleNode,
}

/// (6) One fan-out setup and client count.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterRow {
    /// What serves the clients.
    pub setup: Setup,
    /// Server processes.
    pub nodes: u32,
    /// Reference clients on the node that does not commit (the single node's own clients).
    pub clients: u32,
    /// Changes timed.
    pub iterations: u64,
    /// Changes every client held within the bench's deadline.
    pub converged: u64,
    /// Batch sent to the committing node's control channel → its reply (committed; that node's
    /// own sessions notified), milliseconds.
    pub commit_ms: Dist,
    /// Batch sent → every client holds the new version, milliseconds (converged changes only).
    pub converge_ms: Dist,
    /// Redis commands per change, those the store's scripts run included (0 without Redis).
    pub redis_commands_per_change: f64,
    /// Commands sent to Redis per change (network round trips).
    pub redis_round_trips_per_change: f64,
    /// Redis commands per change by name (`INFO commandstats`).
    #[serde(default)]
    pub redis_commands: BTreeMap<String, f64>,
}

/// (7) One simulator campaign on fixed seeds: a level and a thread count.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimRow {
    /// `machine` or `stack`.
    pub level: String,
    /// Seeds per campaign (the same ones every iteration: 0, 1, …).
    pub seeds: u64,
    /// Worker threads.
    pub threads: u32,
    /// History events per campaign (the same every iteration).
    pub events: u64,
    /// Seconds per campaign.
    pub seconds: Dist,
    /// History events per second (from the median).
    pub events_per_sec: f64,
    /// Seeds per second (from the median).
    pub seeds_per_sec: f64,
}

impl BenchFile {
    /// An empty file.
    pub fn new() -> BenchFile {
        BenchFile {
            format: BENCH_FORMAT.into(),
            version: BENCH_VERSION,
            ..BenchFile::default()
        }
    }

    /// Per group, in the page's order: the measurements it holds, or None when absent.
    fn groups(&self) -> [Option<usize>; 7] {
        fn of<R>(g: &Option<Group<R>>) -> Option<usize> {
            g.as_ref().map(|g| g.rows.len())
        }
        [
            of(&self.refresh),
            of(&self.churn),
            of(&self.fanout),
            of(&self.model),
            of(&self.replay),
            of(&self.cluster),
            of(&self.sim),
        ]
    }

    /// Measurements held, over every group.
    pub fn rows(&self) -> usize {
        self.groups().into_iter().flatten().sum()
    }

    /// Reads a bench file.
    pub fn read(path: &Path) -> anyhow::Result<BenchFile> {
        let text = std::fs::read_to_string(path)?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Reads a figures file `cargo bench` left (a bench file holding one group).
    pub fn read_figures(path: &Path) -> anyhow::Result<BenchFile> {
        Self::read(path)
    }

    /// Parses a bench file's text.
    pub fn parse(text: &str) -> anyhow::Result<BenchFile> {
        let f: BenchFile =
            serde_json::from_str(text).map_err(|e| anyhow::anyhow!("not a bench file: {e}"))?;
        if f.format != BENCH_FORMAT || f.version != BENCH_VERSION {
            anyhow::bail!(
                "format {} version {}, expected {BENCH_FORMAT} version {BENCH_VERSION}",
                f.format,
                f.version
            );
        }
        Ok(f)
    }

    /// Takes every group of `other` that is newer than this file's.
    pub fn merge_newer(&mut self, other: BenchFile) {
        fn take<R>(mine: &mut Option<Group<R>>, theirs: Option<Group<R>>) {
            if let Some(t) = theirs
                && mine
                    .as_ref()
                    .is_none_or(|m| m.run.started_unix <= t.run.started_unix)
            {
                *mine = Some(t);
            }
        }
        take(&mut self.refresh, other.refresh);
        take(&mut self.churn, other.churn);
        take(&mut self.fanout, other.fanout);
        take(&mut self.model, other.model);
        take(&mut self.replay, other.replay);
        take(&mut self.cluster, other.cluster);
        take(&mut self.sim, other.sim);
    }

    /// Whether any group is present.
    pub fn is_empty(&self) -> bool {
        self.groups().iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// For 100 samples the distribution-free 95 % interval of the median is the 40th and 61st
    /// order statistics (the textbook table's ranks).
    #[test]
    fn the_median_interval_is_two_order_statistics() {
        let mut x: Vec<f64> = (1..=100).map(f64::from).rev().collect();
        let d = Dist::of(&mut x);
        assert_eq!(d.p50_ci, Some((40.0, 61.0)));
        assert_eq!(Dist::of(&mut [1.0, 2.0, 3.0]).p50_ci, None);
        let far = Dist::of(&mut (200..300).map(f64::from).collect::<Vec<_>>());
        assert!(!d.median_ties(&far) && d.median_ties(&d));
    }

    #[test]
    fn dist_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Dist::of(&mut v);
        assert_eq!((d.n, d.min, d.max), (100, 1.0, 100.0));
        assert_eq!(d.p50, 51.0);
        assert_eq!(d.mean, 50.5);
        assert_eq!(Dist::of(&mut []), Dist::default());
    }

    fn run(started_unix: u64) -> RunInfo {
        RunInfo {
            started_unix,
            quick: true,
            cpus: 2,
            seconds: 1.0,
        }
    }

    fn replay(started_unix: u64, traces_per_sec: f64) -> BenchFile {
        let mut f = BenchFile::new();
        f.replay = Some(Group {
            run: run(started_unix),
            driver: "harness".into(),
            notes: vec![],
            rows: vec![ReplayRow {
                adapter: "reference".into(),
                traces: "corpus".into(),
                replays: 10,
                not_completed: 0,
                traces_per_sec,
                seconds_mean: 0.1,
                seconds_p50: 0.1,
                seconds_p90: 0.1,
                seconds_max: 0.1,
            }],
        });
        f
    }

    #[test]
    fn groups_round_trip_and_newer_runs_win() {
        let mut a = replay(9, 12.0);
        a.merge_newer(replay(5, 10.0));
        let text = serde_json::to_string(&a).unwrap();
        let back = BenchFile::parse(&text).unwrap();
        assert_eq!(back.replay.unwrap().rows[0].traces_per_sec, 12.0);
        a.merge_newer(replay(10, 13.0));
        assert_eq!(a.replay.as_ref().unwrap().rows[0].traces_per_sec, 13.0);
        assert!(!a.is_empty());
        assert!(BenchFile::new().is_empty());
    }

    #[test]
    fn rows_are_counted_over_every_group() {
        assert_eq!(BenchFile::new().rows(), 0);
        let mut f = replay(1, 1.0);
        assert_eq!(f.rows(), 1);
        f.replay.as_mut().unwrap().rows.clear();
        assert_eq!(f.rows(), 0, "a group without rows holds no measurement");
    }

    #[test]
    fn a_renamed_field_or_an_unknown_group_fails_loudly() {
        let text = serde_json::to_string(&replay(1, 1.0)).unwrap();
        let renamed = text.replace("traces_per_sec", "traces_per_second");
        let e = BenchFile::parse(&renamed).unwrap_err().to_string();
        assert!(e.contains("traces_per_second"), "{e}");
        let unknown = text.replace("replay_throughput", "replay_speed");
        let e = BenchFile::parse(&unknown).unwrap_err().to_string();
        assert!(e.contains("replay_speed"), "{e}");
    }

    /// The committed figures read under this schema (what `listsync report` starts from).
    #[test]
    fn the_committed_figures_parse() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/bench.json");
        BenchFile::read(&path).unwrap();
    }
}
