//! `listsync matrix [--adapter FILE]...`: replays the `traces/` corpus and the generated scenarios
//! against every implementation (our runtime, rmcp, the TypeScript SDK v1 and v2, the Python, Go,
//! mcp-go and Java SDKs — installing the third-party adapters on first use — and the rows of any
//! adapter of the user's own), and writes `reports/conformance.md` and `reports/conformance.json`
//! with a message log for every run that shows something.

use anyhow::Context;
use listsync_harness::adapters::Paths;
use listsync_harness::manifest::Manifest;
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
    /// The trace corpus.
    #[arg(long, default_value = "traces")]
    traces: PathBuf,
    /// Where to write the report.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Also write a JUnit XML report to this file (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// Runs the matrix. Exit 1 if our reference runtime violates anything or a known-bad variant
/// goes uncaught, else 0.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the listsync executable")?;
    let mut paths = Paths::discover(exe.clone()).map_err(anyhow::Error::msg)?;
    // Adapters start from a pinned copy, so a concurrent rebuild cannot swap builds mid-run.
    let pinned = listsync_harness::pin::PinnedExe::new(&exe).map_err(anyhow::Error::msg)?;
    paths.listsync = pinned.path().to_path_buf();
    let jobs = args.jobs.map_or_else(
        listsync_harness::matrix::default_jobs,
        std::num::NonZeroUsize::get,
    );
    let opts = Options {
        jobs,
        traces: args.traces,
        only: args.only,
        adapters: args
            .adapters
            .iter()
            .map(|f| Manifest::load(f).map(Arc::new))
            .collect::<Result<_, _>>()
            .map_err(anyhow::Error::msg)?,
        bounds: Bounds::default(),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let progress = |line: &str| eprintln!("{line}");
    let mut m = rt
        .block_on(matrix::run(&paths, &opts, &progress))
        .map_err(anyhow::Error::msg)?;
    std::fs::create_dir_all(&args.out)?;
    listsync_harness::report::write(&args.out, &mut m)
        .with_context(|| format!("writing the report under {}", args.out.display()))?;
    let md = listsync_report::pages::write_conformance_page(&args.out)
        .with_context(|| format!("rendering conformance.md under {}", args.out.display()))?;
    println!(
        "conformance matrix: {} rows, {} runs in {:.0} s -> {} (and conformance.json)",
        m.rows.len(),
        m.runs.len(),
        m.seconds,
        md.display()
    );
    if let Some(f) = &args.junit {
        let suite = listsync_report::junit::from_matrix(&m.runs, &args.out);
        listsync_report::junit::write(f, &[suite])?;
    }
    let failures = m.failures();
    for f in &failures {
        println!("FAIL: {f}");
    }
    Ok(if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
