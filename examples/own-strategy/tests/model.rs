//! The two clients of this crate in listsync's model checker: the last-response-wins one is
//! caught overwriting a newer list with an older one, and the coalescing one holds every
//! property in every list-refresh world listsync checks its own reference client in.

use listsync_core::property::Property;
use listsync_model::configs;
use own_strategy::{Coalescing, LastResponseWins};

#[test]
fn last_response_wins_lets_an_older_list_replace_a_newer_one() {
    // The world listsync's own `naive` client is checked in: responses may overtake each other.
    let world = configs::by_name("naive").expect("listsync names this configuration");
    let result = listsync_model::check_client_in::<LastResponseWins>(&world);
    assert!(result.exhaustive, "the whole state space was explored");
    assert!(
        result.violated().contains(&Property::NoStaleOverwrite),
        "no_stale_overwrite holds for last-response-wins: {:?}",
        result.verdicts
    );
    let cx = result
        .counterexample(Property::NoStaleOverwrite)
        .expect("a counterexample trace comes with the violation");
    // The trace replays through this crate's machine itself...
    let replay = cx
        .trace
        .check_with::<LastResponseWins>()
        .expect("the trace checks");
    assert!(
        replay
            .first_violation
            .iter()
            .any(|(p, _)| *p == Property::NoStaleOverwrite)
    );
    // ...and, where this machine is not compiled in (`listsync trace show`), from its tapes.
    let json = cx.trace.to_json();
    let back = listsync_core::trace::Trace::from_json(&json).expect("the trace reads back");
    assert_eq!(
        back.machine.as_deref(),
        Some("own_strategy::last_response_wins::LastResponseWins")
    );
    back.check().expect("the trace checks from its tapes alone");
}

#[test]
fn coalescing_holds_every_property_in_every_list_refresh_world() {
    let worlds = configs::list_refresh();
    assert!(
        worlds.len() >= 10,
        "listsync offers its list-refresh worlds"
    );
    for world in &worlds {
        let result = listsync_model::check_client_in::<Coalescing>(world);
        result.assert_holds();
        // A verdict means something only where the races were posed.
        assert_eq!(
            result.unreached(),
            [],
            "{}: situations never reached",
            world.name()
        );
        println!(
            "{}: {} states, every property holds",
            world.name(),
            result.unique_states
        );
    }
}
