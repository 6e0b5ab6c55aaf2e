//! The two clients of this crate in listsync's simulator: seeded campaigns over random tool-list
//! worlds with faults (lost, duplicated and slow messages, cut connections), far beyond the
//! model's small worlds. The coalescing client keeps every property on every seed; the
//! last-response-wins one is caught by `no_stale_overwrite`, and its failure shrinks to a short
//! trace that replays from its tapes alone.

use listsync_core::property::Property;
use listsync_sim::case::Params;
use listsync_sim::plan::FaultPlan;
use listsync_sim::shrink::{ShrinkLimits, shrink_machine};
use own_strategy::{Coalescing, LastResponseWins};

fn seeds() -> Vec<u64> {
    (0..10_000).collect()
}

#[test]
fn coalescing_keeps_every_property_on_every_seed() {
    let params = Params::tools_only(FaultPlan::default_plan());
    let result = listsync_sim::check_client::<Coalescing>(&params, &seeds());
    assert_eq!(result.stats.runs, 10_000);
    assert!(
        result.failing.is_empty(),
        "failing seeds: {:?}",
        result.failing
    );
}

#[test]
fn last_response_wins_is_caught_and_shrunk() {
    let params = Params::tools_only(FaultPlan::default_plan());
    let result = listsync_sim::check_client::<LastResponseWins>(&params, &seeds());
    let failing = result
        .failing
        .get(&Property::NoStaleOverwrite)
        .expect("some seed lets an older list replace a newer one");
    let shrunk = shrink_machine::<LastResponseWins>(
        failing[0],
        &params,
        Property::NoStaleOverwrite,
        ShrinkLimits::default(),
    )
    .expect("the failing seed shrinks");
    assert!(shrunk.trace.steps.len() <= shrunk.original_steps);
    shrunk
        .trace
        .check_with::<LastResponseWins>()
        .expect("the shrunk trace replays through the machine");
    shrunk.trace.check().expect("and from its tapes alone");
}
