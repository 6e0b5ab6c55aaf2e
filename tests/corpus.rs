//! The committed trace corpus (`traces/`): every trace replays to its expected verdicts, and
//! each known-bad configuration's shortest counterexample is there, no longer than what the model
//! finds today.
//!
//! The comparison with each trace's `expected` block is a change detector: that block was
//! written by an earlier replay (`listsync check --update-corpus`), so it says the checkers and
//! the machines still judge the trace as they did, not that the verdicts are right. What makes
//! a trace a counterexample is asserted apart from it: the block names a verdict for every
//! property (a missing one fails, naming the trace and the property, where `Trace::check`
//! would skip it), and the property the trace `shows` is violated in it and in the replay.

use listsync_core::property::{Property, Verdict};
use listsync_core::trace::Trace;
use listsync_model::{check, configs};
use std::path::Path;

fn corpus() -> Vec<(String, Trace)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("traces");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("traces/ exists") {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(&path).unwrap();
            let t = Trace::from_json(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            out.push((path.file_name().unwrap().to_string_lossy().into_owned(), t));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// A change detector (see the module doc): the replay gives the verdicts an earlier one wrote.
#[test]
fn every_corpus_trace_replays_to_its_expected_verdicts() {
    let traces = corpus();
    assert!(!traces.is_empty());
    for (name, t) in &traces {
        for p in Property::ALL {
            assert!(
                t.expected.contains_key(&p),
                "{name}: the expected block names no verdict for {p}"
            );
        }
        t.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

/// Each trace is a counterexample to the property it `shows`: violated in its expected block
/// and in its replay.
#[test]
fn every_corpus_trace_violates_the_property_it_shows() {
    for (name, t) in &corpus() {
        let shows = t
            .shows
            .unwrap_or_else(|| panic!("{name}: names no property it shows"));
        assert_eq!(
            t.expected.get(&shows),
            Some(&Verdict::Violated),
            "{name}: shows {shows}, its expected block says otherwise"
        );
        let replay = t.replay().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            replay.verdicts.get(&shows),
            Some(&Verdict::Violated),
            "{name}: shows {shows}, its replay does not violate it"
        );
    }
}

#[test]
fn each_known_bad_strategy_has_its_shortest_counterexample() {
    let traces = corpus();
    for c in configs::all().into_iter().filter(|c| !c.is_reference()) {
        let file = format!("{}.json", c.name());
        let (_, t) = traces.iter().find(|(n, _)| *n == file).unwrap_or_else(|| {
            panic!("traces/{file} is missing (run `listsync check --update-corpus traces`)")
        });
        let primary = c.violates[0];
        assert_eq!(t.shows, Some(primary), "{file}");
        assert_eq!(
            t.scenario, c.scenario,
            "{file}: scenario differs from the configuration"
        );
        let r = check(&c.scenario, c.search, &[], 1, &mut |_, _| {});
        let shortest = r
            .counterexamples
            .iter()
            .find(|x| x.property == primary)
            .expect("the model still finds it")
            .depth;
        assert_eq!(
            t.steps.len(),
            shortest,
            "{file}: not the shortest counterexample"
        );
    }
}
