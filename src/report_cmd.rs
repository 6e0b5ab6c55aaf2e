//! `listsync report`: regenerates every page under `reports/` from the tools' JSON outputs —
//! `model-check.md` (+ a sequence diagram per counterexample trace), `sim.md` (+ diagrams of
//! the simulator's shrunk traces), `conformance.md` (only when the harness has not rendered it
//! itself), `bench.md` (+ plots) and the index
//! `README.md`. Bench figures that `cargo bench` left under `target/listsync-bench/` are first
//! merged into `reports/bench.json` (a group is replaced only by a newer run of it).
//!
//! `listsync check` calls [`model_check`] so that the model-check page has one renderer.

use anyhow::{Context, Result};
use listsync_report::bench::BenchFile;
use listsync_report::model_check::{self as mc, ModelCheck};
use listsync_report::{bench_page, conformance, diagram, plot, sim};
use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Arguments of `listsync report`.
#[derive(clap::Args)]
pub struct Args {
    /// The reports directory (inputs and outputs).
    #[arg(long, default_value = "reports")]
    out: PathBuf,
    /// Where `cargo bench` wrote its figures (merged into bench.json if present).
    #[arg(long, default_value = "target/listsync-bench")]
    bench_figures: PathBuf,
}

/// What one regeneration wrote.
#[derive(Default)]
struct Written {
    pages: Vec<String>,
    diagrams: usize,
    failed: Vec<String>,
}

/// Runs `listsync report`.
pub fn run(args: Args) -> Result<ExitCode> {
    let out = &args.out;
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let diagrams = out.join("diagrams");
    // From scratch: every diagram is regenerated from its trace.
    if diagrams.exists() {
        std::fs::remove_dir_all(&diagrams)?;
    }
    let mut w = Written::default();
    let check = model_check_into(out, &mut w)?;
    let sims = sim_page(out, &mut w)?;
    let conf = conformance_page(out, &mut w)?;
    let bench = bench_pages(out, &args.bench_figures, &mut w)?;
    index(out, check.as_ref(), &sims, conf.as_ref(), bench.as_ref())?;
    w.pages.push("README.md".into());
    println!(
        "listsync report: wrote {} in {} and {} diagrams",
        w.pages.join(", "),
        out.display(),
        w.diagrams
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

/// Renders `model-check.md` and the diagrams of its counterexample traces from
/// `out/model-check.json` (used by `listsync check` too). Returns the parsed JSON if present.
pub fn model_check(out: &Path) -> Result<Option<ModelCheck>> {
    let mut w = Written::default();
    let r = model_check_into(out, &mut w)?;
    if let Some(f) = w.failed.first() {
        anyhow::bail!("{f}");
    }
    Ok(r)
}

fn model_check_into(out: &Path, w: &mut Written) -> Result<Option<ModelCheck>> {
    let json = out.join("model-check.json");
    let Ok(text) = std::fs::read_to_string(&json) else {
        return Ok(None);
    };
    let m = ModelCheck::parse(&text).with_context(|| format!("reading {}", json.display()))?;
    for (_, _, file) in m.violations() {
        render_diagram(&out.join("traces").join(&file), &out.join(mc::diagram_for(&file)), w);
    }
    std::fs::write(out.join("model-check.md"), mc::render(&m))?;
    w.pages.push("model-check.md".into());
    Ok(Some(m))
}

fn render_diagram(trace: &Path, svg: &Path, w: &mut Written) {
    let result = std::fs::read_to_string(trace)
        .map_err(anyhow::Error::from)
        .and_then(|t| diagram::trace_to_svg(&t))
        .and_then(|s| {
            if let Some(dir) = svg.parent() {
                std::fs::create_dir_all(dir)?;
            }
            Ok(std::fs::write(svg, s)?)
        });
    match result {
        Ok(()) => w.diagrams += 1,
        Err(e) => w.failed.push(format!("{}: {e:#}", trace.display())),
    }
}

fn json_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "json"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn sim_page(out: &Path, w: &mut Written) -> Result<Vec<sim::Summary>> {
    let mut sums = Vec::new();
    let mut files = json_files(&out.join("sim"));
    if out.join("sim.json").exists() {
        files.insert(0, out.join("sim.json"));
    }
    for f in files {
        let text = std::fs::read_to_string(&f)?;
        let v: Value = serde_json::from_str(&text).with_context(|| format!("{}", f.display()))?;
        let source = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match v {
            Value::Array(items) => sums.extend(items.into_iter().map(|json| sim::Summary {
                source: source.clone(),
                json,
            })),
            json => sums.push(sim::Summary { source, json }),
        }
    }
    // Diagrams of the shrunk traces the summaries name.
    let trace_dir = out.join("sim-traces");
    let mut rendered = Vec::new();
    for s in &sums {
        for (_, file) in sim::traces(s) {
            let trace = trace_dir.join(&file);
            if trace.exists() && !rendered.contains(&file) {
                let stem = file.strip_suffix(".json").unwrap_or(&file).to_owned();
                render_diagram(&trace, &out.join(format!("diagrams/sim/{stem}.svg")), w);
                rendered.push(file);
            }
        }
    }
    let link = |file: &str| -> Option<String> {
        rendered.iter().any(|r| r == file).then(|| {
            format!(
                "diagrams/sim/{}.svg",
                file.strip_suffix(".json").unwrap_or(file)
            )
        })
    };
    std::fs::write(out.join("sim.md"), sim::render(&sums, &link))?;
    w.pages.push("sim.md".into());
    Ok(sums)
}

fn conformance_page(out: &Path, w: &mut Written) -> Result<Option<Value>> {
    let path = out.join("conformance.json");
    let v = match std::fs::read_to_string(&path) {
        Ok(t) => Some(serde_json::from_str(&t).with_context(|| format!("{}", path.display()))?),
        Err(_) => None,
    };
    // The harness (`listsync matrix`) renders its own page from the matrix it ran, which holds
    // more than the JSON (message logs); keep that page when it is there.
    let md = out.join("conformance.md");
    if v.is_none() || !md.exists() {
        std::fs::write(&md, conformance::render(v.as_ref()))?;
        w.pages.push("conformance.md".into());
    }
    Ok(v)
}

fn bench_pages(out: &Path, figures: &Path, w: &mut Written) -> Result<Option<BenchFile>> {
    let path = out.join("bench.json");
    let mut bench = if path.exists() {
        BenchFile::read(&path)?
    } else {
        BenchFile::new()
    };
    let mut imported = false;
    for f in json_files(figures) {
        match BenchFile::read(&f) {
            Ok(b) => {
                bench.merge_newer(b);
                imported = true;
            }
            Err(e) => w.failed.push(format!("{e:#}")),
        }
    }
    let any = bench.refresh.is_some()
        || bench.churn.is_some()
        || bench.fanout.is_some()
        || bench.model.is_some();
    if imported || any {
        std::fs::write(&path, serde_json::to_string_pretty(&bench)? + "\n")?;
    }
    let plots = out.join("plots");
    std::fs::create_dir_all(&plots)?;
    if let Some(g) = &bench.refresh {
        std::fs::write(plots.join("refresh-walks.svg"), plot::refresh_walks(&g.rows)?)?;
        std::fs::write(
            plots.join("refresh-converge.svg"),
            plot::refresh_converge(&g.rows)?,
        )?;
    }
    if let Some(g) = &bench.churn {
        std::fs::write(plots.join("read-latency.svg"), plot::read_latency(&g.rows)?)?;
    }
    std::fs::write(out.join("bench.md"), bench_page::render(&bench))?;
    w.pages.push("bench.md".into());
    Ok(any.then_some(bench))
}

fn index(
    out: &Path,
    check: Option<&ModelCheck>,
    sims: &[sim::Summary],
    conf: Option<&Value>,
    bench: Option<&BenchFile>,
) -> Result<()> {
    let mut s = String::new();
    let _ = writeln!(s, "# listsync reports\n");
    let _ = writeln!(
        s,
        "Generated by `listsync report` from the JSON the instruments wrote; do not edit by \
         hand. Regenerate with `cargo run --release -- report` (after `listsync check`, \
         `listsync sim --report`, the harness, or `cargo bench`).\n"
    );
    let _ = writeln!(s, "| page | what | headline |");
    let _ = writeln!(s, "|---|---|---|");
    let mc_head = match check {
        Some(m) => {
            let reference: Vec<_> = m
                .configs
                .iter()
                .filter(|c| {
                    c.strategies.get("client").map(String::as_str) == Some("reference")
                        && c.strategies.get("server").map(String::as_str) == Some("reference")
                })
                .collect();
            format!(
                "{} configurations, {} unique states; {} reference configurations hold every applicable property; {} counterexamples; {}",
                m.configs.len(),
                m.total_unique_states,
                reference
                    .iter()
                    .filter(|c| c.as_expected)
                    .count(),
                m.violations().len(),
                if m.all_as_expected {
                    "every verdict as expected"
                } else {
                    "**some verdicts differ**"
                }
            )
        }
        None => "not run yet".into(),
    };
    let _ = writeln!(
        s,
        "| [model check](model-check.md) | exhaustive model checking of every configuration; each counterexample as a [sequence diagram](diagrams/) | {mc_head} |"
    );
    let sim_head = if sims.is_empty() {
        "no summary committed yet".to_owned()
    } else {
        let runs: u64 = sims
            .iter()
            .filter_map(|x| x.json.get("runs").and_then(Value::as_u64))
            .sum();
        format!("{} summaries, {runs} simulated runs", sims.len())
    };
    let _ = writeln!(
        s,
        "| [simulation](sim.md) | seeded simulation under fault plans; shrunk failures | {sim_head} |"
    );
    let _ = writeln!(
        s,
        "| [conformance](conformance.md) | traces replayed against real SDKs | {} |",
        if conf.is_some() {
            "see the matrix"
        } else {
            "harness output not available yet"
        }
    );
    let mut bench_head = Vec::new();
    if let Some(b) = bench {
        if let Some(g) = &b.refresh {
            bench_head.extend(bench_page::headline_refresh(&g.rows));
        }
        if let Some(g) = &b.churn {
            bench_head.extend(bench_page::headline_churn(&g.rows));
        }
    }
    let _ = writeln!(
        s,
        "| [benchmarks](bench.md) | refresh contention, snapshot reads under churn, fan-out, model-checking throughput | {} |",
        if bench_head.is_empty() {
            "not run yet".to_owned()
        } else {
            bench_head.join("<br>")
        }
    );
    if let Some(m) = check {
        let _ = writeln!(s, "\n## Counterexample diagrams\n");
        for (config, p, file) in m.violations() {
            let _ = writeln!(
                s,
                "- `{config}` violates `{p}`: [diagram]({}) · [trace](traces/{file})",
                mc::diagram_for(&file)
            );
        }
    }
    std::fs::write(out.join("README.md"), s)?;
    Ok(())
}
