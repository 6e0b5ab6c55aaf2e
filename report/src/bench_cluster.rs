//! The cluster section of `reports/bench.md`: the `cluster_convergence` group the cluster bench
//! writes (`cargo bench --bench cluster_convergence`), one row per number of clients on node C —
//! time from a commit sent to node A until every client on node C holds the new version
//! (p50 / p99), and the Redis commands and round trips one change costs.

use crate::md::num;
use serde::Deserialize;
use serde_json::Value;
use std::fmt::Write as _;

/// The group's key in the bench figures.
pub const GROUP: &str = "cluster_convergence";

/// One row of the group, as the bench writes it.
#[derive(Clone, Debug, Deserialize)]
pub struct ClusterRow {
    /// Node processes.
    pub nodes: u64,
    /// Reference clients connected to node C.
    pub clients_on_c: u64,
    /// Changes timed.
    pub iterations: u64,
    /// Changes every client on C held within the bench's deadline.
    pub converged: u64,
    /// Median time from sending the batch to node A to every client on C holding it.
    pub p50_ms: f64,
    /// 99th percentile of the same.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// Redis commands per change (those the store's scripts run included).
    pub redis_commands_per_change: f64,
    /// Commands sent to Redis per change (network round trips).
    pub redis_round_trips_per_change: f64,
}

/// The group's rows, if it has the shape this section knows.
pub fn rows(group: &Value) -> Option<Vec<ClusterRow>> {
    serde_json::from_value(group.get("rows")?.clone()).ok()
}

/// The headline: the row with the most clients on node C.
pub fn headline(group: &Value) -> Option<String> {
    let rows = rows(group)?;
    let r = rows.iter().max_by_key(|r| r.clients_on_c)?;
    Some(format!(
        "Cluster ({} nodes on Redis, {} client(s) on node C): commit sent to node A → every \
         client on C holds it in **{} ms** p50 / **{} ms** p99 ({}/{} changes converged); \
         **{}** Redis commands ({} round trips) per change.",
        r.nodes,
        r.clients_on_c,
        num(r.p50_ms),
        num(r.p99_ms),
        r.converged,
        r.iterations,
        num(r.redis_commands_per_change),
        num(r.redis_round_trips_per_change),
    ))
}

/// The table of the group's rows (empty if the rows are not of the known shape).
pub fn table(s: &mut String, group: &Value) -> bool {
    let Some(rows) = rows(group) else {
        return false;
    };
    let _ = writeln!(
        s,
        "| nodes | clients on C | changes timed | converged | ms commit on A → all clients on C (p50 / p99 / max) | Redis commands per change | Redis round trips per change |"
    );
    let _ = writeln!(s, "|---:|---:|---:|---:|---|---:|---:|");
    for r in &rows {
        let time = if r.converged == 0 {
            "did not converge".to_owned()
        } else {
            format!("{} / {} / {}", num(r.p50_ms), num(r.p99_ms), num(r.max_ms))
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {time} | {} | {} |",
            r.nodes,
            r.clients_on_c,
            r.iterations,
            r.converged,
            num(r.redis_commands_per_change),
            num(r.redis_round_trips_per_change),
        );
    }
    let _ = writeln!(s);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn group() -> Value {
        json!({"rows": [
            {"nodes": 3, "clients_on_c": 1, "iterations": 200, "converged": 200, "p50_ms": 5.07,
             "p99_ms": 8.75, "max_ms": 11.8, "mean_ms": 5.3, "redis_commands_per_change": 15.0,
             "redis_round_trips_per_change": 4.0},
            {"nodes": 3, "clients_on_c": 10, "iterations": 37, "converged": 36, "p50_ms": 36.7,
             "p99_ms": 61.1, "max_ms": 61.1, "mean_ms": 37.4, "redis_commands_per_change": 16.35,
             "redis_round_trips_per_change": 4.45}
        ]})
    }

    #[test]
    fn rows_become_a_table_and_the_largest_is_the_headline() {
        let mut s = String::new();
        assert!(table(&mut s, &group()));
        assert!(
            s.contains("| 3 | 1 | 200 | 200 | 5.07 / 8.75 / 11.8 | 15.0 | 4.00 |"),
            "{s}"
        );
        assert!(
            s.contains("| 3 | 10 | 37 | 36 | 36.7 / 61.1 / 61.1 | 16.4 | 4.45 |"),
            "{s}"
        );
        let h = headline(&group()).expect("headline");
        assert!(h.contains("10 client(s) on node C"), "{h}");
        assert!(
            h.contains("**36.7 ms** p50 / **61.1 ms** p99 (36/37"),
            "{h}"
        );
    }

    #[test]
    fn an_unknown_shape_is_left_to_the_generic_table() {
        let mut s = String::new();
        assert!(!table(&mut s, &json!({"rows": [{"other": 1}]})));
        assert!(s.is_empty());
        assert!(headline(&json!({})).is_none());
    }
}
