//! Machine-level simulator tests on a small fixed seed set: determinism (the same seed gives the
//! same history byte for byte), the reference strategies hold every property under every fault
//! plan that does not lose notifications silently, every known-bad strategy is caught within
//! its seed budget, and a shrunk failure is a short trace that replays in the model's world
//! with the same verdict. No test looks at time.

use listsync_core::property::{Property, Verdict};
use listsync_core::situation::Situation;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_sim::Case;
use listsync_sim::campaign;
use listsync_sim::case::{Params, Strategies};
use listsync_sim::engine::RunOpts;
use listsync_sim::plan::FaultPlan;
use listsync_sim::shrink;

fn params(strategies: Strategies, plan: FaultPlan) -> Params {
    Params {
        strategies,
        plan,
        clients: None,
        nodes: None,
        tools_only: false,
    }
}

#[test]
fn a_seed_replays_byte_for_byte() {
    for plan in [
        FaultPlan::default_plan(),
        FaultPlan::crashy(),
        FaultPlan::storm(),
    ] {
        let p = params(Strategies::REFERENCE, plan);
        for seed in [3, 17, 42] {
            let run = || {
                Case::draw(seed, &p)
                    .run(
                        &p.plan,
                        RunOpts {
                            record: true,
                            ..RunOpts::default()
                        },
                    )
                    .recording
                    .expect("recorded")
            };
            let (a, b) = (run(), run());
            assert!(!a.steps.is_empty());
            assert_eq!(a.history, b.history, "seed {seed} under {}", p.plan.name);
            assert_eq!(a.steps, b.steps);
        }
    }
}

#[test]
fn campaign_results_do_not_depend_on_threads() {
    let p = params(
        Strategies::parse("naive").unwrap(),
        FaultPlan::default_plan(),
    );
    let seeds: Vec<u64> = (0..120).collect();
    let one = campaign::run(&p, &seeds, 1, &|_| {});
    let two = campaign::run(&p, &seeds, 2, &|_| {});
    assert_eq!(one.stats.steps, two.stats.steps);
    assert_eq!(one.stats.events, two.stats.events);
    assert_eq!(one.stats.violations, two.stats.violations);
    assert_eq!(one.failing, two.failing);
}

#[test]
fn recorded_runs_replay_in_the_world() {
    let p = params(Strategies::REFERENCE, FaultPlan::crashy());
    for seed in 0..40 {
        let case = Case::draw(seed, &p);
        let out = case.run(
            &p.plan,
            RunOpts {
                record: true,
                ..RunOpts::default()
            },
        );
        assert_eq!(out.refused, 0, "seed {seed}");
        assert!(out.stuck.is_none(), "seed {seed}: {:?}", out.stuck);
        let steps = out.recording.expect("recorded").steps;
        let t = listsync_core::trace::Trace::record("sim", case.scenario.clone(), steps, None)
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        t.check().unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        assert!(t.replay().unwrap().quiescent, "seed {seed}");
    }
}

#[test]
fn reference_clusters_hold_on_the_fixed_seed_set() {
    for nodes in [2, 3] {
        let p = Params {
            nodes: Some(nodes),
            ..params(Strategies::REFERENCE, FaultPlan::crashy())
        };
        let seeds: Vec<u64> = (0..200).collect();
        let r = campaign::run(&p, &seeds, 2, &|_| {});
        assert_eq!(
            r.stats.anomalies, 0,
            "{nodes} nodes: {:?}",
            r.stats.anomaly_seeds
        );
        assert!(
            r.stats.violations.is_empty(),
            "{nodes} nodes: {:?}",
            r.failing
        );
    }
}

#[test]
fn reference_holds_on_the_fixed_seed_set() {
    for plan in [
        FaultPlan::none(),
        FaultPlan::default_plan(),
        FaultPlan::storm(),
        FaultPlan::crashy(),
    ] {
        let seeds: Vec<u64> = if plan.name == "storm" {
            (0..40).collect()
        } else {
            (0..300).collect()
        };
        let p = params(Strategies::REFERENCE, plan);
        let r = campaign::run(&p, &seeds, 2, &|_| {});
        assert_eq!(
            r.stats.anomalies, 0,
            "{}: {:?}",
            p.plan.name, r.stats.anomaly_seeds
        );
        assert!(
            r.stats.violations.is_empty(),
            "{}: {:?}",
            p.plan.name,
            r.failing
        );
        // The holds above mean something: the races they are about happened in these runs.
        assert_eq!(r.stats.situation_runs, seeds.len() as u64);
        for s in [
            Situation::NotifyDuringRefresh,
            Situation::NotifyMidWalk,
            Situation::BurstDuringRefresh,
        ] {
            assert!(
                r.stats.situations.get(&s).is_some_and(|n| *n > 0),
                "{}: no run reached {s}: {:?}",
                p.plan.name,
                r.stats.situations
            );
        }
    }
}

fn known_bad() -> Vec<String> {
    ClientStrategy::ALL
        .iter()
        .skip(1)
        .map(|s| s.as_str().to_owned())
        .chain(
            ServerStrategy::ALL
                .iter()
                .skip(1)
                .map(|s| s.as_str().to_owned()),
        )
        .collect()
}

#[test]
fn every_known_bad_strategy_is_caught_and_shrinks_to_a_replayable_trace() {
    let seeds: Vec<u64> = (0..1000).collect();
    for name in known_bad() {
        let p = params(Strategies::parse(&name).unwrap(), FaultPlan::default_plan());
        let r = campaign::run(&p, &seeds, 2, &|_| {});
        assert_eq!(r.stats.anomalies, 0, "{name}");
        // Caught only by the property the strategy is known to break.
        let st = p.strategies;
        let prop = st.client.breaks().or(st.server.breaks()).unwrap();
        let seed = r
            .failing
            .get(&prop)
            .map(|s| s[0])
            .unwrap_or_else(|| panic!("{name}: {prop} not caught in 1000 seeds"));
        if name == "lying-registry" {
            // It lies about both of its bugs; the observer catches both.
            assert!(
                r.failing.contains_key(&Property::NoCallToRemoved),
                "{name}: no_call_to_removed not caught: {:?}",
                r.failing.keys()
            );
        }
        let s = shrink::shrink(seed, &p, prop, shrink::ShrinkLimits::default())
            .unwrap_or_else(|| panic!("{name}: seed {seed} does not reproduce {prop}"));
        assert!(s.trace.steps.len() <= s.original_steps, "{name}");
        let replay = s.trace.check().unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(replay.verdicts[&prop], Verdict::Violated, "{name}");
        assert_eq!(s.trace.expected[&prop], Verdict::Violated, "{name}");
        // Round trip through the file format.
        let back = listsync_core::trace::Trace::from_json(&s.trace.to_json()).unwrap();
        back.check().unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}

#[test]
fn one_seed_says_what_it_ran_and_what_it_found() {
    let req = listsync_sim::driver::SimSettings {
        level: listsync_sim::summary::Level::Machine,
        seeds: None,
        seed: Some(7),
        first_seed: 0,
        shard: None,
        clients: None,
        burst: None,
        nodes: None,
        faults: Some("none".into()),
        strategy: "naive".into(),
        out: std::env::temp_dir(),
        threads: Some(1),
        no_shrink: true,
        http: false,
        history: None,
    };
    let ran = listsync_sim::driver::run(&req, &|_| {}, &|_| None).expect("runs");
    let text = ran.single_text();
    assert!(text.starts_with("seed 7: "), "{text}");
    assert!(text.contains(" clients, "), "{text}");
    let (_, out) = ran.single.as_ref().expect("a single run");
    assert_eq!(
        text.matches("  VIOLATED ").count(),
        out.found.len(),
        "{text}"
    );
}
