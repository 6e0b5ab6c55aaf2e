//! `listsync host HOST [--plan P]... [--era E] [--repeat N] [--catch-up N] [--junit F] [--out DIR]
//! [--report DIR]`: runs a host under test (`listsync_host::run_host`) against the scripted model
//! and the reference server, and prints per property holds / violated / not observed with the
//! offered list per turn as evidence; exit 1 on a violation, 0 with a skip line when the host
//! needs a program that is missing. `--report DIR` keeps a summary and run 1 of each plan under
//! `DIR/hosts/` (`listsync_host::keep`) and renders the verdict table of `DIR/hosts.md` from
//! every summary there (`listsync_render::hosts`). `listsync own-host stale|careful ...` is our own two hosts.

use listsync_harness::hosts::plan::Plan;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `listsync host`.
#[derive(clap::Args)]
pub struct Args {
    /// The host: NAME[@VERSION] of harness/hosts/NAME/host.toml (claude-code, stale, careful),
    /// or the path of a host manifest.
    host: String,
    /// Host plan: a built-in (between-turns, in-call, paged) or a plan file; repeat for several
    /// [default: every built-in plan].
    #[arg(long, value_name = "PLAN")]
    plan: Vec<String>,
    /// Protocol era of the server.
    #[arg(long, default_value = "2025-11-25")]
    era: listsync_core::vocab::Era,
    /// Runs per plan (a verdict that varies between runs is timing-dependent).
    #[arg(long, default_value_t = 1)]
    repeat: usize,
    /// Model turns the offered list may lag behind the host's re-list.
    #[arg(long, value_name = "N", default_value_t = 0)]
    catch_up: usize,
    /// Also write a JUnit XML report (one testcase per plan × property).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Where each run's files go (DIR/HOST/PLAN/N/: session log, model recording, host output).
    #[arg(long, value_name = "DIR", default_value = "target/listsync/host")]
    out: PathBuf,
    /// Keep the runs' summary (DIR/hosts/HOST-VERSION.json) and run 1 of each plan
    /// (DIR/hosts/HOST-VERSION/PLAN/), and render DIR/hosts.md's verdict table from every
    /// summary in DIR/hosts (e.g. `--report reports`).
    #[arg(long, value_name = "DIR")]
    report: Option<PathBuf>,
}

/// Runs the host under each plan.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    if args.repeat == 0 || args.repeat > 100 {
        anyhow::bail!("--repeat must be 1 to 100");
    }
    let home = crate::home::home()?;
    let hosts_dir = home.tree.join("harness/hosts");
    let host = listsync_host::HostRef::find(&args.host, &hosts_dir).map_err(anyhow::Error::msg)?;
    let names: Vec<String> = if args.plan.is_empty() {
        listsync_harness::hosts::plan::BUILTIN
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect()
    } else {
        args.plan.clone()
    };
    let plans = names
        .iter()
        .map(|n| Plan::load(n))
        .collect::<Result<Vec<_>, _>>()
        .map_err(anyhow::Error::msg)?;
    let cache = match &home.adapter_cache {
        Some(a) => a.with_file_name("hosts"),
        None => home.tree.join(".cache/hosts"),
    };
    let opts = listsync_host::HostOptions {
        listsync: std::env::current_exe()?,
        hosts_dir,
        cache,
        era: args.era.as_str().to_owned(),
        repeat: args.repeat,
        catch_up: args.catch_up,
        out: args.out.clone(),
    };
    let mut reports = Vec::new();
    for plan in &plans {
        match listsync_host::run_host(&host, plan, &opts) {
            Ok(r) => {
                print!("{}", listsync_host::render(&r));
                reports.push(r);
            }
            Err(e @ listsync_host::HostError::Skipped(_)) => {
                println!("host {}: {e}", host.label());
                return Ok(ExitCode::SUCCESS);
            }
            Err(e) => anyhow::bail!("{e}"),
        }
    }
    if let Some(dir) = &args.report {
        let file =
            listsync_host::keep::keep(&host, &reports, &opts, dir).map_err(anyhow::Error::msg)?;
        listsync_render::hosts::update_page(dir)?;
        eprintln!(
            "listsync host: kept {} and rendered {}",
            file.display(),
            dir.join("hosts.md").display()
        );
    }
    if let Some(f) = &args.junit {
        listsync_render::junit::write(f, &[listsync_host::junit(&reports)])?;
    }
    Ok(if reports.iter().any(listsync_host::HostReport::violated) {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// `listsync own-host stale|careful --model URL [--prompt TEXT] -- SERVER...`.
pub fn own_host(args: Vec<String>) -> anyhow::Result<ExitCode> {
    Ok(ExitCode::from(listsync_own_host::main_with(&args)))
}
