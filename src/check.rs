//! `listsync check`: runs the model configurations, prints the config × property table, writes
//! every counterexample as a trace under `reports/traces/`, the table as
//! `reports/model-check.json`, renders `reports/model-check.md` and the counterexamples' sequence
//! diagrams through `listsync report`'s renderer, and exits non-zero if any verdict differs from the
//! configuration's expected verdict.

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_model::configs::{self, Config};
use listsync_model::{CheckResult, check};
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
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
    /// Checker threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// List the configurations and exit.
    #[arg(long)]
    list: bool,
    /// Where to write traces and reports.
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Model README whose generated table to refresh (full suite only; skipped if absent).
    #[arg(long, default_value = "model/README.md")]
    readme: PathBuf,
    /// Also refresh the committed counterexample corpus in this directory (one trace per
    /// known-bad configuration, its shortest counterexample).
    #[arg(long)]
    update_corpus: Option<PathBuf>,
}

/// One property's verdict in the JSON output.
#[derive(Serialize)]
struct PropertyOut {
    verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    depth: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<String>,
}

/// One configuration in the JSON output.
#[derive(Serialize)]
struct ConfigOut<'a> {
    name: &'a str,
    about: &'a str,
    era: &'a str,
    strategies: BTreeMap<&'static str, &'a str>,
    search: listsync_model::Search,
    unique_states: usize,
    max_depth: usize,
    seconds: f64,
    states_per_second: f64,
    exhaustive: bool,
    properties: BTreeMap<Property, PropertyOut>,
    expected: Verdicts,
    as_expected: bool,
}

#[derive(Serialize)]
struct Report<'a> {
    tool: &'static str,
    configs: Vec<ConfigOut<'a>>,
    total_unique_states: usize,
    total_seconds: f64,
    all_as_expected: bool,
}

/// Runs `listsync check`.
pub fn run(args: Args) -> Result<ExitCode> {
    let all = configs::all();
    if args.list {
        for c in &all {
            println!("{:28} {}", c.name(), c.about);
        }
        return Ok(ExitCode::SUCCESS);
    }
    let selected: Vec<Config> = if args.configs.is_empty() {
        all
    } else {
        let mut v = Vec::new();
        for name in &args.configs {
            match all.iter().find(|c| c.name() == name) {
                Some(c) => v.push(c.clone()),
                None => {
                    let names: Vec<_> = all.iter().map(|c| c.name().to_owned()).collect();
                    bail!(
                        "unknown configuration '{name}'; known: {}",
                        names.join(", ")
                    );
                }
            }
        }
        v
    };
    let full_suite = args.configs.is_empty();
    let trace_dir = args.out.join("traces");
    std::fs::create_dir_all(&trace_dir)
        .with_context(|| format!("creating {}", trace_dir.display()))?;

    let bar = if std::io::stderr().is_terminal() {
        let b = ProgressBar::new(selected.len() as u64);
        b.set_style(
            ProgressStyle::with_template("{spinner} [{pos}/{len}] {msg}").expect("valid template"),
        );
        b.enable_steady_tick(Duration::from_millis(120));
        b
    } else {
        ProgressBar::hidden()
    };
    let started = Instant::now();
    let mut results = Vec::new();
    for c in &selected {
        bar.set_message(format!("{} ...", c.name()));
        let mut last_line = Instant::now();
        let name = c.name().to_owned();
        let r = check(&c.scenario, c.search, args.threads, &mut |states, secs| {
            bar.set_message(format!("{name}: {states} states, {secs:.1}s"));
            if bar.is_hidden() && last_line.elapsed() > Duration::from_secs(10) {
                eprintln!("listsync check: {name}: {states} states after {secs:.0}s");
                last_line = Instant::now();
            }
        });
        bar.inc(1);
        results.push(r);
    }
    bar.finish_and_clear();
    let total_seconds = started.elapsed().as_secs_f64();

    // Traces of a previous run of these configurations may no longer hold: remove them.
    for c in &selected {
        let prefix = format!("{}.", c.name());
        for entry in std::fs::read_dir(&trace_dir)?.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".json") {
                std::fs::remove_file(entry.path())?;
            }
        }
    }
    let mut out_configs = Vec::new();
    for (c, r) in selected.iter().zip(&results) {
        let mut properties = BTreeMap::new();
        for (p, v) in &r.verdicts {
            let cx = r.counterexamples.iter().find(|x| x.property == *p);
            let trace = match cx {
                Some(x) if *v == Verdict::Violated => {
                    let path = trace_dir.join(format!("{}.{}.json", c.name(), p));
                    std::fs::write(&path, x.trace.to_json() + "\n")
                        .with_context(|| format!("writing {}", path.display()))?;
                    Some(path.display().to_string())
                }
                _ => None,
            };
            properties.insert(
                *p,
                PropertyOut {
                    verdict: *v,
                    depth: cx.map(|x| x.depth).filter(|_| *v == Verdict::Violated),
                    trace,
                },
            );
        }
        out_configs.push(ConfigOut {
            name: c.name(),
            about: c.about,
            era: &r.era,
            strategies: BTreeMap::from([
                ("client", r.strategies.client.as_str()),
                ("server", r.strategies.server.as_str()),
            ]),
            search: r.search,
            unique_states: r.unique_states,
            max_depth: r.max_depth,
            seconds: r.seconds,
            states_per_second: r.unique_states as f64 / r.seconds.max(1e-9),
            exhaustive: r.exhaustive,
            properties,
            expected: c.expected(),
            as_expected: r.verdicts == c.expected(),
        });
    }
    if let Some(dir) = &args.update_corpus {
        update_corpus(dir, &selected, &results)?;
    }
    let report = Report {
        tool: concat!("listsync ", env!("CARGO_PKG_VERSION")),
        total_unique_states: results.iter().map(|r| r.unique_states).sum(),
        total_seconds,
        all_as_expected: out_configs.iter().all(|c| c.as_expected),
        configs: out_configs,
    };
    let table = text_table(&report);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{table}");
    }
    if full_suite {
        std::fs::write(
            args.out.join("model-check.json"),
            serde_json::to_string_pretty(&report)? + "\n",
        )?;
        // One renderer for the page and its diagrams: the report command's.
        crate::report_cmd::model_check(&args.out)?;
        update_readme(&args.readme, &report)?;
    }
    if report.all_as_expected {
        Ok(ExitCode::SUCCESS)
    } else {
        eprintln!("listsync check: some verdicts differ from the expected ones (marked DIFFERS)");
        Ok(ExitCode::from(1))
    }
}

/// Short column headers for the terminal table.
fn short(p: Property) -> &'static str {
    match p {
        Property::NoTornSnapshot => "torn",
        Property::NoStaleOverwrite => "stale",
        Property::Converges => "conv",
        Property::NoLostWakeup => "wake",
        Property::NotifyAfterCommit => "commit",
        Property::NoCallToRemoved => "call",
        Property::BoundedRefresh => "bound",
        Property::AuthIsolation => "auth",
        Property::ListenThenList => "listen",
    }
}

fn cell(p: &PropertyOut) -> String {
    match p.verdict {
        Verdict::Holds => "ok".into(),
        Verdict::Violated => format!("X{}", p.depth.unwrap_or(0)),
        Verdict::NotApplicable => "-".into(),
    }
}

fn text_table(r: &Report) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "{:26} {:10} {:>8} {:>5} {:>7} {:>9}",
        "CONFIG", "ERA", "STATES", "DEPTH", "TIME", "STATES/S"
    );
    for p in Property::ALL {
        let _ = write!(s, " {:>6}", short(p));
    }
    let _ = writeln!(s, "  VERDICT");
    for c in &r.configs {
        let _ = write!(
            s,
            "{:26} {:10} {:>8} {:>5} {:>6.2}s {:>9.0}",
            c.name, c.era, c.unique_states, c.max_depth, c.seconds, c.states_per_second
        );
        for p in Property::ALL {
            let _ = write!(
                s,
                " {:>6}",
                c.properties.get(&p).map(cell).unwrap_or_default()
            );
        }
        let _ = writeln!(
            s,
            "  {}",
            if c.as_expected {
                "as expected"
            } else {
                "DIFFERS"
            }
        );
    }
    let _ = writeln!(
        s,
        "\nok = holds (whole state space explored)   Xd = violated, counterexample of d steps   - = n/a"
    );
    let _ = writeln!(
        s,
        "{} configurations, {} states in {:.2}s ({:.0} states/s); traces of violations in reports/traces/",
        r.configs.len(),
        r.total_unique_states,
        r.total_seconds,
        r.total_unique_states as f64 / r.total_seconds.max(1e-9)
    );
    s
}

const BEGIN: &str = "<!-- BEGIN GENERATED BY listsync check -->";
const END: &str = "<!-- END GENERATED BY listsync check -->";

/// Rewrites the table between the markers of the model README, if it has them.
fn update_readme(path: &Path, r: &Report) -> Result<()> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        return Ok(());
    };
    if e < b {
        return Ok(());
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| config | era | client | server | what it shows | unique states | depth | seconds | expected violations |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---:|---:|---:|---|");
    for c in &r.configs {
        let violated: Vec<_> = c
            .expected
            .iter()
            .filter(|(_, v)| **v == Verdict::Violated)
            .map(|(p, _)| format!("`{p}`"))
            .collect();
        let _ = writeln!(
            t,
            "| `{}` | {} | {} | {} | {} | {} | {} | {:.2} | {} |",
            c.name,
            c.era,
            c.strategies["client"],
            c.strategies["server"],
            c.about,
            c.unique_states,
            c.max_depth,
            c.seconds,
            if violated.is_empty() {
                "none: every applicable property holds".into()
            } else {
                violated.join(", ")
            }
        );
    }
    let _ = writeln!(
        t,
        "\nTimes are from one `listsync check` run on the machine that last regenerated this file."
    );
    let new = format!("{}{BEGIN}\n{t}{}", &text[..b], &text[e..]);
    if new != text {
        std::fs::write(path, new)?;
    }
    Ok(())
}

/// Writes the shortest counterexample of each known-bad configuration (for its first expected
/// violation) to `dir/<config>.json`.
fn update_corpus(dir: &Path, cfgs: &[Config], results: &[CheckResult]) -> Result<()> {
    std::fs::create_dir_all(dir)?;
    for (c, r) in cfgs.iter().zip(results) {
        let Some(primary) = c.violates.first() else {
            continue;
        };
        let Some(cx) = r.counterexamples.iter().find(|x| x.property == *primary) else {
            bail!(
                "{}: expected a counterexample of {primary}, found none",
                c.name()
            );
        };
        let path = dir.join(format!("{}.json", c.name()));
        std::fs::write(&path, cx.trace.to_json() + "\n")
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
