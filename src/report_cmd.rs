//! `listsync report`: regenerates every page under `reports/` from the tools' JSON outputs
//! (see [`listsync_render::pages`]).

use anyhow::{Context, Result};
use listsync_render::mutants;
use listsync_render::pages::{self, Sources};
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `listsync report`.
#[derive(clap::Args)]
pub struct Args {
    /// The reports directory (inputs and outputs).
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// The committed trace corpus (each trace gets a diagram).
    #[arg(long, default_value = "traces")]
    traces: PathBuf,
    /// Where `cargo bench` wrote its figures (merged into bench.json if present).
    #[arg(long, default_value = "target/listsync-bench")]
    bench_figures: PathBuf,
    /// Import a cargo-mutants run directory (its `run.json` and `mutants.out/`, as
    /// `scripts/mutants.sh` leaves them) into `mutants.json` first: its mutants replace those of
    /// the files (or the shard) it mutated; the other files keep their earlier runs.
    #[arg(long, value_name = "DIR")]
    mutants: Option<PathBuf>,
    /// The survivors' explanations, attached to the imported run.
    #[arg(long, default_value = "docs/mutants-survivors.json")]
    mutants_explained: PathBuf,
    /// Only print the full names of the mutants `mutants.json` has judged (`judged`) or lists as
    /// survivors (`survivors`), of the FILEs given (all when none), one per line; write nothing.
    /// `scripts/mutants.sh --rest` and `--again` read them.
    #[arg(long, value_name = "WHICH", value_parser = ["judged", "survivors"])]
    list_mutants: Option<String>,
    /// With --list-mutants: the mutated files whose mutants to list.
    #[arg(requires = "list_mutants", value_name = "FILE")]
    mutated: Vec<String>,
}

/// Runs `listsync report`.
pub fn run(args: Args) -> Result<ExitCode> {
    if let Some(which) = &args.list_mutants {
        let json = args.out.join("mutants.json");
        let text = std::fs::read_to_string(&json)
            .with_context(|| format!("reading {}", json.display()))?;
        let report = mutants::parse(&text).with_context(|| json.display().to_string())?;
        let which = if which == "survivors" {
            mutants::Which::Survivors
        } else {
            mutants::Which::Judged
        };
        for name in mutants::names(&report, which, &args.mutated) {
            println!("{name}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    let w = pages::regenerate(&Sources {
        out: args.out.clone(),
        traces: args.traces,
        bench_figures: args.bench_figures,
        mutants_run: args.mutants,
        mutants_explained: args.mutants_explained,
        audit_not_judged: listsync_session::audit::not_judged,
    })?;
    println!(
        "listsync report: wrote {} in {} and {} diagrams",
        w.pages.join(", "),
        args.out.display(),
        w.diagrams.len()
    );
    for f in &w.failed {
        eprintln!("listsync report: {f}");
    }
    Ok(if w.failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
