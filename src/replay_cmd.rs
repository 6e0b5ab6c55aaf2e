//! `listsync replay TRACE... (--against IMPL[:ROLE][@VARIANT] | --adapter FILE[:ROLE][@VARIANT])
//! [--era E] [--require-race]`: poses each trace's adversary to a real implementation through
//! the harness (a built-in one, or any adapter described by a manifest file), prints per trace
//! its outcome (holds with the race posed, violated, race not posed, error), the verdicts judged
//! from what the implementation did next to the trace's, and the path of the message log.

use anyhow::Context;
use listsync_core::vocab::Era;
use listsync_harness::adapters::Subject;
use listsync_harness::outcome::Outcome;
use listsync_harness::outcome::RunStatus;
use listsync_harness::replay::{exit_code, headline, plan, replay, summary};
use listsync_harness::run::Bounds;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Flags of `listsync replay`.
#[derive(clap::Args)]
pub struct Args {
    /// Trace files (JSON), or corpus traces by name (`naive.json`, `naive`).
    #[arg(required = true)]
    traces: Vec<PathBuf>,
    /// Built-in implementation under test: IMPL[:ROLE][@VARIANT], IMPL one of reference, rmcp,
    /// ts-v1, ts-v2, python, go-sdk, mcp-go, java, fastmcp, server-everything (e.g. `ts-v1:client@listchanged-debounce0`,
    /// `reference@naive:client`, `reference@trace` for our runtime running the trace's own
    /// strategies).
    #[arg(long, required_unless_present = "adapter", conflicts_with = "adapter")]
    against: Option<String>,
    /// An adapter of your own: its manifest FILE[:ROLE][@VARIANT]
    /// (docs/writing-an-adapter.md).
    #[arg(long)]
    adapter: Option<String>,
    /// Protocol era (the trace's own era by default; a different one is reported unsupported).
    #[arg(long)]
    era: Option<Era>,
    /// Directory for the message logs.
    #[arg(long, default_value = "reports/replay")]
    out: PathBuf,
    /// Also write a JUnit XML report to this file (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write each run's wire as a session log (`*.session.jsonl` beside its message log),
    /// for `listsync audit` (docs/session-log.md).
    #[arg(long)]
    session_logs: bool,
    /// Fail (exit 1) when a trace's race was not posed: the implementation's own path never
    /// gave the adversary the opening the trace needs.
    #[arg(long)]
    require_race: bool,
}

/// Runs the replays; exit 1 when one violated a property or erred (or, with `--require-race`,
/// did not pose its race), else 0 (docs/trace-format.md, "Adaptive replay").
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let subject = match (&args.against, &args.adapter) {
        (_, Some(file)) => Subject::parse(file, true),
        (Some(imp), None) => Subject::parse(imp, false),
        (None, None) => Err("give --against IMPL or --adapter FILE".into()),
    }
    .map_err(anyhow::Error::msg)?;
    let exe = std::env::current_exe().context("locating the listsync executable")?;
    let mut paths = crate::home::paths(exe.clone())?;
    // Adapters start from a pinned copy, so a concurrent rebuild cannot swap builds mid-run.
    let pinned = listsync_harness::pin::PinnedExe::new(&exe).map_err(anyhow::Error::msg)?;
    paths.listsync = pinned.path().to_path_buf();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let mut worst = 0u8;
    let mut runs = Vec::new();
    for arg in &args.traces {
        let path = &crate::home::trace_file(arg)?;
        let trace = crate::trace_cmd::read(path)?;
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let p = plan(&trace, &name, &subject, args.era)
            .map_err(anyhow::Error::msg)
            .with_context(|| format!("{}", path.display()))?;
        let mut report = rt.block_on(replay(&p, &paths, Bounds::default()));
        println!(
            "trace {} against {} ({}, server {}, client {}): {}",
            path.display(),
            p.subject,
            p.scenario.era,
            report.server,
            report.client,
            headline(&report),
        );
        if report.status != RunStatus::Unsupported {
            for line in summary(&report).into_iter().skip(1) {
                println!("{line}");
            }
            let stem = name.trim_end_matches(".json");
            let log = args.out.join(format!(
                "{stem}.{}.log",
                p.subject.to_string().replace([':', '@'], "-")
            ));
            report.id = stem.into();
            listsync_harness::msglog::write(
                &log,
                &report,
                p.client.kinds,
                listsync_harness::msglog::Stamps::Shown,
            )
            .with_context(|| format!("writing {}", log.display()))?;
            println!("  message log: {}", log.display());
            if args.session_logs {
                let session = log.with_extension("session.jsonl");
                listsync_session::from_run::write(
                    &session,
                    &listsync_session::from_run::session_log(&report),
                )
                .with_context(|| format!("writing {}", session.display()))?;
                println!("  session log: {}", session.display());
            }
            report.log = Some(log.display().to_string());
        }
        if report.outcome() == Outcome::RaceNotPosed && !args.require_race {
            eprintln!(
                "listsync replay: {}: the race was not posed, so this run proves nothing about it (--require-race makes it fail)",
                path.display()
            );
        }
        let code = exit_code(&report, args.require_race);
        worst = worst.max(code);
        runs.push(report);
    }
    if let Some(f) = &args.junit {
        let suite = listsync_render::junit::from_replays(&runs, Path::new(""));
        listsync_render::junit::write(f, &[suite])?;
    }
    Ok(ExitCode::from(worst))
}
