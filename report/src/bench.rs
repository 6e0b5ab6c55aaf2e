//! The bench figures file: what `cargo bench` measures, in a form `listsync report` renders.
//!
//! Each bench target (one per group) writes its group to `target/listsync-bench/<group>.json`
//! as a [`BenchFile`] holding just that group; `listsync report` merges the groups it finds
//! there into the committed `reports/bench.json` (a group replaces the committed one only if it
//! is newer) and renders `reports/bench.md` and its plots from that. Times are in the unit their
//! field names say; counts are per iteration unless the name says otherwise.
//!
//! Groups this crate does not model field by field (replay throughput, the cluster's commit to
//! convergence, anything added later) are kept as JSON in [`BenchFile::extra`], under their key
//! in a bench file, or under the file's stem when the file is some other JSON document; the
//! page renders them as tables.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// `format` of a bench file.
pub const BENCH_FORMAT: &str = "listsync-bench";
/// Schema version.
pub const BENCH_VERSION: u32 = 1;

/// Every group's figures.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
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
    /// Every other group, as its JSON (ideally `{"run": RunInfo, "driver": .., "notes": [..],
    /// "rows": [{..}, ..]}`, like [`Group`]).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// One group's run.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
        }
    }
}

/// (1) One cell of the refresh-contention matrix.
#[derive(Clone, Debug, Serialize, Deserialize)]
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
    /// Iterations measured.
    pub iterations: u64,
    /// Iterations whose client converged to the final list before the deadline.
    pub converged: u64,
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
pub struct ModelRow {
    /// Configuration name.
    pub config: String,
    /// `bfs` or `dfs_symmetric`.
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

impl BenchFile {
    /// An empty file.
    pub fn new() -> BenchFile {
        BenchFile {
            format: BENCH_FORMAT.into(),
            version: BENCH_VERSION,
            ..BenchFile::default()
        }
    }

    /// Reads a bench file.
    pub fn read(path: &Path) -> anyhow::Result<BenchFile> {
        let text = std::fs::read_to_string(path)?;
        Self::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
    }

    /// Reads any figures file `cargo bench` left: a bench file, or some other JSON document,
    /// which becomes the extra group named after the file's stem.
    pub fn read_figures(path: &Path) -> anyhow::Result<BenchFile> {
        let text = std::fs::read_to_string(path)?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow::anyhow!("{}: not JSON: {e}", path.display()))?;
        if v.get("format").and_then(Value::as_str) == Some(BENCH_FORMAT) {
            return Self::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()));
        }
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "figures".into());
        let mut f = BenchFile::new();
        f.extra.insert(stem, v);
        Ok(f)
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
        for (k, v) in other.extra {
            let newer = match self.extra.get(&k) {
                None => true,
                Some(mine) => started(mine) <= started(&v),
            };
            if newer {
                self.extra.insert(k, v);
            }
        }
    }

    /// Whether any group is present.
    pub fn is_empty(&self) -> bool {
        self.refresh.is_none()
            && self.churn.is_none()
            && self.fanout.is_none()
            && self.model.is_none()
            && self.extra.is_empty()
    }
}

/// When an extra group's run started (0 if it does not say).
fn started(v: &Value) -> u64 {
    v.get("run")
        .and_then(|r| r.get("started_unix"))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dist_percentiles() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        let d = Dist::of(&mut v);
        assert_eq!((d.n, d.min, d.max), (100, 1.0, 100.0));
        assert_eq!(d.p50, 51.0);
        assert_eq!(d.mean, 50.5);
        assert_eq!(Dist::of(&mut []), Dist::default());
    }

    #[test]
    fn other_groups_are_kept_and_newer_runs_win() {
        let old = r#"{"format":"listsync-bench","version":1,
            "replay":{"run":{"started_unix":5},"rows":[{"adapter":"reference","traces_per_sec":10}]}}"#;
        let new = r#"{"format":"listsync-bench","version":1,
            "replay":{"run":{"started_unix":9},"rows":[{"adapter":"reference","traces_per_sec":12}]}}"#;
        let mut a = BenchFile::parse(new).unwrap();
        a.merge_newer(BenchFile::parse(old).unwrap());
        assert_eq!(a.extra["replay"]["rows"][0]["traces_per_sec"], 12);
        let text = serde_json::to_string(&a).unwrap();
        assert!(
            BenchFile::parse(&text)
                .unwrap()
                .extra
                .contains_key("replay")
        );
        assert!(!a.is_empty());
        assert!(BenchFile::new().is_empty());
    }
}
