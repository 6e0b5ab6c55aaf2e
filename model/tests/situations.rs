//! Situations: a configuration whose required situation stays unreached fails, whatever its
//! verdicts (that every configuration reaches its own is asserted with the verdicts, in
//! verdicts.rs, to explore each state space once); the depth a breadth-first check reports for
//! a situation is the depth it is first reached at.

use listsync_core::situation::Situation;
use listsync_model::{ListModel, Search, check, configs, suite};
use stateright::{Checker, Model};

#[test]
fn an_unreached_situation_fails_a_configuration_whose_verdicts_are_right() {
    // The resources configuration has one client under one authorization context: it can
    // never switch context mid-refresh.
    let mut c = configs::by_name("reference-resources").unwrap();
    c.situations = &[
        Situation::ContentUpdateInFlight,
        Situation::AuthSwitchDuringRefresh,
    ];
    let run = suite::run(vec![c], 1, None, &mut |_, _, _| {});
    let r = &run.report.configs[0];
    assert_eq!(run.results[0].verdicts, run.configs[0].expected());
    assert_eq!(r.unreached(), [Situation::AuthSwitchDuringRefresh]);
    assert!(r.situations[&Situation::ContentUpdateInFlight].states > 0);
    assert!(!r.as_expected);
    assert!(!run.report.all_as_expected);
}

/// Unique states in `s` among those a breadth-first exploration of `c` reaches within `depth`
/// steps.
fn states_within(c: &configs::Config, s: Situation, depth: usize) -> u64 {
    let model = ListModel::first_only(c.scenario.clone()).watching(&[s]);
    let counts = model.situations.clone();
    // stateright counts the initial state's depth as 1, and skips (does not even evaluate) a
    // state whose depth reaches its target.
    model
        .checker()
        .target_max_depth(depth + 2)
        .spawn_bfs()
        .join();
    counts.states(s)
}

#[test]
fn a_breadth_first_check_reports_the_depth_a_situation_is_first_reached_at() {
    let c = configs::by_name("reference").unwrap();
    let r = check(&c.scenario, Search::Bfs, c.situations, 2, &mut |_, _| {});
    assert!(!r.situations.is_empty());
    for reach in &r.situations {
        let s = reach.situation;
        let d = reach.depth.unwrap_or_else(|| panic!("{s} unreached"));
        assert!(
            states_within(&c, s, d) > 0,
            "{s}: no state in it within the {d} steps reported"
        );
        if d > 0 {
            assert_eq!(
                states_within(&c, s, d - 1),
                0,
                "{s}: reached within fewer steps than the {d} reported"
            );
        }
    }
}
