//! `listsync matrix [--adapter FILE]...`: replays the `traces/` corpus and the generated scenarios
//! against every implementation (our runtime, rmcp, the TypeScript SDK v1 and v2, the Python, Go,
//! mcp-go and Java SDKs — installing the third-party adapters on first use — and the rows of any
//! adapter of the user's own), and writes `reports/conformance.md` and `reports/conformance.json`
//! with a message log for every run that shows something. Every row's violations fail the run
//! but those listed as expected failures (each built-in adapter's own file, and
//! `--expected-failures FILE`); a listed one that no longer happens fails it too.

use anyhow::Context;
use listsync_harness::expected::Expectations;
use listsync_harness::manifest::{self, Manifest};
use listsync_harness::matrix::{self, Options};
use listsync_harness::run::Bounds;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Flags of `listsync matrix`.
#[derive(clap::Args)]
pub struct Args {
    /// Runs at once (default: twice the number of CPUs, at least 2 and at most 16).
    #[arg(long)]
    jobs: Option<std::num::NonZeroUsize>,
    /// Only these implementations (comma-separated names: reference, rmcp, ts-v1, ts-v2, python,
    /// go-sdk, mcp-go, java, fastmcp, server-everything, or the name in an --adapter manifest).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// Adds the rows of an adapter of your own, described by its manifest (repeatable;
    /// docs/writing-an-adapter.md).
    #[arg(long = "adapter")]
    adapters: Vec<PathBuf>,
    /// Expected failures: a TOML file of `[[expected]]` entries (row, property, reason, optional
    /// link) whose violations do not fail the run (repeatable; docs/ci.md). The built-in
    /// adapters' own files (harness/adapters/*/expected-failures.toml) are always read.
    #[arg(long = "expected-failures", value_name = "FILE")]
    expected_failures: Vec<PathBuf>,
    /// The trace corpus (default: the source tree's traces/, or the corpus this binary carries).
    #[arg(long)]
    traces: Option<PathBuf>,
    /// Where to write the report (default: reports/ inside a listsync source tree, else the
    /// current directory).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write a JUnit XML report to this file (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// Runs the matrix. Exit 1 if a row violates a property that is not an expected failure, an
/// expected failure no longer happens, a row errs, or a known-bad variant goes uncaught, else 0;
/// 2 when an option or an expected-failures file is wrong.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let home = crate::home::home()?;
    let exe = std::env::current_exe().context("locating the listsync executable")?;
    let mut paths = crate::home::paths(exe.clone())?;
    // Adapters start from a pinned copy, so a concurrent rebuild cannot swap builds mid-run.
    let pinned = listsync_harness::pin::PinnedExe::new(&exe).map_err(anyhow::Error::msg)?;
    paths.listsync = pinned.path().to_path_buf();
    let jobs = args.jobs.map_or_else(
        listsync_harness::matrix::default_jobs,
        std::num::NonZeroUsize::get,
    );
    let opts = Options {
        jobs,
        traces: args.traces.unwrap_or_else(|| home.tree.join("traces")),
        only: args.only,
        adapters: args
            .adapters
            .iter()
            .map(|f| Manifest::load(f).map(Arc::new))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?,
        bounds: Bounds::default(),
    };
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(if home.source { "reports" } else { "." }));
    // Every adapter the matrix knows, whether or not --only runs its rows: an entry naming a
    // row left out is not an error.
    let mut known: Vec<Arc<Manifest>> = manifest::built_in().to_vec();
    known.extend(opts.adapters.iter().cloned());
    let expected = Expectations::load(&home.tree, &known, &args.expected_failures)
        .map_err(anyhow::Error::msg)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = |line: &str| eprintln!("{line}");
    let mut m = rt
        .block_on(matrix::run(&paths, &opts, &progress))
        .map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&out)?;
    listsync_harness::report::write(&out, &mut m)
        .with_context(|| format!("writing the report under {}", out.display()))?;
    let md = listsync_render::pages::write_conformance_page(&out)
        .with_context(|| format!("rendering conformance.md under {}", out.display()))?;
    println!(
        "conformance matrix: {} rows, {} runs in {:.0} s -> {} (and conformance.json)",
        m.rows.len(),
        m.runs.len(),
        m.seconds,
        md.display()
    );
    let judged = expected.judge(&m);
    if let Some(f) = &args.junit {
        let suite = listsync_render::junit::from_matrix(&m.runs, &out, &expected, &judged.fixed);
        listsync_render::junit::write(f, &[suite])?;
    }
    for e in &judged.expected {
        println!(
            "expected failure: {} violates {}: {}",
            e.row,
            e.property,
            e.why()
        );
    }
    for e in &judged.held_this_time {
        println!(
            "held this time: {} (violated in some runs only) holds {}: {}",
            e.row,
            e.property,
            e.why()
        );
    }
    let failures = m.failures(&expected);
    for f in &failures {
        println!("FAIL: {f}");
    }
    println!(
        "{} expected failures, {} fixed, {} failures",
        judged.expected.len(),
        judged.fixed.len(),
        failures.len()
    );
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
