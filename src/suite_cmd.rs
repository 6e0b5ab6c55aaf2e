//! `listsync conformance-suite`: the official MCP conformance suite against `listsync serve
//! --http` (see [`listsync_harness::conformance_suite`]); writes `reports/conformance-suite.json`
//! and `.md`, and exits non-zero on a failed check without an explanation.

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;

/// Flags of `listsync conformance-suite`.
#[derive(clap::Args)]
pub struct Args {
    /// Where the report goes (default: reports/ inside a listsync source tree, else the current
    /// directory).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Cache directory for the runner's npm packages (default: .cache/conformance-suite of the
    /// source tree, else conformance-suite/ in the cache directory).
    #[arg(long)]
    cache: Option<PathBuf>,
    /// Per-scenario timeout, in seconds.
    #[arg(long, default_value_t = 60)]
    timeout: u64,
}

/// Runs the suite and writes the report.
pub fn run(args: Args) -> Result<ExitCode> {
    let home = crate::home::home()?;
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(if home.source { "reports" } else { "." }));
    let exe = std::env::current_exe().context("the listsync binary")?;
    let cache = match args.cache {
        Some(c) => std::path::absolute(&c).unwrap_or(c),
        None => home.suite_cache.clone(),
    };
    let report = listsync_harness::conformance_suite::run(
        &home.tree,
        &cache,
        &exe,
        args.timeout,
        &|line| eprintln!("conformance-suite: {line}"),
    )?;
    std::fs::create_dir_all(&out)?;
    std::fs::write(
        out.join("conformance-suite.json"),
        serde_json::to_string_pretty(&report)? + "\n",
    )?;
    let page = out.join("conformance-suite.md");
    std::fs::write(&page, listsync_render::conformance_suite::render(&report))?;
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
