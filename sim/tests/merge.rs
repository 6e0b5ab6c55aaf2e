//! `sim merge`: the summaries of a campaign's shards merge into exactly the summary one run of
//! the same seeds writes — every count, violation and its evidence, ratio, percentile,
//! situation and the verdict; only the timing fields (wall time, rates, threads) differ — at
//! both levels; summaries that do not belong together are refused.

use listsync_sim::driver::{self, SimSettings};
use listsync_sim::merge;
use listsync_sim::summary::{Level, Summary};
use std::path::{Path, PathBuf};

fn request(
    level: Level,
    strategy: &str,
    seeds: u64,
    shard: Option<&str>,
    out: &Path,
) -> SimSettings {
    SimSettings {
        level,
        seeds: Some(seeds),
        seed: None,
        first_seed: 5,
        shard: shard.map(str::to_owned),
        clients: None,
        burst: None,
        nodes: None,
        faults: None,
        strategy: strategy.into(),
        out: out.to_path_buf(),
        threads: Some(if shard.is_some() { 1 } else { 2 }),
        no_shrink: level == Level::Machine,
        http: false,
        history: None,
    }
}

fn run(req: &SimSettings) -> Summary {
    driver::run(req, &|_| {}, &|_| None).expect("runs").summary
}

/// The summary as JSON without the fields that depend on the machine and its load.
fn without_timing(s: &Summary) -> serde_json::Value {
    let mut v = serde_json::to_value(s).expect("serializes");
    let m = v.as_object_mut().expect("an object");
    for k in [
        "wall_seconds",
        "events_per_second",
        "steps_per_second",
        "seeds_per_second",
        "threads",
    ] {
        assert!(m.remove(k).is_some(), "{k} is a field of the summary");
    }
    v
}

fn out_dir(name: &str) -> PathBuf {
    std::env::temp_dir().join(format!("listsync-sim-merge-{name}-{}", std::process::id()))
}

/// Runs `seeds` seeds once whole and once as `m` shards (in a shuffled order), merges the
/// shards and compares.
fn merged_equals_one_run(level: Level, strategy: &str, seeds: u64, m: u64) {
    let out = out_dir(level.as_str());
    let whole = run(&request(level, strategy, seeds, None, &out));
    assert!(
        whole.totals.is_none(),
        "a run that is not a shard writes no totals"
    );
    assert!(
        !whole.violations.is_empty(),
        "{strategy}: the campaign finds violations to merge"
    );
    let mut shards: Vec<(String, Summary)> = (1..=m)
        .rev()
        .map(|k| {
            let s = run(&request(
                level,
                strategy,
                seeds,
                Some(&format!("{k}/{m}")),
                &out,
            ));
            assert!(
                s.totals.is_some(),
                "a shard writes the totals a merge needs"
            );
            assert!(s.runs < whole.runs);
            (format!("shard-{k}.json"), s)
        })
        .collect();
    shards.swap(0, 1);
    let merged = merge::merge(&shards).expect("the shards merge");
    let _ = std::fs::remove_dir_all(&out);
    assert_eq!(merged.runs, whole.runs);
    assert_eq!(merged.as_expected, whole.as_expected);
    assert_eq!(
        without_timing(&merged),
        without_timing(&whole),
        "{strategy} at the {} level: the merged shards differ from one run",
        level.as_str()
    );
    assert_eq!(
        merged.threads,
        shards.iter().map(|(_, s)| s.threads).sum::<usize>()
    );
}

#[test]
fn merged_machine_shards_equal_one_run() {
    merged_equals_one_run(Level::Machine, "naive", 600, 3);
}

#[test]
fn merged_stack_shards_equal_one_run() {
    merged_equals_one_run(Level::Stack, "listen-without-relist", 60, 2);
}

#[test]
fn summaries_that_do_not_belong_together_are_refused() {
    let out = out_dir("refused");
    let shard = |strategy: &str, k: u64, m: u64| {
        (
            format!("{strategy}-{k}-{m}.json"),
            run(&request(
                Level::Machine,
                strategy,
                40,
                Some(&format!("{k}/{m}")),
                &out,
            )),
        )
    };
    let (a1, a2, a3) = (
        shard("reference", 1, 3),
        shard("reference", 2, 3),
        shard("reference", 3, 3),
    );
    assert!(merge::merge(&[a1.clone(), a2.clone(), a3.clone()]).is_ok());
    let refused = |shards: &[(String, Summary)], says: &str| {
        let e = merge::merge(shards).expect_err("refused");
        assert!(e.contains(says), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    };
    refused(&[a1.clone(), a3.clone()], "shard 2/3 is missing");
    refused(
        &[a1.clone(), a2.clone(), a2.clone(), a3.clone()],
        "given twice",
    );
    refused(
        &[a1.clone(), a2.clone(), shard("naive", 3, 3)],
        "strategy naive, but reference-1-3.json has reference",
    );
    refused(&[a1.clone(), shard("reference", 2, 2)], "a shard of 3");
    let mut other_range = a3.clone();
    other_range.1.seeds += 1;
    refused(&[a1.clone(), a2.clone(), other_range], "seed range");
    let mut short = a3.clone();
    short.1.runs -= 1;
    refused(&[a1.clone(), a2.clone(), short], "ran");
    let mut bare = a3.clone();
    bare.1.totals = None;
    refused(&[a1.clone(), a2.clone(), bare], "without the totals");
    let whole = (
        "whole.json".to_string(),
        run(&request(Level::Machine, "reference", 40, None, &out)),
    );
    refused(&[whole], "without the totals");
    let _ = std::fs::remove_dir_all(&out);
}
