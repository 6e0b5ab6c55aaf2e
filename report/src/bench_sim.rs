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
/// threads on 2 cores shared with other builds): the figures the simulator's speed is kept
/// against.
pub const EARLIER: [Earlier; 6] = [
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
    }
}
