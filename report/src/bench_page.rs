//! `reports/bench.md` from `reports/bench.json`: the headline comparison at K = 1000, the
//! snapshot-store ratios, the full matrices, and links to the plots.

use crate::bench::{BenchFile, ChurnRow, Dist, Group, RefreshRow, RunInfo};
use crate::bench_cluster;
use crate::md::{cell_escape, num, records_table, value_cell};
use serde_json::Value;
use std::fmt::Write as _;

/// Plot files the page links to (relative to `reports/`), with what each shows.
pub const PLOTS: [(&str, &str); 4] = [
    (
        "plots/refresh-round-trips.svg",
        "list round trips per burst against K, per strategy",
    ),
    (
        "plots/refresh-walks.svg",
        "list walks per burst against K, per strategy",
    ),
    (
        "plots/refresh-converge.svg",
        "time to the final list against K, per strategy",
    ),
    (
        "plots/read-latency.svg",
        "snapshot read latency percentiles per store",
    ),
];

/// Sections for groups other benches write (key prefix, heading, how to produce them).
const OTHER_SECTIONS: [(&str, &str, &str); 2] = [
    (
        "replay",
        "5. Replay throughput",
        "`cargo bench --bench replay_throughput` (traces/s against the reference adapter and a \
         third-party one) writes `target/listsync-bench/replay*.json`",
    ),
    (
        "cluster",
        "6. Cluster: commit to convergence",
        "`cargo bench --bench cluster_convergence` (three `listsync serve --redis` nodes and a \
         Redis of its own: time from a commit on node A to every client on node C holding it, \
         and the Redis commands per change) writes `target/listsync-bench/cluster*.json`",
    ),
];

fn run_line(name: &str, r: &RunInfo, driver: &str) -> String {
    format!(
        "*{name}: run started at Unix time {}, {} mode, {} CPUs, {:.0} s; {driver}.*",
        r.started_unix,
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

fn ns(d: &Dist) -> String {
    if d.n == 0 {
        "–".into()
    } else {
        format!("{} / {}", num(d.p50), num(d.p99))
    }
}

/// The headline: for K = 1000 and no readers, each strategy's list round trips (page requests)
/// and walks per burst, next to the reference's, per page count.
pub fn headline_refresh(rows: &[RefreshRow]) -> Vec<String> {
    let mut out = Vec::new();
    let at = |s: &str, p: u32| {
        rows.iter().find(|r| {
            r.strategy == s
                && r.k == 1000
                && r.pages == p
                && r.readers == 0
                && !r.served_during_burst
                && r.iterations > 0
        })
    };
    let mut names: Vec<&str> = Vec::new();
    for r in rows {
        if !names.contains(&r.strategy.as_str()) {
            names.push(&r.strategy);
        }
    }
    for p in [1u32, 10] {
        let parts: Vec<String> = names
            .iter()
            .filter_map(|n| {
                at(n, p).map(|r| {
                    format!(
                        "{n} {} ({} walk{})",
                        num(r.requests.mean),
                        num(r.walks.mean),
                        if r.walks.mean == 1.0 { "" } else { "s" }
                    )
                })
            })
            .collect();
        if !parts.is_empty() {
            out.push(format!(
                "K = 1000, P = {p}, M = 0: list round trips per burst (mean) — {}",
                parts.join(", ")
            ));
        }
    }
    out
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
        let mean = |r: &ChurnRow| {
            if r.reads_per_sec > 0.0 {
                1e9 / r.reads_per_sec
            } else {
                r.read_ns.mean
            }
        };
        out.push(format!(
            "{m} reader thread{} + 1 writer publishing back to back: read latency relative to SnapshotCell's (mean / p99) — RwLock {}× / {}×, Mutex {}× / {}× (SnapshotCell: {} ns mean, {} ns p99)",
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
        if let Some(v) = reference_worst(&g.rows) {
            head.push(v);
        }
    }
    if let Some(g) = &b.churn {
        head.extend(headline_churn(&g.rows));
    }
    if let Some(g) = b.extra.get(bench_cluster::GROUP) {
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

    refresh_section(&mut s, b);
    churn_section(&mut s, b);
    fanout_section(&mut s, b);
    model_section(&mut s, b);

    // Groups other benches write.
    let mut shown: Vec<&str> = Vec::new();
    for (prefix, heading, how) in OTHER_SECTIONS {
        let _ = writeln!(s, "## {heading}\n");
        let groups: Vec<(&String, &Value)> = b
            .extra
            .iter()
            .filter(|(k, _)| k.starts_with(prefix))
            .collect();
        if groups.is_empty() {
            let _ = writeln!(
                s,
                "_Not measured yet: {how}; then run `listsync report`._\n"
            );
        }
        for (k, v) in groups {
            shown.push(k);
            if k == bench_cluster::GROUP {
                cluster_group(&mut s, k, v);
            } else {
                other_group(&mut s, k, v);
            }
        }
    }
    let rest: Vec<(&String, &Value)> = b
        .extra
        .iter()
        .filter(|(k, _)| !shown.contains(&k.as_str()))
        .collect();
    if !rest.is_empty() {
        let _ = writeln!(s, "## Other figures\n");
        for (k, v) in rest {
            other_group(&mut s, k, v);
        }
    }
    s
}

/// The reference's worst walks per burst at K = 1000, against the target of 2.
fn reference_worst(rows: &[RefreshRow]) -> Option<String> {
    let refs: Vec<&RefreshRow> = rows
        .iter()
        .filter(|r| r.strategy == "reference" && r.k == 1000 && !r.served_during_burst)
        .collect();
    if refs.is_empty() {
        return None;
    }
    let worst = refs.iter().map(|r| r.walks.max).fold(0.0, f64::max);
    Some(format!(
        "Reference at K = 1000, every P and M: at most **{}** list walks per burst in any \
         iteration — {} (one walk is P round trips).",
        num(worst),
        if worst <= 2.0 {
            "within the target of 2"
        } else {
            "ABOVE the target of 2"
        }
    ))
}

fn refresh_section(s: &mut String, b: &BenchFile) {
    let _ = writeln!(s, "## 1. Refresh contention\n");
    let Some(g) = &b.refresh else {
        let _ = writeln!(
            s,
            "_Not measured yet: `cargo bench --bench refresh_contention` writes \
             `target/listsync-bench/refresh.json`; then run `listsync report`._\n"
        );
        return;
    };
    let _ = writeln!(s, "{}\n", run_line("refresh_contention", &g.run, &g.driver));
    let _ = writeln!(
        s,
        "A burst of K `list_changed` notifications (K one-update batches, applied back to back) \
         reaches the client while its refresh of a P-page list is in flight (the walk's last \
         page request is parked at the server, and every list request the client sends meanwhile \
         waits with it, until the client has received the whole burst), with M readers reading the client's list meanwhile. *Round trips* are the `list` \
         requests (pages) the burst caused; *walks* are the walks among them (first-page \
         requests, restarts included). The reference target is at most 2 walks per burst.\n"
    );
    notes(s, g);
    let _ = writeln!(s, "### At K = 1000 (same run)\n");
    let mut k1000: Vec<&RefreshRow> = g
        .rows
        .iter()
        .filter(|r| r.k == 1000 && !r.served_during_burst)
        .collect();
    k1000.sort_by_key(|r| (r.pages, r.readers));
    k1000_table(s, &k1000);
    if let Some(v) = reference_worst(&g.rows) {
        let _ = writeln!(s, "{v}\n");
    }
    let served: Vec<&RefreshRow> = g.rows.iter().filter(|r| r.served_during_burst).collect();
    if !served.is_empty() {
        let _ = writeln!(
            s,
            "### At K = 1000, the server serving new walks during the burst (same run)\n"
        );
        let _ = writeln!(
            s,
            "Only the request in flight is parked; every walk the client starts while the burst \
             is still arriving is answered at once. A strategy that restarts its walk when a \
             notification arrives mid-walk then restarts once per notification that lands during \
             a walk, so its walks grow with the burst's duration and the number of pages.\n"
        );
        k1000_table(s, &served);
    }
    let _ = writeln!(
        s,
        "![round trips per burst](plots/refresh-round-trips.svg)\n"
    );
    let _ = writeln!(s, "![walks per burst](plots/refresh-walks.svg)\n");
    let _ = writeln!(s, "![time to final list](plots/refresh-converge.svg)\n");
    let _ = writeln!(s, "### Every cell of the matrix\n");
    let _ = writeln!(
        s,
        "| strategy | K | P | M | iterations | round trips (mean / max) | walks (mean / max) | ms to final list (p50 / p99) | reads, ns (p50 / p99) | converged |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---|---|---|---|");
    let mut rows: Vec<&RefreshRow> = g.rows.iter().filter(|r| !r.served_during_burst).collect();
    rows.sort_by_key(|r| (r.pages, r.readers, r.k));
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} / {} | {} / {} | {} | {} | {}/{} |",
            r.strategy,
            r.k,
            r.pages,
            r.readers,
            r.iterations,
            num(r.requests.mean),
            num(r.requests.max),
            num(r.walks.mean),
            num(r.walks.max),
            ms(&r.converge_ms, r.converged),
            ns(&r.read_ns),
            r.converged,
            r.iterations
        );
    }
    let _ = writeln!(s);
    strategies_note(s);
}

/// The K = 1000 comparison table.
fn k1000_table(s: &mut String, rows: &[&RefreshRow]) {
    let _ = writeln!(
        s,
        "| strategy | P | M | list round trips per burst (mean) | walks per burst (mean / max) | last mutation → final list, ms (p50 / p99) | reader latency, ns (p50 / p99) | converged |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---|---|");
    for r in rows {
        let bold = |t: String| {
            if r.strategy == "reference" {
                format!("**{t}**")
            } else {
                t
            }
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {}/{} |",
            bold(r.strategy.clone()),
            r.pages,
            r.readers,
            bold(num(r.requests.mean)),
            bold(format!("{} / {}", num(r.walks.mean), num(r.walks.max))),
            ms(&r.converge_ms, r.converged),
            ns(&r.read_ns),
            r.converged,
            r.iterations
        );
    }
    let _ = writeln!(s);
}

fn strategies_note(s: &mut String) {
    let _ = writeln!(
        s,
        "Strategies: `reference` and `naive` are the shipped client (`listsync-rt`) running \
         core's reference and `naive` machines. The other two are not shipped, so the bench adds \
         them in front of the shipped `naive` client (benches/support/rig.rs): `debounce-Dms` \
         holds each notification and restarts a D ms timer, letting the last one through when \
         it fires (like the TypeScript SDK's `listChanged` debounce), and `mutex-single-flight` \
         runs every notification's refresh under one `tokio::sync::Mutex` (no overlap, no \
         coalescing) and keeps the list in the guarded slot, so its readers wait for the lock.\n"
    );
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
        "| store | readers | mean (criterion), ns | p50 | p90 | p99 | p99.9 | max | samples | writer publishes/s |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for r in &g.rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.store.replace('<', "\\<"),
            r.readers,
            if r.reads_per_sec > 0.0 {
                num(1e9 / r.reads_per_sec)
            } else {
                "–".into()
            },
            num(r.read_ns.p50),
            num(r.read_ns.p90),
            num(r.read_ns.p99),
            num(r.read_ns.p999),
            num(r.read_ns.max),
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

/// The cluster bench's group: its own table when the rows have the shape it writes, else the
/// generic one.
fn cluster_group(s: &mut String, name: &str, v: &Value) {
    let mut table = String::new();
    if !bench_cluster::table(&mut table, v) {
        other_group(s, name, v);
        return;
    }
    group_header(s, name, v);
    s.push_str(&table);
}

/// A group's heading, run line and notes.
fn group_header(s: &mut String, name: &str, v: &Value) {
    let _ = writeln!(s, "### `{name}`\n");
    let run = v
        .get("run")
        .and_then(|r| serde_json::from_value::<RunInfo>(r.clone()).ok());
    let driver = v.get("driver").and_then(Value::as_str).unwrap_or("");
    if let Some(r) = &run {
        let _ = writeln!(s, "{}\n", run_line(name, r, driver));
    } else if !driver.is_empty() {
        let _ = writeln!(s, "*{}*\n", cell_escape(driver));
    }
    if let Some(Value::Array(ns)) = v.get("notes") {
        for n in ns {
            let _ = writeln!(s, "- {}", value_cell(n));
        }
        let _ = writeln!(s);
    }
}

/// A group this crate does not model: its run, driver and notes if it states them, then its
/// rows (or whatever arrays of records it holds) as tables.
fn other_group(s: &mut String, name: &str, v: &Value) {
    group_header(s, name, v);
    let mut any = false;
    match v {
        Value::Object(m) => {
            for (k, val) in m {
                if matches!(k.as_str(), "run" | "driver" | "notes") {
                    continue;
                }
                match val {
                    Value::Array(rows) if !rows.is_empty() && rows.iter().all(Value::is_object) => {
                        if k != "rows" {
                            let _ = writeln!(s, "**{k}**\n");
                        }
                        s.push_str(&records_table(rows));
                        let _ = writeln!(s);
                        any = true;
                    }
                    other => {
                        let _ = writeln!(s, "- **{k}**: {}", value_cell(other));
                        any = true;
                    }
                }
            }
        }
        Value::Array(rows) if rows.iter().all(Value::is_object) => {
            s.push_str(&records_table(rows));
            any = true;
        }
        other => {
            let _ = writeln!(s, "{}", value_cell(other));
            any = true;
        }
    }
    if any {
        let _ = writeln!(s);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_groups_say_how_to_produce_them() {
        let page = render(&BenchFile::new());
        assert!(page.contains("cargo bench --bench refresh_contention"));
        assert!(page.contains("cargo bench --bench replay_throughput"));
        assert!(page.contains("cluster"));
    }

    #[test]
    fn the_cluster_group_gets_its_table_and_a_headline() {
        let f = BenchFile::parse(
            r#"{"format":"listsync-bench","version":1,"cluster_convergence":{
                "run":{"started_unix":1,"quick":true,"cpus":2,"seconds":3.0},
                "driver":"three nodes","notes":["one batch per change"],
                "rows":[{"nodes":3,"clients_on_c":10,"iterations":40,"converged":40,
                         "p50_ms":36.0,"p99_ms":61.0,"max_ms":62.0,"mean_ms":37.0,
                         "redis_commands_per_change":16.0,"redis_round_trips_per_change":4.5}]}}"#,
        )
        .unwrap();
        let page = render(&f);
        let head = &page[..page.find("## 1.").unwrap()];
        assert!(head.contains("**36.0 ms** p50 / **61.0 ms** p99"), "{head}");
        let sec = &page[page.find("## 6. Cluster").unwrap()..];
        assert!(sec.contains("- one batch per change"), "{sec}");
        assert!(
            sec.contains("| 3 | 10 | 40 | 40 | 36.0 / 61.0 / 62.0 | 16.0 | 4.50 |"),
            "{sec}"
        );
        assert!(!sec.contains("Not measured yet"), "{sec}");
    }

    #[test]
    fn another_bench_group_is_rendered_as_a_table() {
        let f = BenchFile::parse(
            r#"{"format":"listsync-bench","version":1,"replay_throughput":{
                "run":{"started_unix":1,"quick":true,"cpus":2,"seconds":3.0},
                "driver":"harness replay","rows":[{"adapter":"reference","traces_per_sec":41.5}]}}"#,
        )
        .unwrap();
        let page = render(&f);
        let sec = &page[page.find("## 5. Replay throughput").unwrap()..];
        assert!(sec.contains("| adapter | traces_per_sec |"), "{sec}");
        assert!(sec.contains("| reference | 41.5 |"), "{sec}");
        assert!(!sec[..sec.find("## 6.").unwrap()].contains("Not measured yet"));
    }
}
