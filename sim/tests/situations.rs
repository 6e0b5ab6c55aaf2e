//! The simulator's one-pass watches, asked after every step, against what they stand for, on
//! every state of recorded runs under several fault plans, strategies and cluster sizes: the
//! situations (`Situation::holding` against each situation's own predicate, `Situation::holds`)
//! and each client's activity (`CatalogClient::activity` against `is_idle`, `armed_retries` and
//! `held_walks`).

use listsync_core::situation::Situation;
use listsync_core::world::World;
use listsync_sim::Case;
use listsync_sim::case::{Params, Strategies};
use listsync_sim::engine::RunOpts;
use listsync_sim::plan::FaultPlan;

/// Every situation's bit.
const ALL: u32 = (1 << Situation::ALL.len()) - 1;

/// The situations `w` is in by their own predicates, after checking that the one-pass watch
/// says the same (asked for all of them and for a few subsets) and that each client's activity
/// is what its own accessors say.
fn agree(case: &Case, w: &World, at: &str) -> u32 {
    let scn = &case.scenario;
    let each = Situation::ALL
        .into_iter()
        .filter(|s| s.holds(scn, w))
        .fold(0, |bits, s| bits | s.bit());
    for (c, client) in w.clients.iter().enumerate() {
        let a = client.activity();
        let seed = case.shape.seed;
        assert_eq!(a.idle, client.is_idle(), "seed {seed} {at}: c{c} idle");
        let armed = client.armed_retries().next().is_some();
        assert_eq!(a.armed, armed, "seed {seed} {at}: c{c} armed");
        let held = client.held_walks().next().is_some();
        assert_eq!(a.held, held, "seed {seed} {at}: c{c} held");
    }
    for among in [
        ALL,
        0,
        0b1010_1010_1010_1010_1010,
        0b0101_0101_0101_0101_0101,
        each,
    ] {
        assert_eq!(
            Situation::holding(scn, w, among),
            each & among,
            "seed {} {at}: asked {among:#b}",
            case.shape.seed
        );
    }
    each
}

#[test]
fn the_one_pass_watches_agree_with_what_they_stand_for_on_every_state() {
    let configs = [
        ("reference", FaultPlan::default_plan(), None),
        ("reference", FaultPlan::crashy(), Some(3)),
        ("reference", FaultPlan::storm(), None),
        ("approval-by-name", FaultPlan::lossy(), None),
        ("prefix-from-server-info", FaultPlan::default_plan(), None),
    ];
    let mut seen = 0u32;
    let mut states = 0u64;
    for (strategy, plan, nodes) in configs {
        let p = Params {
            strategies: Strategies::parse(strategy).unwrap(),
            plan,
            clients: None,
            nodes,
            tools_only: false,
        };
        for seed in 0..120 {
            let case = Case::draw(seed, &p);
            let out = case.run(
                &p.plan,
                RunOpts {
                    record: true,
                    ..RunOpts::default()
                },
            );
            let steps = out.recording.expect("recorded").steps;
            let mut w = World::new(&case.scenario);
            seen |= agree(&case, &w, "initially");
            for (i, step) in steps.iter().enumerate() {
                w.apply(&case.scenario, step, &mut ())
                    .unwrap_or_else(|e| panic!("seed {seed} step {i}: {e}"));
                seen |= agree(&case, &w, &format!("after step {i} ({step})"));
                states += 1;
            }
        }
    }
    let reached: Vec<_> = Situation::ALL
        .into_iter()
        .filter(|s| seen & s.bit() != 0)
        .collect();
    // The states looked at are in most situations, so the agreement is not only on absences.
    assert!(states > 10_000, "{states} states");
    assert!(reached.len() >= 16, "only {reached:?} reached");
}
