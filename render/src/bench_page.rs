//! `reports/bench.md` from `reports/bench.json`: the headline comparison at K = 1000, the
//! snapshot-store ratios, the full matrices, and links to the plots.

use crate::bench::{BenchFile, ChurnRow, Dist, FanoutRow, Group, ModelRow, RefreshRow, RunInfo};
use crate::md::num;
use crate::{bench_cluster, bench_refresh, bench_sim};
use std::fmt::Write as _;

/// Plot files the page links to (relative to `reports/`), with what each shows.
pub const PLOTS: [(&str, &str); 2] = [
    (
        "plots/refresh-frontier.svg",
        "the coalescing frontier: list round trips per burst against time to the final list, \
         per strategy, in every cell",
    ),
    (
        "plots/read-latency.svg",
        "snapshot read latency percentiles per store",
    ),
];

fn run_line(name: &str, r: &RunInfo, driver: &str) -> String {
    format!(
        "*{name}: {} mode, {} CPUs, {:.0} s; {driver}.*",
        if r.quick { "quick" } else { "full" },
        r.cpus,
        r.seconds
    )
}

fn notes<R>(s: &mut String, g: &Group<R>) {
    for n in &g.notes {
        let _ = writeln!(s, "- {n}");
    }
    if !g.notes.is_empty() {
        let _ = writeln!(s);
    }
}

fn ms(d: &Dist, converged: u64) -> String {
    if converged == 0 {
        "did not converge".into()
    } else {
        format!("{} / {}", num(d.p50), num(d.p99))
    }
}

/// The refresh-contention headline (see [`bench_refresh::headline`]).
pub fn headline_refresh(rows: &[RefreshRow]) -> Vec<String> {
    bench_refresh::headline(rows)
}

/// The store ratios: RwLock and Mutex read latency over SnapshotCell's, per reader count.
pub fn headline_churn(rows: &[ChurnRow]) -> Vec<String> {
    let mut out = Vec::new();
    let mut readers: Vec<u32> = rows.iter().map(|r| r.readers).collect();
    readers.sort_unstable();
    readers.dedup();
    for m in readers {
        let get = |s: &str| rows.iter().find(|r| r.store == s && r.readers == m);
        let (Some(cell), Some(rw), Some(mx)) = (
            get("SnapshotCell"),
            get("RwLock<Arc<_>>"),
            get("Mutex<Arc<_>>"),
        ) else {
            continue;
        };
        let arc = get("ArcSwap");
        // The sampled mean: every store sampled in the same interleaved rounds.
        let mean = |r: &ChurnRow| r.read_ns.mean;
        let arc_part = arc
            .map(|a| {
                format!(
                    "ArcSwap {}× / {}×, ",
                    num(mean(a) / mean(cell).max(1e-9)),
                    num(a.read_ns.p99 / cell.read_ns.p99.max(1e-9))
                )
            })
            .unwrap_or_default();
        out.push(format!(
            "{m} reader thread{} + 1 writer publishing back to back: read latency relative to SnapshotCell's (mean / p99) — {arc_part}RwLock {}× / {}×, Mutex {}× / {}× (SnapshotCell: {} ns sampled mean, {} ns p99)",
            if m == 1 { "" } else { "s" },
            num(mean(rw) / mean(cell).max(1e-9)),
            num(rw.read_ns.p99 / cell.read_ns.p99.max(1e-9)),
            num(mean(mx) / mean(cell).max(1e-9)),
            num(mx.read_ns.p99 / cell.read_ns.p99.max(1e-9)),
            num(mean(cell)),
            num(cell.read_ns.p99),
        ));
    }
    out
}

/// The index's benchmark table: per measure, the reference's (ours) figure, the best other
/// point of the same run, and the result — **wins**, tie, or **loses** — so that the measures
/// the reference loses are as visible as those it wins: the coalescing frontier's burst cells
/// (round trips per burst, median ms to the final list), fan-out latency, the checker's
/// throughput against stateright's example, snapshot read latency and the cluster.
/// Returns the table and its one-line summary (wins, ties, losses, and what was lost).
pub fn index_table(b: &BenchFile) -> Option<(String, String)> {
    let mut rows: Vec<[String; 4]> = Vec::new();
    let point = |r: &RefreshRow| {
        format!(
            "{} round trips, {} ms",
            num(r.requests.mean),
            num(r.converge_ms.p50)
        )
    };
    if let Some(g) = &b.refresh {
        for c in bench_refresh::cells(&g.rows)
            .iter()
            .filter(|c| c.on_a_walk())
        {
            let Some(r) = c.get(bench_refresh::REFERENCE) else {
                continue;
            };
            let debounce: Vec<&RefreshRow> = c
                .rows
                .iter()
                .copied()
                .filter(|d| d.strategy.starts_with("debounce-"))
                .collect();
            // The point the reference does worst against: a loss, else a tie, else the
            // fastest.
            let rank = |d: &&RefreshRow| match bench_refresh::versus(r, d) {
                bench_refresh::Versus::No => 0,
                bench_refresh::Versus::Ties => 1,
                bench_refresh::Versus::Dominates => 2,
            };
            let Some(best) = debounce.iter().min_by(|a, b| {
                rank(a)
                    .cmp(&rank(b))
                    .then(a.converge_ms.p50.total_cmp(&b.converge_ms.p50))
            }) else {
                continue;
            };
            let result = match bench_refresh::versus(r, best) {
                bench_refresh::Versus::Dominates => "wins".to_owned(),
                bench_refresh::Versus::Ties => "tie (medians within noise)".to_owned(),
                bench_refresh::Versus::No => "**loses** (faster final list)".to_owned(),
            };
            rows.push([
                format!("burst onto a refresh: {}", c.label()),
                point(r),
                format!("{}: {}", best.strategy, point(best)),
                result,
            ]);
        }
        let spaced: Vec<String> = bench_refresh::cells(&g.rows)
            .iter()
            .filter(|c| !c.on_a_walk())
            .filter(|c| c.undominated().is_some_and(|u| !u.is_empty()))
            .map(|c| format!("P = {}, K = {}", c.pages, c.k))
            .collect();
        if !spaced.is_empty() {
            rows.push([
                "commits 1 ms apart onto an idle client".to_owned(),
                "coalesces: fewer round trips than a walk per change, later".to_owned(),
                "debounce-0ms sooner; debounce-50ms / 300ms fewer round trips".to_owned(),
                format!(
                    "**loses** to some debounce point in {} of {} cells (the coalescing gap's \
                     trade-off: not claimed)",
                    spaced.len(),
                    bench_refresh::cells(&g.rows)
                        .iter()
                        .filter(|c| !c.on_a_walk())
                        .count()
                ),
            ]);
        }
    }
    if let Some(g) = &b.fanout {
        let mut sizes: Vec<u32> = g.rows.iter().map(|r| r.clients).collect();
        sizes.sort_unstable();
        sizes.dedup();
        for n in sizes {
            let at: Vec<&FanoutRow> = g
                .rows
                .iter()
                .filter(|r| r.clients == n && r.converged > 0)
                .collect();
            let (Some(r), Some(best)) = (
                at.iter().find(|r| r.strategy == bench_refresh::REFERENCE),
                at.iter()
                    .filter(|r| r.strategy != bench_refresh::REFERENCE)
                    .min_by(|a, b| a.converge_ms.p50.total_cmp(&b.converge_ms.p50)),
            ) else {
                continue;
            };
            let ratio = r.converge_ms.p50 / best.converge_ms.p50.max(1e-9);
            rows.push([
                format!("fan-out, N = {n} clients: ms until all converged (p50)"),
                format!("{} ms", num(r.converge_ms.p50)),
                format!("{}: {} ms", best.strategy, num(best.converge_ms.p50)),
                if ratio > 1.0 {
                    format!(
                        "**loses** ({}× slower: the adaptive gap paces back-to-back changes)",
                        num(ratio)
                    )
                } else {
                    "wins".to_owned()
                },
            ]);
        }
    }
    if let Some(g) = &b.model
        && let Some(ex) = g
            .rows
            .iter()
            .filter(|r| r.config.starts_with(MODEL_EXAMPLE) && r.threads == 1)
            .min_by(|a, b| a.states_per_sec.total_cmp(&b.states_per_sec))
        && let Some(ours) = ours_per_sec(g, 1)
    {
        rows.push([
            "model checker, 1 thread, breadth-first: states/s".to_owned(),
            format!("{} (our configurations)", num(ours)),
            format!("{}: {}", ex.config, num(ex.states_per_sec)),
            if ex.states_per_sec > ours {
                format!(
                    "**loses** ({}× slower than stateright's textbook example)",
                    num(ex.states_per_sec / ours.max(1e-9))
                )
            } else {
                "wins".to_owned()
            },
        ]);
    }
    if let Some(g) = &b.churn {
        let mut readers: Vec<u32> = g.rows.iter().map(|r| r.readers).collect();
        readers.sort_unstable();
        readers.dedup();
        for m in readers {
            let at: Vec<&ChurnRow> = g
                .rows
                .iter()
                .filter(|r| r.readers == m && r.store != "timer only")
                .collect();
            let (Some(cell), Some(best)) = (
                at.iter().find(|r| r.store == "SnapshotCell"),
                at.iter()
                    .filter(|r| r.store != "SnapshotCell")
                    .min_by(|a, b| a.read_ns.p99.total_cmp(&b.read_ns.p99)),
            ) else {
                continue;
            };
            let ratio = best.read_ns.p99 / cell.read_ns.p99.max(1e-9);
            rows.push([
                format!("snapshot read p99, {m} reader(s) + 1 writer"),
                format!("SnapshotCell: {} ns", num(cell.read_ns.p99)),
                format!("{}: {} ns", best.store, num(best.read_ns.p99)),
                if (ratio - 1.0).abs() < 0.05 {
                    format!("tie (within 5 %: {}×)", num(ratio))
                } else if ratio > 1.0 {
                    format!("wins ({}×)", num(ratio))
                } else {
                    format!("**loses** ({}×)", num(ratio))
                },
            ]);
        }
    }
    if rows.is_empty() {
        return None;
    }
    let mut s = String::new();
    let _ = writeln!(
        s,
        "| measure | reference (ours) | best other point, same run | result |"
    );
    let _ = writeln!(s, "|---|---|---|---|");
    for r in &rows {
        let _ = writeln!(s, "| {} | {} | {} | {} |", r[0], r[1], r[2], r[3]);
    }
    let count = |what: &str| rows.iter().filter(|r| r[3].starts_with(what)).count();
    let mut lost: Vec<&str> = rows
        .iter()
        .filter(|r| r[3].starts_with("**loses**"))
        .map(|r| {
            let m = r[0].as_str();
            if m.starts_with("burst") {
                "burst cells"
            } else if m.starts_with("commits 1 ms") {
                "spaced commits"
            } else if m.starts_with("fan-out") {
                "fan-out latency"
            } else if m.starts_with("model checker") {
                "checker throughput"
            } else {
                "read latency"
            }
        })
        .collect();
    lost.dedup();
    let summary = format!(
        "the reference wins {} of {} measures, ties {}, **loses {}**{}",
        count("wins"),
        rows.len(),
        count("tie"),
        count("**loses**"),
        if lost.is_empty() {
            String::new()
        } else {
            format!(" ({})", lost.join(", "))
        }
    );
    Some((s, summary))
}

/// Renders `bench.md`.
pub fn render(b: &BenchFile) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Benchmarks\n");
    let _ = writeln!(
        s,
        "Generated by `listsync report` from the figures `cargo bench` writes under \
         `target/listsync-bench/*.json` (quick mode: `LISTSYNC_BENCH_QUICK=1 cargo bench`), kept \
         in `bench.json` so that this page can be regenerated without re-running the benches. \
         Every figure of a group comes from one run of that group; each group's run is stated \
         with it. Times are wall-clock on the machine that ran the benches (2 cores shared with \
         other work), so compare rows with each other rather than with other machines.\n"
    );
    if b.is_empty() {
        let _ = writeln!(
            s,
            "_No bench figures yet: run `cargo bench` (or `LISTSYNC_BENCH_QUICK=1 cargo bench`), \
             then `listsync report`._\n"
        );
    }

    // Headline.
    let mut head = Vec::new();
    if let Some(g) = &b.refresh {
        head.extend(headline_refresh(&g.rows));
    }
    if let Some(g) = &b.churn {
        head.extend(headline_churn(&g.rows));
    }
    if let Some(g) = &b.cluster {
        head.extend(bench_cluster::headline(g));
    }
    if !head.is_empty() {
        let _ = writeln!(s, "## Headline\n");
        for h in head {
            let _ = writeln!(s, "- {h}");
        }
        let _ = writeln!(s);
    }
    let _ = writeln!(s, "Plots:\n");
    for (f, what) in PLOTS {
        let _ = writeln!(s, "- [{what}]({f})");
    }
    let _ = writeln!(s);

    bench_refresh::section(&mut s, b);
    churn_section(&mut s, b);
    fanout_section(&mut s, b);
    model_section(&mut s, b);

    replay_section(&mut s, b);
    cluster_section(&mut s, b);
    sim_section(&mut s, b);
    s
}

fn sim_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(
        s,
        "## 7. Simulator throughput
"
    );
    let Some(g) = &b.sim else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench sim_throughput` (history events and seeds \
             per second of fixed-seed campaigns at the machine and the stack level) writes \
             `target/listsync-bench/{}.json`; then run `listsync report`._\n",
            bench_sim::GROUP
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line(bench_sim::GROUP, &g.run, &g.driver));
    notes(s, g);
    bench_sim::section(s, g);
}

fn churn_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 2. Snapshot reads under churn\n");
    let Some(g) = &b.churn else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench snapshot_churn` writes \
             `target/listsync-bench/churn.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line("snapshot_churn", &g.run, &g.driver));
    for h in headline_churn(&g.rows) {
        let _ = writeln!(s, "- **{h}**");
    }
    let _ = writeln!(s);
    notes(s, g);
    let _ = writeln!(
        s,
        "*Sampled mean* and the percentiles come from every read timed on its own in the \
         interleaved rounds (the headline's ratios use them); *criterion mean* is criterion's \
         figure from separate runs, one store at a time, so the machine's load differs between \
         the two: compare stores within one column, not one column with another (a criterion \
         mean can sit above the sampled p99).\n"
    );
    let _ = writeln!(
        s,
        "| store | readers | sampled mean, ns | p50 | p90 | p99 | p99.9 | max | criterion mean, ns | samples | writer publishes/s |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &g.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.store.replace('<', "\\<"),
            r.readers,
            num(r.read_ns.mean),
            num(r.read_ns.p50),
            num(r.read_ns.p90),
            num(r.read_ns.p99),
            num(r.read_ns.p999),
            num(r.read_ns.max),
            if r.reads_per_sec > 0.0 {
                num(1e9 / r.reads_per_sec)
            } else {
                "–".into()
            },
            r.read_ns.n,
            num(r.publishes_per_sec)
        );
    }
    let _ = writeln!(s, "\n![read latency](plots/read-latency.svg)\n");
}

fn fanout_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 3. Fan-out\n");
    let Some(g) = &b.fanout else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench fan_out` writes \
             `target/listsync-bench/fanout.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line("fan_out", &g.run, &g.driver));
    let _ = writeln!(
        s,
        "One server, N clients, one mutation: time until every client's readers see the new \
         list, and the `list` requests served for it (ideal: exactly N).\n"
    );
    notes(s, g);
    let _ = writeln!(
        s,
        "| strategy | clients N | iterations | ms until all converged (p50 / p99) | list requests (mean / max) | ideal |"
    );
    let _ = writeln!(s, "|---|---:|---:|---|---|---:|");
    for r in &g.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} / {} | {} |",
            r.strategy,
            r.clients,
            r.iterations,
            ms(&r.converge_ms, r.converged),
            num(r.requests.mean),
            num(r.requests.max),
            r.clients
        );
    }
    let _ = writeln!(s);
}

fn model_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 4. Model-checking throughput\n");
    let Some(g) = &b.model else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench model_throughput` writes \
             `target/listsync-bench/model.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line("model_throughput", &g.run, &g.driver));
    notes(s, g);
    for line in model_against_example(g) {
        let _ = writeln!(s, "- **{line}**");
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| config | search | threads | unique states | seconds (mean) | states/s |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---:|");
    for r in &g.rows {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} |",
            r.config,
            r.search,
            r.threads,
            r.unique_states,
            num(r.seconds.mean),
            num(r.states_per_sec)
        );
    }
    let _ = writeln!(s);
}

/// The example model's rows are named for it (`two-phase-commit-<n>rm`).
const MODEL_EXAMPLE: &str = "two-phase-commit";

/// Our reference configurations' breadth-first states/s on `threads` threads (their states
/// over their time), when the run measured any.
fn ours_per_sec(g: &Group<ModelRow>, threads: u32) -> Option<f64> {
    let ours: Vec<&ModelRow> = g
        .rows
        .iter()
        .filter(|r| {
            !r.config.starts_with(MODEL_EXAMPLE) && r.search == "bfs" && r.threads == threads
        })
        .collect();
    if ours.is_empty() {
        return None;
    }
    let states: u64 = ours.iter().map(|r| r.unique_states).sum();
    let secs: f64 = ours.iter().map(|r| r.seconds.mean).sum();
    Some(states as f64 / secs.max(1e-9))
}

/// Per thread count: our reference configurations' breadth-first states/s beside the example
/// model's, measured in the same run; then, per thread count above one, how much faster than
/// on one thread each of the two ran (how the checker's threads scale on this machine).
fn model_against_example(g: &Group<ModelRow>) -> Vec<String> {
    let examples: Vec<&ModelRow> = g
        .rows
        .iter()
        .filter(|r| r.config.starts_with(MODEL_EXAMPLE))
        .collect();
    let mut out = Vec::new();
    for ex in &examples {
        let Some(rate) = ours_per_sec(g, ex.threads) else {
            continue;
        };
        out.push(format!(
            "{} thread(s), breadth-first: our reference configurations {} states/s, the \
             `{}` example {} states/s in the same run ({}× ours)",
            ex.threads,
            num(rate),
            ex.config,
            num(ex.states_per_sec),
            num(ex.states_per_sec / rate.max(1e-9))
        ));
    }
    for ex in examples.iter().filter(|r| r.threads > 1) {
        let one = examples
            .iter()
            .find(|r| r.config == ex.config && r.threads == 1);
        let (Some(one), Some(ours_one), Some(ours)) =
            (one, ours_per_sec(g, 1), ours_per_sec(g, ex.threads))
        else {
            continue;
        };
        out.push(format!(
            "{} threads against 1, breadth-first, same run: our reference configurations {}× as \
             fast, the `{}` example {}×",
            ex.threads,
            num(ours / ours_one.max(1e-9)),
            ex.config,
            num(ex.states_per_sec / one.states_per_sec.max(1e-9))
        ));
    }
    out
}

fn replay_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 5. Replay throughput\n");
    let Some(g) = &b.replay else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench replay_throughput` (traces/s against the \
             reference adapter and a third-party one) writes \
             `target/listsync-bench/replay_throughput.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line("replay_throughput", &g.run, &g.driver));
    notes(s, g);
    let _ = writeln!(
        s,
        "| adapter | traces | replays | not completed | traces/s | s per replay (mean / p50 / p90 / max) |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|---:|---|");
    for r in &g.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} / {} / {} / {} |",
            r.adapter,
            r.traces,
            r.replays,
            r.not_completed,
            num(r.traces_per_sec),
            num(r.seconds_mean),
            num(r.seconds_p50),
            num(r.seconds_p90),
            num(r.seconds_max),
        );
    }
    let _ = writeln!(s);
}

fn cluster_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 6. Cluster: commit to convergence\n");
    let Some(g) = &b.cluster else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench cluster_convergence` (three `listsync serve \
             --redis` nodes and a Redis of its own beside a single node: time from a commit to \
             every client holding it, and the Redis commands per change) writes \
             `target/listsync-bench/{}.json`; then run `listsync report`._\n",
            bench_cluster::GROUP
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line(bench_cluster::GROUP, &g.run, &g.driver));
    notes(s, g);
    bench_cluster::table(s, g);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model_row(config: &str, threads: u32, states: u64, secs: f64) -> ModelRow {
        let seconds = Dist::of(&mut [secs]);
        ModelRow {
            config: config.into(),
            search: "bfs".into(),
            threads,
            unique_states: states,
            states_per_sec: states as f64 / secs,
            seconds,
        }
    }

    #[test]
    fn the_model_group_sets_our_rate_and_scaling_beside_the_example() {
        let g = Group {
            run: RunInfo {
                started_unix: 1,
                quick: true,
                cpus: 2,
                seconds: 1.0,
            },
            driver: String::new(),
            notes: vec![],
            rows: vec![
                model_row("reference", 1, 1000, 1.0),
                model_row("reference-auth", 1, 3000, 1.0),
                model_row("reference", 2, 1000, 0.5),
                model_row("reference-auth", 2, 3000, 1.5),
                model_row("two-phase-commit-7rm", 1, 8000, 1.0),
                model_row("two-phase-commit-7rm", 2, 8000, 0.8),
                model_row("two-phase-commit-8rm", 1, 40000, 10.0),
                model_row("two-phase-commit-8rm", 2, 40000, 8.0),
            ],
        };
        let lines = model_against_example(&g);
        assert_eq!(lines.len(), 6, "{lines:?}");
        assert!(
            lines[0].contains("our reference configurations 2000 states/s"),
            "{lines:?}"
        );
        assert!(
            lines[0].contains("8000 states/s in the same run (4.00× ours)"),
            "{lines:?}"
        );
        assert!(lines[1].contains("(5.00× ours)"), "{lines:?}");
        assert!(lines[2].contains("(2.00× ours)"), "{lines:?}");
        assert!(lines[3].contains("(2.50× ours)"), "{lines:?}");
        // Each example's threads against its own one-thread run.
        assert!(
            lines[4].contains("our reference configurations 1.00× as fast, the `two-phase-commit-7rm` example 1.25×"),
            "{lines:?}"
        );
        assert!(
            lines[5].contains("the `two-phase-commit-8rm` example 1.25×"),
            "{lines:?}"
        );
    }

    #[test]
    fn missing_groups_say_how_to_produce_them() {
        let page = render(&BenchFile::new());
        assert!(page.contains("cargo bench --bench refresh_contention"));
        assert!(page.contains("cargo bench --bench replay_throughput"));
        assert!(page.contains("cluster"));
    }

    #[test]
    fn the_cluster_and_replay_groups_get_their_tables_and_a_headline() {
        let f = BenchFile::parse(
            r#"{"format":"listsync-bench","version":1,"cluster_convergence":{
                "run":{"started_unix":1,"quick":true,"cpus":2,"seconds":3.0},
                "driver":"three nodes","notes":["one batch per change"],
                "rows":[{"setup":"cluster","nodes":3,"clients":10,"iterations":40,"converged":40,
                         "commit_ms":{"n":40,"mean":1.0,"min":1.0,"p50":1.0,"p90":1.0,"p99":1.0,"p999":1.0,"max":1.0},
                         "converge_ms":{"n":40,"mean":37.0,"min":30.0,"p50":36.0,"p90":50.0,"p99":61.0,"p999":62.0,"max":62.0},
                         "redis_commands_per_change":4.0,"redis_round_trips_per_change":1.0,
                         "redis_commands":{"evalsha":1.0,"get":1.0,"mset":1.0,"publish":1.0}}]},
              "replay_throughput":{
                "run":{"started_unix":1,"quick":true,"cpus":2,"seconds":3.0},
                "driver":"harness replay","notes":[],
                "rows":[{"adapter":"reference","traces":"corpus","replays":10,"not_completed":0,
                         "traces_per_sec":41.5,"seconds_mean":0.024,"seconds_p50":0.02,
                         "seconds_p90":0.03,"seconds_max":0.05}]}}"#,
        )
        .unwrap();
        let page = render(&f);
        let head = &page[..page.find("## 1.").unwrap()];
        assert!(head.contains("**36.0 ms** p50 / **61.0 ms** p99"), "{head}");
        let sec = &page[page.find("## 6. Cluster").unwrap()..page.find("## 7.").unwrap()];
        assert!(sec.contains("- one batch per change"), "{sec}");
        assert!(
            sec.contains("| cluster | 3 | 10 | 40 | 40 | 1.00 / 1.00 | 36.0 / 61.0 / 62.0 | — | 4.00 | 1.00 | evalsha 1.00, get 1.00, mset 1.00, publish 1.00 |"),
            "{sec}"
        );
        let replay = &page[page.find("## 5. Replay").unwrap()..page.find("## 6.").unwrap()];
        assert!(
            replay
                .contains("| reference | corpus | 10 | 0 | 41.5 | 0.024 / 0.020 / 0.030 / 0.050 |"),
            "{replay}"
        );
        assert!(!replay.contains("Not measured yet"), "{replay}");
        assert!(!sec.contains("Not measured yet"), "{sec}");
        // A group the file does not hold says how to measure it.
        let sim = &page[page.find("## 7. Simulator").unwrap()..];
        assert!(
            sim.contains("Not measured yet: `cargo bench --bench sim_throughput`"),
            "{sim}"
        );
    }
}
