//! The committed trace corpus (`traces/`): every trace replays to its expected verdicts, and
//! each known-bad configuration's shortest counterexample is there, no longer than what the model
//! finds today.

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

#[test]
fn every_corpus_trace_replays_to_its_expected_verdicts() {
    let traces = corpus();
    assert!(!traces.is_empty());
    for (name, t) in &traces {
        t.check().unwrap_or_else(|e| panic!("{name}: {e}"));
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
