//! `listsync sim`: the deterministic simulator. Runs many seeded random runs of a strategy under
//! a fault plan (or one scale run with `--burst`), at the machine level (core's machines, no
//! tokio) or the full-stack level (the runtime's tokio + rmcp code on a paused clock over a
//! simulated network), prints a summary table (runs, events and events/s, violations by
//! property, refresh amplification, simulated time to converge), and for each violated property
//! writes its evidence under `--out`: at the machine level the first failing seed shrunk to a
//! trace in the model's format (checked by replay), at the stack level the recorded history and
//! network log of the first failing seed. Exits non-zero when the outcome is not the expected
//! one: any violation for the reference strategies, no violation for a known-bad one, a scale
//! run above its walk bound.

use anyhow::{Context, Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use listsync_core::property::Property;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_harness::adapters::Subject;
use listsync_sim::Case;
use listsync_sim::campaign::{self, SeedRange};
use listsync_sim::case::{self, Params, Strategies};
use listsync_sim::engine::{Budget, Engine, RunOpts, RunResult};
use listsync_sim::plan::FaultPlan;
use listsync_sim::shrink::{self, Shrunk};
use listsync_sim::stack::net::NetCounts;
use listsync_sim::stack::{self, StackReport, StackRun};
use listsync_sim::stats::{Percentiles, Stats, percentiles};
use serde::Serialize;
use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

/// Simulation level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// core's machines on simulated time and network (no tokio).
    Machine,
    /// The runtime's tokio + rmcp code over a simulated transport and clock.
    Stack,
}

/// Arguments of `listsync sim`.
#[derive(clap::Args)]
pub struct Args {
    /// Simulation level.
    #[arg(long, value_enum, default_value = "machine")]
    level: Level,
    /// Number of seeds to run (default: 1000 at the machine level, 200 at the stack level).
    #[arg(long, conflicts_with = "seed")]
    seeds: Option<u64>,
    /// Run this one seed (prints its run; shrinks and writes its violations).
    #[arg(long)]
    seed: Option<u64>,
    /// First seed of the campaign.
    #[arg(long, default_value_t = 0)]
    first_seed: u64,
    /// Run only shard K of M (1-based): every M-th seed starting with the K-th.
    #[arg(long, value_name = "K/M")]
    shard: Option<String>,
    /// Clients per run (default: 1 to 4, drawn per run; with --burst: 1000).
    #[arg(long)]
    clients: Option<u32>,
    /// Scale run: one burst of this many mutations after every client has listed (one a batch;
    /// at the machine level at most 250 batches, the mutations spread over them).
    #[arg(long)]
    burst: Option<u32>,
    /// Server nodes sharing a store and a change bus (machine level only).
    #[arg(long)]
    nodes: Option<u8>,
    /// Fault plan (none, default, storm, crashy, lossy; default: `default`, or `none` with
    /// --burst).
    #[arg(long, value_name = "PLAN")]
    faults: Option<String>,
    /// Strategy under test: `reference`, a client strategy or a server strategy.
    #[arg(long, default_value = "reference")]
    strategy: String,
    /// Print one JSON document instead of the table.
    #[arg(long)]
    json: bool,
    /// Also write the JSON summary to this file.
    #[arg(long)]
    report: Option<PathBuf>,
    /// Where shrunk traces of violations are written.
    #[arg(long, default_value = "reports/sim-traces")]
    out: PathBuf,
    /// Worker threads (default: all cores).
    #[arg(long)]
    threads: Option<usize>,
    /// Do not shrink failures or write traces.
    #[arg(long)]
    no_shrink: bool,
    /// Scale runs over Streamable HTTP instead of stdio.
    #[arg(long)]
    http: bool,
    /// List the fault plans and strategies and exit.
    #[arg(long)]
    list: bool,
    /// With --seed: write the run's recorded history (every step and event; at the stack
    /// level, every line on the simulated network too) to this file.
    #[arg(long, value_name = "FILE")]
    history: Option<PathBuf>,
}

/// One property's line in the summary.
#[derive(Serialize)]
struct PropertyOut {
    runs: u64,
    first_seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace: Option<TraceOut>,
    /// (stack level) The recorded history and network log of the first failing seed.
    #[serde(skip_serializing_if = "Option::is_none")]
    history: Option<String>,
}

/// What the simulated network did at the stack level (one run, or a campaign's totals).
#[derive(Serialize)]
struct StackOut {
    lines_delivered: u64,
    notifications_duplicated: u32,
    notifications_lost: u32,
    streams_broken: u32,
    list_requests_failed: u32,
    list_requests_unanswered: u32,
    connections_cut: u32,
    connections_opened: u32,
    connections_refused: u32,
}

impl StackOut {
    fn of(n: &NetCounts) -> StackOut {
        StackOut {
            lines_delivered: n.delivered,
            notifications_duplicated: n.duplicated,
            notifications_lost: n.lost,
            streams_broken: n.broken,
            list_requests_failed: n.failed,
            list_requests_unanswered: n.swallowed,
            connections_cut: n.cut,
            connections_opened: n.opened,
            connections_refused: n.refused,
        }
    }
}

/// A shrunk trace in the summary.
#[derive(Clone, Serialize)]
struct TraceOut {
    file: String,
    seed: u64,
    original_steps: usize,
    steps: usize,
    clients: usize,
    replays_in_model: bool,
    /// Whether the harness can replay it against the runtime (`listsync replay FILE
    /// --against reference@trace`).
    replays_in_harness: bool,
    /// Why it cannot, if so.
    #[serde(skip_serializing_if = "Option::is_none")]
    harness_unsupported: Option<String>,
}

/// The JSON summary (`--json`, `--report`): one campaign or scale run.
#[derive(Serialize)]
struct Summary {
    tool: &'static str,
    level: Level,
    mode: &'static str,
    strategy: String,
    client_strategy: ClientStrategy,
    server_strategy: ServerStrategy,
    faults: String,
    faults_about: String,
    first_seed: u64,
    seeds: u64,
    shard: String,
    clients: String,
    nodes: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    burst: Option<u32>,
    /// (scale runs) Batches the burst's mutations were applied in.
    #[serde(skip_serializing_if = "Option::is_none")]
    burst_batches: Option<usize>,
    threads: usize,
    runs: u64,
    steps: u64,
    events: u64,
    wall_seconds: f64,
    events_per_second: f64,
    steps_per_second: f64,
    seeds_per_second: f64,
    simulated_seconds: f64,
    violations: BTreeMap<Property, PropertyOut>,
    refresh_amplification: f64,
    walks_per_client_mean: f64,
    walks_per_client_max: u32,
    converge: Percentiles,
    settle: Percentiles,
    anomalies: u64,
    anomaly_seeds: Vec<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    peak_rss_mib: Option<f64>,
    /// (scale runs) Most list walks a client may start after the burst: one for the burst's
    /// first notification, one more for all that arrived meanwhile (coalescing).
    #[serde(skip_serializing_if = "Option::is_none")]
    walk_bound: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stack: Option<StackOut>,
    expected: &'static str,
    as_expected: bool,
}

/// Runs `listsync sim`.
pub fn run(args: Args) -> Result<ExitCode> {
    if args.list {
        print_list();
        return Ok(ExitCode::SUCCESS);
    }
    if args.nodes.is_some_and(|n| n == 0 || n > 16) {
        bail!("--nodes takes 1 to 16");
    }
    if args.level == Level::Stack && args.nodes.is_some_and(|n| n > 1) {
        bail!(
            "--level stack runs one server (the runtime's multi-node deployment needs Redis); use --level machine for --nodes"
        );
    }
    if args.history.is_some() && args.seed.is_none() {
        bail!("--history needs --seed");
    }
    if args.clients == Some(0) || args.clients.is_some_and(|c| c > 1_000_000) {
        bail!("--clients takes 1 to 1000000");
    }
    if args.burst.is_some_and(|b| b == 0 || b > 1_000_000) {
        bail!("--burst takes 1 to 1000000");
    }
    let strategies = Strategies::parse(&args.strategy).map_err(anyhow::Error::msg)?;
    if args.level == Level::Stack && strategies.server == ServerStrategy::ClusterNotifyBeforeVisible
    {
        bail!("cluster-notify-before-visible is a multi-node strategy: use --level machine");
    }
    let default_plan = if args.burst.is_some() {
        "none"
    } else {
        "default"
    };
    let plan = FaultPlan::by_name(args.faults.as_deref().unwrap_or(default_plan))
        .map_err(anyhow::Error::msg)?;
    let threads = args.threads.unwrap_or_else(|| {
        std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1)
    });
    if let Some(burst) = args.burst {
        return scale(&args, strategies, plan, burst);
    }
    let params = Params {
        strategies,
        plan,
        clients: args.clients,
        nodes: match args.level {
            Level::Machine => args.nodes,
            Level::Stack => Some(1),
        },
    };
    if let Some(seed) = args.seed {
        return single(&args, &params, seed);
    }
    let (k, m) = match &args.shard {
        Some(s) => SeedRange::parse_shard(s).map_err(anyhow::Error::msg)?,
        None => (1, 1),
    };
    let range = SeedRange {
        first: args.first_seed,
        count: args.seeds.unwrap_or(match args.level {
            Level::Machine => 1000,
            Level::Stack => 200,
        }),
        index: k,
        of: m,
    };
    let seeds = range.seeds();
    let bar = progress_bar(seeds.len() as u64, args.json);
    let (res, net) = match args.level {
        Level::Machine => (
            campaign::run(&params, &seeds, threads, &|n| bar.inc(n)),
            None,
        ),
        Level::Stack => {
            let (res, net) = campaign::run_stack(&params, &seeds, threads, &|n| bar.inc(n));
            (res, Some(net))
        }
    };
    bar.finish_and_clear();

    let mut traces: BTreeMap<Property, TraceOut> = BTreeMap::new();
    let mut histories: BTreeMap<Property, String> = BTreeMap::new();
    if !args.no_shrink {
        for (p, failing) in &res.failing {
            let Some(&seed) = failing.first() else {
                continue;
            };
            match args.level {
                Level::Machine => {
                    if let Some(t) = shrink_and_write(&args.out, &params, failing, *p)? {
                        traces.insert(*p, t);
                    }
                }
                Level::Stack => {
                    let file = stack_history_file(&args.out, &params, *p);
                    write_stack_history(&file, &params, seed)?;
                    histories.insert(*p, file.display().to_string());
                }
            }
        }
    }
    let summary = summarize(
        &args,
        &params,
        &res.stats,
        res.wall,
        threads,
        seeds.len() as u64,
        format!("{k}/{m}"),
        traces,
        None,
    );
    let mut summary = summary;
    summary.stack = net.as_ref().map(StackOut::of);
    for (p, h) in histories {
        if let Some(v) = summary.violations.get_mut(&p) {
            v.history = Some(h);
        }
    }
    emit(&args, &summary)?;
    Ok(exit(&summary))
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

/// Re-runs a failing stack-level seed with recording on and writes its history.
fn write_stack_history(file: &Path, params: &Params, seed: u64) -> Result<()> {
    let (case, out, _) = stack_seed(params, seed, true);
    write_history(file, &case, &out)
}

/// Writes a recorded run: what it was, what it found, then every line it recorded.
fn write_history(file: &Path, case: &Case, out: &RunResult) -> Result<()> {
    if let Some(dir) = file.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut text = format!(
        "# seed {} {:?}\n# scenario {}\n",
        case.shape.seed,
        case.shape,
        serde_json::to_string(&case.scenario)?
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
    std::fs::write(file, text).with_context(|| format!("writing {}", file.display()))
}

fn progress_bar(len: u64, quiet: bool) -> ProgressBar {
    if quiet || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template("{spinner} {pos}/{len} seeds [{bar:30}] {per_sec} {eta}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

fn print_list() {
    println!("fault plans (--faults):");
    for p in FaultPlan::all() {
        println!("  {:<8} {}", p.name, p.about);
    }
    println!("\nstrategies (--strategy):");
    println!("  reference (client and server)");
    for s in ClientStrategy::ALL.iter().skip(1) {
        println!("  {s} (client)");
    }
    for s in ServerStrategy::ALL.iter().skip(1) {
        println!("  {s} (server)");
    }
}

/// Why the harness could not replay `trace` against our runtime running the trace's own
/// strategies (one server process, one client, stdio), or None if it can.
fn harness_unsupported(trace: &listsync_core::trace::Trace) -> Option<String> {
    let subject: Subject = match "reference@trace".parse() {
        Ok(s) => s,
        Err(e) => return Some(e.to_string()),
    };
    match listsync_harness::replay::plan(trace, "sim", &subject, None) {
        Ok(plan) => plan.unsupported,
        Err(e) => Some(e),
    }
}

/// Shrinks the failure of `p` at the first of `seeds` (the smallest failing seeds), writes
/// the trace, and checks it replays in the model. The seeds are tried in order until one
/// shrinks to a trace the harness can replay too (without authorization contexts, several
/// nodes or cut connections); if none does, the first seed's trace is written.
fn shrink_and_write(
    out: &Path,
    params: &Params,
    seeds: &[u64],
    p: Property,
) -> Result<Option<TraceOut>> {
    let mut first: Option<Shrunk> = None;
    for &seed in seeds {
        let Some(s) = shrink::shrink(seed, params, p, shrink::Limits::default()) else {
            continue;
        };
        if harness_unsupported(&s.trace).is_none() {
            return Ok(Some(write_trace(out, params, &s)?));
        }
        first.get_or_insert(s);
    }
    first.map(|s| write_trace(out, params, &s)).transpose()
}

fn write_trace(out: &Path, params: &Params, s: &Shrunk) -> Result<TraceOut> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let file = out.join(format!(
        "{}.{}.{}.json",
        params.strategies.label(),
        params.plan.name,
        s.property.as_str()
    ));
    std::fs::write(&file, s.trace.to_json())
        .with_context(|| format!("writing {}", file.display()))?;
    let replays = shrink::replays_in_model(&s.trace).unwrap_or(false);
    let harness = harness_unsupported(&s.trace);
    Ok(TraceOut {
        replays_in_harness: harness.is_none(),
        harness_unsupported: harness,
        file: file.display().to_string(),
        seed: s.seed,
        original_steps: s.original_steps,
        steps: s.trace.steps.len(),
        clients: s.trace.scenario.clients.len(),
        replays_in_model: replays,
    })
}

fn single(args: &Args, params: &Params, seed: u64) -> Result<ExitCode> {
    let record = args.history.is_some();
    let start = Instant::now();
    let (case, out, report) = match args.level {
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
    let wall = start.elapsed();
    if let Some(file) = &args.history {
        write_history(file, &case, &out)?;
    }
    if !args.json {
        println!("seed {seed}: {:?}", case.shape);
        println!(
            "  {} clients, {} batches, {} initial items, {} steps, {} events, {:.1} simulated ms",
            case.scenario.clients.len(),
            case.scenario.script.len(),
            case.scenario.initial.len(),
            out.steps,
            out.events,
            out.end_us as f64 / 1000.0
        );
        for f in &out.found {
            println!(
                "  VIOLATED {} after step {} ({:.1} ms): {}",
                f.property,
                f.after_steps,
                f.at_us as f64 / 1000.0,
                f.detail
            );
        }
        if let Some(s) = &out.stuck {
            println!("  STUCK: {s}");
        }
    }
    let mut stats = Stats::default();
    stats.add(seed, &out);
    let mut traces = BTreeMap::new();
    let mut histories = BTreeMap::new();
    if !args.no_shrink {
        for f in &out.found {
            match args.level {
                Level::Machine => {
                    if let Some(t) = shrink_and_write(&args.out, params, &[seed], f.property)? {
                        traces.insert(f.property, t);
                    }
                }
                Level::Stack => {
                    let file = stack_history_file(&args.out, params, f.property);
                    write_stack_history(&file, params, seed)?;
                    histories.insert(f.property, file.display().to_string());
                }
            }
        }
    }
    let mut summary = summarize(args, params, &stats, wall, 1, 1, "1/1".into(), traces, None);
    for (p, h) in histories {
        if let Some(v) = summary.violations.get_mut(&p) {
            v.history = Some(h);
        }
    }
    summary.stack = report.as_ref().map(|r| StackOut::of(&r.net));
    emit(args, &summary)?;
    Ok(exit(&summary))
}

fn scale(args: &Args, strategies: Strategies, plan: FaultPlan, burst: u32) -> Result<ExitCode> {
    let clients = args.clients.unwrap_or(1000);
    let seed = args.seed.unwrap_or(args.first_seed);
    let nodes = args.nodes.unwrap_or(1);
    // The machine level numbers batches like the trace format (a u8): a burst above that is
    // spread over its batches. The stack level applies its script itself: one mutation a batch.
    let max_batches = match args.level {
        Level::Machine => case::MAX_BATCHES,
        Level::Stack => usize::MAX,
    };
    let scn = case::burst(clients, burst, max_batches, nodes, strategies, args.http);
    if args.level == Level::Machine {
        scn.validate().map_err(anyhow::Error::msg)?;
    }
    if !args.json {
        eprintln!(
            "scale run: {clients} clients on {nodes} node(s), burst of {burst} mutations in {} batch(es), faults {}, seed {seed}",
            scn.script.len(),
            plan.name
        );
    }
    let start = Instant::now();
    let mut plan = plan;
    let (out, report) = match args.level {
        Level::Machine => {
            // The burst: every batch back to back once the first lists are in.
            plan.first_batch = (500_000, 500_000);
            plan.storm_permille = 1000;
            plan.storm_gap = (0, 2);
            let out = Engine::new(&scn, &plan, seed, Budget::default(), RunOpts::default()).run();
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
                    slow: plan.slow_permille > 0,
                },
                budget: Budget::default(),
                burst: true,
            };
            let (out, rep) = stack::run(&scn, &plan, seed, &how, RunOpts::default());
            (out, Some(rep))
        }
    };
    let wall = start.elapsed();
    let mut stats = Stats::default();
    stats.add(seed, &out);
    let params = Params {
        strategies,
        plan,
        clients: Some(clients),
        nodes: args.nodes,
    };
    // One run on one thread.
    let mut summary = summarize(
        args,
        &params,
        &stats,
        wall,
        1,
        1,
        "1/1".into(),
        BTreeMap::new(),
        Some(burst),
    );
    summary.burst_batches = Some(scn.script.len());
    summary.peak_rss_mib = peak_rss_mib();
    summary.stack = report.as_ref().map(|r| StackOut::of(&r.net));
    if strategies.is_reference() && !params.plan.breaks_convergence() {
        // Coalescing: one walk for the burst's first notification, one for all the others.
        summary.walk_bound = Some(2);
        summary.as_expected &= summary.walks_per_client_max <= 2;
    }
    emit(args, &summary)?;
    Ok(exit(&summary))
}

/// Peak resident memory of this process (Linux), MiB.
fn peak_rss_mib() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

#[allow(clippy::too_many_arguments)]
fn summarize(
    args: &Args,
    params: &Params,
    stats: &Stats,
    wall: Duration,
    threads: usize,
    seeds: u64,
    shard: String,
    mut traces: BTreeMap<Property, TraceOut>,
    burst: Option<u32>,
) -> Summary {
    let secs = wall.as_secs_f64().max(1e-9);
    let violations: BTreeMap<Property, PropertyOut> = stats
        .violations
        .iter()
        .map(|(p, c)| {
            (
                *p,
                PropertyOut {
                    runs: c.runs,
                    first_seed: c.first_seed,
                    trace: traces.remove(p),
                    history: None,
                },
            )
        })
        .collect();
    let reference = params.strategies.is_reference();
    let plan_breaks = params.plan.breaks_convergence();
    let counted = |p: &Property| {
        !(plan_breaks
            && matches!(
                p,
                Property::Converges | Property::NoLostWakeup | Property::ListenThenList
            ))
    };
    let caught = violations.keys().any(counted);
    let as_expected = stats.anomalies == 0 && if reference { !caught } else { caught };
    let mut converge = stats.converge.clone();
    let mut settle = stats.settle.clone();
    Summary {
        tool: "listsync sim",
        level: args.level,
        mode: if burst.is_some() {
            "scale"
        } else if args.seed.is_some() {
            "seed"
        } else {
            "campaign"
        },
        strategy: params.strategies.label().into(),
        client_strategy: params.strategies.client,
        server_strategy: params.strategies.server,
        faults: params.plan.name.into(),
        faults_about: params.plan.about.into(),
        first_seed: args.seed.unwrap_or(args.first_seed),
        seeds,
        shard,
        clients: params
            .clients
            .map_or_else(|| "1-4".to_string(), |c| c.to_string()),
        nodes: match params.nodes {
            Some(n) => n.to_string(),
            None if params.strategies.server == ServerStrategy::ClusterNotifyBeforeVisible => {
                "2-3".into()
            }
            None => "1".into(),
        },
        burst,
        burst_batches: None,
        threads,
        runs: stats.runs,
        steps: stats.steps,
        events: stats.events,
        wall_seconds: secs,
        events_per_second: stats.events as f64 / secs,
        steps_per_second: stats.steps as f64 / secs,
        seeds_per_second: stats.runs as f64 / secs,
        simulated_seconds: stats.sim_us as f64 / 1e6,
        violations,
        refresh_amplification: stats.amplification(),
        walks_per_client_mean: stats.walks_per_client(),
        walks_per_client_max: stats.max_client_walks,
        converge: percentiles(&mut converge),
        settle: percentiles(&mut settle),
        anomalies: stats.anomalies,
        anomaly_seeds: stats.anomaly_seeds.clone(),
        peak_rss_mib: None,
        walk_bound: None,
        stack: None,
        expected: if reference {
            "no violation"
        } else {
            "violations caught"
        },
        as_expected,
    }
}

fn emit(args: &Args, s: &Summary) -> Result<()> {
    let json = serde_json::to_string_pretty(s)?;
    if let Some(path) = &args.report {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(path, &json).with_context(|| format!("writing {}", path.display()))?;
    }
    if args.json {
        println!("{json}");
    } else {
        print_table(s);
    }
    Ok(())
}

fn human(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2} G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2} M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1} k", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn print_table(s: &Summary) {
    println!(
        "listsync sim: {} level, strategy {}, faults {}, {} run(s) (seeds from {}, shard {}), clients {}, nodes {}{}, {} thread(s)",
        match s.level {
            Level::Machine => "machine",
            Level::Stack => "stack",
        },
        s.strategy,
        s.faults,
        s.runs,
        s.first_seed,
        s.shard,
        s.clients,
        s.nodes,
        s.burst
            .map(|b| format!(
                ", burst of {b} mutations in {} batch(es)",
                s.burst_batches.unwrap_or(b as usize)
            ))
            .unwrap_or_default(),
        s.threads
    );
    println!();
    println!(
        "| runs | steps | events | wall | events/s | steps/s | seeds/s | simulated |\n|---:|---:|---:|---:|---:|---:|---:|---:|"
    );
    println!(
        "| {} | {} | {} | {:.2} s | {} | {} | {} | {:.1} s |",
        s.runs,
        human(s.steps as f64),
        human(s.events as f64),
        s.wall_seconds,
        human(s.events_per_second),
        human(s.steps_per_second),
        human(s.seeds_per_second),
        s.simulated_seconds
    );
    println!();
    println!(
        "| property | runs violated | first seed | {} |\n|---|---:|---:|---|",
        match s.level {
            Level::Machine => "shrunk trace",
            Level::Stack => "recorded history",
        }
    );
    for p in Property::ALL {
        match s.violations.get(&p) {
            None => println!("| {p} | 0 | | |"),
            Some(v) => println!(
                "| {p} | {} | {} | {} |",
                v.runs,
                v.first_seed,
                v.trace
                    .as_ref()
                    .map(|t| format!(
                        "{} ({} steps from {}, {} client(s){})",
                        t.file,
                        t.steps,
                        t.original_steps,
                        t.clients,
                        match (t.replays_in_model, t.replays_in_harness) {
                            (true, true) => ", replays in the model and the harness",
                            (true, false) => ", replays in the model; not in the harness",
                            (false, _) => ", DOES NOT REPLAY",
                        }
                    ))
                    .or_else(|| v.history.clone())
                    .unwrap_or_default()
            ),
        }
    }
    println!();
    println!(
        "refresh amplification: {:.3} list walks per committed change per client; walks per client after the first change: mean {:.2}, max {}",
        s.refresh_amplification, s.walks_per_client_mean, s.walks_per_client_max
    );
    println!(
        "time to converge (simulated, last commit to a client's last publish): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; run settles: p50 {:.1} ms, p99 {:.1} ms",
        s.converge.p50_ms, s.converge.p99_ms, s.converge.max_ms, s.settle.p50_ms, s.settle.p99_ms
    );
    if let Some(b) = s.walk_bound {
        println!(
            "list walks per client after the burst: max {} (coalescing bound {b}: {})",
            s.walks_per_client_max,
            if s.walks_per_client_max <= b {
                "within"
            } else {
                "EXCEEDED"
            }
        );
    }
    if let Some(n) = &s.stack {
        println!(
            "network: {} lines delivered, {} notifications duplicated, {} lost, {} streams broken, {} list requests failed, {} unanswered; connections: {} opened, {} cut, {} refused",
            n.lines_delivered,
            n.notifications_duplicated,
            n.notifications_lost,
            n.streams_broken,
            n.list_requests_failed,
            n.list_requests_unanswered,
            n.connections_opened,
            n.connections_cut,
            n.connections_refused
        );
    }
    if let Some(m) = s.peak_rss_mib {
        println!("peak memory: {m:.0} MiB; wall time {:.2} s", s.wall_seconds);
    }
    if s.anomalies > 0 {
        println!(
            "SIMULATOR ANOMALIES in {} run(s) (stuck, step limit, refused step): seeds {:?}",
            s.anomalies, s.anomaly_seeds
        );
    }
    println!(
        "{}: expected {} -> {}",
        s.strategy,
        s.expected,
        if s.as_expected {
            "as expected"
        } else {
            "NOT AS EXPECTED"
        }
    );
}

fn exit(s: &Summary) -> ExitCode {
    if s.as_expected {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
