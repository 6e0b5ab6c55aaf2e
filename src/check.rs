//! `listsync check`: model-checks the configurations (see [`listsync_model::suite`]), prints the
//! configuration × property table, writes each counterexample as a trace and the run as
//! `model-check.json` under `--out` (default `target/listsync/check`, so an ordinary run leaves
//! the tree as it was), and exits non-zero if any verdict differs from the expected one.
//! `--update-reports` writes into `reports/` instead, renders `reports/model-check.md` and the
//! counterexamples' diagrams, and refreshes the table of `model/README.md`: the committed pages
//! change only on purpose.

use anyhow::{Context, Result};
use indicatif::ProgressBar;
use listsync_core::property::Property;
use listsync_model::suite;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Arguments of `listsync check`.
#[derive(clap::Args)]
pub struct Args {
    /// Configurations to run (default: all).
    configs: Vec<String>,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Checker threads (default: all cores)
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..=256))]
    threads: Option<u16>,
    /// List the configurations and exit.
    #[arg(long)]
    list: bool,
    /// Run the deep suite instead (worlds far larger than the default suite's, run by hand; none
    /// finishes in hours, so bound them with --max-states): writes model-check-deep.json, and with
    /// --update-reports the deep section of reports/model-check.md
    #[arg(long)]
    deep: bool,
    /// Run every known-bad strategy in a world as big as reference-large instead (each known-bad
    /// configuration enlarged: three pages, four batches, a call, a duplicate and a cut), each
    /// explored breadth-first and depth-first, each bounded by --max-states (default 2,000,000):
    /// a property is violated if either search finds it; writes model-check-at-size.json, and with
    /// --update-reports the strategy × property table of reports/model-check.md. Exit 1 if a
    /// known-bad escapes a property its small world shows it breaking.
    #[arg(long, conflicts_with = "deep")]
    at_size: bool,
    /// Run the symmetry reduction's soundness runs instead: every configuration of the suite
    /// (or those named) whose clients are interchangeable, and each single-client known-bad one
    /// given a twin client, depth-first with and without the
    /// reduction, compared (verdicts, situations, progress, counterexample replays); writes
    /// model-check-reduction.json. Run by hand.
    #[arg(long, conflicts_with_all = ["deep", "at_size"])]
    reduction: bool,
    /// Stop each configuration once the checker has generated N states (repeats included), if it
    /// has not finished before: a bounded exploration, for worlds too large to finish (the deep
    /// suite). Its "ok" means no violation among the states explored; quiescence is not judged.
    /// The default suite's committed report is always exhaustive (not with --update-reports
    /// unless --deep).
    #[arg(long, value_name = "N")]
    max_states: Option<std::num::NonZeroUsize>,
    /// Stop each configuration once the process's resident memory passes MIB mebibytes: no
    /// state is expanded any further, and the configuration is reported bounded (memory), its
    /// progress pass not run.
    #[arg(long, value_name = "MIB")]
    max_memory: Option<std::num::NonZeroU64>,
    /// Explore with this search instead of each configuration's own: bfs, dfs, dfs_symmetric
    /// (symmetry reduction where the clients are interchangeable) or walks (random walks,
    /// never exhaustive). For the deep suite's runs to the end; not with --update-reports of
    /// the default suite, whose page shows each configuration's own search.
    #[arg(long, value_parser = parse_search, conflicts_with_all = ["at_size", "reduction"])]
    search: Option<listsync_model::Search>,
    /// Where to write traces and model-check.json (default: target/listsync/check; with
    /// --update-reports: reports).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Write into reports/ and regenerate the committed pages: reports/model-check.md, the
    /// counterexamples' diagrams and the table of model/README.md (whole suite only).
    #[arg(long)]
    update_reports: bool,
    /// Model README whose generated table --update-reports refreshes.
    #[arg(long, default_value = "model/README.md")]
    readme: PathBuf,
    /// Also refresh the committed counterexample corpus in this directory (one trace per
    /// known-bad configuration, its shortest counterexample).
    #[arg(long)]
    update_corpus: Option<PathBuf>,
    /// Also write a JUnit XML report to this file (docs/ci.md).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

impl Args {
    /// Where the run writes: `--out`, else reports/ with `--update-reports`, else
    /// target/listsync/check.
    fn out_dir(&self) -> PathBuf {
        self.out.clone().unwrap_or_else(|| {
            PathBuf::from(if self.update_reports {
                "reports"
            } else {
                "target/listsync/check"
            })
        })
    }

    /// `--threads`, else every core.
    fn checker_threads(&self) -> usize {
        self.threads.map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            usize::from,
        )
    }
}

/// Runs `listsync check`.
pub fn run(args: Args) -> Result<ExitCode> {
    if args.list {
        for c in listsync_model::configs::all() {
            println!("{:28} {}", c.name(), c.about);
        }
        println!("\ndeep suite (--deep):");
        for c in listsync_model::configs::deep() {
            println!("{:28} {}", c.name(), c.about);
        }
        let names = |v: Vec<String>| v.join(", ");
        use listsync_core::strategy::{ClientStrategy, ServerStrategy};
        println!(
            "\nproperties: {}",
            names(Property::ALL.iter().map(ToString::to_string).collect())
        );
        println!(
            "client strategies: {}",
            names(
                ClientStrategy::ALL
                    .iter()
                    .map(ToString::to_string)
                    .collect()
            )
        );
        println!(
            "server strategies: {}",
            names(
                ServerStrategy::ALL
                    .iter()
                    .map(ToString::to_string)
                    .collect()
            )
        );
        return Ok(ExitCode::SUCCESS);
    }
    if args.at_size {
        return at_size(&args);
    }
    if args.reduction {
        return reduction(&args);
    }
    listsync_model::memory::set_limit(args.max_memory.map(|m| m.get() << 20));
    let mut selected = suite::select(&args.configs, args.deep).map_err(anyhow::Error::msg)?;
    if let Some(search) = args.search {
        if args.update_reports && !args.deep {
            anyhow::bail!("--search with --update-reports is for the deep suite only");
        }
        for c in &mut selected {
            c.search = search;
        }
    }
    if args.update_reports && !args.configs.is_empty() && !args.deep {
        anyhow::bail!("--update-reports regenerates the committed pages: run the whole suite");
    }
    if args.update_reports && (args.max_states.is_some() || args.max_memory.is_some()) && !args.deep
    {
        anyhow::bail!(
            "--max-states or --max-memory with --update-reports is for the deep suite only: the default suite's report is exhaustive"
        );
    }
    let out = args.out_dir();
    let traces = out.join("traces");
    let bar = progress_bar(selected.len() as u64);
    let mut last_line = Instant::now();
    let mut current = String::new();
    let run = suite::run(
        selected,
        args.checker_threads(),
        args.max_states.map(std::num::NonZeroUsize::get),
        &mut |name, states, secs| {
            if name != current {
                if !current.is_empty() {
                    bar.inc(1);
                }
                current = name.to_owned();
            }
            bar.set_message(format!("{name}: {states} states, {secs:.1}s"));
            if bar.is_hidden() && last_line.elapsed() > Duration::from_secs(10) {
                eprintln!("listsync check: {name}: {states} states after {secs:.0}s");
                last_line = Instant::now();
            }
        },
    );
    bar.finish_and_clear();
    run.write_traces(&traces)
        .with_context(|| format!("writing traces to {}", traces.display()))?;
    if let Some(dir) = &args.update_corpus {
        run.write_corpus(dir).map_err(anyhow::Error::msg)?;
    }
    // Deep configurations named with --update-reports (each run in its own process, so that
    // its memory figure and limit are its own) replace their entries in the committed file.
    let merged;
    let report = if args.deep && args.update_reports && !args.configs.is_empty() {
        let path = out.join(listsync_render::model_check::DEEP_FILE);
        let before = std::fs::read_to_string(&path)
            .ok()
            .map(|t| listsync_render::model_check::parse(&t))
            .transpose()
            .with_context(|| format!("reading {}", path.display()))?;
        merged = suite::merge(before, run.report.clone());
        &merged
    } else {
        &run.report
    };
    let json = serde_json::to_string_pretty(report)? + "\n";
    let json_path = out.join(if args.deep {
        listsync_render::model_check::DEEP_FILE
    } else {
        "model-check.json"
    });
    std::fs::write(&json_path, &json)
        .with_context(|| format!("writing {}", json_path.display()))?;
    if args.update_reports {
        listsync_render::pages::model_check(&out)?;
        if !args.deep {
            suite::update_readme(&args.readme, report)
                .with_context(|| format!("updating {}", args.readme.display()))?;
        }
    }
    let this_run = &run.report;
    if let Some(f) = &args.junit {
        listsync_render::junit::write(f, &[listsync_render::junit::from_check(this_run, &traces)])?;
    }
    if args.json {
        print!("{}", serde_json::to_string_pretty(this_run)? + "\n");
    } else {
        print!(
            "{}",
            listsync_render::model_check::text_table(this_run, &traces)
        );
    }
    if this_run.all_as_expected {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("listsync check: some verdicts differ from the expected ones (marked DIFFERS)");
        Ok(ExitCode::from(1))
    }
}

/// `listsync check --at-size`: the known-bad strategies in worlds as big as reference-large.
fn at_size(args: &Args) -> Result<ExitCode> {
    if args.update_reports && !args.configs.is_empty() {
        anyhow::bail!("--update-reports regenerates the committed table: run every known-bad");
    }
    let (mut selected, left) = listsync_model::at_size::known_bad();
    if !args.configs.is_empty() {
        selected.retain(|c| {
            args.configs
                .iter()
                .any(|n| c.name() == n || c.name() == format!("{n}@large"))
        });
        if selected.is_empty() {
            anyhow::bail!("no known-bad configuration of that name (`listsync check --list`)");
        }
    }
    let out = args.out_dir();
    let max_states = args
        .max_states
        .map_or(listsync_model::at_size::DEFAULT_MAX_STATES, |n| n.get());
    let threads = args.checker_threads();
    let deep = listsync_model::at_size::depth_first(&selected);
    let mut runs = Vec::new();
    for (how, selected) in [("breadth-first", selected), ("depth-first", deep)] {
        let run = run_labelled("--at-size", how, selected, threads, Some(max_states));
        // The counterexamples stay out of reports/ (no page links them): with
        // --update-reports they go under target/.
        let traces = if args.update_reports {
            PathBuf::from("target/listsync/check")
        } else {
            out.clone()
        }
        .join("traces")
        .join("at-size")
        .join(how);
        run.write_traces(&traces)
            .with_context(|| format!("writing traces to {}", traces.display()))?;
        runs.push(run.report);
    }
    let dfs = runs.pop().expect("two runs");
    let bfs = runs.pop().expect("two runs");
    let report = &listsync_model::at_size::merge(bfs, dfs);
    let json_path = out.join(listsync_render::strategy_table::AT_SIZE_FILE);
    std::fs::create_dir_all(&out)?;
    std::fs::write(&json_path, serde_json::to_string_pretty(report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    for (name, why) in &left {
        println!("{name}: left in its own world: {why}");
    }
    let escaped = listsync_render::strategy_table::escaped(report);
    print!("{}", listsync_render::strategy_table::text_table(report));
    if args.update_reports {
        listsync_render::pages::model_check(&out)?;
    }
    for e in &escaped {
        eprintln!("listsync check --at-size: {e}");
    }
    Ok(if escaped.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `listsync check --reduction`: the symmetry reduction with and without, side by side.
fn reduction(args: &Args) -> Result<ExitCode> {
    use listsync_model::reduction;
    if args.update_reports && !args.configs.is_empty() {
        anyhow::bail!("--update-reports regenerates the committed table: run the whole suite");
    }
    let selected = suite::select(&args.configs, false).map_err(anyhow::Error::msg)?;
    let (with, without) = reduction::twins(selected);
    let clients = with
        .iter()
        .map(|c| (c.name().to_owned(), c.scenario.clients.len()))
        .collect();
    if with.is_empty() {
        anyhow::bail!("none of these configurations has interchangeable clients");
    }
    let out = args.out_dir();
    let threads = args.checker_threads();
    let max_states = args.max_states.map(std::num::NonZeroUsize::get);
    let mut runs = Vec::new();
    for (how, selected) in [("with symmetry", with), ("without", without)] {
        runs.push(run_labelled(
            "--reduction",
            how,
            selected,
            threads,
            max_states,
        ));
    }
    let plain = runs.pop().expect("two runs");
    let reduced = runs.pop().expect("two runs");
    let report = reduction::ReductionReport {
        reduction: "symmetry over interchangeable clients".into(),
        replays: reduction::replays(&reduced),
        clients,
        with: reduced.report,
        without: plain.report,
    };
    std::fs::create_dir_all(&out)?;
    let json_path = out.join(reduction::FILE);
    std::fs::write(&json_path, serde_json::to_string_pretty(&report)? + "\n")
        .with_context(|| format!("writing {}", json_path.display()))?;
    print!("{}", listsync_render::reduction_table::text_table(&report));
    if args.update_reports {
        listsync_render::pages::model_check(&out)?;
    }
    let unsound: Vec<String> = report
        .compare()
        .into_iter()
        .filter(|c| !c.sound())
        .map(|c| c.config)
        .collect();
    if unsound.is_empty() {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!(
            "listsync check --reduction: the runs differ in {}",
            unsound.join(", ")
        );
        Ok(ExitCode::from(1))
    }
}

/// One run of `selected` for `check MODE`, labelled `how` in its progress (a bar on a terminal,
/// else a line per configuration).
fn run_labelled(
    mode: &str,
    how: &str,
    selected: Vec<listsync_model::configs::Config>,
    threads: usize,
    max_states: Option<usize>,
) -> suite::SuiteRun {
    let bar = progress_bar(selected.len() as u64);
    let mut current = String::new();
    let run = suite::run(selected, threads, max_states, &mut |name, states, secs| {
        if name != current {
            if !current.is_empty() {
                bar.inc(1);
            }
            current = name.to_owned();
            if bar.is_hidden() {
                eprintln!("listsync check {mode}: {name} ({how})");
            }
        }
        bar.set_message(format!("{name} ({how}): {states} states, {secs:.1}s"));
    });
    bar.finish_and_clear();
    run
}

/// A search by its name in the reports.
fn parse_search(name: &str) -> Result<listsync_model::Search, String> {
    use listsync_model::Search;
    [
        Search::Bfs,
        Search::Dfs,
        Search::DfsSymmetric,
        Search::Walks,
    ]
    .into_iter()
    .find(|s| s.to_string() == name)
    .ok_or_else(|| format!("unknown search '{name}' (bfs, dfs, dfs_symmetric, walks)"))
}

fn progress_bar(len: u64) -> ProgressBar {
    crate::progress::bar(len, "{spinner} [{pos}/{len}] {msg}")
}
