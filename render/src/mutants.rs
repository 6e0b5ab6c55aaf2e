//! The mutation report: how many bugs injected into the shipped decision logic the suite catches.
//!
//! `scripts/mutants.sh` runs cargo-mutants (pinned) over the scoped files with the chosen test
//! selection and writes, beside cargo-mutants' own `mutants.out/outcomes.json`, a `run.json`
//! saying what ran on which tree ([`MutationRun`]). `listsync report --mutants DIR` imports both
//! with [`import`] into `reports/mutants.json` ([`MutantsReport`], this module's one document), and
//! every `listsync report` renders `reports/mutants.md` from it with [`render`].
//!
//! A run need not cover the whole scope: an import replaces the mutants of the files the new run
//! mutated (of its shard only, for a shard) and keeps the rest of the report, each mutant naming
//! the run that judged it, so that the files (or shards) of a slow scope can be run one at a time.
//! The page shows every run's tree.
//!
//! A surviving mutant carries the one line that explains it, from `docs/mutants-survivors.json`
//! (full mutant name → why it is equivalent, or which check is missing): an unexplained survivor
//! is shown as such. Explanations whose mutant is not in the run (the code moved) are listed, so
//! that none silently goes stale.

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use crate::md::cell_escape;

/// What ran, on which tree: written by `scripts/mutants.sh` as `run.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MutationRun {
    /// `git rev-parse HEAD^{tree}` of the tree the mutants were made from.
    pub tree: String,
    /// `git rev-parse HEAD`.
    pub commit: String,
    /// Whether the working tree had uncommitted changes (then `tree` is not the whole story).
    pub dirty: bool,
    /// The mutation tool and its pinned version.
    pub tool: String,
    /// The command that ran, as typed.
    pub command: String,
    /// The files mutated.
    pub scope: Vec<String>,
    /// The passes, in order: each judged the mutants the passes before it let survive.
    pub passes: Vec<Pass>,
    /// Wall-clock time of the whole run, seconds.
    pub wall_s: f64,
    /// This run is one shard (`K/N`) of the scope's mutants, or all of them.
    #[serde(default)]
    pub shard: Option<String>,
    /// This run judged only some of its scope's mutants (the rest of a stopped run, survivors
    /// judged again, or a run stopped before its end): an import replaces only those.
    #[serde(default)]
    pub partial: bool,
    /// Each mutated file's source as the run mutated it: its git blob id in `tree`
    /// (`git rev-parse TREE:FILE`), so that runs on different trees can be seen to have mutated
    /// the same source (the trees then differ only in other files, e.g. the tests).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sources: BTreeMap<String, String>,
}

/// One pass of the run: its cargo-mutants output directory (relative to the run's) and the
/// tests it judged by.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    /// Its copy of `mutants.out`, relative to the run directory.
    pub dir: String,
    /// The tests it ran for each mutant.
    pub tests: String,
    /// The source tree it ran on, when it is known (a later pass may run on a tree with checks
    /// added for the survivors; the mutated files are the same).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tree: Option<String>,
}

/// What happened to one mutant.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "snake_case")]
pub enum MutantOutcome {
    /// The tests failed: the bug was caught.
    Caught,
    /// The tests hung past the timeout (counted as caught, as cargo-mutants does).
    Timeout,
    /// The tests passed: the bug survived.
    Missed,
    /// The mutant did not build (not counted).
    Unviable,
}

impl MutantOutcome {
    fn label(self) -> &'static str {
        match self {
            MutantOutcome::Caught => "caught",
            MutantOutcome::Timeout => "timeout",
            MutantOutcome::Missed => "missed",
            MutantOutcome::Unviable => "unviable",
        }
    }
}

/// One mutant and its outcome.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Mutant {
    /// cargo-mutants' full name: `file:line:col: change`.
    pub name: String,
    /// The file mutated.
    pub file: String,
    /// Line of the mutation.
    pub line: u32,
    /// The enclosing function, if any.
    pub function: Option<String>,
    /// What changed, without the location.
    pub change: String,
    /// What the tests made of it.
    pub outcome: MutantOutcome,
    /// The pass (1-based) whose tests gave that outcome.
    pub pass: u8,
    /// The run that judged it (index into [`MutantsReport::runs`]).
    pub run: usize,
    /// For a survivor: why it is equivalent, or what check is missing.
    pub why: Option<String>,
}

/// The counts, and the score over the viable mutants.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Every mutant tried.
    pub total: u32,
    /// Caught by a failing test.
    pub caught: u32,
    /// Timed out (counted as caught).
    pub timeout: u32,
    /// Survived.
    pub missed: u32,
    /// Did not build.
    pub unviable: u32,
    /// (caught + timeout) / (total − unviable), in percent.
    pub score_percent: f64,
}

impl Counts {
    fn of(mutants: &[Mutant]) -> Counts {
        let mut c = Counts::default();
        for m in mutants {
            c.total += 1;
            match m.outcome {
                MutantOutcome::Caught => c.caught += 1,
                MutantOutcome::Timeout => c.timeout += 1,
                MutantOutcome::Missed => c.missed += 1,
                MutantOutcome::Unviable => c.unviable += 1,
            }
        }
        let viable = c.total - c.unviable;
        c.score_percent = if viable == 0 {
            0.0
        } else {
            100.0 * f64::from(c.caught + c.timeout) / f64::from(viable)
        };
        c
    }
}

/// `reports/mutants.json`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MutantsReport {
    /// What ran: every run that judged at least one of the mutants, oldest first.
    pub runs: Vec<MutationRun>,
    /// The counts.
    pub counts: Counts,
    /// Every mutant, survivors first, then by file and line.
    pub mutants: Vec<Mutant>,
    /// Explanations in `docs/mutants-survivors.json` that name no surviving mutant of this run.
    pub unused_explanations: Vec<String>,
}

impl MutantsReport {
    /// The survivors.
    pub fn survivors(&self) -> impl Iterator<Item = &Mutant> {
        self.mutants
            .iter()
            .filter(|m| m.outcome == MutantOutcome::Missed)
    }
}

/// The part of cargo-mutants' `outcomes.json` this reads.
#[derive(Deserialize)]
struct Outcomes {
    outcomes: Vec<ScenarioOutcome>,
}

#[derive(Deserialize)]
struct ScenarioOutcome {
    scenario: Scenario,
    summary: String,
}

#[derive(Deserialize)]
enum Scenario {
    Baseline,
    Mutant(ToolMutant),
}

#[derive(Deserialize)]
struct ToolMutant {
    name: String,
    file: String,
    function: Option<ToolFunction>,
    span: ToolSpan,
}

#[derive(Deserialize)]
struct ToolFunction {
    function_name: String,
}

#[derive(Deserialize)]
struct ToolSpan {
    start: ToolPos,
}

#[derive(Deserialize)]
struct ToolPos {
    line: u32,
}

/// Builds the report from a cargo-mutants run directory (`run.json` and each pass's copy of
/// `mutants.out`) and the survivors' explanations (`docs/mutants-survivors.json`), merged into
/// the `previous` report if there is one (see [`merge`]).
pub fn import(
    dir: &Path,
    explanations: &Path,
    previous: Option<MutantsReport>,
) -> Result<MutantsReport> {
    let read =
        |p: &Path| std::fs::read_to_string(p).with_context(|| format!("reading {}", p.display()));
    let run_path = dir.join("run.json");
    let run: MutationRun = serde_json::from_str(&read(&run_path)?)
        .with_context(|| format!("{}", run_path.display()))?;
    let mut passes = Vec::new();
    for p in &run.passes {
        let path = dir.join(&p.dir).join("outcomes.json");
        let o: Outcomes =
            serde_json::from_str(&read(&path)?).with_context(|| format!("{}", path.display()))?;
        passes.push(o);
    }
    let why: BTreeMap<String, String> = if explanations.exists() {
        serde_json::from_str(&read(explanations)?)
            .with_context(|| format!("{}", explanations.display()))?
    } else {
        BTreeMap::new()
    };
    let new = from_parts(run, passes, &why)?;
    Ok(match previous {
        Some(p) => merge(p, new, &why),
        None => new,
    })
}

/// The `previous` report with the `new` run's mutants in place of the ones it judged again: every
/// mutant of the files the new run mutated is replaced (for a shard, only the mutants it
/// judged; for any run, every mutant of an older source of a file it mutated, whose names no
/// longer say where the code is), every other mutant keeps its run. Runs left with no mutant
/// are dropped; the survivors' explanations are attached again from `why`.
pub fn merge(
    previous: MutantsReport,
    new: MutantsReport,
    why: &BTreeMap<String, String>,
) -> MutantsReport {
    let Some(run) = new.runs.into_iter().next() else {
        return previous;
    };
    let names: std::collections::BTreeSet<&str> =
        new.mutants.iter().map(|m| m.name.as_str()).collect();
    // A mutant made from another source of a file the new run mutated.
    let other_source = |m: &Mutant| {
        let then = previous
            .runs
            .get(m.run)
            .and_then(|r| r.sources.get(&m.file));
        matches!((run.sources.get(&m.file), then), (Some(now), Some(then)) if now != then)
    };
    let replaced = |m: &Mutant| {
        names.contains(m.name.as_str())
            || other_source(m)
            || (run.shard.is_none() && !run.partial && run.scope.contains(&m.file))
    };
    let kept: Vec<Mutant> = previous
        .mutants
        .iter()
        .filter(|m| !replaced(m))
        .cloned()
        .collect();
    let mut runs = Vec::new();
    let mut index = BTreeMap::new();
    for (i, r) in previous.runs.into_iter().enumerate() {
        if kept.iter().any(|m| m.run == i) {
            index.insert(i, runs.len());
            runs.push(r);
        }
    }
    let mut mutants: Vec<Mutant> = kept
        .into_iter()
        .map(|mut m| {
            m.run = index[&m.run];
            m
        })
        .collect();
    let last = runs.len();
    runs.push(run);
    mutants.extend(new.mutants.into_iter().map(|mut m| {
        m.run = last;
        m
    }));
    finish(runs, mutants, why)
}

fn from_parts(
    run: MutationRun,
    passes: Vec<Outcomes>,
    why: &BTreeMap<String, String>,
) -> Result<MutantsReport> {
    anyhow::ensure!(!passes.is_empty(), "the run has no pass");
    // By name: a later pass's outcome replaces an earlier one's only where that one survived
    // (caught if any pass catches it; a timeout counts as caught, and cargo-mutants' --iterate
    // re-tests timeouts too).
    let mut by_name: BTreeMap<String, Mutant> = BTreeMap::new();
    for (i, outcomes) in passes.into_iter().enumerate() {
        let pass = u8::try_from(i + 1).context("too many passes")?;
        for o in outcomes.outcomes {
            let Scenario::Mutant(m) = o.scenario else {
                anyhow::ensure!(
                    o.summary == "Success",
                    "pass {pass}: the unmutated tree did not pass its tests ({}): no mutant can be judged",
                    o.summary
                );
                continue;
            };
            let outcome = match o.summary.as_str() {
                "CaughtMutant" => MutantOutcome::Caught,
                "MissedMutant" => MutantOutcome::Missed,
                "Timeout" => MutantOutcome::Timeout,
                "Unviable" => MutantOutcome::Unviable,
                other => anyhow::bail!("{}: outcome {other:?} is not a judged mutant", m.name),
            };
            let change = m
                .name
                .splitn(4, ':')
                .nth(3)
                .map_or_else(|| m.name.clone(), |s| s.trim().to_owned());
            if by_name
                .get(&m.name)
                .is_some_and(|earlier| earlier.outcome != MutantOutcome::Missed)
            {
                continue;
            }
            by_name.insert(
                m.name.clone(),
                Mutant {
                    why: None,
                    name: m.name,
                    file: m.file,
                    line: m.span.start.line,
                    function: m.function.map(|f| f.function_name),
                    change,
                    outcome,
                    pass,
                    run: 0,
                },
            );
        }
    }
    Ok(finish(vec![run], by_name.into_values().collect(), why))
}

/// The report of these runs and mutants: survivors explained from `why`, sorted, counted.
fn finish(
    runs: Vec<MutationRun>,
    mut mutants: Vec<Mutant>,
    why: &BTreeMap<String, String>,
) -> MutantsReport {
    for m in &mut mutants {
        m.why = (m.outcome == MutantOutcome::Missed)
            .then(|| why.get(&m.name).cloned())
            .flatten();
    }
    mutants.sort_by(|a, b| {
        (a.outcome != MutantOutcome::Missed, &a.file, a.line, &a.name).cmp(&(
            b.outcome != MutantOutcome::Missed,
            &b.file,
            b.line,
            &b.name,
        ))
    });
    let unused_explanations = why
        .keys()
        .filter(|k| {
            !mutants
                .iter()
                .any(|m| &m.name == *k && m.outcome == MutantOutcome::Missed)
        })
        .cloned()
        .collect();
    MutantsReport {
        counts: Counts::of(&mutants),
        runs,
        mutants,
        unused_explanations,
    }
}

/// Which mutants [`names`] lists.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Which {
    /// Every mutant the report has an outcome for.
    Judged,
    /// The survivors.
    Survivors,
}

/// The full names of the report's mutants of `files` (all files when empty), one per mutant:
/// what `scripts/mutants.sh --rest` skips and `--again` takes.
pub fn names(r: &MutantsReport, which: Which, files: &[String]) -> Vec<String> {
    r.mutants
        .iter()
        .filter(|m| files.is_empty() || files.contains(&m.file))
        .filter(|m| which == Which::Judged || m.outcome == MutantOutcome::Missed)
        .map(|m| m.name.clone())
        .collect()
}

/// Parses `reports/mutants.json`.
pub fn parse(text: &str) -> Result<MutantsReport> {
    Ok(serde_json::from_str(text)?)
}

/// The page's one-line headline (for the index).
pub fn headline(r: &MutantsReport) -> String {
    let c = &r.counts;
    format!(
        "{:.0} % of {} viable mutants caught ({} caught, {} timeouts, {} missed: {} explained as \
         equivalent or a known gap, {} not yet) in {}",
        c.score_percent,
        c.total - c.unviable,
        c.caught,
        c.timeout,
        c.missed,
        r.survivors().filter(|m| m.why.is_some()).count(),
        r.survivors().filter(|m| m.why.is_none()).count(),
        scope_summary(
            r.runs
                .iter()
                .flat_map(|x| x.scope.iter().map(String::as_str))
        )
    )
}

/// The mutated files, a folder with more than two of them named once with its count (the
/// headline stays short when a scope takes a folder of checkers).
fn scope_summary<'a>(files: impl Iterator<Item = &'a str>) -> String {
    let files: std::collections::BTreeSet<&str> = files.collect();
    let mut by_dir: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for f in &files {
        let dir = f.rsplit_once('/').map_or("", |(d, _)| d);
        by_dir.entry(dir).or_default().push(f);
    }
    let mut parts: Vec<String> = Vec::new();
    for (dir, fs) in by_dir {
        if fs.len() > 2 {
            parts.push(format!("{dir}/ ({} files)", fs.len()));
        } else {
            parts.extend(fs.iter().map(|f| (*f).to_owned()));
        }
    }
    parts.sort();
    parts.join(", ")
}

/// `reports/mutants.md`.
pub fn render(r: &MutantsReport) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Mutation score of the verifier\n");
    let c = &r.counts;
    let _ = writeln!(
        s,
        "**{:.1} % of the {} viable mutants caught**: {} caught, {} timeouts (counted as caught), {} missed; {} unviable (did not build).\n",
        c.score_percent,
        c.total - c.unviable,
        c.caught,
        c.timeout,
        c.missed,
        c.unviable
    );
    let _ = writeln!(
        s,
        "Generated by `listsync report` from `reports/mutants.json`, which `scripts/mutants.sh` \
         imports from a cargo-mutants run (`listsync report --mutants DIR`). Each mutant is one \
         bug injected into the shipped decision logic; it is *caught* when the tests of its run (see [Runs](#runs)) fail \
         on it. A survivor is either equivalent to the original (no observer could tell them \
         apart) or a check the suite lacks: each says which, from `docs/mutants-survivors.json`.\n"
    );
    let mut per_file: BTreeMap<&str, Vec<Mutant>> = BTreeMap::new();
    for m in &r.mutants {
        per_file.entry(&m.file).or_default().push(m.clone());
    }
    let _ = writeln!(
        s,
        "| file | run | mutants | caught | timeout | missed | unviable | score |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|---:|---:|");
    // One row per file; after the files of a folder with more than two of them, the folder's
    // total (the score of a scope such as the monitor's checkers, read at a glance).
    let dir_of = |f: &str| f.rsplit_once('/').map_or("", |(d, _)| d).to_owned();
    let mut by_dir: BTreeMap<String, Vec<Mutant>> = BTreeMap::new();
    for (file, ms) in &per_file {
        by_dir
            .entry(dir_of(file))
            .or_default()
            .extend(ms.iter().cloned());
    }
    let files_in = |dir: &str| per_file.keys().filter(|f| dir_of(f) == dir).count();
    let row = |s: &mut String, label: &str, ms: &[Mutant]| {
        let e = Counts::of(ms);
        let runs: std::collections::BTreeSet<usize> = ms.iter().map(|m| m.run + 1).collect();
        let runs: Vec<String> = runs.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            s,
            "| {label} | {} | {} | {} | {} | {} | {} | {:.0} % |",
            runs.join(", "),
            e.total,
            e.caught,
            e.timeout,
            e.missed,
            e.unviable,
            e.score_percent
        );
    };
    let files: Vec<&&str> = per_file.keys().collect();
    for (i, (file, ms)) in per_file.iter().enumerate() {
        row(&mut s, &format!("`{file}`"), ms);
        let dir = dir_of(file);
        // (A folder's files need not be contiguous: `core/src/monitor/` sorts between
        // `core/src/client.rs` and `core/src/server.rs`.)
        let last_of_dir = files[i + 1..].iter().all(|f| dir_of(f) != dir);
        let n = files_in(&dir);
        if last_of_dir && n > 2 {
            row(
                &mut s,
                &format!("**`{dir}/`, all {n} files**"),
                &by_dir[&dir],
            );
        }
    }
    let _ = writeln!(s, "\n## Survivors\n");
    let survivors: Vec<&Mutant> = r.survivors().collect();
    if survivors.is_empty() {
        let _ = writeln!(s, "None.");
    } else {
        let _ = writeln!(s, "| mutant | why it survives |");
        let _ = writeln!(s, "|---|---|");
        for m in survivors {
            let _ = writeln!(
                s,
                "| `{}` | {} |",
                cell_escape(&m.name),
                m.why
                    .as_deref()
                    .map_or_else(|| "**not explained yet**".to_owned(), cell_escape)
            );
        }
    }
    if !r.unused_explanations.is_empty() {
        let _ = writeln!(
            s,
            "\nExplanations in `docs/mutants-survivors.json` that name no survivor of this run (the mutant was caught, or the code moved):\n"
        );
        for k in &r.unused_explanations {
            let _ = writeln!(s, "- `{}`", cell_escape(k));
        }
    }
    let _ = writeln!(s, "\n## Runs\n");
    let _ = writeln!(
        s,
        "Where each outcome comes from: the source trees, commands and tests of the runs.\n"
    );
    let trees: std::collections::BTreeSet<&str> = r.runs.iter().map(|x| x.tree.as_str()).collect();
    if r.runs.len() > 1 {
        let _ = writeln!(
            s,
            "The report joins {} runs ({}), each over its own files; a mutant's outcome is that of the run that last mutated its file.\n",
            r.runs.len(),
            if trees.len() == 1 {
                "all on the same source tree".to_owned()
            } else {
                format!(
                    "on {} different source trees: each run's row says which",
                    trees.len()
                )
            }
        );
    }
    sources_line(&mut s, r);
    for (n, run) in r.runs.iter().enumerate() {
        if r.runs.len() > 1 {
            let _ = writeln!(s, "Run {}:\n", n + 1);
        }
        run_table(&mut s, run, r.mutants.iter().filter(|m| m.run == n).count());
    }
    let _ = writeln!(s, "\n## Every other mutant\n");
    let _ = writeln!(s, "| mutant | outcome | pass |");
    let _ = writeln!(s, "|---|---|---:|");
    for m in r
        .mutants
        .iter()
        .filter(|m| m.outcome != MutantOutcome::Missed)
    {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} |",
            cell_escape(&m.name),
            m.outcome.label(),
            m.pass
        );
    }
    s
}

/// Whether each file's mutants were all made from one source of it, though judged by runs on
/// different trees (which then differ in other files only, e.g. the tests that judged them).
fn sources_line(s: &mut String, r: &MutantsReport) {
    if r.runs.len() < 2 {
        return;
    }
    let mut per_file: BTreeMap<&str, std::collections::BTreeSet<Option<&str>>> = BTreeMap::new();
    for m in &r.mutants {
        let source = r.runs[m.run].sources.get(&m.file).map(String::as_str);
        per_file.entry(&m.file).or_default().insert(source);
    }
    let mut lines = Vec::new();
    for (file, sources) in &per_file {
        let line = match sources.first() {
            Some(Some(blob)) if sources.len() == 1 => {
                format!("`{file}`: one source (blob `{}`)", short(blob))
            }
            _ if sources.contains(&None) => {
                format!("`{file}`: not known (a run did not record the source it mutated)")
            }
            _ => format!(
                "`{file}`: **{} different sources** (blobs {}): mutants of an older source may \
                 no longer exist, or have moved",
                sources.len(),
                sources
                    .iter()
                    .flatten()
                    .map(|b| format!("`{}`", short(b)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        lines.push(line);
    }
    let _ = writeln!(
        s,
        "The source each file's mutants were made from, across the runs that judged them (compare with `git rev-parse HEAD:FILE`): {}.\n",
        lines.join("; ")
    );
}

/// A blob id's first 12 digits.
fn short(blob: &str) -> &str {
    blob.get(..12).unwrap_or(blob)
}

/// One run's table: what ran, on which tree.
fn run_table(s: &mut String, run: &MutationRun, judged: usize) {
    let _ = writeln!(s, "| | |\n|---|---|");
    let _ = writeln!(
        s,
        "| source tree | `{}` (commit `{}`){} |",
        run.tree,
        run.commit,
        if run.dirty {
            ", **with uncommitted changes**"
        } else {
            ""
        }
    );
    let _ = writeln!(s, "| tool | {} |", cell_escape(&run.tool));
    let _ = writeln!(s, "| command | `{}` |", cell_escape(&run.command));
    let _ = writeln!(
        s,
        "| files mutated | {} |",
        run.scope
            .iter()
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if !run.sources.is_empty() {
        let _ = writeln!(
            s,
            "| sources mutated | {} |",
            run.sources
                .iter()
                .map(|(f, b)| format!("`{f}` (blob `{}`)", short(b)))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(shard) = &run.shard {
        let _ = writeln!(s, "| shard | {shard} of the scope's mutants |");
    }
    if run.partial {
        let _ = writeln!(
            s,
            "| part | some of the scope's mutants: the others were judged by another run, or not yet |"
        );
    }
    for (i, p) in run.passes.iter().enumerate() {
        let on = match &p.tree {
            Some(t) if *t != run.tree => format!(" (on source tree `{t}`)"),
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "| tests, pass {} | {}{on} |",
            i + 1,
            cell_escape(&p.tests)
        );
    }
    let _ = writeln!(s, "| mutants judged | {judged} |");
    let _ = writeln!(s, "| wall time | {:.0} min |\n", run.wall_s / 60.0);
}

/// The page when no run was imported yet.
pub fn render_missing() -> String {
    "# Mutation score of the verifier\n\nNot run yet: `scripts/mutants.sh` runs cargo-mutants over \
     the scoped files and imports the result (`listsync report --mutants target/mutants`).\n"
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> MutationRun {
        MutationRun {
            tree: "t".into(),
            commit: "c".into(),
            dirty: false,
            tool: "cargo-mutants 27.0.0".into(),
            command: "scripts/mutants.sh".into(),
            scope: vec!["core/src/server.rs".into()],
            passes: vec![
                Pass {
                    dir: "pass1".into(),
                    tests: "fast".into(),
                    tree: None,
                },
                Pass {
                    dir: "pass2".into(),
                    tests: "full".into(),
                    tree: Some("t+checks".into()),
                },
            ],
            wall_s: 60.0,
            shard: None,
            partial: false,
            sources: BTreeMap::from([("core/src/server.rs".to_owned(), "b1".to_owned())]),
        }
    }

    fn outcomes(text: &str) -> Outcomes {
        serde_json::from_str(text).unwrap()
    }

    const TWO: &str = r#"{"outcomes": [
        {"scenario": "Baseline", "summary": "Success"},
        {"scenario": {"Mutant": {"name": "core/src/server.rs:10:5: replace f -> bool with true",
            "file": "core/src/server.rs", "function": {"function_name": "f", "return_type": "-> bool"},
            "span": {"start": {"line": 10, "column": 5}, "end": {"line": 10, "column": 9}}}},
         "summary": "MissedMutant"},
        {"scenario": {"Mutant": {"name": "core/src/server.rs:3:1: replace == with != in g",
            "file": "core/src/server.rs", "function": null,
            "span": {"start": {"line": 3, "column": 1}, "end": {"line": 3, "column": 3}}}},
         "summary": "CaughtMutant"},
        {"scenario": {"Mutant": {"name": "core/src/server.rs:4:1: replace h with ()",
            "file": "core/src/server.rs", "function": {"function_name": "h", "return_type": ""},
            "span": {"start": {"line": 4, "column": 1}, "end": {"line": 4, "column": 3}}}},
         "summary": "Unviable"}
    ]}"#;

    #[test]
    fn counts_score_over_viable_mutants_and_attach_explanations() {
        let mut why = BTreeMap::new();
        why.insert(
            "core/src/server.rs:10:5: replace f -> bool with true".to_owned(),
            "equivalent".to_owned(),
        );
        why.insert("gone.rs:1:1: x".to_owned(), "stale".to_owned());
        let again = r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "core/src/server.rs:3:1: replace == with != in g",
            "file": "core/src/server.rs", "function": null,
            "span": {"start": {"line": 3, "column": 1}}}}, "summary": "MissedMutant"}]}"#;
        // Pass 2 re-judges what pass 1 let survive (and, with --iterate, its timeouts); here it
        // misses one pass 1 caught: caught by any pass is caught, so pass 1's outcome stands.
        let r = from_parts(run(), vec![outcomes(TWO), outcomes(again)], &why).unwrap();
        assert_eq!(r.counts.missed, 1);
        let g = r
            .mutants
            .iter()
            .find(|m| m.change.ends_with("in g"))
            .unwrap();
        assert_eq!((g.outcome, g.pass), (MutantOutcome::Caught, 1));
        // A survivor of pass 1 that pass 2 catches is caught, by pass 2.
        let later = r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "core/src/server.rs:10:5: replace f -> bool with true",
            "file": "core/src/server.rs", "function": null,
            "span": {"start": {"line": 10, "column": 5}}}}, "summary": "Timeout"}]}"#;
        let r = from_parts(run(), vec![outcomes(TWO), outcomes(later)], &why).unwrap();
        assert_eq!(r.counts.missed, 0);
        let f = r.mutants.iter().find(|m| m.line == 10).unwrap();
        assert_eq!((f.outcome, f.pass), (MutantOutcome::Timeout, 2));
        let r = from_parts(run(), vec![outcomes(TWO)], &why).unwrap();
        assert_eq!(
            (
                r.counts.total,
                r.counts.caught,
                r.counts.missed,
                r.counts.unviable
            ),
            (3, 1, 1, 1)
        );
        assert!((r.counts.score_percent - 50.0).abs() < 1e-9);
        assert_eq!(
            r.mutants[0].outcome,
            MutantOutcome::Missed,
            "survivors first"
        );
        assert_eq!(r.mutants[0].why.as_deref(), Some("equivalent"));
        assert_eq!(r.mutants[0].change, "replace f -> bool with true");
        assert_eq!(r.unused_explanations, vec!["gone.rs:1:1: x".to_owned()]);
        let page = render(&r);
        assert!(page.contains("**50.0 % of the 2 viable mutants caught**"));
        assert!(page.contains("| tests, pass 2 | full (on source tree `t+checks`) |"));
        assert!(
            page.contains(
                "| `core/src/server.rs:10:5: replace f -> bool with true` | equivalent |"
            )
        );
        let back = parse(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn a_run_replaces_the_mutants_of_its_files_and_keeps_the_others() {
        let why = BTreeMap::new();
        let old = from_parts(run(), vec![outcomes(TWO)], &why).unwrap();
        let client_run = MutationRun {
            tree: "t2".into(),
            scope: vec!["core/src/client.rs".into()],
            sources: BTreeMap::from([("core/src/client.rs".to_owned(), "c1".to_owned())]),
            ..run()
        };
        let client = r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "core/src/client.rs:7:1: replace k -> bool with false",
            "file": "core/src/client.rs", "function": null,
            "span": {"start": {"line": 7, "column": 1}}}}, "summary": "CaughtMutant"}]}"#;
        let new = from_parts(client_run.clone(), vec![outcomes(client)], &why).unwrap();
        let joined = merge(old.clone(), new, &why);
        assert_eq!(joined.runs.len(), 2);
        assert_eq!(joined.counts.total, 4);
        let k = joined.mutants.iter().find(|m| m.line == 7).unwrap();
        assert_eq!(joined.runs[k.run].tree, "t2");
        let f = joined.mutants.iter().find(|m| m.line == 10).unwrap();
        assert_eq!(joined.runs[f.run].tree, "t");
        let page = render(&joined);
        assert!(page.contains("joins 2 runs (on 2 different source trees"));
        // A later whole run of server.rs replaces all of its mutants, even those it no longer
        // finds (the code moved), and drops the run that judged them.
        let again = r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
            {"scenario": {"Mutant": {"name": "core/src/server.rs:3:1: replace == with != in g",
            "file": "core/src/server.rs", "function": null,
            "span": {"start": {"line": 3, "column": 1}}}}, "summary": "CaughtMutant"}]}"#;
        let server = from_parts(
            MutationRun {
                tree: "t3".into(),
                ..run()
            },
            vec![outcomes(again)],
            &why,
        )
        .unwrap();
        let joined = merge(joined, server, &why);
        assert_eq!(joined.counts.total, 2);
        let trees: Vec<&str> = joined.runs.iter().map(|r| r.tree.as_str()).collect();
        assert_eq!(trees, ["t2", "t3"]);
        // A shard replaces only the mutants it judged.
        let shard = from_parts(
            MutationRun {
                tree: "t4".into(),
                shard: Some("1/2".into()),
                ..run()
            },
            vec![outcomes(r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
                {"scenario": {"Mutant": {"name": "core/src/server.rs:10:5: replace f -> bool with true",
                "file": "core/src/server.rs", "function": null,
                "span": {"start": {"line": 10, "column": 5}}}}, "summary": "MissedMutant"}]}"#)],
            &why,
        )
        .unwrap();
        let joined = merge(joined, shard, &why);
        assert_eq!(joined.counts.total, 3);
        assert_eq!(joined.runs.len(), 3);
        let client = ["core/src/client.rs".to_owned()];
        assert_eq!(
            names(&joined, Which::Judged, &client),
            ["core/src/client.rs:7:1: replace k -> bool with false"]
        );
        assert!(names(&joined, Which::Survivors, &client).is_empty());
        assert_eq!(
            names(&joined, Which::Survivors, &[]),
            ["core/src/server.rs:10:5: replace f -> bool with true"]
        );
        // A partial run (the rest of a stopped one, or survivors judged again) replaces only
        // the mutants it judged: here it catches the survivor.
        let again = from_parts(
            MutationRun {
                tree: "t5".into(),
                partial: true,
                ..run()
            },
            vec![outcomes(r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
                {"scenario": {"Mutant": {"name": "core/src/server.rs:10:5: replace f -> bool with true",
                "file": "core/src/server.rs", "function": null,
                "span": {"start": {"line": 10, "column": 5}}}}, "summary": "CaughtMutant"}]}"#)],
            &why,
        )
        .unwrap();
        let joined = merge(joined, again, &why);
        assert_eq!((joined.counts.total, joined.counts.missed), (3, 0));
        let page = render(&joined);
        assert!(page.contains("| part | some of the scope's mutants"));
        // Runs on different trees that mutated the same source of a file say so; a run that
        // mutated another source of it is shown as such.
        assert!(
            page.contains("`core/src/server.rs`: one source (blob `b1`)"),
            "{page}"
        );
        assert!(page.contains("`core/src/client.rs`: one source (blob `c1`)"));
        assert!(page.contains("| sources mutated | `core/src/server.rs` (blob `b1`) |"));
        let moved = from_parts(
            MutationRun {
                tree: "t6".into(),
                partial: true,
                sources: BTreeMap::from([("core/src/server.rs".to_owned(), "b2".to_owned())]),
                ..run()
            },
            vec![outcomes(
                r#"{"outcomes": [{"scenario": "Baseline", "summary": "Success"},
                {"scenario": {"Mutant": {"name": "core/src/server.rs:3:1: replace == with != in g",
                "file": "core/src/server.rs", "function": null,
                "span": {"start": {"line": 3, "column": 1}}}}, "summary": "CaughtMutant"}]}"#,
            )],
            &why,
        )
        .unwrap();
        // A run of another source of server.rs, even a partial one, replaces every mutant of
        // the older source (their names' lines no longer say where the code is), so no file's
        // mutants are counted from two sources at once.
        assert_eq!(joined.counts.total, 3);
        let joined = merge(joined, moved, &why);
        let server: Vec<&Mutant> = joined
            .mutants
            .iter()
            .filter(|m| m.file == "core/src/server.rs")
            .collect();
        assert_eq!(server.len(), 1, "{server:?}");
        assert_eq!(joined.counts.total, 2);
        let page = render(&joined);
        assert!(
            page.contains("`core/src/server.rs`: one source (blob `b2`)"),
            "{page}"
        );
    }

    #[test]
    fn an_unexplained_survivor_says_so() {
        let r = from_parts(run(), vec![outcomes(TWO)], &BTreeMap::new()).unwrap();
        assert!(render(&r).contains("**not explained yet**"));
    }

    /// A folder of more than two mutated files gets a row of its own after its files, with
    /// their total; a folder of one or two does not.
    #[test]
    fn a_folder_of_checkers_is_totalled_after_its_files() {
        let m = |file: &str, outcome| Mutant {
            name: format!("{file}:1:1: x"),
            file: file.to_owned(),
            line: 1,
            function: None,
            change: "x".into(),
            outcome,
            pass: 1,
            run: 0,
            why: None,
        };
        let mutants = vec![
            m("core/src/monitor/a.rs", MutantOutcome::Caught),
            m("core/src/monitor/b.rs", MutantOutcome::Caught),
            m("core/src/monitor/c.rs", MutantOutcome::Missed),
            m("core/src/monitor/c.rs", MutantOutcome::Caught),
            m("core/src/server.rs", MutantOutcome::Caught),
            m("core/src/client.rs", MutantOutcome::Caught),
            m("core/src/world.rs", MutantOutcome::Missed),
        ];
        let page = render(&finish(vec![run()], mutants, &BTreeMap::new()));
        let rows: Vec<&str> = page.lines().filter(|l| l.starts_with("| ")).collect();
        let at = |needle: &str| rows.iter().position(|r| r.starts_with(needle)).unwrap();
        let total = "| **`core/src/monitor/`, all 3 files** | 1 | 4 | 3 | 0 | 1 | 0 | 75 % |";
        assert!(rows.contains(&total), "{page}");
        assert_eq!(at(total), at("| `core/src/monitor/c.rs`") + 1);
        // core/src/'s three files, once, after the last of them.
        let core = "| **`core/src/`, all 3 files** | 1 | 3 | 2 | 0 | 1 | 0 | 67 % |";
        assert_eq!(rows.iter().filter(|r| **r == core).count(), 1, "{page}");
        assert_eq!(at(core), at("| `core/src/world.rs`") + 1);
    }

    #[test]
    fn a_failing_baseline_is_refused() {
        let bad = r#"{"outcomes": [{"scenario": "Baseline", "summary": "Failure"}]}"#;
        let e = from_parts(run(), vec![outcomes(bad)], &BTreeMap::new()).unwrap_err();
        assert!(e.to_string().contains("unmutated tree did not pass"));
    }
}
