//! A client machine written outside listsync (examples/own-strategy's `LastResponseWins`,
//! checked in the user's crate through `listsync_model::check_client_in`) meets the binary:
//! `listsync trace show` validates its counterexample from the client tapes the trace holds
//! (and refuses one whose tape was edited so that its readers see other lists), and `listsync replay` poses the counterexample's
//! adversary to real clients — listsync's reference holds, the example adapter's
//! last-response-wins client is caught by `no_stale_overwrite`.

mod harness_support;

use harness_support::listsync;
use listsync_core::property::Property;
use listsync_model::configs;
use own_strategy::LastResponseWins;

#[test]
fn a_counterexample_of_a_machine_built_elsewhere_is_validated_and_replayed() {
    let world = configs::by_name("naive").expect("a configuration of listsync's");
    let result = listsync_model::check_client_in::<LastResponseWins>(&world);
    let cx = result
        .counterexample(Property::NoStaleOverwrite)
        .expect("last-response-wins is caught by no_stale_overwrite");
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("last-response-wins.json");
    std::fs::write(&file, cx.trace.to_json()).unwrap();
    let path = file.to_str().unwrap();

    let (code, stdout, stderr) = listsync(&["trace", "show", path, "--quiet"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("valid") && stdout.contains("no_stale_overwrite"),
        "{stdout}"
    );

    // A tape whose client's readers are made to read nothing (the lists it published gone from
    // what they see) no longer reproduces the verdicts: what readers see is the evidence, the
    // machine's own `published` events only explain it.
    let mut edited: serde_json::Value = serde_json::from_str(&cx.trace.to_json()).unwrap();
    let tapes = edited["tapes"]
        .as_array_mut()
        .expect("the trace holds tapes");
    let steps = tapes[0]["steps"].as_array_mut().unwrap();
    let emptied = steps
        .iter_mut()
        .filter_map(|s| s["after"].as_object_mut()?.remove("snapshots"))
        .count();
    assert!(emptied > 0, "the tape holds what the readers saw");
    let tampered = dir.path().join("edited.json");
    std::fs::write(&tampered, edited.to_string()).unwrap();
    let (code, stdout, stderr) = listsync(&["trace", "show", tampered.to_str().unwrap()]);
    assert_ne!(code, 0, "an edited tape is refused\n{stdout}");
    assert!(stderr.contains("no_stale_overwrite"), "{stderr}");

    // Its adversary, posed to listsync's reference client: the race is posed and it holds.
    let out = tempfile::tempdir().unwrap();
    let out = out.path().to_str().unwrap();
    let (code, stdout, stderr) =
        listsync(&["replay", path, "--against", "reference", "--out", out]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("holds: ") && stdout.contains("race posed"),
        "{stdout}"
    );

    // ...and to the example adapter's last-response-wins client: caught by the same property.
    let adapter = "harness/adapters/example/adapter.toml:client@last-response-wins";
    let (code, stdout, stderr) = listsync(&["replay", path, "--adapter", adapter, "--out", out]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("violated") && stdout.contains("no_stale_overwrite"),
        "{stdout}"
    );

    // listsync's own client cannot follow another machine's choices step by step: it says so.
    let (code, stdout, stderr) =
        listsync(&["replay", path, "--against", "reference@trace", "--out", out]);
    assert!(
        stdout.contains("built outside listsync") || stderr.contains("built outside listsync"),
        "{code}\n{stdout}\n{stderr}"
    );
}
