//! Bench (7), simulator throughput: history events and seeds per second of a campaign on fixed
//! seeds (0, 1, …, the same every iteration), the reference strategies under the default fault
//! plan, at the machine level (core's machines on simulated time) and the stack level (the
//! runtime's tokio + rmcp code over the simulated network), on 1 and 2 worker threads.
//!
//! Runs `listsync_sim::campaign` directly (what `listsync sim` runs, without the process's
//! start or the printing), so the time is the campaign's own. Quick mode runs 2,000 machine
//! seeds and 200 stack seeds a campaign; the full run 10,000 and 1,000. The report sets each
//! figure beside the earlier measurements of the same campaigns (`render/src/bench_sim.rs`).

mod support;

use criterion::{BenchmarkId, Criterion, SamplingMode, criterion_group, criterion_main};
use listsync_render::bench::{BenchFile, Dist, Group, SimRow};
use listsync_sim::campaign;
use listsync_sim::case::{Params, Strategies};
use listsync_sim::plan::FaultPlan;
use std::time::{Duration, Instant};

fn params() -> Params {
    Params {
        strategies: Strategies::REFERENCE,
        plan: FaultPlan::default_plan(),
        clients: None,
        nodes: None,
        tools_only: false,
    }
}

/// One campaign: its time and its events.
fn campaign(level: &str, seeds: &[u64], threads: usize) -> (Duration, u64) {
    let p = params();
    let t = Instant::now();
    let r = if level == "machine" {
        campaign::run(&p, seeds, threads, &|_| {})
    } else {
        campaign::run_stack(&p, seeds, threads, &|_| {}).0
    };
    let d = t.elapsed();
    assert_eq!(
        r.stats.violations.len(),
        0,
        "the reference violated {:?} at the {level} level",
        r.stats.violations.keys()
    );
    (d, r.stats.events)
}

/// The process's CPU time so far (user + system, Linux `/proc/self/stat`, in USER_HZ = 100
/// ticks a second), which other work on the machine does not inflate the way it does wall time.
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    // After the command name's closing parenthesis: state is field 3, utime 14, stime 15.
    let rest = &s[s.rfind(')')? + 2..];
    let mut it = rest.split_whitespace().skip(11).map(str::parse::<u64>);
    let (utime, stime) = (it.next()?.ok()?, it.next()?.ok()?);
    Some((utime + stime) as f64 / 100.0)
}

/// The 1- and 5-minute load averages (Linux), to say how busy the machine was.
fn load_average() -> Option<(f64, f64)> {
    let s = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut it = s.split_whitespace().map(str::parse::<f64>);
    Some((it.next()?.ok()?, it.next()?.ok()?))
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let load = load_average();
    let sizes: [(&str, u64); 2] = if support::quick() {
        [("machine", 2_000), ("stack", 200)]
    } else {
        [("machine", 10_000), ("stack", 1_000)]
    };
    let mut rows = Vec::new();
    let mut per_cpu = Vec::new();
    let mut group = c.benchmark_group("sim_throughput");
    group.sampling_mode(SamplingMode::Flat);
    for (level, n) in sizes {
        let seeds: Vec<u64> = (0..n).collect();
        for threads in [1usize, 2] {
            let mut secs = Vec::new();
            let mut events = 0;
            let (mut cpu, mut all_events) = (0.0, 0u64);
            let id = BenchmarkId::new(format!("{level}/{n}-seeds"), format!("{threads}t"));
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let before = cpu_seconds();
                        let (d, e) = campaign(level, &seeds, threads);
                        if let (Some(a), Some(b)) = (before, cpu_seconds()) {
                            cpu += b - a;
                            all_events += e;
                        }
                        events = e;
                        secs.push(d.as_secs_f64());
                        total += d;
                    }
                    total
                })
            });
            if secs.is_empty() {
                continue;
            }
            if cpu > 0.0 {
                per_cpu.push(format!(
                    "{level} {threads}t {:.0}k",
                    all_events as f64 / cpu / 1e3
                ));
            }
            let seconds = Dist::of(&mut secs);
            let p50 = seconds.p50.max(1e-9);
            rows.push(SimRow {
                level: level.into(),
                seeds: n,
                threads: threads as u32,
                events,
                events_per_sec: events as f64 / p50,
                seeds_per_sec: n as f64 / p50,
                seconds,
            });
        }
    }
    group.finish();
    let mut file = BenchFile::new();
    file.sim = Some(Group {
        run: clock.info(),
        driver: "listsync_sim::campaign (reference strategies, default fault plan, seeds from 0), \
                 in process"
            .into(),
        notes: vec![
            "Rates are from the median campaign time. The earlier measurements below are whole \
             `listsync sim` processes (start-up included) on the same 2 cores, which other \
             builds shared; compare ratios rather than single figures."
                .into(),
            match load {
                Some((one, five)) => format!(
                    "Load average when the group started: {one:.2} (1 min), {five:.2} (5 min) \
                     on {} CPUs: above the CPU count, other work took cores from the campaigns \
                     (the 2-thread rows then gain little over 1 thread).",
                    clock.info().cpus
                ),
                None => "Load average unknown (no /proc/loadavg).".into(),
            },
            if per_cpu.is_empty() {
                "CPU time unknown (no /proc/self/stat).".into()
            } else {
                format!(
                    "Events per CPU-second (the process's user + system time over every \
                     campaign, which other work on the machine does not inflate; two idle cores \
                     give at most twice the 2-thread figure): {}.",
                    per_cpu.join(", ")
                )
            },
        ],
        rows,
    });
    support::write_figures("sim_throughput", &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_runs();
    targets = bench
}

criterion_main!(benches);
