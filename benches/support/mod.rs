//! What every bench target shares: quick mode, criterion settings, and writing a group's
//! figures to `target/listsync-bench/<group>.json` for `listsync report`.

#![allow(dead_code)] // each bench target uses a different part of this module

pub mod rig;
pub mod two_phase;

use criterion::Criterion;
use listsync_render::bench::{BenchFile, RunInfo};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Quick mode: `LISTSYNC_BENCH_QUICK=1` in the environment or `--quick` on the command line
/// (criterion's own flag). Fewer samples and smaller configurations; the whole `cargo bench`
/// then fits in a few minutes on two cores.
pub fn quick() -> bool {
    std::env::var("LISTSYNC_BENCH_QUICK").is_ok_and(|v| !v.is_empty() && v != "0")
        || std::env::args().any(|a| a == "--quick")
}

/// Criterion's warm-up time for groups whose iterations are long.
pub fn runs_warm_up() -> Duration {
    if quick() {
        Duration::from_millis(200)
    } else {
        Duration::from_secs(1)
    }
}

/// Criterion settings for groups whose iterations are long (whole runs, not single reads).
pub fn criterion_for_runs() -> Criterion {
    let c = Criterion::default()
        .configure_from_args()
        .warm_up_time(runs_warm_up());
    if quick() {
        c.sample_size(10)
            .measurement_time(Duration::from_millis(800))
    } else {
        c.sample_size(20).measurement_time(Duration::from_secs(4))
    }
}

/// Criterion settings for groups that time single operations.
pub fn criterion_for_ops() -> Criterion {
    let c = Criterion::default().configure_from_args();
    if quick() {
        c.sample_size(20)
            .warm_up_time(Duration::from_millis(300))
            .measurement_time(Duration::from_secs(1))
    } else {
        c
    }
}

/// When a group started, for its [`RunInfo`].
pub struct RunClock {
    started_unix: u64,
    started: Instant,
}

impl RunClock {
    /// Starts the clock.
    pub fn start() -> RunClock {
        RunClock {
            started_unix: SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            started: Instant::now(),
        }
    }

    /// The run's description, now.
    pub fn info(&self) -> RunInfo {
        RunInfo {
            started_unix: self.started_unix,
            quick: quick(),
            cpus: std::thread::available_parallelism().map_or(1, |n| n.get()),
            seconds: self.started.elapsed().as_secs_f64(),
        }
    }
}

/// Where the bench figures go: `$CARGO_TARGET_DIR/listsync-bench` (default `target/`).
pub fn figures_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("listsync-bench")
}

/// Criterion options that take a value (so the value is not a filter).
const VALUED: [&str; 14] = [
    "--save-baseline",
    "--baseline",
    "--baseline-lenient",
    "--load-baseline",
    "--measurement-time",
    "--warm-up-time",
    "--sample-size",
    "--nresamples",
    "--noise-threshold",
    "--confidence-level",
    "--significance-level",
    "--profile-time",
    "--output-format",
    "--color",
];

/// Whether criterion was given a filter (a positional argument), so that only some benchmarks
/// of the group run.
pub fn filtered() -> bool {
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if VALUED.contains(&a.as_str()) {
            args.next();
        } else if !a.starts_with('-') {
            return true;
        }
    }
    false
}

/// Writes one group's figures (`file` holds just that group). A filtered run writes under
/// `partial/` instead, where `listsync report` does not look, so that it never replaces the
/// figures of a whole run. A run that measured nothing (a filter matching none of the group's
/// benchmarks, or criterion's `--list`) writes nothing and says so: an empty group would
/// otherwise replace the figures of the last whole run.
pub fn write_figures(group: &str, file: &BenchFile) {
    if file.rows() == 0 {
        eprintln!(
            "listsync bench: no benchmark of {group} ran (filtered out, or only listed); no \
             figures written"
        );
        return;
    }
    let mut dir = figures_dir();
    if filtered() {
        dir = dir.join("partial");
    }
    let path = dir.join(format!("{group}.json"));
    let result = std::fs::create_dir_all(&dir).and_then(|()| {
        std::fs::write(
            &path,
            serde_json::to_string_pretty(file).expect("figures serialize") + "\n",
        )
    });
    match result {
        Ok(()) => eprintln!("listsync bench: figures written to {}", path.display()),
        Err(e) => eprintln!("listsync bench: cannot write {}: {e}", path.display()),
    }
}
