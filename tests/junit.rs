//! `--junit FILE` on `check`, `sim` and `replay`, through the CLI (`audit`'s in tests/record_audit.rs): each file parses as XML, holds
//! the testcases the command's unit is made of (configuration × property, seed campaign,
//! trace × implementation), counts its outcomes in the suite's attributes, and a failure names
//! its evidence (the message log of the replay that failed). The matrix's file is checked by
//! `tests/adapter_example.rs` on the example adapter's matrix, which that test runs anyway.

mod harness_support;

use harness_support::listsync;
use std::path::Path;

/// (classname, name, outcome element or "passed", its message) of every testcase, after checking
/// that the suite's counts match its testcases.
fn testcases(path: &Path) -> Vec<(String, String, String, String)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("not XML: {e}\n{text}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    let suites: Vec<_> = root
        .children()
        .filter(|n| n.has_tag_name("testsuite"))
        .collect();
    assert_eq!(suites.len(), 1);
    let mut out = Vec::new();
    for c in suites[0].children().filter(|n| n.has_tag_name("testcase")) {
        let outcome = c.children().find(|n| n.is_element());
        out.push((
            c.attribute("classname").unwrap_or_default().to_owned(),
            c.attribute("name").unwrap_or_default().to_owned(),
            outcome.map_or("passed", |o| o.tag_name().name()).to_owned(),
            outcome
                .and_then(|o| o.attribute("message"))
                .unwrap_or_default()
                .to_owned(),
        ));
    }
    let count = |what: &str| out.iter().filter(|c| c.2 == what).count().to_string();
    assert_eq!(
        suites[0].attribute("tests"),
        Some(out.len().to_string().as_str())
    );
    assert_eq!(
        suites[0].attribute("failures"),
        Some(count("failure").as_str())
    );
    assert_eq!(suites[0].attribute("errors"), Some(count("error").as_str()));
    assert_eq!(
        suites[0].attribute("skipped"),
        Some(count("skipped").as_str())
    );
    out
}

#[test]
fn check_writes_a_testcase_per_configuration_and_property() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("check");
    let junit = dir.path().join("junit/check.xml");
    let (code, _, stderr) = listsync(&[
        "check",
        "first-page-only",
        "clear-then-fetch",
        "--out",
        out.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let cases = testcases(&junit);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("model-check.json")).unwrap())
            .unwrap();
    for config in json["configs"].as_array().unwrap() {
        let name = config["name"].as_str().unwrap();
        let class = format!("check.{name}");
        let props: Vec<&String> = config["properties"].as_object().unwrap().keys().collect();
        let mine: Vec<_> = cases.iter().filter(|c| c.0 == class).collect();
        // Each property, and the situations and progress pass.
        assert_eq!(mine.len(), props.len() + 1, "{class}: {mine:?}");
        for p in props {
            assert!(mine.iter().any(|c| &c.1 == p), "{class}: no testcase {p}");
        }
        assert!(mine.iter().any(|c| c.1 == "situations-and-progress"));
    }
    // Both are known-bad configurations whose violation is the expected verdict: all pass.
    assert!(cases.iter().all(|c| c.2 == "passed"), "{cases:?}");
}

#[test]
fn sim_writes_one_testcase_per_seed_campaign() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("sim.xml");
    let (code, _, stderr) = listsync(&[
        "sim",
        "--seeds",
        "30",
        "--strategy",
        "naive",
        "--no-shrink",
        "--out",
        dir.path().join("traces").to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let cases = testcases(&junit);
    assert_eq!(cases.len(), 1, "{cases:?}");
    assert_eq!(cases[0].0, "sim.machine");
    assert!(
        cases[0]
            .1
            .starts_with("naive strategy, default faults, seeds 0..=29"),
        "{cases:?}"
    );
    assert_eq!(cases[0].2, "passed", "naive caught as expected: {cases:?}");
}

#[test]
fn replay_writes_a_testcase_per_trace_and_a_failure_names_its_message_log() {
    let dir = tempfile::tempdir().unwrap();
    let junit = dir.path().join("replay.xml");
    let logs = dir.path().join("logs");
    // Our runtime with the trace's own (known-bad) strategies agrees with the model: passes.
    let (code, _, stderr) = listsync(&[
        "replay",
        "traces/first-page-only.json",
        "traces/naive.json",
        "--against",
        "reference",
        "--out",
        logs.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stderr}");
    let cases = testcases(&junit);
    let names: Vec<&str> = cases.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(names, ["first-page-only.json", "naive.json"]);
    assert!(
        cases
            .iter()
            .all(|c| c.2 == "passed" && c.0.starts_with("reference:client@")),
        "{cases:?}"
    );

    // The example adapter's correct (coalescing) client (python3, stdlib only) does not take the
    // naive trace's path (it never sends the re-list the trace holds a response for), and holds:
    // a pass. Its last-response-wins client is caught: a failure that names the violated
    // property and the message log written for it.
    let (code, _, _) = listsync(&[
        "replay",
        "traces/naive.json",
        "--adapter",
        "harness/adapters/example/adapter.toml:client@coalescing",
        "--out",
        logs.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 0);
    let cases = testcases(&junit);
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].2, "passed", "{cases:?}");
    let (code, _, _) = listsync(&[
        "replay",
        "traces/naive.json",
        "--adapter",
        "harness/adapters/example/adapter.toml:client@last-response-wins",
        "--out",
        logs.to_str().unwrap(),
        "--junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(code, 1);
    let cases = testcases(&junit);
    assert_eq!(cases.len(), 1);
    assert_eq!(cases[0].2, "failure", "{cases:?}");
    assert!(cases[0].3.contains("no_stale_overwrite"), "{cases:?}");
    let log = cases[0]
        .3
        .split("message log: ")
        .nth(1)
        .and_then(|s| s.strip_suffix(')'))
        .unwrap_or_else(|| panic!("no message log in {:?}", cases[0].3));
    assert!(Path::new(log).is_file(), "{log} does not exist");
}
