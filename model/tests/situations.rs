//! Situations: every configuration reaches the races it must reach, and a configuration whose
//! required situation stays unreached fails, whatever its verdicts.

use listsync_core::situation::Situation;
use listsync_model::configs;
use listsync_model::suite;

#[test]
fn every_configuration_names_and_reaches_its_situations() {
    let selected = configs::all();
    for c in &selected {
        assert!(!c.situations.is_empty(), "{} names no situation", c.name());
    }
    let run = suite::run(selected, 1, &mut |_, _, _| {});
    let mut failures = Vec::new();
    for c in &run.report.configs {
        assert_eq!(
            c.situations.len(),
            configs::by_name(&c.name).unwrap().situations.len(),
            "{}: every required situation is reported",
            c.name
        );
        for (s, r) in &c.situations {
            if r.states == 0 || r.depth.is_none() {
                failures.push(format!("{}: {s} unreached", c.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn an_unreached_situation_fails_a_configuration_whose_verdicts_are_right() {
    // The resources configuration has one client under one authorization context: it can
    // never switch context mid-refresh.
    let mut c = configs::by_name("reference-resources").unwrap();
    c.situations = &[
        Situation::ContentUpdateInFlight,
        Situation::AuthSwitchDuringRefresh,
    ];
    let run = suite::run(vec![c], 1, &mut |_, _, _| {});
    let r = &run.report.configs[0];
    assert_eq!(run.results[0].verdicts, run.configs[0].expected());
    assert_eq!(r.unreached(), [Situation::AuthSwitchDuringRefresh]);
    assert!(r.situations[&Situation::ContentUpdateInFlight].states > 0);
    assert!(!r.as_expected);
    assert!(!run.report.all_as_expected);
}
