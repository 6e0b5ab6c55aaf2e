//! Fault plans: named descriptions of how the simulated environment misbehaves — message
//! latency and slow messages, duplicated and lost notifications, cut connections, server
//! crashes, and how the administrator's batches are spaced (steady, or in storms).
//!
//! A plan only sets rates and ranges; which faults a run gets, and when, is drawn from the
//! run's seed. A plan never changes what a machine does: every fault is one of the world's
//! steps (`duplicate`, `drop`, `disconnect`/`reconnect`), so every run stays a replayable trace.

use serde::Serialize;
use std::fmt;
use std::ops::RangeInclusive;

/// Simulated time, in microseconds.
pub type Micros = u64;

/// A named fault plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FaultPlan {
    /// Name (`--faults NAME`).
    pub name: &'static str,
    /// One line for people.
    pub about: &'static str,
    /// One-way latency of every message (uniform).
    pub latency: (Micros, Micros),
    /// Per mille of messages that are slow (a slow page, a congested stream).
    pub slow_permille: u32,
    /// Extra latency of a slow message (uniform).
    pub slow: (Micros, Micros),
    /// Per mille of arriving `list_changed` notifications that arrive twice.
    pub dup_permille: u32,
    /// Per mille of arriving `list_changed` notifications that are lost.
    pub drop_permille: u32,
    /// Most duplicated notifications in one run (the run's budget is drawn in `0..=max`).
    pub max_dup: u32,
    /// Most lost notifications in one run.
    pub max_drop: u32,
    /// Whether a lost notification is silent. When false (every plan but `lossy`), the loss is
    /// the notification stream breaking: the connection is cut right after, and the client
    /// reconnects and lists again. A silent loss cannot be recovered by any client without a
    /// TTL re-list, which the machine-level world does not model.
    pub silent_drops: bool,
    /// Most client connections cut at random moments in one run.
    pub max_disconnects: u32,
    /// Time before a cut client reconnects (uniform).
    pub reconnect: (Micros, Micros),
    /// Most server crashes in one run (every connection cut at once).
    pub max_crashes: u32,
    /// Time before clients reconnect to a restarted server (uniform, per client).
    pub restart: (Micros, Micros),
    /// Scripted batches per run (random scenarios).
    pub batches: RangeInclusive<u32>,
    /// Time before the first batch (uniform).
    pub first_batch: (Micros, Micros),
    /// Time between batches (uniform), outside storms.
    pub gap: (Micros, Micros),
    /// Per mille of gaps that are storm gaps.
    pub storm_permille: u32,
    /// Time between batches inside a storm (uniform).
    pub storm_gap: (Micros, Micros),
    /// (`notify-before-commit` servers, `cluster-notify-before-visible` nodes) time between
    /// announcing and making visible (uniform).
    pub commit_delay: (Micros, Micros),
    /// (cluster) Latency of a change event on the bus (uniform; events overtake one another).
    pub bus_latency: (Micros, Micros),
    /// (cluster) Per mille of bus events delivered twice.
    pub bus_dup_permille: u32,
    /// (cluster) Per mille of bus events lost.
    pub bus_drop_permille: u32,
    /// (cluster) Most duplicated / lost bus events in one run.
    pub max_bus_faults: u32,
    /// (cluster) Time before a node that missed an event reads the store (uniform).
    pub poll: (Micros, Micros),
    /// (cluster) Most client connections moved to another node in one run.
    pub max_migrations: u32,
    /// (stack level) Per mille of list requests the network answers with a JSON-RPC internal
    /// error in the server's place.
    pub fail_permille: u32,
    /// (stack level) Per mille of list requests the network swallows, so that the client's
    /// request timeout fires.
    pub timeout_permille: u32,
    /// (stack level) Most failed or timed-out list requests in one run.
    pub max_request_faults: u32,
    /// Per mille of scripted batches that are rebuilds: the administrator re-registers what is
    /// there and the catalog comes out as it was (no list changes, nothing to announce).
    pub rebuild_permille: u32,
    /// Per mille of tool calls that fail with an internal error in the server's place (an error
    /// that is not a list change; both levels).
    pub call_fail_permille: u32,
}

impl fmt::Display for FaultPlan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name)
    }
}

const MS: Micros = 1_000;

impl FaultPlan {
    /// No faults: latency only, a few steady batches.
    pub fn none() -> FaultPlan {
        FaultPlan {
            name: "none",
            about: "latency 1-10 ms only; no loss, duplication, disconnect or crash",
            latency: (MS, 10 * MS),
            slow_permille: 0,
            slow: (0, 0),
            dup_permille: 0,
            drop_permille: 0,
            max_dup: 0,
            max_drop: 0,
            silent_drops: false,
            max_disconnects: 0,
            reconnect: (MS, 10 * MS),
            max_crashes: 0,
            restart: (10 * MS, 50 * MS),
            batches: 1..=6,
            first_batch: (0, 40 * MS),
            gap: (0, 30 * MS),
            storm_permille: 200,
            storm_gap: (0, 200),
            commit_delay: (0, 20 * MS),
            bus_latency: (100, 5 * MS),
            bus_dup_permille: 0,
            bus_drop_permille: 0,
            max_bus_faults: 0,
            poll: (50 * MS, 200 * MS),
            max_migrations: 0,
            fail_permille: 0,
            timeout_permille: 0,
            max_request_faults: 0,
            rebuild_permille: 0,
            call_fail_permille: 0,
        }
    }

    /// The default: a little of every fault.
    pub fn default_plan() -> FaultPlan {
        FaultPlan {
            name: "default",
            about: "latency 1-20 ms, 5% slow messages (+50-300 ms), duplicated notifications, a lost notification that breaks the stream, a cut connection, sometimes a server crash; steady batches with short storms, 15% of them rebuilds that change nothing; a quarter of tool calls fail with an internal error; (stack level) up to 2 list requests that fail (3%) or time out (1%)",
            latency: (MS, 20 * MS),
            slow_permille: 50,
            slow: (50 * MS, 300 * MS),
            dup_permille: 100,
            drop_permille: 30,
            max_dup: 3,
            max_drop: 1,
            silent_drops: false,
            max_disconnects: 1,
            reconnect: (MS, 50 * MS),
            max_crashes: 1,
            restart: (20 * MS, 200 * MS),
            batches: 1..=8,
            first_batch: (0, 40 * MS),
            gap: (0, 40 * MS),
            storm_permille: 300,
            storm_gap: (0, 500),
            commit_delay: (0, 30 * MS),
            bus_latency: (100, 10 * MS),
            bus_dup_permille: 100,
            bus_drop_permille: 50,
            max_bus_faults: 2,
            poll: (50 * MS, 200 * MS),
            max_migrations: 1,
            fail_permille: 30,
            timeout_permille: 10,
            max_request_faults: 2,
            rebuild_permille: 150,
            call_fail_permille: 250,
        }
    }

    /// Notification storms: hundreds of batches, mostly back to back.
    pub fn storm() -> FaultPlan {
        FaultPlan {
            name: "storm",
            about: "50-250 batches, 90% of them back to back (0-200 us apart); latency 1-20 ms, duplicated notifications",
            batches: 50..=250,
            storm_permille: 900,
            storm_gap: (0, 200),
            gap: (0, 20 * MS),
            dup_permille: 50,
            max_dup: 20,
            drop_permille: 0,
            max_drop: 0,
            max_crashes: 0,
            ..FaultPlan::default_plan()
        }
    }

    /// Connections cut often and servers that crash and restart.
    pub fn crashy() -> FaultPlan {
        FaultPlan {
            name: "crashy",
            about: "up to 4 cut connections and 3 server crashes per run (clients reconnect, re-initialize or re-listen, re-list); latency 1-20 ms; (stack level) up to 4 list requests that fail (8%) or time out (4%)",
            max_disconnects: 4,
            max_crashes: 3,
            max_migrations: 3,
            drop_permille: 100,
            max_drop: 3,
            fail_permille: 80,
            timeout_permille: 40,
            max_request_faults: 4,
            ..FaultPlan::default_plan()
        }
    }

    /// Silent notification loss (expected to break convergence for every client).
    pub fn lossy() -> FaultPlan {
        FaultPlan {
            name: "lossy",
            about: "notifications lost silently (25%, up to 4 per run): no client can converge without a TTL re-list, so `converges`/`no_lost_wakeup` violations are expected here, for the reference too",
            drop_permille: 250,
            max_drop: 4,
            silent_drops: true,
            max_crashes: 0,
            max_disconnects: 0,
            ..FaultPlan::default_plan()
        }
    }

    /// Every named plan.
    pub fn all() -> Vec<FaultPlan> {
        vec![
            FaultPlan::none(),
            FaultPlan::default_plan(),
            FaultPlan::storm(),
            FaultPlan::crashy(),
            FaultPlan::lossy(),
        ]
    }

    /// Looks a plan up by name.
    pub fn by_name(name: &str) -> Result<FaultPlan, String> {
        FaultPlan::all()
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                let names: Vec<_> = FaultPlan::all().iter().map(|p| p.name).collect();
                format!(
                    "unknown fault plan '{name}' (expected one of: {})",
                    names.join(", ")
                )
            })
    }

    /// Whether a violation of a quiescence property can be the plan's own doing (silent loss).
    pub fn breaks_convergence(&self) -> bool {
        self.silent_drops && self.max_drop > 0
    }
}
