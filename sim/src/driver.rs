//! What `listsync sim` does, as one library call: a seeded campaign, one seed, or a scale run,
//! at the machine or stack level. Each returns a [`Summary`] and writes the evidence of every
//! violated property: at the machine level the first failing seed shrunk to a trace in the
//! model's format (checked by replay), at the stack level the recorded history and network log
//! of the first failing seed.

use crate::Case;
use crate::campaign::{self, SeedRange};
use crate::case::{self, Params, Strategies};
use crate::engine::{Budget, Engine, RunOpts, RunResult};
use crate::plan::FaultPlan;
use crate::shrink::{self, Shrunk};
use crate::stack::{self, StackReport, StackRun};
use crate::stats::Stats;
use crate::summary::{Level, Mode, NetSummary, Summary, Totals, TraceSummary};
use listsync_core::client::CatalogClient;
use listsync_core::property::Property;
use listsync_core::strategy::ServerStrategy;
use listsync_core::trace::Trace;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// A `listsync sim` invocation (with the feature `clap`, its flags: the CLI flattens it).
#[derive(Clone, Debug)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct SimSettings {
    /// Simulation level.
    #[cfg_attr(feature = "clap", arg(long, value_enum, default_value = "machine"))]
    pub level: Level,
    /// Number of seeds to run (default: 1000 at the machine level, 200 at the stack level).
    #[cfg_attr(feature = "clap", arg(long, conflicts_with = "seed"))]
    pub seeds: Option<u64>,
    /// Run this one seed (prints its run; shrinks and writes its violations).
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
    /// First seed of the campaign.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = 0))]
    pub first_seed: u64,
    /// Run only shard K of M (1-based): every M-th seed starting with the K-th.
    #[cfg_attr(feature = "clap", arg(long, value_name = "K/M"))]
    pub shard: Option<String>,
    /// Clients per run (default: 1 to 4, drawn per run; with --burst: 1000).
    #[cfg_attr(feature = "clap", arg(long))]
    pub clients: Option<u32>,
    /// Scale run: one burst of this many mutations after every client has listed (one a batch;
    /// at the machine level at most 250 batches, the mutations spread over them).
    #[cfg_attr(feature = "clap", arg(long))]
    pub burst: Option<u32>,
    /// Server nodes sharing a store and a change bus (machine level only).
    #[cfg_attr(feature = "clap", arg(long))]
    pub nodes: Option<u8>,
    /// Fault plan (none, default, storm, crashy, lossy; default: `default`, or `none` with
    /// --burst).
    #[cfg_attr(feature = "clap", arg(long, value_name = "PLAN"))]
    pub faults: Option<String>,
    /// Strategy under test: `reference`, a client strategy or a server strategy.
    #[cfg_attr(feature = "clap", arg(long, default_value = "reference"))]
    pub strategy: String,
    /// Where shrunk traces of violations (and recorded histories) are written.
    #[cfg_attr(feature = "clap", arg(long, default_value = "reports/sim-traces"))]
    pub out: PathBuf,
    /// Worker threads (default: all cores).
    #[cfg_attr(feature = "clap", arg(long))]
    pub threads: Option<usize>,
    /// Do not shrink failures or write traces.
    #[cfg_attr(feature = "clap", arg(long))]
    pub no_shrink: bool,
    /// Scale runs over Streamable HTTP instead of stdio.
    #[cfg_attr(feature = "clap", arg(long))]
    pub http: bool,
    /// With --seed: write the run's recorded history (every step and event; at the stack
    /// level, every line on the simulated network too) to this file.
    #[cfg_attr(feature = "clap", arg(long, value_name = "FILE"))]
    pub history: Option<PathBuf>,
}

/// Why a shrunk trace cannot be replayed by the harness (None if it can); supplied by the
/// caller, so the simulator does not depend on the harness.
pub type HarnessCheck<'a> = &'a (dyn Fn(&Trace) -> Option<String> + Sync);

/// What a request ran, besides its summary: a single seed's run, for printing.
pub struct Ran {
    /// The summary.
    pub summary: Summary,
    /// (single seed) The case and its run.
    pub single: Option<(Case, RunResult)>,
}

impl Ran {
    /// (single seed) What the seed ran and what it found, as printed before the summary.
    pub fn single_text(&self) -> String {
        use std::fmt::Write as _;
        let mut o = String::new();
        let Some((case, out)) = &self.single else {
            return o;
        };
        let _ = writeln!(o, "seed {}: {:?}", case.shape.seed, case.shape);
        let _ = writeln!(
            o,
            "  {} clients, {} batches, {} initial items, {} steps, {} events, {:.1} simulated ms",
            case.scenario.clients.len(),
            case.scenario.script.len(),
            case.scenario.initial.len(),
            out.steps,
            out.events,
            out.end_us as f64 / 1000.0
        );
        for f in &out.found {
            let _ = writeln!(
                o,
                "  VIOLATED {} after step {} ({:.1} ms): {}",
                f.property,
                f.after_steps,
                f.at_us as f64 / 1000.0,
                f.detail
            );
        }
        if let Some(stuck) = &out.stuck {
            let _ = writeln!(o, "  STUCK: {stuck}");
        }
        o
    }
}

impl SimSettings {
    /// The request's problems, as the one-line error a user sees.
    pub fn validate(&self) -> Result<(Strategies, FaultPlan), String> {
        if self.nodes.is_some_and(|n| n == 0 || n > 16) {
            return Err("--nodes takes 1 to 16".into());
        }
        if self.level == Level::Stack && self.nodes.is_some_and(|n| n > 1) {
            return Err("--level stack runs one server (the runtime's multi-node deployment needs Redis); use --level machine for --nodes".into());
        }
        if self.history.is_some() && self.seed.is_none() {
            return Err("--history needs --seed".into());
        }
        if self.seeds == Some(0) {
            return Err("--seeds takes at least 1 (a campaign of no run shows nothing)".into());
        }
        if self.threads == Some(0) {
            return Err("--threads takes at least 1".into());
        }
        if self.clients == Some(0) || self.clients.is_some_and(|c| c > 1_000_000) {
            return Err("--clients takes 1 to 1000000".into());
        }
        if self.burst.is_some_and(|b| b == 0 || b > 1_000_000) {
            return Err("--burst takes 1 to 1000000".into());
        }
        let strategies = Strategies::parse(&self.strategy)?;
        if self.level == Level::Stack
            && strategies.server == ServerStrategy::ClusterNotifyBeforeVisible
        {
            return Err(
                "cluster-notify-before-visible is a multi-node strategy: use --level machine"
                    .into(),
            );
        }
        let default_plan = if self.burst.is_some() {
            "none"
        } else {
            "default"
        };
        let plan = FaultPlan::by_name(self.faults.as_deref().unwrap_or(default_plan))?;
        if let Some(s) = &self.shard {
            SeedRange::parse_shard(s)?;
        }
        Ok((strategies, plan))
    }

    fn threads(&self) -> usize {
        self.threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(|n| n.get())
                .unwrap_or(1)
        })
    }

    fn params(&self, strategies: Strategies, plan: FaultPlan) -> Params {
        Params {
            strategies,
            plan,
            clients: self.clients,
            nodes: match self.level {
                Level::Machine => self.nodes,
                Level::Stack => Some(1),
            },
            tools_only: false,
        }
    }
}

/// Runs a request. `progress` hears how many more seeds finished; `harness` says whether a
/// shrunk trace replays in the harness (the shrinker prefers one that does).
pub fn run(
    req: &SimSettings,
    progress: &(dyn Fn(u64) + Sync),
    harness: HarnessCheck<'_>,
) -> Result<Ran, String> {
    let (strategies, plan) = req.validate()?;
    if let Some(burst) = req.burst {
        return scale(req, strategies, plan, burst).map(|summary| Ran {
            summary,
            single: None,
        });
    }
    let params = req.params(strategies, plan);
    if let Some(seed) = req.seed {
        return single(req, &params, seed, harness);
    }
    let (k, m) = match &req.shard {
        Some(s) => SeedRange::parse_shard(s)?,
        None => (1, 1),
    };
    let range = SeedRange {
        first: req.first_seed,
        count: req.seeds.unwrap_or(match req.level {
            Level::Machine => 1000,
            Level::Stack => 200,
        }),
        index: k,
        of: m,
    };
    let seeds = range.seeds();
    let threads = req.threads();
    let (res, net) = match req.level {
        Level::Machine => (campaign::run(&params, &seeds, threads, progress), None),
        Level::Stack => {
            let (res, net) = campaign::run_stack(&params, &seeds, threads, progress);
            (res, Some(net))
        }
    };
    let mut summary = Summary::of(
        req.level,
        Mode::Campaign,
        params.strategies,
        &params.plan,
        &res.stats,
        res.wall.as_secs_f64(),
        threads,
        req.first_seed,
        range.count,
        format!("{k}/{m}"),
        params.clients,
        params.nodes,
    );
    summary.stack = net.as_ref().map(NetSummary::of);
    if req.shard.is_some() {
        summary.totals = Some(Totals::of(&res.stats, &res.failing));
    }
    if !req.no_shrink {
        for (p, failing) in &res.failing {
            if failing.is_empty() {
                continue;
            }
            evidence(req, &params, failing, *p, harness, &mut summary)?;
        }
    }
    Ok(Ran {
        summary,
        single: None,
    })
}

/// Writes the evidence of `p` (shrunk trace or recorded history) and links it in `summary`.
fn evidence(
    req: &SimSettings,
    params: &Params,
    failing: &[u64],
    p: Property,
    harness: HarnessCheck<'_>,
    summary: &mut Summary,
) -> Result<(), String> {
    let Some(line) = summary.violations.get_mut(&p) else {
        return Ok(());
    };
    match req.level {
        Level::Machine => {
            line.trace = shrink_and_write(&req.out, params, failing, p, harness)?;
        }
        Level::Stack => {
            let file = stack_history_file(&req.out, params, p);
            let (case, out, _) = stack_seed(params, failing[0], true);
            write_history(&file, &case, &out)?;
            line.history = Some(file.display().to_string());
        }
    }
    Ok(())
}

/// Where the recorded history of a stack-level violation goes.
fn stack_history_file(out: &Path, params: &Params, p: Property) -> PathBuf {
    out.join(format!(
        "stack.{}.{}.{}.log",
        params.strategies.label(),
        params.plan.name,
        p.as_str()
    ))
}

/// Runs one stack-level seed, recording its history when `record`.
fn stack_seed(params: &Params, seed: u64, record: bool) -> (Case, RunResult, StackReport) {
    let case = Case::draw(seed, params);
    let (out, rep) = case.run_stack(
        &params.plan,
        RunOpts {
            record,
            ..RunOpts::default()
        },
    );
    (case, out, rep)
}

/// Writes a recorded run: what it was, what it found, then every line it recorded.
fn write_history(file: &Path, case: &Case, out: &RunResult) -> Result<(), String> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    }
    let scenario = serde_json::to_string(&case.scenario).map_err(|e| e.to_string())?;
    let mut text = format!(
        "# seed {} {:?}\n# scenario {scenario}\n",
        case.shape.seed, case.shape
    );
    for f in &out.found {
        text.push_str(&format!("# VIOLATED {}: {}\n", f.property, f.detail));
    }
    if let Some(s) = &out.stuck {
        text.push_str(&format!("# STUCK: {s}\n"));
    }
    for line in out.recording.iter().flat_map(|r| r.history.iter()) {
        text.push_str(line);
        text.push('\n');
    }
    std::fs::write(file, text).map_err(|e| format!("writing {}: {e}", file.display()))
}

/// Shrinks the failure of `p` at the first of `seeds` (the smallest failing seeds), writes
/// the trace, and checks it replays in the model. The seeds are tried in order until one
/// shrinks to a trace the harness can replay too; if none does, the first seed's trace is
/// written.
fn shrink_and_write(
    out: &Path,
    params: &Params,
    seeds: &[u64],
    p: Property,
    harness: HarnessCheck<'_>,
) -> Result<Option<TraceSummary>, String> {
    let mut first: Option<Shrunk> = None;
    for &seed in seeds {
        let Some(s) = shrink::shrink(seed, params, p, shrink::ShrinkLimits::default()) else {
            continue;
        };
        if harness(&s.trace).is_none() {
            return Ok(Some(write_trace(out, params, &s, harness)?));
        }
        first.get_or_insert(s);
    }
    first
        .map(|s| write_trace(out, params, &s, harness))
        .transpose()
}

fn write_trace(
    out: &Path,
    params: &Params,
    s: &Shrunk,
    harness: HarnessCheck<'_>,
) -> Result<TraceSummary, String> {
    std::fs::create_dir_all(out).map_err(|e| format!("creating {}: {e}", out.display()))?;
    let file = out.join(format!(
        "{}.{}.{}.json",
        params.strategies.label(),
        params.plan.name,
        s.property.as_str()
    ));
    std::fs::write(&file, s.trace.to_json())
        .map_err(|e| format!("writing {}: {e}", file.display()))?;
    let unsupported = harness(&s.trace);
    Ok(TraceSummary {
        replays_in_harness: unsupported.is_none(),
        harness_unsupported: unsupported,
        file: file.display().to_string(),
        seed: s.seed,
        original_steps: s.original_steps,
        steps: s.trace.steps.len(),
        clients: s.trace.scenario.clients.len(),
        replays_in_model: shrink::replays_in_model(&s.trace).unwrap_or(false),
    })
}

fn single(
    req: &SimSettings,
    params: &Params,
    seed: u64,
    harness: HarnessCheck<'_>,
) -> Result<Ran, String> {
    let record = req.history.is_some();
    let start = Instant::now();
    let (case, out, report) = match req.level {
        Level::Machine => {
            let case = Case::draw(seed, params);
            let out = case.run(
                &params.plan,
                RunOpts {
                    record,
                    ..RunOpts::default()
                },
            );
            (case, out, None)
        }
        Level::Stack => {
            let (case, out, rep) = stack_seed(params, seed, record);
            (case, out, Some(rep))
        }
    };
    let wall = start.elapsed().as_secs_f64();
    if let Some(file) = &req.history {
        write_history(file, &case, &out)?;
    }
    let mut stats = Stats::default();
    stats.add(seed, &out);
    let mut summary = Summary::of(
        req.level,
        Mode::Seed,
        params.strategies,
        &params.plan,
        &stats,
        wall,
        1,
        seed,
        1,
        "1/1".into(),
        params.clients,
        params.nodes,
    );
    summary.stack = report.as_ref().map(|r| NetSummary::of(&r.net));
    if !req.no_shrink {
        for f in &out.found {
            evidence(req, params, &[seed], f.property, harness, &mut summary)?;
        }
    }
    Ok(Ran {
        summary,
        single: Some((case, out)),
    })
}

/// A scale run: `clients` clients (default 1000), one burst of `burst` mutations once every
/// client has listed. The reference must stay within the coalescing bound: one walk for the
/// burst's first notification, one more for all that arrived meanwhile.
fn scale(
    req: &SimSettings,
    strategies: Strategies,
    mut plan: FaultPlan,
    burst: u32,
) -> Result<Summary, String> {
    let clients = req.clients.unwrap_or(1000);
    let seed = req.seed.unwrap_or(req.first_seed);
    let nodes = req.nodes.unwrap_or(1);
    // The machine level numbers batches like the trace format (a u8): a burst above that is
    // spread over its batches. The stack level applies its script itself: one mutation a batch.
    let max_batches = match req.level {
        Level::Machine => case::MAX_BATCHES,
        Level::Stack => usize::MAX,
    };
    let scn = case::burst(clients, burst, max_batches, nodes, strategies, req.http);
    if req.level == Level::Machine {
        scn.validate()?;
    }
    let start = Instant::now();
    let (out, report) = match req.level {
        Level::Machine => {
            // The burst: every batch back to back once the first lists are in.
            plan.first_batch = (500_000, 500_000);
            plan.storm_permille = 1000;
            plan.storm_gap = (0, 2);
            let out = Engine::<CatalogClient>::new(
                &scn,
                &plan,
                seed,
                Budget::default(),
                RunOpts::default(),
            )
            .run();
            (out, None)
        }
        Level::Stack => {
            // The burst: every batch applied back to back, at once, when every client has
            // listed and gone idle. Faults of the plan's network only (no crash or cut).
            let how = StackRun {
                net: stack::net::NetBudget {
                    dups: plan.max_dup,
                    drops: if plan.silent_drops { plan.max_drop } else { 0 },
                    request_faults: 0,
                    call_errors: scn.faults.call_error,
                    slow: plan.slow_permille > 0,
                },
                budget: Budget::default(),
                burst: true,
            };
            let (out, rep) = stack::run(&scn, &plan, seed, &how, RunOpts::default());
            (out, Some(rep))
        }
    };
    let wall = start.elapsed().as_secs_f64();
    let mut stats = Stats::default();
    stats.add(seed, &out);
    let mut summary = Summary::of(
        req.level,
        Mode::Scale,
        strategies,
        &plan,
        &stats,
        wall,
        1,
        seed,
        1,
        "1/1".into(),
        Some(clients),
        req.nodes,
    );
    summary.burst = Some(burst);
    summary.burst_batches = Some(scn.script.len());
    summary.peak_rss_mib = peak_rss_mib();
    summary.stack = report.as_ref().map(|r| NetSummary::of(&r.net));
    if strategies.is_reference() && !plan.breaks_convergence() {
        summary.walk_bound = Some(2);
        summary.as_expected &= summary.walks_per_client_max <= 2;
    }
    Ok(summary)
}

/// Peak resident memory of this process (Linux), MiB.
fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

/// Every fault plan and strategy, for `--list`.
pub fn list() -> String {
    use listsync_core::strategy::ClientStrategy;
    let mut s = String::from("fault plans (--faults):\n");
    for p in FaultPlan::all() {
        s.push_str(&format!("  {:<8} {}\n", p.name, p.about));
    }
    s.push_str("\nstrategies (--strategy):\n  reference (client and server)\n");
    for c in ClientStrategy::ALL.iter().skip(1) {
        s.push_str(&format!("  {c} (client)\n"));
    }
    for v in ServerStrategy::ALL.iter().skip(1) {
        s.push_str(&format!("  {v} (server)\n"));
    }
    s
}
