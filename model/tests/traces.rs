//! Counterexample traces re-validate against the model: each one's steps form a path of the
//! stateright model (`Path::from_actions`) ending in a state that violates the property, and
//! core's trace replay reproduces the expected verdicts. A trace edited to be unreachable is
//! rejected with a message naming the step.

use listsync_core::property::Verdict;
use listsync_core::trace::{Trace, TraceError};
use listsync_core::world::Step;
use listsync_model::configs;
use listsync_model::{ListModel, check};
use stateright::{Model, Path};

#[test]
fn every_counterexample_is_a_path_of_the_model() {
    for c in configs::all().into_iter().filter(|c| !c.is_reference()) {
        let r = check(&c.scenario, c.search, c.situations, 1, &mut |_, _| {});
        for cx in &r.counterexamples {
            let model = ListModel::new(c.scenario.clone());
            let init = model.init_states().remove(0);
            let path = Path::from_actions(&model, init, cx.trace.steps.iter())
                .unwrap_or_else(|| panic!("{} {}: not a path of the model", c.name(), cx.property));
            assert!(
                !path.last_state().holds(cx.property),
                "{} {}: the path's last state does not violate it",
                c.name(),
                cx.property
            );
            // Through JSON and back, the trace still checks.
            let t = Trace::from_json(&cx.trace.to_json()).unwrap();
            let replay = t.check().unwrap();
            assert_eq!(replay.verdicts[&cx.property], Verdict::Violated);
        }
    }
}

#[test]
fn an_unreachable_trace_is_rejected_with_the_step() {
    let c = configs::by_name("naive").unwrap();
    let r = check(&c.scenario, c.search, c.situations, 1, &mut |_, _| {});
    let mut t = r.counterexamples[0].trace.clone();
    // Deliver a message that is not in flight at that point.
    t.steps.insert(
        1,
        Step::Deliver {
            client: 0,
            link: listsync_core::world::Link::Up,
            index: 7,
        },
    );
    match t.check() {
        Err(TraceError::Unreachable { index, reason, .. }) => {
            assert_eq!(index, 1);
            assert!(reason.contains("no request"), "{reason}");
        }
        other => panic!("expected an unreachable-step error, got {other:?}"),
    }
    // A client that does not exist.
    let mut t = r.counterexamples[0].trace.clone();
    t.steps.push(Step::Reconnect { client: 9 });
    assert!(matches!(t.check(), Err(TraceError::Unreachable { .. })));
    // An expected verdict that the steps do not reproduce.
    let mut t = r.counterexamples[0].trace.clone();
    t.steps.truncate(1);
    assert!(matches!(t.check(), Err(TraceError::Mismatch(_))));
    // The model agrees: the edited path is not a path.
    let mut steps = r.counterexamples[0].trace.steps.clone();
    steps.insert(1, Step::Commit);
    let model = ListModel::new(c.scenario.clone());
    let init = model.init_states().remove(0);
    assert!(Path::from_actions(&model, init, steps.iter()).is_none());
}

#[test]
fn malformed_trace_files_get_clear_errors() {
    let c = configs::by_name("offset-cursor").unwrap();
    let r = check(&c.scenario, c.search, c.situations, 1, &mut |_, _| {});
    let good = r.counterexamples[0].trace.to_json();
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["scenario"]["clients"] = serde_json::json!([]);
    let e = Trace::from_json(&v.to_string()).unwrap_err();
    assert!(e.to_string().contains("at least one client"), "{e}");
    let mut v: serde_json::Value = serde_json::from_str(&good).unwrap();
    v["steps"][0] = serde_json::json!({"step": "teleport"});
    let e = Trace::from_json(&v.to_string()).unwrap_err();
    assert!(matches!(e, TraceError::Json(_)), "{e}");
    let e = Trace::from_json(&good[..good.len() / 2]).unwrap_err();
    assert!(matches!(e, TraceError::Json(_)), "{e}");
}
