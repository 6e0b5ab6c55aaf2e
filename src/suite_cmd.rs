//! `listsync conformance-suite`: the official MCP conformance suite against `listsync serve
//! --http` (see [`listsync_harness::conformance_suite`]); writes `reports/conformance-suite.json`
//! and `.md`, and exits non-zero on a failed check without an explanation.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `listsync conformance-suite`.
#[derive(clap::Args)]
pub struct Args {
    /// Where the report goes.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Cache directory for the runner's npm packages.
    #[arg(long, default_value = ".cache/conformance-suite")]
    cache: PathBuf,
    /// Per-scenario timeout, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// Runs the suite and writes the report.
pub fn run(args: Args) -> Result<ExitCode> {
    let repo = std::env::current_dir()?;
    let exe = std::env::current_exe().context("the listsync binary")?;
    let report = listsync_harness::conformance_suite::run(
        &repo,
        &repo.join(&args.cache),
        &exe,
        args.timeout,
        &|line| eprintln!("conformance-suite: {line}"),
    )?;
    std::fs::create_dir_all(&args.out)?;
    std::fs::write(
        args.out.join("conformance-suite.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let page = args.out.join("conformance-suite.md");
    std::fs::write(&page, listsync_report::conformance_suite::render(&report))?;
    println!(
        "conformance suite: {} passed, {} failed ({} unexplained), {} warnings; report in {}",
        report.passed,
        report.failed,
        report.unexplained,
        report.warnings,
        page.display()
    );
    Ok(if report.unexplained == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}
