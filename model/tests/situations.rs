//! Situations: a configuration whose required situation stays unreached fails, whatever its
//! verdicts (that every configuration reaches its own is asserted with the verdicts, in
//! verdicts.rs, to explore each state space once).

use listsync_core::situation::Situation;
use listsync_model::configs;
use listsync_model::suite;

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
