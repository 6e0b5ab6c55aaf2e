//! `listsync sim`: the deterministic simulator (see [`listsync_sim::driver`]): a seeded
//! campaign, one seed, or a scale run (`--burst`), at the machine or the stack level. Prints the
//! summary table (or the JSON with `--json`), writes the evidence of each violated property
//! under `--out`, and exits non-zero when the outcome is not the expected one: any violation
//! for the reference, no violation of the property a known-bad strategy breaks, a scale run
//! above its walk bound. `listsync sim merge` merges the summaries of a campaign's shards
//! (see [`listsync_sim::merge`]).

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use listsync_sim::driver::{self, Request};
use listsync_sim::summary::{Level, Summary};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// Simulation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LevelArg {
    /// core's machines on simulated time and network (no tokio).
    Machine,
    /// The runtime's tokio + rmcp code over a simulated transport and clock.
    Stack,
}

/// Arguments of `listsync sim`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<SimCmd>,
    /// Simulation level.
    #[arg(long, value_enum, default_value = "machine")]
    level: LevelArg,
    /// Number of seeds to run (default: 1000 at the machine level, 200 at the stack level).
    #[arg(long, conflicts_with = "seed")]
    seeds: Option<u64>,
    /// Run this one seed (prints its run; shrinks and writes its violations).
    #[arg(long)]
    seed: Option<u64>,
    /// First seed of the campaign.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run only shard K of M (1-based): every M-th seed starting with the K-th.
    #[arg(long, value_name = "K/M")]
    shard: Option<String>,
    /// Clients per run (default: 1 to 4, drawn per run; with --burst: 1000).
    #[arg(long)]
    clients: Option<u32>,
    /// Scale run: one burst of this many mutations after every client has listed (one a batch;
    /// at the machine level at most 250 batches, the mutations spread over them).
    #[arg(long)]
    burst: Option<u32>,
    /// Server nodes sharing a store and a change bus (machine level only).
    #[arg(long)]
    nodes: Option<u8>,
    /// Fault plan (none, default, storm, crashy, lossy; default: `default`, or `none` with
    /// --burst).
    #[arg(long, value_name = "PLAN")]
    faults: Option<String>,
    /// Strategy under test: `reference`, a client strategy or a server strategy.
    #[arg(long, default_value = "reference")]
    strategy: String,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON summary to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Where shrunk traces of violations are written.
    #[arg(long, default_value = "reports/sim-traces")]
    out: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Do not shrink failures or write traces.
    #[arg(long)]
    no_shrink: bool,
    /// Scale runs over Streamable HTTP instead of stdio.
    #[arg(long)]
    http: bool,
    /// List the fault plans and strategies and exit.
    #[arg(long)]
    list: bool,
    /// With --seed: write the run's recorded history (every step and event; at the stack
    /// level, every line on the simulated network too) to this file.
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
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
    let req = Request {
        level: match args.level {
            LevelArg::Machine => Level::Machine,
            LevelArg::Stack => Level::Stack,
        },
        seeds: args.seeds,
        seed: args.seed,
        first_seed: args.first_seed,
        shard: args.shard,
        clients: args.clients,
        burst: args.burst,
        nodes: args.nodes,
        faults: args.faults,
        strategy: args.strategy,
        out: args.out,
        threads: args.threads,
        no_shrink: args.no_shrink,
        http: args.http,
        history: args.history,
    };
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
        listsync_report::junit::write(f, &[listsync_report::junit::from_sim(s)])?;
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

fn progress_bar(req: &Request, quiet: bool) -> ProgressBar {
    if quiet || req.burst.is_some() || req.seed.is_some() || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(req.seeds.unwrap_or(match req.level {
        Level::Machine => 1000,
        Level::Stack => 200,
    }));
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} seeds [{bar:30}] {per_sec} {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}
