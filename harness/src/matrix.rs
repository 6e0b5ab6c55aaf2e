//! The conformance matrix: every implementation × exact package version × role × era ×
//! variant, against the 9 properties. The implementations are adapter manifests: the built-in
//! ones and any of the user's own (`--adapter FILE`), all treated alike. Each row's cells aggregate that row's runs — the
//! `traces/` corpus replayed against it (traces about its role, in its era) and the generated
//! scenarios of its role. Our runtime running each trace's own known-bad strategy is replayed
//! too, to show the harness catches every bug it knows is there.
//!
//! Cell rules: **violated** if any run violated the property (the cell links that run's trace
//! or scenario and its message log); else **holds** if a run that ran to its end judged it
//! (a corpus trace is posed adaptively: docs/trace-format.md); **n.a.** when it cannot apply to the role
//! or era (a client cannot violate `notify_after_commit` or `no_call_to_removed`, a server
//! cannot violate `listen_then_list`; `auth_isolation` needs HTTP authorization contexts, and
//! the harness runs stdio).

use crate::adapters::{Paths, Role, Subject, version_of};
use crate::exercises::Exercise;
use crate::expected::Expectations;
use crate::manifest::{self, Manifest};
use crate::outcome::{RunReport, RunStatus, Target};
use crate::replay::{self, plan, trace_role};
use crate::run::Bounds;
use listsync_core::property::{Property, Verdict};
use listsync_core::trace::{MAX_TRACE_BYTES, Trace};
use listsync_core::vocab::Era;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// A matrix row's identity.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RowKey {
    /// Implementation (its manifest's name).
    pub imp: String,
    /// Role.
    pub role: Role,
    /// Era.
    pub era: Era,
    /// Variant.
    pub variant: String,
}

/// Why no matrix cell ever judges `p`, or `None` when some row may: `auth_isolation` needs
/// HTTP authorization contexts (the matrix runs stdio, [`RowKey::owns`]), and the properties of
/// [`crate::outcome::not_judged`] are not on what the harness observes.
pub fn never_judged(p: Property) -> Option<&'static str> {
    match p {
        Property::AuthIsolation => {
            Some("it needs HTTP authorization contexts, and the matrix runs over stdio")
        }
        _ => crate::outcome::not_judged(p),
    }
}

impl RowKey {
    /// Whether a property can be violated by this role in this era (else the cell is n.a.).
    pub fn owns(&self, p: Property) -> bool {
        match p {
            Property::AuthIsolation => false,
            Property::ListenThenList => self.role == Role::Client && self.era == Era::V2026_07_28,
            Property::NotifyAfterCommit | Property::NoCallToRemoved => self.role == Role::Server,
            _ => true,
        }
    }

    fn subject(&self, adapter: &Arc<Manifest>) -> Subject {
        Subject {
            adapter: adapter.clone(),
            role: Some(self.role),
            variant: if adapter.runs_core {
                None
            } else {
                Some(self.variant.clone())
            },
        }
    }

    /// A file-name-safe id.
    pub fn id(&self) -> String {
        format!("{}-{}-{}-{}", self.imp, self.role, self.variant, self.era)
    }
}

/// A row's one name, `IMPL:ROLE@VARIANT.ERA` (`python:client@session.2025-11-25`): the JUnit
/// classname of its runs and the `row` of an expected failure ([`crate::expected`]).
pub fn row_name(imp: &str, role: Role, variant: &str, era: Era) -> String {
    format!("{imp}:{role}@{variant}.{era}")
}

impl std::fmt::Display for RowKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&row_name(&self.imp, self.role, &self.variant, self.era))
    }
}

/// A cell's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellState {
    /// Every run that judged it found it holding.
    Holds,
    /// Some run violated it.
    Violated,
    /// Not applicable to the role or era.
    #[serde(rename = "n/a")]
    NotApplicable,
    /// Only replays that left their trace judged it.
    Diverged,
    /// No run could be carried out.
    NotRun,
}

/// One cell.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    /// State.
    pub state: CellState,
    /// The run that decided it (for violated: the first violating run).
    pub run: Option<String>,
}

/// One row (written flat: the key's fields beside the others, through [`RowFields`]).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(from = "RowFields", into = "RowFields")]
pub struct Row {
    /// Identity.
    pub key: RowKey,
    /// Exact package versions (and runtime).
    pub version: String,
    /// Cells by property.
    pub cells: BTreeMap<Property, Cell>,
    /// Runs of this row, by id.
    pub runs: Vec<String>,
    /// Why the row could not run, if it could not.
    pub note: Option<String>,
}

/// A [`Row`] as `conformance.json` holds it. Spelled out rather than `#[serde(flatten)]`ed, which
/// cannot deny unknown fields.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFields {
    imp: String,
    role: Role,
    era: Era,
    variant: String,
    version: String,
    cells: BTreeMap<Property, Cell>,
    runs: Vec<String>,
    note: Option<String>,
}

impl From<RowFields> for Row {
    fn from(r: RowFields) -> Row {
        Row {
            key: RowKey {
                imp: r.imp,
                role: r.role,
                era: r.era,
                variant: r.variant,
            },
            version: r.version,
            cells: r.cells,
            runs: r.runs,
            note: r.note,
        }
    }
}

impl From<Row> for RowFields {
    fn from(r: Row) -> RowFields {
        RowFields {
            imp: r.key.imp,
            role: r.key.role,
            era: r.key.era,
            variant: r.key.variant,
            version: r.version,
            cells: r.cells,
            runs: r.runs,
            note: r.note,
        }
    }
}

/// A known-bad strategy replayed as an rt variant.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Validation {
    /// Trace file.
    pub trace: String,
    /// Role the trace is about.
    pub role: Option<Role>,
    /// The strategy.
    pub strategy: String,
    /// The property it shows.
    pub shows: Option<Property>,
    /// Whether the replay judged it violated.
    pub caught: bool,
    /// Whether every judged verdict equals the model's.
    pub agrees: bool,
    /// The run.
    pub run: String,
}

/// The whole matrix.
#[derive(Debug, Serialize, Deserialize)]
pub struct Matrix {
    /// Rows.
    pub rows: Vec<Row>,
    /// Harness validation.
    pub validation: Vec<Validation>,
    /// Every run.
    pub runs: Vec<RunReport>,
    /// Wall time.
    pub seconds: f64,
}

/// How many runs go at once by default: twice the cores, at least 2 and at most 16. A run mostly
/// waits (on the processes it drives and on its windows), not computes: on 2 cores the whole
/// matrix at 4 runs at once took 250 s against 562 s at 2, each run as long as at 2 (943 s of runs
/// summed against 938 s), with the same outcomes but for one run whose outcome varies at 2 as
/// well. The ceiling keeps a large machine from starting dozens of JVMs and Node processes at
/// once.
pub fn default_jobs() -> usize {
    std::thread::available_parallelism()
        .map_or(2, |n| n.get().saturating_mul(2))
        .clamp(2, 16)
}

/// Options.
#[derive(Clone, Debug)]
pub struct Options {
    /// Concurrent runs ([`default_jobs`] unless told).
    pub jobs: usize,
    /// The trace corpus.
    pub traces: PathBuf,
    /// Only these built-in implementations (empty: all).
    pub only: Vec<String>,
    /// Adapters of the user's own (`--adapter FILE`), whose rows are added.
    pub adapters: Vec<Arc<Manifest>>,
    /// Time bounds.
    pub bounds: Bounds,
}

impl Options {
    /// The adapters whose rows run: the built-ins, then the user's (`--adapter`), all of them
    /// or those named by `only`. A name in `only` that names no adapter, or a user's adapter
    /// named like another, is an error.
    pub fn adapters(&self) -> Result<Vec<Arc<Manifest>>, String> {
        let mut all: Vec<Arc<Manifest>> = manifest::built_in().to_vec();
        for m in &self.adapters {
            if all.iter().any(|o| o.name == m.name) {
                return Err(format!(
                    "two adapters are named '{}': give yours another name",
                    m.name
                ));
            }
            all.push(m.clone());
        }
        if let Some(n) = self
            .only
            .iter()
            .find(|n| !all.iter().any(|m| &m.name == *n))
        {
            let names: Vec<&str> = all.iter().map(|m| m.name.as_str()).collect();
            return Err(format!(
                "--only {n}: no such adapter (known: {})",
                names.join(", ")
            ));
        }
        Ok(all
            .into_iter()
            .filter(|m| self.only.is_empty() || self.only.contains(&m.name))
            .collect())
    }
}

/// The rows of the matrix: every role, era and variant of each adapter.
pub fn rows(adapters: &[Arc<Manifest>]) -> Vec<(RowKey, Arc<Manifest>)> {
    let mut out = Vec::new();
    for m in adapters {
        for role in [Role::Server, Role::Client] {
            if !m.plays(role) {
                continue;
            }
            for era in Era::ALL {
                for v in m.variants(role) {
                    let key = RowKey {
                        imp: m.name.clone(),
                        role,
                        era,
                        variant: v.name.clone(),
                    };
                    out.push((key, m.clone()));
                }
            }
        }
    }
    out
}

/// Reads the corpus (sorted by file name); unreadable files and traces whose steps their own
/// strategies cannot take are reported, not fatal, and so is a directory that cannot be read (it
/// is not an empty corpus).
pub fn corpus(dir: &Path) -> (Vec<(String, Trace)>, Vec<String>) {
    let mut traces = Vec::new();
    let mut errors = Vec::new();
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(d) => d
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "json"))
            .collect(),
        Err(e) => {
            errors.push(format!(
                "{}: cannot read the corpus directory: {e}",
                dir.display()
            ));
            Vec::new()
        }
    };
    files.sort();
    for f in files {
        let name = f
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        // A pipe or a device named *.json would block or never end: not a trace file.
        if !f.is_file() {
            errors.push(format!("{name}: not a regular file"));
            continue;
        }
        match crate::limited_file::read_text(&f, MAX_TRACE_BYTES as u64)
            .map_err(|e| e.to_string())
            .and_then(|t| Trace::from_json(&t).map_err(|e| e.to_string()))
            .and_then(|t| match t.replay() {
                Ok(_) => Ok(t),
                Err(e) => Err(format!("the trace cannot be replayed: {e}")),
            }) {
            Ok(t) => traces.push((name, t)),
            Err(e) => errors.push(format!("{name}: {e}")),
        }
    }
    (traces, errors)
}

enum Job {
    Replay(Box<replay::ReplayPlan>, String),
    Exercise(Exercise, Subject, Era, String),
}

impl Job {
    /// The report of this job had it failed before doing anything: what stands in the matrix
    /// for a run whose task panicked, so that it is counted and shown rather than lost.
    fn unstarted(&self) -> RunReport {
        let mut r = match self {
            Job::Replay(p, _) => RunReport::new(
                Target::Trace {
                    name: p.trace_name.clone(),
                    shows: p.trace.shows,
                },
                &p.subject,
                p.role,
                p.scenario.era,
            ),
            Job::Exercise(s, subject, era, _) => RunReport::new(
                Target::Exercise {
                    name: s.name().into(),
                },
                subject,
                s.role(),
                *era,
            ),
        };
        r.id = match self {
            Job::Replay(_, id) | Job::Exercise(_, _, _, id) => id.clone(),
        };
        r
    }
}

/// The matrix's runs in flight. A run whose task panics is not lost: it comes back as its
/// job's report marked failed, saying what the panic said.
#[derive(Default)]
struct Runs {
    set: tokio::task::JoinSet<RunReport>,
    /// Each task's place in the job list and row, and its stand-in report (a task's id is all
    /// its panic leaves behind).
    of: std::collections::HashMap<tokio::task::Id, (usize, Option<usize>, RunReport)>,
}

impl Runs {
    fn spawn(
        &mut self,
        i: usize,
        row: Option<usize>,
        stand_in: RunReport,
        run: impl std::future::Future<Output = RunReport> + Send + 'static,
    ) {
        let id = self.set.spawn(run).id();
        self.of.insert(id, (i, row, stand_in));
    }

    /// The next run to end, with its place; `None` once all have.
    async fn next(&mut self) -> Option<(usize, Option<usize>, RunReport)> {
        let (id, outcome) = match self.set.join_next_with_id().await? {
            Ok((id, r)) => (id, Ok(r)),
            Err(e) => (e.id(), Err(e)),
        };
        // Every task was entered when it was spawned.
        let (i, row, stand_in) = self.of.remove(&id).expect("a run the matrix spawned");
        let r = match outcome {
            Ok(r) => r,
            Err(e) => {
                let why = if e.is_panic() {
                    format!(
                        "the harness panicked on this run: {}",
                        panic_text(e.into_panic())
                    )
                } else {
                    "the harness's task for this run was cancelled".to_string()
                };
                tracing::error!(run = %stand_in.id, "{why}");
                stand_in.failed(why, Instant::now())
            }
        };
        Some((i, row, r))
    }
}

/// What a panic said, if it said it in text.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic with no message".into())
}

fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '-'
            }
        })
        .collect()
}

impl Matrix {
    /// What makes the run a failure, given the expected failures in force (empty when the run
    /// passes): each violated cell of any row that `expected` does not list; each listed cell
    /// that no longer fails (fixed: its entry must go); each row that erred (its adapter could
    /// not be provisioned, or a run could not be carried out); and each known-bad variant whose
    /// own trace ran but did not catch it.
    pub fn failures(&self, expected: &Expectations) -> Vec<String> {
        let judged = expected.judge(self);
        let mut out = judged.unexpected;
        out.extend(judged.fixed.iter().map(ToString::to_string));
        out.extend(self.errors());
        let uncaught: Vec<&str> = self
            .validation
            .iter()
            .filter(|v| {
                v.shows.is_some()
                    && !v.caught
                    && self
                        .runs
                        .iter()
                        .any(|r| r.id == v.run && r.status != RunStatus::Unsupported)
            })
            .map(|v| v.trace.as_str())
            .collect();
        if !uncaught.is_empty() {
            out.push(format!(
                "known-bad variants not caught: {}",
                uncaught.join(", ")
            ));
        }
        out
    }

    /// The rows that erred: `ROW: could not run: WHY` for a row whose adapter could not be
    /// provisioned or started, `ROW: run ID failed: WHY` for each run the harness could not carry
    /// out. A row left out because its adapter does not speak its era did not err.
    pub fn errors(&self) -> Vec<String> {
        let by_id: BTreeMap<&str, &RunReport> =
            self.runs.iter().map(|r| (r.id.as_str(), r)).collect();
        let mut out = Vec::new();
        for row in &self.rows {
            if let Some(why) = row.version.strip_prefix(NOT_AVAILABLE) {
                out.push(format!("{}: could not run: {why}", row.key));
            }
            for id in &row.runs {
                if let Some(r) = by_id.get(id.as_str())
                    && r.status == RunStatus::Failed
                {
                    out.push(format!(
                        "{}: run {id} failed: {}",
                        row.key,
                        r.detail.as_deref().unwrap_or("-")
                    ));
                }
            }
        }
        out
    }
}

/// What a row's version says when its adapter could not be provisioned.
const NOT_AVAILABLE: &str = "not available: ";

/// Each adapter's exact version, or why it could not be provisioned, by adapter name.
type Versions = BTreeMap<String, Result<String, String>>;

/// A job and the matrix row it belongs to (`None`: a pair or validation run, which belongs to
/// no row).
type Placed = (Option<usize>, Job);

/// A finished run: its place in the job list, its row, and its report.
type Done = (usize, Option<usize>, RunReport);

/// Runs the matrix. `progress` gets one line per finished run. Fails only on options that name
/// no adapter.
pub async fn run(
    paths: &Paths,
    opts: &Options,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<Matrix, String> {
    let started = Instant::now();
    // A corpus that is not there is not an empty one: the generated scenarios would run alone.
    if !opts.traces.is_dir() {
        return Err(format!(
            "{}: no such trace corpus directory (run from the repository root, whose traces/ is \
             the corpus, or name another)",
            opts.traces.display()
        ));
    }
    let adapters = opts.adapters()?;
    let keyed = rows(&adapters);
    let keys: Vec<RowKey> = keyed.iter().map(|(k, _)| k.clone()).collect();
    let (traces, errors) = corpus(&opts.traces);
    for e in &errors {
        progress(&format!("skipping unreadable trace {e}"));
    }
    let versions = provision(paths, &adapters, progress);
    let (mut jobs, notes) = row_jobs(&keyed, &traces, &versions);
    jobs.extend(pair_jobs(&versions));
    if adapters.iter().any(|m| m.runs_core) {
        jobs.extend(validation_jobs(&traces));
    }
    let done = execute(jobs, paths, opts, progress).await;
    Ok(assemble(&keys, &versions, &notes, done, started))
}

/// Provisions every adapter first (sequentially, with progress), so runs never race an install.
fn provision(
    paths: &Paths,
    adapters: &[Arc<Manifest>],
    progress: &(dyn Fn(&str) + Sync),
) -> Versions {
    let mut versions: Versions = BTreeMap::new();
    for m in adapters {
        if let std::collections::btree_map::Entry::Vacant(slot) = versions.entry(m.name.clone()) {
            let v = version_of(paths, m);
            if let Err(e) = &v {
                progress(&format!("{}: {e}", m.name));
            }
            slot.insert(v);
        }
    }
    versions
}

/// Each row's runs: the corpus traces about its role in its era, then the exercises of its role;
/// and, by row index, why a row runs nothing (its adapter could not be provisioned, or does not
/// speak its era).
fn row_jobs(
    keyed: &[(RowKey, Arc<Manifest>)],
    traces: &[(String, Trace)],
    versions: &Versions,
) -> (Vec<Placed>, BTreeMap<usize, String>) {
    let mut jobs: Vec<Placed> = Vec::new();
    let mut notes: BTreeMap<usize, String> = BTreeMap::new();
    for (ri, (k, m)) in keyed.iter().enumerate() {
        if let Some(Err(e)) = versions.get(&k.imp) {
            notes.insert(ri, e.clone());
            continue;
        }
        if !m.eras.contains(&k.era) {
            notes.insert(ri, format!("{} does not speak {}", k.imp, k.era));
            continue;
        }
        for (name, t) in traces {
            if t.scenario.era != k.era
                || trace_role(&t.scenario) != Some(k.role)
                || !m.corpus.includes(name)
            {
                continue;
            }
            match plan(t, name, &k.subject(m), None) {
                Ok(p) if p.unsupported.is_none() => {
                    let id = safe(&format!("{}.{}", k.id(), name.trim_end_matches(".json")));
                    jobs.push((Some(ri), Job::Replay(Box::new(p), id)));
                }
                Ok(_) | Err(_) => {}
            }
        }
        for s in Exercise::ALL {
            if s.role() == k.role && s.applies(m, k.era) {
                let id = safe(&format!("{}.{}", k.id(), s.name()));
                jobs.push((Some(ri), Job::Exercise(s, k.subject(m), k.era, id)));
            }
        }
    }
    (jobs, notes)
}

/// Pair runs (both ends an SDK), for the findings only.
fn pair_jobs(versions: &Versions) -> Vec<Placed> {
    let mut jobs = Vec::new();
    for s in Exercise::ALL {
        if let Some((subject, _, era)) = s.pair()
            && matches!(versions.get(subject.name()), Some(Ok(_)))
        {
            let id = safe(&format!("pair.{}", s.name()));
            jobs.push((None, Job::Exercise(s, subject, era, id)));
        }
    }
    jobs
}

/// Harness validation: our runtime running each trace's own strategies.
fn validation_jobs(traces: &[(String, Trace)]) -> Vec<Placed> {
    let mut jobs = Vec::new();
    for (name, t) in traces {
        let subject = Subject::reference(trace_role(&t.scenario), Some("trace"));
        if let Ok(p) = plan(t, name, &subject, None) {
            let id = safe(&format!("validation.{}", name.trim_end_matches(".json")));
            jobs.push((None, Job::Replay(Box::new(p), id)));
        }
    }
    jobs
}

/// Runs the jobs, `opts.jobs` at once, with one progress line per finished run; returns them in
/// job order.
async fn execute(
    jobs: Vec<Placed>,
    paths: &Paths,
    opts: &Options,
    progress: &(dyn Fn(&str) + Sync),
) -> Vec<Done> {
    let total = jobs.len();
    let sem = Arc::new(tokio::sync::Semaphore::new(opts.jobs.max(1)));
    let mut set = Runs::default();
    for (i, (row, job)) in jobs.into_iter().enumerate() {
        let sem = sem.clone();
        let paths = paths.clone();
        let bounds = opts.bounds;
        let stand_in = job.unstarted();
        set.spawn(i, row, stand_in, async move {
            let _permit = sem.acquire_owned().await;
            let mut r = match &job {
                Job::Replay(p, _) => replay::replay(p, &paths, bounds).await,
                Job::Exercise(s, subj, era, _) => {
                    crate::exercises::run(*s, subj, *era, &paths, bounds).await
                }
            };
            r.id = match job {
                Job::Replay(_, id) | Job::Exercise(_, _, _, id) => id,
            };
            r
        });
    }
    let mut done: Vec<Done> = Vec::new();
    while let Some((i, row, r)) = set.next().await {
        progress(&progress_line(done.len() + 1, total, &r));
        done.push((i, row, r));
    }
    done.sort_by_key(|(i, _, _)| *i);
    done
}

/// `[n/total] IMPL ROLE (VARIANT) ERA TARGET: STATUS, violated P... SECONDS`.
fn progress_line(n: usize, total: usize, r: &RunReport) -> String {
    let violated: Vec<&str> = r
        .judged
        .iter()
        .filter(|(_, v)| **v == Verdict::Violated)
        .map(|(p, _)| p.as_str())
        .collect();
    format!(
        "[{n}/{total}] {} {} ({}) {} {}: {}{} {:.1}s",
        r.imp,
        r.role,
        r.variant,
        r.era,
        r.target.name(),
        r.status.as_str(),
        if violated.is_empty() {
            String::new()
        } else {
            format!(", violated {}", violated.join(" "))
        },
        r.duration_ms as f64 / 1000.0
    )
}

/// The matrix from the finished runs: each row with its runs and cells, and the validation
/// entry of each validation run.
fn assemble(
    keys: &[RowKey],
    versions: &Versions,
    notes: &BTreeMap<usize, String>,
    done: Vec<Done>,
    started: Instant,
) -> Matrix {
    let mut rows_out: Vec<Row> = keys
        .iter()
        .enumerate()
        .map(|(ri, k)| Row {
            key: k.clone(),
            version: versions
                .get(&k.imp)
                .cloned()
                .unwrap_or_else(|| Ok("?".into()))
                .unwrap_or_else(|e| format!("{NOT_AVAILABLE}{e}")),
            cells: BTreeMap::new(),
            runs: Vec::new(),
            note: notes.get(&ri).cloned(),
        })
        .collect();
    let mut validation = Vec::new();
    let mut runs = Vec::new();
    for (_, row, r) in done {
        match row {
            Some(ri) => rows_out[ri].runs.push(r.id.clone()),
            None => validation.extend(validation_of(&r)),
        }
        runs.push(r);
    }
    let by_id: BTreeMap<&str, &RunReport> = runs.iter().map(|r| (r.id.as_str(), r)).collect();
    for row in &mut rows_out {
        let rr: Vec<&RunReport> = row
            .runs
            .iter()
            .filter_map(|id| by_id.get(id.as_str()).copied())
            .collect();
        for p in Property::ALL {
            row.cells.insert(p, cell(&row.key, p, &rr));
        }
    }
    Matrix {
        rows: rows_out,
        validation,
        runs,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The validation entry of a run that belongs to no row, if it replayed a trace.
fn validation_of(r: &RunReport) -> Option<Validation> {
    let Target::Trace { name, shows } = &r.target else {
        return None;
    };
    Some(Validation {
        trace: name.clone(),
        role: Some(r.role),
        strategy: r.variant.clone(),
        shows: *shows,
        caught: shows.is_some_and(|p| r.verdict(p) == Verdict::Violated),
        agrees: r.status == RunStatus::Completed
            && r.model
                .as_ref()
                .is_some_and(|m| replay::agrees(&r.judged, m)),
        run: r.id.clone(),
    })
}

fn cell(key: &RowKey, p: Property, runs: &[&RunReport]) -> Cell {
    if !key.owns(p) {
        return Cell {
            state: CellState::NotApplicable,
            run: None,
        };
    }
    let judged: Vec<&&RunReport> = runs
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Completed | RunStatus::Diverged))
        .collect();
    // Prefer a violation found by a run that stayed on its trace (or a scenario run).
    let violating = judged
        .iter()
        .filter(|r| r.verdict(p) == Verdict::Violated)
        .min_by_key(|r| {
            (
                r.status != RunStatus::Completed,
                matches!(r.target, Target::Trace { .. }),
            )
        });
    if let Some(r) = violating {
        return Cell {
            state: CellState::Violated,
            run: Some(r.id.clone()),
        };
    }
    if let Some(r) = judged
        .iter()
        .find(|r| r.status == RunStatus::Completed && r.verdict(p) == Verdict::Holds)
    {
        return Cell {
            state: CellState::Holds,
            run: Some(r.id.clone()),
        };
    }
    if let Some(r) = judged.iter().find(|r| r.status == RunStatus::Diverged) {
        return Cell {
            state: CellState::Diverged,
            run: Some(r.id.clone()),
        };
    }
    if runs.is_empty() || judged.is_empty() {
        let any_applicable = runs.iter().any(|r| r.verdict(p) != Verdict::NotApplicable);
        return Cell {
            state: if any_applicable || runs.iter().any(|r| r.status == RunStatus::Failed) {
                CellState::NotRun
            } else {
                CellState::NotApplicable
            },
            run: None,
        };
    }
    Cell {
        state: CellState::NotApplicable,
        run: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(id: &str) -> RunReport {
        let subject = Subject::reference(Some(Role::Client), None);
        let mut r = RunReport::new(
            Target::Exercise { name: id.into() },
            &subject,
            Role::Client,
            Era::V2025_11_25,
        );
        r.id = id.into();
        r
    }

    #[test]
    fn a_corpus_directory_that_cannot_be_read_is_reported_not_taken_as_empty() {
        let (traces, errors) = corpus(Path::new("/nonexistent/traces"));
        assert!(traces.is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("/nonexistent/traces: cannot read the corpus directory"),
            "{errors:?}"
        );
    }

    #[tokio::test]
    async fn a_run_whose_task_panics_comes_back_failed_in_its_place() {
        let mut runs = Runs::default();
        runs.spawn(0, Some(3), report("fine"), async {
            let mut r = report("fine");
            r.status = RunStatus::Completed;
            r
        });
        runs.spawn(1, None, report("broken"), async {
            if std::hint::black_box(true) {
                panic!("index out of bounds in the proxy");
            }
            report("never")
        });
        let mut ended = Vec::new();
        while let Some(e) = runs.next().await {
            ended.push(e);
        }
        ended.sort_by_key(|(i, ..)| *i);
        assert_eq!(ended.len(), 2, "both runs are in the matrix");
        let (_, row, fine) = &ended[0];
        assert_eq!(
            (*row, fine.id.as_str(), fine.status),
            (Some(3), "fine", RunStatus::Completed)
        );
        let (_, row, broken) = &ended[1];
        assert_eq!((*row, broken.id.as_str()), (None, "broken"));
        assert_eq!(broken.status, RunStatus::Failed);
        let detail = broken.detail.as_deref().unwrap_or_default();
        assert!(
            detail.contains("panicked") && detail.contains("index out of bounds in the proxy"),
            "{detail}"
        );
    }
}
