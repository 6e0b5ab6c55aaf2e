//! The cluster section of `reports/bench.md`: the `cluster_convergence` group the cluster bench
//! writes (`cargo bench --bench cluster_convergence`). Per number of clients, two rows from one
//! run: three `serve --redis` nodes (batch to node A, clients on node C) and a single node without
//! Redis (batch and clients on it) — time from sending the batch to the committing node's reply
//! and to every client holding the new version, the cluster's p99 over the single node's, and the
//! Redis commands and round trips one change costs.

use crate::bench::{ClusterRow, Group, Setup};
use crate::md::num;
use std::fmt::Write as _;

/// The group's key in the bench figures.
pub const GROUP: &str = "cluster_convergence";

fn setup_name(s: Setup) -> &'static str {
    match s {
        Setup::Cluster => "cluster",
        Setup::SingleNode => "single node",
    }
}

/// The single-node row with the same number of clients as `r`.
fn baseline<'a>(rows: &'a [ClusterRow], r: &ClusterRow) -> Option<&'a ClusterRow> {
    rows.iter()
        .find(|b| b.setup == Setup::SingleNode && b.clients == r.clients)
}

/// Cluster p99 minus the single node's, milliseconds, when both converged.
fn overhead(rows: &[ClusterRow], r: &ClusterRow) -> Option<f64> {
    let b = baseline(rows, r)?;
    (r.converged > 0 && b.converged > 0).then_some(r.converge_ms.p99 - b.converge_ms.p99)
}

/// The headline: the cluster row with the most clients, beside its single-node row.
pub fn headline(g: &Group<ClusterRow>) -> Option<String> {
    let r = g
        .rows
        .iter()
        .filter(|r| r.setup == Setup::Cluster)
        .max_by_key(|r| r.clients)?;
    let against = match (baseline(&g.rows, r), overhead(&g.rows, r)) {
        (Some(b), Some(o)) if o >= 0.0 => format!(
            " (single node, same run: {} ms / {} ms; cluster overhead at p99: **{} ms**)",
            num(b.converge_ms.p50),
            num(b.converge_ms.p99),
            num(o)
        ),
        // A cluster faster than the single node is noise between the two, not a gain.
        (Some(b), Some(o)) => format!(
            " (single node, same run: {} ms / {} ms; the cluster's p99 came out {} ms below the \
             single node's, so no overhead is measurable at this size)",
            num(b.converge_ms.p50),
            num(b.converge_ms.p99),
            num(-o)
        ),
        _ => String::new(),
    };
    Some(format!(
        "Cluster ({} nodes on Redis, {} client(s) on node C): commit sent to node A → every \
         client on C holds it in **{} ms** p50 / **{} ms** p99{against}, {}/{} changes \
         converged; **{}** Redis commands ({} round trips) per change.",
        r.nodes,
        r.clients,
        num(r.converge_ms.p50),
        num(r.converge_ms.p99),
        r.converged,
        r.iterations,
        num(r.redis_commands_per_change),
        num(r.redis_round_trips_per_change),
    ))
}

/// The table of the group's rows.
pub fn table(s: &mut String, g: &Group<ClusterRow>) {
    let _ = writeln!(
        s,
        "| setup | nodes | clients | changes timed | converged | ms batch → commit reply (p50 / p99) | ms batch → all clients hold it (p50 / p99 / max) | p99 over single node (ms) | Redis commands per change | Redis round trips per change | commands by name |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---|---|---:|---:|---:|---|");
    for r in &g.rows {
        let time = if r.converged == 0 {
            "did not converge".to_owned()
        } else {
            format!(
                "{} / {} / {}",
                num(r.converge_ms.p50),
                num(r.converge_ms.p99),
                num(r.converge_ms.max)
            )
        };
        let over = match r.setup {
            Setup::Cluster => overhead(&g.rows, r).map_or_else(|| "—".to_owned(), num),
            Setup::SingleNode => String::new(),
        };
        let by_name: Vec<String> = r
            .redis_commands
            .iter()
            .map(|(k, v)| format!("{k} {}", num(*v)))
            .collect();
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} / {} | {time} | {over} | {} | {} | {} |",
            setup_name(r.setup),
            r.nodes,
            r.clients,
            r.iterations,
            r.converged,
            num(r.commit_ms.p50),
            num(r.commit_ms.p99),
            num(r.redis_commands_per_change),
            num(r.redis_round_trips_per_change),
            by_name.join(", "),
        );
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Dist, RunInfo};
    use std::collections::BTreeMap;

    fn row(setup: Setup, clients: u32, p50: f64, p99: f64, commands: f64) -> ClusterRow {
        let d = |p50: f64, p99: f64| Dist {
            n: 40,
            mean: p50,
            min: p50,
            p50,
            p90: p99,
            p99,
            p999: p99,
            max: p99 + 1.0,
            p50_ci: None,
        };
        ClusterRow {
            setup,
            nodes: if setup == Setup::Cluster { 3 } else { 1 },
            clients,
            iterations: 40,
            converged: 40,
            commit_ms: d(0.5, 0.9),
            converge_ms: d(p50, p99),
            redis_commands_per_change: commands,
            redis_round_trips_per_change: commands / 4.0,
            redis_commands: BTreeMap::from([("evalsha".to_owned(), commands / 4.0)]),
        }
    }

    fn group() -> Group<ClusterRow> {
        Group {
            run: RunInfo {
                started_unix: 1,
                quick: true,
                cpus: 2,
                seconds: 3.0,
            },
            driver: "three nodes".into(),
            notes: vec!["one batch per change".into()],
            rows: vec![
                row(Setup::Cluster, 1, 3.0, 5.0, 4.0),
                row(Setup::SingleNode, 1, 2.0, 4.0, 0.0),
                row(Setup::Cluster, 10, 12.0, 16.5, 4.0),
                row(Setup::SingleNode, 10, 11.0, 15.0, 0.0),
            ],
        }
    }

    #[test]
    fn rows_become_a_table_with_the_overhead_and_the_largest_is_the_headline() {
        let mut s = String::new();
        table(&mut s, &group());
        assert!(
            s.contains(
                "| cluster | 3 | 10 | 40 | 40 | 0.500 / 0.900 | 12.0 / 16.5 / 17.5 | 1.50 | 4.00 | 1.00 | evalsha 1.00 |"
            ),
            "{s}"
        );
        assert!(
            s.contains(
                "| single node | 1 | 10 | 40 | 40 | 0.500 / 0.900 | 11.0 / 15.0 / 16.0 |  | 0 | 0 |"
            ),
            "{s}"
        );
        let h = headline(&group()).expect("headline");
        assert!(h.contains("10 client(s) on node C"), "{h}");
        assert!(h.contains("**12.0 ms** p50 / **16.5 ms** p99"), "{h}");
        assert!(h.contains("cluster overhead at p99: **1.50 ms**"), "{h}");
    }
}
