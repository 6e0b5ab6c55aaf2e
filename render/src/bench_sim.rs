//! The simulator section of `reports/bench.md`: the `sim_throughput` group the simulator bench
//! writes (`cargo bench --bench sim_throughput`): history events and seeds per second of a
//! fixed-seed campaign at the machine and the stack level, on 1 and 2 threads, beside the
//! earlier measurements of the same campaigns, each as a ratio, so that a regression shows on
//! the page.

use crate::bench::{Group, SimRow};
use crate::md::num;
use std::fmt::Write as _;

/// The group's key in the bench figures.
pub const GROUP: &str = "sim_throughput";

/// An earlier measurement of a level's throughput on 2 cores (`listsync sim`, whole process).
pub struct Earlier {
    /// `machine` or `stack`.
    pub level: &'static str,
    /// When, and of what.
    pub when: &'static str,
    /// Events per second.
    pub events_per_sec: f64,
}

/// The earlier measurements (`listsync sim --seeds 10000` and `--level stack --seeds 200`, 2
/// threads on 2 cores shared with other builds; the 2026-12-06 medians of three side-by-side
/// runs of `--seeds 100000` and `--level stack --seeds 2000`): the figures the simulator's
/// speed is kept against.
pub const EARLIER: [Earlier; 10] = [
    Earlier {
        level: "machine",
        when: "2026-12-01 tree",
        events_per_sec: 2.87e6,
    },
    Earlier {
        level: "machine",
        when: "2026-12-05 committed report",
        events_per_sec: 935e3,
    },
    Earlier {
        level: "machine",
        when: "2026-12-06 before this bench (best of 490k–695k)",
        events_per_sec: 695e3,
    },
    Earlier {
        level: "machine",
        when: "2026-12-06 0f86137, `--seeds 100000`, median of 3 (load average 4 to 9)",
        events_per_sec: 327e3,
    },
    Earlier {
        level: "machine",
        when: "2026-12-06 after the speed work, the same run side by side (CPU ×0.68)",
        events_per_sec: 461e3,
    },
    Earlier {
        level: "stack",
        when: "2026-12-01 tree",
        events_per_sec: 185e3,
    },
    Earlier {
        level: "stack",
        when: "2026-12-05 committed report",
        events_per_sec: 77e3,
    },
    Earlier {
        level: "stack",
        when: "2026-12-06 before this bench (best of 46k–48k)",
        events_per_sec: 48e3,
    },
    Earlier {
        level: "stack",
        when: "2026-12-06 0f86137, `--level stack --seeds 2000`, median of 3 (load average 8 to 9)",
        events_per_sec: 20.2e3,
    },
    Earlier {
        level: "stack",
        when: "2026-12-06 after the speed work, the same run side by side (CPU ×1.03, noise)",
        events_per_sec: 19.5e3,
    },
];

/// What the side-by-side measurements of whole `listsync sim` processes found (the figures of
/// the earlier-measurement rows above dated 2026-12-06), printed under the tables.
pub const FINDINGS: [&str; 3] = [
    "Where the time went since the 2026-12-01 tree: nowhere in CPU. That tree (1a86c79), rebuilt \
     and run side by side with 0f86137 (whole processes, 1 thread, 5 pairs), costs the same CPU \
     time: ×1.00 for 20,000 machine seeds, ×1.01 for 400 stack seeds (events per run within \
     0.2 %). Its instructions per event were higher (callgrind, 1,000 machine seeds: 8,690 \
     against 7,250; 50 stack seeds: 104 k against 87.5 k); 0f86137 runs fewer of them no faster: \
     simulated cache misses rose (300 seeds: I1 miss rate 1.78 % → 2.68 %, D1 misses ×3.2; more \
     code on the hot path, copy-on-write parts and their memoized hashes). The 2.87M and 185k \
     events/s were taken on idle cores; the later figures on 2 cores shared with builds (load \
     averages 5 to 11 while these were measured), where a campaign gets a fraction of a core.",
    "This branch (callgrind, 1,000 machine seeds, 1 thread, the same 51,974 steps and 70,668 \
     events): 512.3 M → 469.2 M instructions with lists compared and digested in place instead \
     of copied out (server, monitor) and ahash for the monitor's indexes; → 394.4 M with the \
     situations watched in one pass over each client's links and walks (`Situation::holding`, \
     checked against every predicate on every state of recorded runs: sim/tests/situations.rs); \
     → 389.6 M with one pass over a client's lists for the engine's busy/retry/held checks and \
     the quiescence check reusing the folded digest; → 383.9 M (×0.749) with a scenario's names \
     made once. Whole process, `--seeds 100000`, 3 pairs: CPU ×0.68 (4.90 s against 6.95 s for \
     6,969,065 events: 1.42M events per CPU-second, so at most 2.8M events/s on two idle \
     cores, short of 3M by ×0.95). Stack level (50 seeds): 278.1 M → 263.9 M (×0.949), the \
     network reading only the members of a line it looks at; whole process, `--seeds 2000`: \
     CPU ×1.03 (noise; 1.97 s for 122,346 events: 62k events per CPU-second, at most 124k \
     events/s on two idle cores, short of 200k by ×0.62): the simulator's own network and \
     driver are about 6 % of the stack level's instructions (callgrind, by function); tokio \
     22 %, serde and serde_json (rmcp's JSON-RPC messages) 19 %, allocation 9 %, rmcp's and the \
     runtime's own functions 4 % each, core 2 %, the rest generic code (drops, copies, \
     futures) of those. The summaries of `--seeds 10000` and `--level \
     stack --seeds 2000` are identical but for timing.",
    "Two threads: the same machine campaign costs the same CPU time on 2 threads as on 1 (20,000 \
     seeds, 5 pairs: ×1.00), so the second core is used without overhead; the wall-time gain is \
     what the machine leaves free (×1.66 at load average 9 to 11 on 2 CPUs).",
];

/// The targets on 2 cores, events per second.
fn target(level: &str) -> Option<f64> {
    match level {
        "machine" => Some(3e6),
        "stack" => Some(200e3),
        _ => None,
    }
}

/// The row of `level` on `threads` threads.
fn row<'a>(g: &'a Group<SimRow>, level: &str, threads: u32) -> Option<&'a SimRow> {
    g.rows
        .iter()
        .find(|r| r.level == level && r.threads == threads)
}

/// Writes the section's tables (after its heading and run line).
pub fn section(s: &mut String, g: &Group<SimRow>) {
    let _ = writeln!(
        s,
        "| level | seeds | threads | events | s per campaign (p50) | events/s | seeds/s | 2 threads / 1 |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---:|---:|");
    for r in &g.rows {
        let scale = match (r.threads, row(g, &r.level, 1)) {
            (t, Some(one)) if t > 1 && one.events_per_sec > 0.0 => {
                format!("×{}", num(r.events_per_sec / one.events_per_sec))
            }
            _ => String::new(),
        };
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {scale} |",
            r.level,
            r.seeds,
            r.threads,
            r.events,
            num(r.seconds.p50),
            num(r.events_per_sec),
            num(r.seeds_per_sec),
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Beside the earlier measurements (events/s on 2 threads; this run's 2-thread row over \
         each, so a figure below ×1 is a regression against it):\n"
    );
    let _ = writeln!(
        s,
        "| level | earlier measurement | events/s | this run / earlier |"
    );
    let _ = writeln!(s, "|---|---|---:|---:|");
    for e in &EARLIER {
        let ratio = row(g, e.level, 2)
            .map(|r| format!("×{}", num(r.events_per_sec / e.events_per_sec)))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {ratio} |",
            e.level,
            e.when,
            num(e.events_per_sec)
        );
    }
    for level in ["machine", "stack"] {
        if let (Some(t), Some(r)) = (target(level), row(g, level, 2)) {
            let _ = writeln!(
                s,
                "| {level} | target on 2 cores | {} | ×{} |",
                num(t),
                num(r.events_per_sec / t)
            );
        }
    }
    let _ = writeln!(s);
    for f in FINDINGS {
        let _ = writeln!(s, "- {f}");
    }
    let _ = writeln!(s);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{Dist, RunInfo};

    fn r(level: &str, threads: u32, events_per_sec: f64) -> SimRow {
        SimRow {
            level: level.into(),
            seeds: 100,
            threads,
            events: 1000,
            seconds: Dist::default(),
            events_per_sec,
            seeds_per_sec: 1.0,
        }
    }

    #[test]
    fn each_row_is_set_against_one_thread_and_the_earlier_figures() {
        let g = Group {
            run: RunInfo {
                started_unix: 0,
                quick: true,
                cpus: 2,
                seconds: 1.0,
            },
            driver: "campaign".into(),
            notes: vec![],
            rows: vec![
                r("machine", 1, 1.5e6),
                r("machine", 2, 2.87e6),
                r("stack", 1, 60e3),
                r("stack", 2, 92.5e3),
            ],
        };
        let mut s = String::new();
        section(&mut s, &g);
        // The second thread's gain, and the machine level at the 2026-12-01 figure.
        assert!(s.contains("| machine | 100 | 2 | 1000 |"), "{s}");
        assert!(s.contains(&format!("×{} |", num(2.87e6 / 1.5e6))), "{s}");
        assert!(
            s.contains(&format!(
                "| machine | 2026-12-01 tree | {} | ×{} |",
                num(2.87e6),
                num(1.0)
            )),
            "{s}"
        );
        // Half the stack level's earlier 185k.
        assert!(
            s.contains(&format!(
                "| stack | 2026-12-01 tree | {} | ×{} |",
                num(185e3),
                num(0.5)
            )),
            "{s}"
        );
        assert!(s.contains("| stack | target on 2 cores |"), "{s}");
        for f in FINDINGS {
            assert!(s.contains(&format!("- {f}\n")), "{s}");
        }
    }
}
