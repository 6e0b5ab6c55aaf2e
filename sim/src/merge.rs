//! Merging the summaries of a campaign's shards (`listsync sim --shard K/M --report FILE` on
//! as many machines or CI jobs) into the summary one run of every seed would have written:
//! the same counts, violations, evidence, ratios, percentiles, situations and verdict. Only
//! the timing fields differ: the merged wall time is the shards' wall times added up (the
//! rates are over it) and the threads are the shards' threads added up.
//!
//! Summaries that do not belong together are refused: another level, strategy, fault plan,
//! client or node count, seed range or shard count, a shard missing or given twice, a shard
//! that did not run all of its seeds, or one written without the totals a merge needs.

use crate::campaign::SeedRange;
use crate::case::Strategies;
use crate::plan::FaultPlan;
use crate::stats::Stats;
use crate::summary::{Mode, NetSummary, Summary};
use listsync_core::property::Property;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Reads the summaries in `files` and merges them ([`merge`]); each error is one line that
/// names the file it is about.
pub fn merge_files(files: &[PathBuf]) -> Result<Summary, String> {
    let mut shards = Vec::with_capacity(files.len());
    for f in files {
        shards.push((f.display().to_string(), read(f)?));
    }
    merge(&shards)
}

/// One summary file.
fn read(file: &Path) -> Result<Summary, String> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| format!("{}: cannot read it: {e}", file.display()))?;
    serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a simulator summary: {e}", file.display()))
}

/// Merges the summaries of every shard of one campaign, each named (a file name) for the
/// errors.
pub fn merge(shards: &[(String, Summary)]) -> Result<Summary, String> {
    let Some((first_name, first)) = shards.first() else {
        return Err("no summary to merge".into());
    };
    let of = check_shards(shards)?;
    let mut stats = Stats::default();
    let mut failing: BTreeMap<Property, Vec<u64>> = BTreeMap::new();
    let mut wall = 0.0;
    let mut threads = 0;
    let mut net: Option<NetSummary> = None;
    for (name, s) in shards {
        same_campaign(first_name, first, name, s)?;
        let (k, _) = SeedRange::parse_shard(&s.shard).map_err(|e| format!("{name}: {e}"))?;
        let range = SeedRange {
            first: s.first_seed,
            count: s.seeds,
            index: k,
            of,
        };
        let expected_runs = range.seeds().len() as u64;
        if s.runs != expected_runs {
            return Err(format!(
                "{name}: shard {} ran {} seed(s), but its share of the range has {expected_runs}",
                s.shard, s.runs
            ));
        }
        let Some(totals) = &s.totals else {
            return Err(format!(
                "{name}: written without the totals a merge needs (run each shard with --shard K/M)"
            ));
        };
        stats.merge(totals.stats(s));
        for (p, seeds) in &totals.failing {
            failing.entry(*p).or_default().extend(seeds);
        }
        wall += s.wall_seconds;
        threads += s.threads;
        if let Some(n) = &s.stack {
            net.get_or_insert_with(NetSummary::default).add(n);
        }
    }
    for v in failing.values_mut() {
        v.sort_unstable();
        v.truncate(8);
    }
    let strategies = Strategies {
        client: first.client_strategy,
        server: first.server_strategy,
    };
    let plan = FaultPlan::by_name(&first.faults).map_err(|e| format!("{first_name}: {e}"))?;
    let mut merged = Summary::of(
        first.level,
        Mode::Campaign,
        strategies,
        &plan,
        &stats,
        wall,
        threads,
        first.first_seed,
        first.seeds,
        "1/1".into(),
        None,
        None,
    );
    merged.clients = first.clients.clone();
    merged.nodes = first.nodes.clone();
    merged.stack = net;
    for (p, line) in merged.violations.iter_mut() {
        let lines: Vec<_> = shards
            .iter()
            .filter_map(|(_, s)| s.violations.get(p))
            .collect();
        // The trace one run would have written: the first of the smallest failing seeds that
        // shrinks to a trace the harness replays, else the first that shrinks at all.
        let smallest = failing.get(p).map(Vec::as_slice).unwrap_or_default();
        let traces: Vec<_> = lines.iter().filter_map(|l| l.trace.as_ref()).collect();
        line.trace = smallest
            .iter()
            .find_map(|seed| {
                traces
                    .iter()
                    .find(|t| t.seed == *seed && t.replays_in_harness)
            })
            .or_else(|| {
                smallest
                    .iter()
                    .find_map(|seed| traces.iter().find(|t| t.seed == *seed))
            })
            .or_else(|| traces.iter().min_by_key(|t| t.seed))
            .map(|t| (*t).clone());
        // The recorded history of the smallest failing seed (stack level).
        line.history = lines
            .iter()
            .filter(|l| l.first_seed == line.first_seed)
            .find_map(|l| l.history.clone());
    }
    Ok(merged)
}

/// Checks that the shards are every shard of one split exactly once; returns its count.
fn check_shards(shards: &[(String, Summary)]) -> Result<u64, String> {
    let mut seen: BTreeMap<u64, &str> = BTreeMap::new();
    let mut of = None;
    for (name, s) in shards {
        if s.mode != Mode::Campaign {
            return Err(format!(
                "{name}: the summary of {}, not of a campaign's shard",
                match s.mode {
                    Mode::Seed => "one seed",
                    Mode::Scale => "a scale run",
                    Mode::Campaign => "a campaign",
                }
            ));
        }
        let (k, m) = SeedRange::parse_shard(&s.shard).map_err(|e| format!("{name}: {e}"))?;
        match of {
            None => of = Some((m, name)),
            Some((m0, first)) if m0 != m => {
                return Err(format!(
                    "{name}: shard {k}/{m}, but {first} is a shard of {m0}"
                ));
            }
            Some(_) => {}
        }
        if let Some(other) = seen.insert(k, name) {
            return Err(format!("shard {k}/{m} is given twice ({other} and {name})"));
        }
    }
    let (m, _) = of.expect("at least one shard");
    if let Some(k) = (1..=m).find(|k| !seen.contains_key(k)) {
        return Err(format!("shard {k}/{m} is missing"));
    }
    Ok(m)
}

/// Checks that shard `b` is of the same campaign as shard `a`.
fn same_campaign(an: &str, a: &Summary, bn: &str, b: &Summary) -> Result<(), String> {
    let differ = |what: &str, x: String, y: String| {
        if x == y {
            Ok(())
        } else {
            Err(format!("{bn}: {what} {y}, but {an} has {x}"))
        }
    };
    differ("level", a.level.as_str().into(), b.level.as_str().into())?;
    differ("strategy", a.strategy.clone(), b.strategy.clone())?;
    differ(
        "client strategy",
        a.client_strategy.to_string(),
        b.client_strategy.to_string(),
    )?;
    differ(
        "server strategy",
        a.server_strategy.to_string(),
        b.server_strategy.to_string(),
    )?;
    differ("fault plan", a.faults.clone(), b.faults.clone())?;
    differ(
        "seed range",
        format!("{}..{}", a.first_seed, a.first_seed + a.seeds),
        format!("{}..{}", b.first_seed, b.first_seed + b.seeds),
    )?;
    differ("clients", a.clients.clone(), b.clients.clone())?;
    differ("nodes", a.nodes.clone(), b.nodes.clone())
}
