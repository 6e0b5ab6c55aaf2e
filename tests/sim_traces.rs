//! `listsync sim` catching known-bad strategies end to end: the campaign (default seed budget)
//! exits as expected, every shrunk trace it writes replays in the model's world with the
//! property violated, and the traces the harness can replay give the same verdict when the
//! harness runs them against our runtime playing the trace's own strategies
//! (`reference@trace`), with the judged verdicts agreeing with the shadow model's.

use listsync_core::property::{Property, Verdict};
use listsync_core::trace::Trace;
use listsync_harness::adapters::{Paths, Subject};
use listsync_harness::outcome::RunStatus;
use listsync_harness::pin::PinnedExe;
use listsync_harness::replay::{agrees, plan, replay};
use listsync_harness::run::Bounds;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A whole replay never takes this long; past it the test fails instead of hanging.
const REPLAY_LIMIT: Duration = Duration::from_secs(120);

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `listsync sim --strategy NAME` into a temporary directory; its JSON summary.
fn sim(exe: &Path, strategy: &str, dir: &Path) -> Value {
    let out = Command::new(exe)
        .args(["sim", "--strategy", strategy, "--json", "--out"])
        .arg(dir)
        .current_dir(repo())
        .output()
        .expect("run listsync sim");
    assert!(
        out.status.success(),
        "{strategy}: listsync sim exited {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON summary")
}

#[tokio::test(flavor = "multi_thread")]
async fn shrunk_sim_traces_give_the_same_verdict_in_the_model_and_the_harness() {
    let pin = PinnedExe::new(Path::new(env!("CARGO_BIN_EXE_listsync"))).expect("pin the binary");
    let paths = Paths {
        listsync: pin.path().to_path_buf(),
        repo: repo(),
        cache: None,
    };
    let dir = std::env::temp_dir().join(format!("listsync-sim-traces-{}", std::process::id()));
    let subject: Subject = "reference@trace".parse().expect("a subject");
    for strategy in ["naive", "notify-before-commit", "notify-per-mutation"] {
        let summary = sim(pin.path(), strategy, &dir);
        assert_eq!(summary["as_expected"], Value::Bool(true), "{strategy}");
        let violations = summary["violations"].as_object().expect("violations");
        assert!(!violations.is_empty(), "{strategy}: nothing caught");
        let mut in_harness = 0;
        for (name, v) in violations {
            let property: Property = serde_json::from_value(Value::String(name.clone()))
                .unwrap_or_else(|e| panic!("{name}: {e}"));
            let file = v["trace"]["file"].as_str().expect("a shrunk trace");
            let text = std::fs::read_to_string(file).expect("the trace file");
            let trace = Trace::from_json(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
            // The model: the trace replays and shows the property violated.
            let model = trace.check().unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(model.verdicts[&property], Verdict::Violated, "{file}");
            assert_eq!(v["trace"]["replays_in_model"], Value::Bool(true), "{file}");
            // The harness: the same verdict from the runtime's own behaviour.
            let p = plan(&trace, file, &subject, None).unwrap_or_else(|e| panic!("{file}: {e}"));
            assert_eq!(
                v["trace"]["replays_in_harness"],
                Value::Bool(p.unsupported.is_none()),
                "{file}"
            );
            if p.unsupported.is_some() {
                continue;
            }
            let r = tokio::time::timeout(REPLAY_LIMIT, replay(&p, &paths, Bounds::default()))
                .await
                .unwrap_or_else(|_| panic!("{file}: the replay hung"));
            assert_eq!(r.status, RunStatus::Completed, "{file}: {:?}", r.detail);
            assert_eq!(r.verdict(property), Verdict::Violated, "{file}");
            let shadow = r.model.clone().expect("the shadow model's verdicts");
            assert!(agrees(&r.judged, &shadow), "{file}");
            in_harness += 1;
        }
        assert!(
            in_harness > 0,
            "{strategy}: no shrunk trace the harness can replay"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
