//! The host judge over the runs kept under reports/hosts (each plan's `session.jsonl`, the
//! model server's `model.json` and the `judgement.json` written when it ran): judging the kept
//! session and recording again gives the kept judgement, verdicts, turns and lag alike. Only
//! the wording of what was not observed may differ (it has been reworded since some runs were
//! kept), so that one text is left out of the comparison.

use listsync_harness::hosts::model_server::Recording;
use listsync_host::judge::judge;
use serde_json::Value;
use std::path::Path;

#[test]
fn kept_runs_judge_as_they_were_judged() {
    let hosts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reports/hosts");
    let mut runs = 0;
    for host in std::fs::read_dir(&hosts).expect("reports/hosts") {
        let Ok(plans) = std::fs::read_dir(host.expect("entry").path()) else {
            continue;
        };
        for plan in plans {
            let dir = plan.expect("entry").path();
            let (log, model, kept) = (
                dir.join("session.jsonl"),
                dir.join("model.json"),
                dir.join("judgement.json"),
            );
            if !(log.exists() && model.exists() && kept.exists()) {
                continue;
            }
            runs += 1;
            let session = listsync_session::log::read(&log).expect("session log");
            let rec: Recording =
                serde_json::from_str(&std::fs::read_to_string(&model).expect("model.json"))
                    .expect("a recording");
            let wire = listsync_session::wire::observe(&session.entries);
            let got = serde_json::to_value(judge(&session, &wire, &rec, 0)).expect("json");
            let want: Value =
                serde_json::from_str(&std::fs::read_to_string(&kept).expect("judgement.json"))
                    .expect("a judgement");
            let (got, want) = (unobserved_unworded(got), unobserved_unworded(want));
            assert_eq!(got, want, "{}", dir.display());
        }
    }
    assert!(runs >= 20, "only {runs} kept runs found");
}

/// The judgement without the explanation of its verdicts that are "not observed".
fn unobserved_unworded(mut j: Value) -> Value {
    for v in j["verdicts"].as_array_mut().into_iter().flatten() {
        if v["status"] == "not_observed"
            && let Some(o) = v.as_object_mut()
        {
            o.remove("detail");
        }
    }
    j
}
