//! Every known-bad strategy in a world as big as `reference-large` (`listsync check --at-size`).
//!
//! The default suite shows each known-bad strategy in the smallest world that holds its bug, so
//! its verdicts say what the bug breaks *there*: a strategy whose bug needs three batches or a
//! cut connection to break a second property holds that property in its small world, while the
//! simulator, which runs larger worlds under faults, sees it broken. The worlds here are each
//! known-bad configuration enlarged to the size of `reference-large` — three tools listed one
//! per page, four batches, a call to a listed tool, and (in 2025-11-25) a duplicated
//! notification and a cut connection — with everything else of its own kept (era, transport,
//! approvals, authorization switches, known tools, its own script first), so its own bug stays
//! reachable. Each is explored twice, breadth-first and depth-first, each until `--max-states` (a known-bad needs no exhaustive search:
//! each violation found is real; a property counts as violated if either search finds it:
//! bounded, a breadth-first search stays shallower than some counterexamples — naive's stale
//! overwrite was not among its first 816,045 states — and a depth-first one stays in the subtree
//! of its first choices — offset-cursor's torn snapshot was not among 2,270,460), and set beside the small world's and the simulator's verdicts
//! in the strategy × property table of reports/model-check.md.

use crate::Search;
use crate::configs::{self, Config};
use crate::suite::SuiteReport;
use listsync_core::property::Verdict;
use listsync_core::scenario::Scenario;
use listsync_core::vocab::{Era, Kind, Op};

/// How many states each enlarged world is explored to, unless `--max-states` says otherwise.
pub const DEFAULT_MAX_STATES: usize = 2_000_000;

/// Tools a world's initial catalog is filled up to (one per page: three pages).
const TOOLS: usize = 3;

/// Batches a world's script is filled up to.
const BATCHES: usize = 4;

/// The known-bad configurations of the default suite, each in its enlarged world (named
/// `NAME@large`), and the ones left in their own world with the reason.
pub fn known_bad() -> (Vec<Config>, Vec<(String, &'static str)>) {
    let mut out = Vec::new();
    let mut left = Vec::new();
    for c in configs::all().into_iter().filter(|c| !c.is_reference()) {
        match enlarge(&c.scenario) {
            Ok(scenario) => out.push(Config {
                scenario,
                situations: &[],
                ..c
            }),
            Err(why) => left.push((c.name().to_owned(), why)),
        }
    }
    (out, left)
}

/// The same configurations, to be explored depth-first (see the module's doc).
pub fn depth_first(configs: &[Config]) -> Vec<Config> {
    configs
        .iter()
        .map(|c| Config {
            search: Search::Dfs,
            ..c.clone()
        })
        .collect()
}

/// One document from the breadth-first and the depth-first runs of the same configurations: a
/// property is violated if either search found it violated (its counterexample is the
/// breadth-first one where both did), states and seconds are the two runs' sums, and a
/// configuration is explored completely if either search finished it.
pub fn merge(mut bfs: SuiteReport, dfs: SuiteReport) -> SuiteReport {
    for (b, d) in bfs.configs.iter_mut().zip(dfs.configs) {
        debug_assert_eq!(b.name, d.name);
        for (p, r) in d.properties {
            if r.verdict == Verdict::Violated
                && b.properties.get(&p).map(|x| x.verdict) != Some(Verdict::Violated)
            {
                b.properties.insert(p, r);
            }
        }
        b.unique_states += d.unique_states;
        b.seconds += d.seconds;
        b.max_depth = b.max_depth.max(d.max_depth);
        b.exhaustive |= d.exhaustive;
        b.states_per_second = b.unique_states as f64 / b.seconds.max(1e-9);
        b.peak_memory_bytes = b.peak_memory_bytes.max(d.peak_memory_bytes);
    }
    bfs.total_unique_states += dfs.total_unique_states;
    bfs.total_seconds += dfs.total_seconds;
    bfs
}

/// `s` enlarged to the size of `reference-large`, or why it is not.
pub fn enlarge(s: &Scenario) -> Result<Scenario, &'static str> {
    if s.cluster.is_some() {
        return Err(
            "a two-node world already (7,187 states in its small form); a larger one is the deep suite's `deep-cluster`",
        );
    }
    if s.aggregate.is_some() {
        return Err(
            "an application with several servers: each member's catalog is its own, and the bug is in the combined listing, which more pages do not change",
        );
    }
    let mut s = s.clone();
    s.name = format!("{}@large", s.name);
    let mut tools: Vec<String> = s
        .initial
        .iter()
        .filter_map(|op| match op {
            Op::Add {
                kind: Kind::Tools,
                name,
                ..
            } => Some(name.to_string()),
            _ => None,
        })
        .collect();
    for extra in ["x", "y", "z"] {
        if tools.len() >= TOOLS {
            break;
        }
        if !tools.iter().any(|t| t == extra) {
            s.initial
                .push(Op::add(Kind::Tools, extra, &format!("{extra}1")));
            tools.push(extra.to_owned());
        }
    }
    s.server.page_size = 1;
    let mut n = 0;
    while s.script.len() < BATCHES {
        s.script.push(vec![Op::add(
            Kind::Tools,
            &format!("n{n}"),
            &format!("n{n}"),
        )]);
        n += 1;
    }
    if s.calls.is_empty() {
        s.calls.push((0, tools[0].as_str().into()));
    }
    if s.era == Era::V2025_11_25 {
        s.faults.duplicate = s.faults.duplicate.max(1);
        s.faults.disconnect = s.faults.disconnect.max(1);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_known_bad_is_enlarged_or_says_why() {
        let (enlarged, left) = known_bad();
        let bad = configs::all().iter().filter(|c| !c.is_reference()).count();
        assert_eq!(enlarged.len() + left.len(), bad);
        for c in &enlarged {
            let s = &c.scenario;
            assert!(s.name.ends_with("@large"), "{}", s.name);
            assert!(s.script.len() >= BATCHES, "{}", s.name);
            assert_eq!(s.server.page_size, 1, "{}", s.name);
            assert!(!s.calls.is_empty(), "{}", s.name);
            let tools = s
                .initial
                .iter()
                .filter(|op| {
                    matches!(
                        op,
                        Op::Add {
                            kind: Kind::Tools,
                            ..
                        }
                    )
                })
                .count();
            assert!(tools >= TOOLS, "{}: {tools} tools", s.name);
        }
    }

    #[test]
    fn a_known_bad_keeps_its_own_script_first() {
        let (enlarged, _) = known_bad();
        for small in configs::all().into_iter().filter(|c| !c.is_reference()) {
            if let Some(big) = enlarged
                .iter()
                .find(|c| c.name() == format!("{}@large", small.name()))
            {
                assert_eq!(
                    &big.scenario.script[..small.scenario.script.len()],
                    &small.scenario.script[..],
                    "{}",
                    small.name()
                );
                assert_eq!(big.scenario.era, small.scenario.era);
                assert_eq!(big.scenario.transport, small.scenario.transport);
                assert_eq!(big.scenario.clients, small.scenario.clients);
            }
        }
    }
}
