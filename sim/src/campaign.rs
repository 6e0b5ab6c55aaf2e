//! Campaigns: many seeds run on several threads, their statistics merged, the failing seeds of
//! each property kept for shrinking. A shard `K/M` runs every M-th seed starting with the K-th,
//! so machines or CI jobs can split one campaign; results do not depend on the thread count.
//! Both levels share this: a machine-level run or a full-stack run per seed.

use crate::Case;
use crate::case::Params;
use crate::engine::{RunOpts, RunResult};
use crate::stack::net::NetCounts;
use crate::stats::Stats;
use listsync_core::client::CatalogClient;
use listsync_core::machine::ClientMachine;
use listsync_core::property::Property;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// A slice of the seed space: seeds `first..first + count`, of which this shard takes every
/// `of`-th starting with the `index`-th (1-based).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SeedRange {
    /// First seed.
    pub first: u64,
    /// Seeds in the whole campaign.
    pub count: u64,
    /// This shard (1-based).
    pub index: u64,
    /// Number of shards.
    pub of: u64,
}

impl SeedRange {
    /// The whole range `first..first + count`.
    pub fn all(first: u64, count: u64) -> SeedRange {
        SeedRange {
            first,
            count,
            index: 1,
            of: 1,
        }
    }

    /// Parses `K/M` (1 ≤ K ≤ M).
    pub fn parse_shard(s: &str) -> Result<(u64, u64), String> {
        let (k, m) = s
            .split_once('/')
            .ok_or_else(|| format!("shard '{s}' is not K/M"))?;
        let k: u64 = k
            .parse()
            .map_err(|_| format!("shard '{s}': K is not a number"))?;
        let m: u64 = m
            .parse()
            .map_err(|_| format!("shard '{s}': M is not a number"))?;
        if m == 0 || k == 0 || k > m {
            return Err(format!("shard '{s}': need 1 <= K <= M"));
        }
        Ok((k, m))
    }

    /// The seeds of this shard, in order.
    pub fn seeds(&self) -> Vec<u64> {
        (0..self.count)
            .filter(|i| i % self.of == self.index - 1)
            .map(|i| self.first + i)
            .collect()
    }
}

/// What a campaign found.
#[derive(Debug)]
pub struct CampaignResult {
    /// Merged statistics.
    pub stats: Stats,
    /// Wall time.
    pub wall: Duration,
    /// The smallest failing seeds of each violated property (up to 8).
    pub failing: BTreeMap<Property, Vec<u64>>,
}

/// Runs every seed of `seeds` with `params` on `threads` threads (machine level); `progress`
/// is called with the number of runs finished since its last call.
pub fn run(
    params: &Params,
    seeds: &[u64],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> CampaignResult {
    run_machine::<CatalogClient>(params, seeds, threads, progress)
}

/// [`run`] with the clients running machine `C` (listsync's own, or one written outside
/// listsync: docs/library.md).
pub fn run_machine<C: ClientMachine>(
    params: &Params,
    seeds: &[u64],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> CampaignResult {
    run_with(seeds, threads, progress, &|seed| {
        Case::draw(seed, params).run_machine::<C>(&params.plan, RunOpts::default())
    })
}

/// Runs every seed of `seeds` at the full-stack level (each run on a paused runtime of its
/// own, on the worker's thread); also the network's totals over every run (the faults it
/// injected).
pub fn run_stack(
    params: &Params,
    seeds: &[u64],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
) -> (CampaignResult, NetCounts) {
    let net = Mutex::new(NetCounts::default());
    let res = run_with(seeds, threads, progress, &|seed| {
        let (out, report) = Case::draw(seed, params).run_stack(&params.plan, RunOpts::default());
        net.lock()
            .unwrap_or_else(|e| e.into_inner())
            .add(&report.net);
        out
    });
    (res, net.into_inner().unwrap_or_else(|e| e.into_inner()))
}

/// Runs `one` for every seed of `seeds` on `threads` threads, merging what they found.
pub fn run_with(
    seeds: &[u64],
    threads: usize,
    progress: &(dyn Fn(u64) + Sync),
    one: &(dyn Fn(u64) -> RunResult + Sync),
) -> CampaignResult {
    let start = Instant::now();
    let next = AtomicUsize::new(0);
    let merged = Mutex::new((Stats::default(), BTreeMap::<Property, Vec<u64>>::new()));
    const CHUNK: usize = 16;
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                let mut stats = Stats::default();
                let mut failing: BTreeMap<Property, Vec<u64>> = BTreeMap::new();
                loop {
                    let i = next.fetch_add(CHUNK, Ordering::Relaxed);
                    if i >= seeds.len() {
                        break;
                    }
                    let end = (i + CHUNK).min(seeds.len());
                    for &seed in &seeds[i..end] {
                        let out = one(seed);
                        for f in &out.found {
                            failing.entry(f.property).or_default().push(seed);
                        }
                        stats.add(seed, &out);
                    }
                    progress((end - i) as u64);
                }
                let mut m = merged.lock().expect("no worker panics while holding it");
                m.0.merge(stats);
                for (p, v) in failing {
                    m.1.entry(p).or_default().extend(v);
                }
            });
        }
    });
    let (stats, mut failing) = merged.into_inner().expect("workers joined");
    for v in failing.values_mut() {
        v.sort_unstable();
        v.truncate(8);
    }
    CampaignResult {
        stats,
        wall: start.elapsed(),
        failing,
    }
}
