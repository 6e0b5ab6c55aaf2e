//! `listsync matrix`: replays the `traces/` corpus and the generated scenarios against every
//! implementation (our runtime, rmcp, the TypeScript SDK v1 and v2, the Python, Go, mcp-go and Java
//! SDKs — installing the third-party adapters on first use), and writes `reports/conformance.md` and
//! `reports/conformance.json` with a message log for every run that shows something.

use anyhow::Context;
use listsync_harness::adapters::Paths;
use listsync_harness::matrix::{self, CellState, Options};
use listsync_harness::run::Bounds;
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `listsync matrix`.
#[derive(clap::Args)]
pub struct Args {
    /// Runs at once (default: the number of CPUs, at least 2).
    #[arg(long)]
    jobs: Option<usize>,
    /// Only these implementations (comma-separated: reference, rmcp, ts-v1, ts-v2, python, go-sdk,
    /// mcp-go, java).
    #[arg(long, value_delimiter = ',')]
    only: Vec<String>,
    /// The trace corpus.
    #[arg(long, default_value = "traces")]
    traces: PathBuf,
    /// Where to write the report.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
}

/// Runs the matrix. Exit 1 if our reference runtime violates anything or a known-bad variant
/// goes uncaught, else 0.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let exe = std::env::current_exe().context("locating the listsync executable")?;
    let mut paths = Paths::discover(exe.clone()).map_err(anyhow::Error::msg)?;
    // Adapters start from a pinned copy, so a concurrent rebuild cannot swap builds mid-run.
    let pinned = listsync_harness::pin::PinnedExe::new(&exe).map_err(anyhow::Error::msg)?;
    paths.listsync = pinned.path().to_path_buf();
    let jobs = args.jobs.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .max(2)
    });
    let opts = Options {
        jobs,
        traces: args.traces,
        only: args.only,
        adapters: Vec::new(),
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
    let reference_bad = m.rows.iter().any(|r| {
        r.key.imp == listsync_harness::manifest::reference().name
            && r.cells.values().any(|c| c.state == CellState::Violated)
    });
    let uncaught: Vec<&str> = m
        .validation
        .iter()
        .filter(|v| {
            v.shows.is_some()
                && !v.caught
                && m.runs.iter().any(|r| {
                    r.id == v.run && r.status != listsync_harness::outcome::RunStatus::Unsupported
                })
        })
        .map(|v| v.trace.as_str())
        .collect();
    println!(
        "conformance matrix: {} rows, {} runs in {:.0} s -> {} (and conformance.json)",
        m.rows.len(),
        m.runs.len(),
        m.seconds,
        md.display()
    );
    if reference_bad {
        println!("FAIL: the reference implementation violates a property (see the report)");
    }
    if !uncaught.is_empty() {
        println!(
            "FAIL: known-bad variants not caught: {}",
            uncaught.join(", ")
        );
    }
    Ok(if reference_bad || !uncaught.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
