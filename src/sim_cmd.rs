//! `listsync sim`: the deterministic simulator (see [`listsync_sim::driver`]): a seeded
//! campaign, one seed, or a scale run (`--burst`), at the machine or the stack level. Prints the
//! summary table (or the JSON with `--json`), writes the evidence of each violated property
//! under `--out`, and exits non-zero when the outcome is not the expected one: any violation
//! for the reference, no violation of the property a known-bad strategy breaks, a scale run
//! above its walk bound. `listsync sim merge` merges the summaries of a campaign's shards
//! (see [`listsync_sim::merge`]).

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use listsync_sim::driver::{self, SimSettings};
use listsync_sim::summary::{Level, Summary};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `listsync sim`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<SimCmd>,
    /// What to run.
    #[command(flatten)]
    req: SimSettings,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON summary to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// List the fault plans and strategies and exit.
    #[arg(long)]
    list: bool,
    /// Also write a JUnit XML report to this file (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// `listsync sim merge`.
#[derive(clap::Subcommand)]
enum SimCmd {
    /// Merge the JSON summaries of every shard of one campaign (`--shard K/M --report FILE`)
    /// into the summary one run of all its seeds writes (the same counts and verdict; wall
    /// time and threads are the shards' added up); exits 1 when it is not as expected.
    Merge {
        /// The shards' summaries, one per shard, in any order.
        #[arg(required = true, value_name = "SUMMARY")]
        files: Vec<PathBuf>,
        /// Print one JSON document instead of the table.
        #[arg(long)]
        json: bool,
        /// Also write the merged JSON summary to this file.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Also write a JUnit XML report to this file (docs/ci.md).
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
}

/// Runs `listsync sim`.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(SimCmd::Merge {
        files,
        json,
        report,
        junit,
    }) = args.cmd
    {
        let s = listsync_sim::merge::merge_files(&files).map_err(anyhow::Error::msg)?;
        return emit(&s, "", json, report.as_deref(), junit.as_deref());
    }
    if args.list {
        print!("{}", driver::list());
        return Ok(ExitCode::SUCCESS);
    }
    let req = args.req;
    req.validate().map_err(anyhow::Error::msg)?;
    let bar = progress_bar(&req, args.json);
    let ran = driver::run(
        &req,
        &|n| bar.inc(n),
        &listsync_harness::replay::why_not_replayable,
    )
    .map_err(anyhow::Error::msg)?;
    bar.finish_and_clear();
    emit(
        &ran.summary,
        &ran.single_text(),
        args.json,
        args.report.as_deref(),
        args.junit.as_deref(),
    )
}

/// Writes the summary where asked, prints it (`before` first, with the table), and says by
/// the exit status whether it came out as expected.
fn emit(
    s: &Summary,
    before: &str,
    json_out: bool,
    report: Option<&Path>,
    junit: Option<&Path>,
) -> Result<ExitCode> {
    let json = serde_json::to_string_pretty(s)?;
    if let Some(path) = report {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(f) = junit {
        listsync_render::junit::write(f, &[listsync_render::junit::from_sim(s)])?;
    }
    if json_out {
        println!("{json}");
    } else {
        print!("{before}");
        print!("{s}");
    }
    Ok(if s.as_expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn progress_bar(req: &SimSettings, quiet: bool) -> ProgressBar {
    if quiet || req.burst.is_some() || req.seed.is_some() {
        return ProgressBar::hidden();
    }
    let seeds = req.seeds.unwrap_or(match req.level {
        Level::Machine => 1000,
        Level::Stack => 200,
    });
    crate::progress::bar(
        seeds,
        "{spinner} {pos}/{len} seeds [{bar:30}] {per_sec} {eta}",
    )
}
