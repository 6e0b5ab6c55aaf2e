//! Every page under `reports/`, regenerated from scratch from the tools' JSON outputs (what
//! `listsync report` does):
//!
//! * `model-check.md` from `model-check.json` (`listsync check`);
//! * `sim.md` from `sim.json` and `sim/*.json` (`listsync sim --report ...`);
//! * `conformance.md` from `conformance.json` (`listsync matrix`);
//! * `mutants.md` from `mutants.json` (imported from a cargo-mutants run by
//!   `listsync report --mutants DIR`, see [`crate::mutants`]);
//! * `bench.md` and `plots/*.svg` from `target/listsync-bench/*.json` (`cargo bench`), merged into
//!   `bench.json` so the page can be regenerated without re-running the benches (a group is
//!   replaced only by a newer run of it);
//! * a sequence diagram (`diagrams/**.svg`) of every counterexample trace: the model's
//!   (`reports/traces/`), the corpus (`traces/`) and the simulator's shrunk ones
//!   (`reports/sim-traces/`), linked from the pages' tables;
//! * the verdict table of `hosts.md` from `hosts/*.json` (`listsync host --report`; the page's
//!   prose is written by hand, [`crate::hosts`]);
//! * the index `README.md` with the headline numbers.
//!
//! A missing input gives a page that says how to produce it; an unreadable one is reported and
//! makes the command exit 1 after every other page was written.
//!
//! `listsync check --update-reports` calls [`model_check`] and `listsync matrix` calls
//! [`conformance_page`], so that each page has one renderer.

use crate::bench::BenchFile;
use crate::conformance::{self, Conformance};
use crate::model_check::{self as mc, SuiteReport};
use crate::mutants::{self, MutantsReport};
use crate::{bench_page, diagram, plot, properties, sim, timings};
use anyhow::{Context, Result};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Where a regeneration reads and writes.
#[derive(Clone, Debug)]
pub struct Sources {
    /// The reports directory (inputs and outputs).
    pub out: PathBuf,
    /// The committed trace corpus (each trace gets a diagram).
    pub traces: PathBuf,
    /// Where `cargo bench` wrote its figures (merged into bench.json if present).
    pub bench_figures: PathBuf,
    /// A cargo-mutants run directory to import into `mutants.json` first (`scripts/mutants.sh`).
    pub mutants_run: Option<PathBuf>,
    /// The survivors' explanations (`docs/mutants-survivors.json`).
    pub mutants_explained: PathBuf,
    /// `listsync audit`'s list of the properties a session log cannot show, for the
    /// properties page (the session crate's `audit::not_judged`).
    pub audit_not_judged: properties::NotJudged,
}

/// Diagram directories under `reports/`, for the corpus and the simulator's traces.
const CORPUS_DIAGRAMS: &str = "diagrams/corpus";
const SIM_DIAGRAMS: &str = "diagrams/sim";

/// What one regeneration wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Pages written, relative to `reports/`.
    pub pages: Vec<String>,
    /// Diagrams written, relative to `reports/`.
    pub diagrams: Vec<String>,
    /// Inputs that could not be read or rendered, each with why.
    pub failed: Vec<String>,
}

impl Written {
    fn has(&self, rel: &str) -> bool {
        self.diagrams.iter().any(|d| d == rel)
    }
}

/// Regenerates every page; an unreadable input is listed in [`Written::failed`] after every
/// other page was written. The reports directory must exist (run elsewhere, it would fill a new
/// one with empty pages), and the bench figures' path, if it exists, must be a directory.
pub fn regenerate(args: &Sources) -> Result<Written> {
    let out = &args.out;
    if !out.is_dir() {
        anyhow::bail!(
            "{}: no such reports directory (run from the repository root, or give --out DIR)",
            out.display()
        );
    }
    if args.bench_figures.exists() && !args.bench_figures.is_dir() {
        anyhow::bail!(
            "{}: the bench figures' path is not a directory",
            args.bench_figures.display()
        );
    }
    // From scratch: every diagram and plot is regenerated from its input.
    for dir in ["diagrams", "plots"] {
        let d = out.join(dir);
        if d.exists() {
            std::fs::remove_dir_all(&d).with_context(|| format!("removing {}", d.display()))?;
        }
    }
    let mut w = Written::default();
    std::fs::write(
        out.join(properties::PAGE),
        properties::render(args.audit_not_judged),
    )?;
    w.pages.push(properties::PAGE.into());
    let check = model_check_into(out, &mut w)?;
    let corpus = corpus_diagrams(out, &args.traces, &mut w);
    let sims = sim_page(out, check.as_ref(), &mut w)?;
    let conf = conformance_page(out, &mut w)?;
    let bench = bench_pages(out, &args.bench_figures, &mut w)?;
    let muts = mutants_page(out, args, &mut w)?;
    // The hosts page's prose is written by hand; its verdict table is rendered here too.
    if out.join("hosts").is_dir() {
        crate::hosts::update_page(out)?;
        w.pages.push("hosts.md".into());
    }
    let deep = std::fs::read_to_string(out.join(mc::DEEP_FILE))
        .ok()
        .and_then(|t| mc::parse(&t).ok());
    std::fs::write(
        out.join(timings::PAGE),
        timings::render(&timings::Inputs {
            check: check.as_ref(),
            deep: deep.as_ref(),
            sims: &sims,
            conf: conf.as_ref(),
        }),
    )?;
    w.pages.push(timings::PAGE.into());
    index(
        out,
        &Inputs {
            check: check.as_ref(),
            corpus: &corpus,
            sims: &sims,
            conf: conf.as_ref(),
            bench: &bench,
            muts: muts.as_ref(),
        },
        &w,
    )?;
    w.pages.push("README.md".into());
    Ok(w)
}

/// Renders `model-check.md` and the diagrams of the model's counterexample traces from
/// `out/model-check.json` (used by `listsync check` too). Returns the parsed JSON if present.
pub fn model_check(out: &Path) -> Result<Option<SuiteReport>> {
    let mut w = Written::default();
    let r = model_check_into(out, &mut w)?;
    if let Some(f) = w.failed.first() {
        anyhow::bail!("{f}");
    }
    Ok(r)
}

fn model_check_into(out: &Path, w: &mut Written) -> Result<Option<SuiteReport>> {
    let json = out.join("model-check.json");
    let page = out.join("model-check.md");
    let parsed = match std::fs::read_to_string(&json) {
        Err(_) => None,
        Ok(text) => match mc::parse(&text) {
            Ok(m) => Some(m),
            Err(e) => {
                w.failed.push(format!("{}: {e:#}", json.display()));
                None
            }
        },
    };
    // Every trace the model wrote gets a diagram (the table links those of its violations).
    for trace in json_files(&out.join("traces")) {
        let Some(name) = file_name(&trace) else {
            continue;
        };
        render_diagram(out, &trace, &mc::diagram_for(&name), w);
    }
    let mut text = match &parsed {
        Some(m) => mc::render(m),
        None => mc::render_missing(json.exists()),
    };
    // The deep suite's figures, when a hand run left them.
    let deep = out.join(mc::DEEP_FILE);
    if let Ok(t) = std::fs::read_to_string(&deep) {
        match mc::parse(&t) {
            Ok(d) => text.push_str(&mc::render_deep(&d)),
            Err(e) => w.failed.push(format!("{}: {e:#}", deep.display())),
        }
    }
    // The known-bad strategies beside the simulator's campaigns of them (and, once `check
    // --at-size` has written it, in worlds as big as reference-large).
    if let Some(m) = &parsed {
        let at_size = out.join(crate::strategy_table::AT_SIZE_FILE);
        let large = match std::fs::read_to_string(&at_size) {
            Err(_) => None,
            Ok(t) => match mc::parse(&t) {
                Ok(d) => Some(d),
                Err(e) => {
                    w.failed.push(format!("{}: {e:#}", at_size.display()));
                    None
                }
            },
        };
        // Unreadable summaries are reported by the simulation page.
        let sims: Vec<sim::SimSummary> = json_files(&out.join("sim"))
            .iter()
            .filter_map(|f| std::fs::read_to_string(f).ok())
            .filter_map(|t| sim::parse(&t).ok())
            .flatten()
            .collect();
        text.push_str(&crate::strategy_table::render(m, large.as_ref(), &sims));
    }
    // The symmetry reduction's soundness runs, when `check --reduction` has written them.
    let reduction = out.join(listsync_model::reduction::FILE);
    if let Ok(t) = std::fs::read_to_string(&reduction) {
        match serde_json::from_str::<listsync_model::reduction::ReductionReport>(&t) {
            Ok(r) => text.push_str(&crate::reduction_table::render(&r)),
            Err(e) => w.failed.push(format!("{}: {e}", reduction.display())),
        }
    }
    std::fs::write(&page, text).with_context(|| format!("writing {}", page.display()))?;
    w.pages.push("model-check.md".into());
    Ok(parsed)
}

/// Imports a cargo-mutants run if asked (writing `mutants.json`), then renders `mutants.md`.
fn mutants_page(out: &Path, args: &Sources, w: &mut Written) -> Result<Option<MutantsReport>> {
    let json = out.join("mutants.json");
    if let Some(dir) = &args.mutants_run {
        // The files (or shards) this run did not mutate keep their earlier outcomes.
        let previous = match std::fs::read_to_string(&json) {
            Err(_) => None,
            Ok(text) => Some(
                mutants::parse(&text)
                    .with_context(|| format!("{}: cannot merge the run into it", json.display()))?,
            ),
        };
        let r = mutants::import(dir, &args.mutants_explained, previous)?;
        std::fs::write(&json, serde_json::to_string_pretty(&r)? + "\n")
            .with_context(|| format!("writing {}", json.display()))?;
    }
    let parsed = match std::fs::read_to_string(&json) {
        Err(_) => None,
        Ok(text) => match mutants::parse(&text) {
            Ok(r) => Some(r),
            Err(e) => {
                w.failed.push(format!("{}: {e:#}", json.display()));
                None
            }
        },
    };
    let text = parsed
        .as_ref()
        .map_or_else(mutants::render_missing, mutants::render);
    std::fs::write(out.join("mutants.md"), text)?;
    w.pages.push("mutants.md".into());
    Ok(parsed)
}

fn file_name(p: &Path) -> Option<String> {
    p.file_name().map(|n| n.to_string_lossy().into_owned())
}

/// Renders `trace` to `out/rel` (an SVG path relative to `out`).
fn render_diagram(out: &Path, trace: &Path, rel: &str, w: &mut Written) {
    let svg = out.join(rel);
    let result = std::fs::read_to_string(trace)
        .map_err(anyhow::Error::from)
        .and_then(|t| diagram::trace_to_svg(&t))
        .and_then(|s| {
            if let Some(dir) = svg.parent() {
                std::fs::create_dir_all(dir)?;
            }
            Ok(std::fs::write(&svg, s)?)
        });
    match result {
        Ok(()) => w.diagrams.push(rel.to_owned()),
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

fn stem_md(file: &str) -> &str {
    file.strip_suffix(".md").unwrap_or(file)
}

fn stem(file: &str) -> &str {
    file.strip_suffix(".json").unwrap_or(file)
}

/// Diagrams of the committed corpus; returns the trace file names rendered.
fn corpus_diagrams(out: &Path, traces: &Path, w: &mut Written) -> Vec<String> {
    let mut names = Vec::new();
    for trace in json_files(traces) {
        let Some(name) = file_name(&trace) else {
            continue;
        };
        let rel = format!("{CORPUS_DIAGRAMS}/{}.svg", stem(&name));
        render_diagram(out, &trace, &rel, w);
        if w.has(&rel) {
            names.push(name);
        }
    }
    names
}

fn sim_page(
    out: &Path,
    check: Option<&SuiteReport>,
    w: &mut Written,
) -> Result<Vec<sim::SummaryFile>> {
    let mut sums = Vec::new();
    let mut files = json_files(&out.join("sim"));
    if out.join("sim.json").exists() {
        files.insert(0, out.join("sim.json"));
    }
    for f in files {
        let parsed = std::fs::read_to_string(&f)
            .map_err(anyhow::Error::from)
            .and_then(|t| sim::parse(&t));
        let docs = match parsed {
            Ok(v) => v,
            Err(e) => {
                w.failed.push(format!("{}: {e:#}", f.display()));
                continue;
            }
        };
        let source = f
            .strip_prefix(out)
            .map_or_else(|_| f.display().to_string(), |p| p.display().to_string());
        sums.extend(docs.into_iter().map(|doc| sim::SummaryFile {
            source: source.clone(),
            doc,
        }));
    }
    // Every shrunk trace the simulator wrote gets a diagram.
    for trace in json_files(&out.join("sim-traces")) {
        if let Some(name) = file_name(&trace) {
            render_diagram(
                out,
                &trace,
                &format!("{SIM_DIAGRAMS}/{}.svg", stem(&name)),
                w,
            );
        }
    }
    let link = |file: &str| -> Option<String> {
        let rel = format!("{SIM_DIAGRAMS}/{}.svg", stem(file));
        w.has(&rel).then_some(rel)
    };
    std::fs::write(out.join("sim.md"), sim::render(&sums, check, &link))?;
    w.pages.push("sim.md".into());
    Ok(sums)
}

/// Renders `conformance.md` from the `conformance.json` just written under `out` (for
/// `listsync matrix`; the same page `listsync report` renders), linking the corpus diagrams
/// already there. Returns the page's path.
pub fn write_conformance_page(out: &Path) -> Result<PathBuf> {
    let mut w = Written::default();
    if let Ok(dir) = std::fs::read_dir(out.join(CORPUS_DIAGRAMS)) {
        for entry in dir.flatten() {
            if let Some(name) = file_name(&entry.path()) {
                w.diagrams.push(format!("{CORPUS_DIAGRAMS}/{name}"));
            }
        }
    }
    conformance_page(out, &mut w)?;
    if let Some(e) = w.failed.first() {
        anyhow::bail!("{e}");
    }
    Ok(out.join("conformance.md"))
}

fn conformance_page(out: &Path, w: &mut Written) -> Result<Option<Conformance>> {
    let path = out.join("conformance.json");
    let mut unreadable = None;
    let v = match std::fs::read_to_string(&path) {
        Err(_) => None,
        Ok(t) => match Conformance::parse(&t) {
            Ok(v) => Some(v),
            Err(e) => {
                unreadable = Some(e.to_string());
                None
            }
        },
    };
    let link = |file: &str| -> Option<String> {
        let rel = format!("{CORPUS_DIAGRAMS}/{}.svg", stem(file));
        w.has(&rel).then_some(rel)
    };
    let page = match &unreadable {
        Some(e) => format!(
            "# Conformance matrix\n\n_`reports/conformance.json` could not be read ({e}): run \
             `listsync matrix` to write it again, then `listsync report`._\n"
        ),
        None => conformance::render(v.as_ref(), &link),
    };
    if let Some(e) = unreadable {
        w.failed.push(format!("{}: {e}", path.display()));
    }
    std::fs::write(out.join("conformance.md"), page)?;
    w.pages.push("conformance.md".into());
    Ok(v)
}

fn bench_pages(out: &Path, figures: &Path, w: &mut Written) -> Result<BenchFile> {
    let path = out.join("bench.json");
    let mut bench = BenchFile::new();
    if path.exists() {
        match BenchFile::read(&path) {
            Ok(b) => bench = b,
            Err(e) => w.failed.push(format!("{e:#}")),
        }
    }
    let mut imported = false;
    for f in json_files(figures) {
        match BenchFile::read_figures(&f) {
            Ok(b) => {
                bench.merge_newer(b);
                imported = true;
            }
            Err(e) => w.failed.push(format!("{e:#}")),
        }
    }
    if imported {
        std::fs::write(&path, serde_json::to_string_pretty(&bench)? + "\n")?;
    }
    let plots = out.join("plots");
    let mut write_plot = |name: &str, svg: Result<String>| {
        let result = svg.and_then(|s| {
            std::fs::create_dir_all(&plots)?;
            Ok(std::fs::write(plots.join(name), s)?)
        });
        if let Err(e) = result {
            w.failed.push(format!("plots/{name}: {e:#}"));
        }
    };
    if let Some(g) = &bench.refresh {
        write_plot("refresh-frontier.svg", plot::refresh_frontier(&g.rows));
    }
    if let Some(g) = &bench.churn {
        write_plot("read-latency.svg", plot::read_latency(&g.rows));
    }
    std::fs::write(out.join("bench.md"), bench_page::render(&bench))?;
    w.pages.push("bench.md".into());
    Ok(bench)
}

/// What the index summarizes: each page's parsed input.
struct Inputs<'a> {
    check: Option<&'a SuiteReport>,
    corpus: &'a [String],
    sims: &'a [sim::SummaryFile],
    conf: Option<&'a Conformance>,
    bench: &'a BenchFile,
    muts: Option<&'a MutantsReport>,
}

/// The index's pages this module writes (others under `reports/` are linked as they are).
const OURS: [&str; 9] = [
    "README.md",
    properties::PAGE,
    timings::PAGE,
    "model-check.md",
    "sim.md",
    "conformance.md",
    "bench.md",
    "mutants.md",
    "conformance-suite.md",
];

/// The index's longest headline, in characters of its visible text.
pub const HEADLINE_MAX: usize = 300;

/// The text a reader sees of a Markdown headline: link targets and emphasis left out.
pub fn visible(md: &str) -> String {
    let mut out = String::new();
    let mut chars = md.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '*' | '`' | '[' => {}
            ']' if chars.peek() == Some(&'(') => {
                for d in chars.by_ref() {
                    if d == ')' {
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The conformance suite's verdict line, from its page (written by `listsync conformance-suite`,
/// not regenerated here): the page's bold line of counts.
fn suite_headline(out: &Path) -> Option<String> {
    let text = std::fs::read_to_string(out.join("conformance-suite.md")).ok()?;
    let line = text
        .lines()
        .find(|l| l.starts_with("**") && l.contains("checks passed"))?;
    let counts = line.trim_matches('*').trim_end_matches('.');
    let unexplained_zero = counts.contains("(0 without an explanation)");
    Some(format!(
        "{}: {counts}{}",
        if counts.contains(" 0 failed") {
            "**Pass**"
        } else if unexplained_zero {
            "**Pass with known gaps**"
        } else {
            "**FAIL**"
        },
        if unexplained_zero && !counts.contains(" 0 failed") {
            " (each failure explained on the page)"
        } else {
            ""
        }
    ))
}

fn index(out: &Path, inputs: &Inputs<'_>, w: &Written) -> Result<()> {
    let Inputs {
        check,
        corpus,
        sims,
        conf,
        bench,
        muts,
    } = *inputs;
    let mut s = String::new();
    let _ = writeln!(s, "# listsync reports\n");
    let _ = writeln!(
        s,
        "Generated by `listsync report` from the JSON the instruments wrote; do not edit by \
         hand. Regenerate with `listsync report` (after `listsync check`, `listsync sim \
         --report reports/sim/NAME.json`, `listsync matrix`, or `cargo bench`); it reads only \
         the committed JSON, so running it twice writes the same bytes. Every property and \
         scenario name links to [its definition](properties.md); the run times are on \
         [one page](timings.md).\n"
    );
    let _ = writeln!(s, "| page | verdict |");
    let _ = writeln!(s, "|---|---|");
    let mut row = |page: &str, file: &str, head: String| {
        let _ = writeln!(s, "| [{page}]({file}) | {head} |");
    };
    row(
        "model check",
        "model-check.md",
        check.map_or_else(
            || "not run yet (`listsync check`)".into(),
            |m| format!("{}.", mc::headline(m)),
        ),
    );
    row(
        "simulation",
        "sim.md",
        if sims.is_empty() {
            "not run yet (`listsync sim --report reports/sim/NAME.json`)".to_owned()
        } else {
            format!("{}.", sim::headline(sims))
        },
    );
    row(
        "conformance matrix",
        "conformance.md",
        conf.map_or_else(
            || "not run yet (`listsync matrix`)".into(),
            |v| format!("{}.", conformance::headline(v)),
        ),
    );
    if let Some(h) = suite_headline(out) {
        row("official conformance suite", "conformance-suite.md", h);
    }
    row(
        "mutation score",
        "mutants.md",
        muts.map_or_else(
            || "not run yet (`scripts/mutants.sh`)".to_owned(),
            mutants::headline,
        ),
    );
    row(
        "benchmarks",
        "bench.md",
        if let Some((_, summary)) = bench_page::index_table(bench) {
            format!(
                "{summary}: [the table below](#benchmarks-at-a-glance), [the frontier \
                 plot](plots/refresh-frontier.svg)"
            )
        } else {
            "not run yet (`cargo bench`)".to_owned()
        },
    );
    row(
        "properties",
        properties::PAGE,
        "what each property and scenario name means, and where each can be judged".to_owned(),
    );
    row(
        "timings",
        timings::PAGE,
        "how long each run took, apart from the verdicts".to_owned(),
    );
    // Pages other tools write straight into reports/ (not regenerated here).
    let mut others: Vec<String> = std::fs::read_dir(out)
        .map(|d| {
            d.flatten()
                .filter_map(|e| file_name(&e.path()))
                .filter(|n| n.ends_with(".md") && !OURS.contains(&n.as_str()))
                .collect()
        })
        .unwrap_or_default();
    others.sort();
    for o in others {
        row(
            stem_md(&o),
            &o,
            "written by another tool, linked as is".to_owned(),
        );
    }
    if let Some((t, _)) = bench_page::index_table(bench) {
        let _ = writeln!(s, "\n## Benchmarks at a glance\n");
        let _ = writeln!(
            s,
            "The reference (ours) against the best other point of the same run; **loses** marks \
             where it does worse. Details and every strategy: [bench.md](bench.md).\n"
        );
        let _ = write!(s, "{t}");
    }

    let _ = writeln!(s, "\n## Sequence diagrams\n");
    let _ = writeln!(
        s,
        "One per counterexample trace: lanes for the server, the network (each message in \
         flight on its own track) and every client the violation names (the others are folded \
         away, and the subtitle says so); the step after which the property fails is \
         highlighted in red, or, for a property judged when the world comes to rest \
         (`converges`, `no_lost_wakeup`, `listen_then_list`), the step after which its \
         violation was certain: from there, however what is in flight is delivered and the \
         timers fire, with no further change or fault, the run ends with it violated.\n"
    );
    if let Some(m) = check {
        let _ = writeln!(s, "### Model checker (`reports/traces/`)\n");
        for (config, p, file) in m.violations() {
            let rel = mc::diagram_for(&file);
            if w.has(&rel) {
                let _ = writeln!(
                    s,
                    "- `{config}` violates {}: [diagram]({rel}) · [trace](traces/{file})",
                    properties::property(p)
                );
            }
        }
        let _ = writeln!(s);
    }
    if !corpus.is_empty() {
        let _ = writeln!(s, "### Corpus (`traces/`)\n");
        for name in corpus {
            let _ = writeln!(
                s,
                "- `{}`: [diagram]({CORPUS_DIAGRAMS}/{}.svg) · [trace](../traces/{name})",
                stem(name),
                stem(name)
            );
        }
        let _ = writeln!(s);
    }
    let sim_diagrams: Vec<&String> = w
        .diagrams
        .iter()
        .filter(|d| d.starts_with(SIM_DIAGRAMS))
        .collect();
    if !sim_diagrams.is_empty() {
        let _ = writeln!(s, "### Simulator (`reports/sim-traces/`)\n");
        for d in sim_diagrams {
            let name = d
                .trim_start_matches(SIM_DIAGRAMS)
                .trim_start_matches('/')
                .trim_end_matches(".svg");
            let _ = writeln!(
                s,
                "- `{name}`: [diagram]({d}) · [trace](sim-traces/{name}.json)"
            );
        }
        let _ = writeln!(s);
    }
    std::fs::write(out.join("README.md"), s)?;
    Ok(())
}
