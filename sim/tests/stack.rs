//! Full-stack simulator tests on a small fixed seed set: the runtime's tokio + rmcp code over
//! the simulated network gives the same recorded history (network log and runtime events) byte
//! for byte when a seed is run twice, the reference strategies hold every property under the
//! default fault plan, a small burst is absorbed with at most two list walks per client, and
//! known-bad strategies run on the stack are caught by the property their bug breaks (the lying
//! registry by both of its). No test looks at time.

use listsync_core::property::Property;
use listsync_core::scenario::Scenario;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_sim::Case;
use listsync_sim::campaign;
use listsync_sim::case::{self, Params, Strategies};
use listsync_sim::engine::{Budget, RunOpts, RunResult};
use listsync_sim::plan::FaultPlan;
use listsync_sim::stack::{self, StackReport, StackRun, net::NetBudget};
use listsync_sim::summary::as_expected;

fn params(strategies: Strategies, plan: FaultPlan) -> Params {
    Params {
        strategies,
        plan,
        clients: None,
        nodes: Some(1),
        tools_only: false,
    }
}

fn recorded(p: &Params, seed: u64) -> (RunResult, StackReport) {
    Case::draw(seed, p).run_stack(
        &p.plan,
        RunOpts {
            record: true,
            ..RunOpts::default()
        },
    )
}

#[test]
fn a_stack_seed_replays_byte_for_byte() {
    for plan in [FaultPlan::default_plan(), FaultPlan::crashy()] {
        let p = params(Strategies::REFERENCE, plan);
        for seed in [1, 7, 42] {
            let (a, ra) = recorded(&p, seed);
            let (b, rb) = recorded(&p, seed);
            let (a, b) = (
                a.recording.expect("recorded").history,
                b.recording.expect("recorded").history,
            );
            assert!(
                a.iter().any(|l| l.contains("Committed")),
                "seed {seed}: the history records the runtime's events"
            );
            assert_eq!(
                a.join("\n").into_bytes(),
                b.join("\n").into_bytes(),
                "seed {seed} under {}",
                p.plan.name
            );
            assert_eq!(ra.net.delivered, rb.net.delivered, "seed {seed}");
        }
    }
}

#[test]
fn reference_holds_on_the_fixed_stack_seed_set() {
    for plan in [FaultPlan::default_plan(), FaultPlan::crashy()] {
        let p = params(Strategies::REFERENCE, plan);
        let seeds: Vec<u64> = (0..24).collect();
        let (r, net) = campaign::run_stack(&p, &seeds, 2, &|_| {});
        assert_eq!(r.stats.runs, seeds.len() as u64);
        // The plan's faults really happened.
        assert!(
            net.duplicated + net.broken + net.cut > 0,
            "{}: {net:?}",
            p.plan.name
        );
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
    }
}

fn burst_run(scn: &Scenario) -> RunResult {
    let how = StackRun {
        net: NetBudget {
            dups: 0,
            drops: 0,
            request_faults: 0,
            call_errors: 0,
            slow: false,
        },
        budget: Budget::default(),
        burst: true,
    };
    stack::run(scn, &FaultPlan::none(), 0, &how, RunOpts::default()).0
}

#[test]
fn a_small_stack_burst_coalesces_to_two_walks_per_client() {
    let scn = case::burst(20, 60, usize::MAX, 1, Strategies::REFERENCE, false);
    assert_eq!(scn.script.len(), 60);
    let out = burst_run(&scn);
    assert!(out.stuck.is_none(), "{:?}", out.stuck);
    assert!(out.found.is_empty(), "{:?}", out.found);
    assert_eq!(out.commits, 60);
    assert!(out.walks_after_change >= 20, "every client re-lists");
    assert!(
        out.max_client_walks <= 2,
        "a client walked {} times",
        out.max_client_walks
    );
}

/// A known-bad strategy's stack campaign on `seeds`: caught only if the property its bug
/// breaks is violated (what the summary's `as_expected` counts).
fn caught_on_the_stack(name: &str, seeds: u64) -> campaign::CampaignResult {
    let p = params(Strategies::parse(name).unwrap(), FaultPlan::default_plan());
    let seeds: Vec<u64> = (0..seeds).collect();
    let (r, _) = campaign::run_stack(&p, &seeds, 2, &|_| {});
    assert_eq!(r.stats.anomalies, 0, "{name}: {:?}", r.stats.anomaly_seeds);
    let st = p.strategies;
    let prop = st.client.breaks().or(st.server.breaks()).unwrap();
    assert!(
        r.failing.contains_key(&prop),
        "{name}: {prop} not caught in {} stack seeds: {:?}",
        seeds.len(),
        r.failing.keys()
    );
    assert!(
        as_expected(
            st.client,
            st.server,
            &p.plan,
            r.stats.violations.keys().copied(),
            r.stats.anomalies
        ),
        "{name}"
    );
    r
}

/// Known-bad strategies the stack level does not reach with its fault plan: a stale list
/// overwriting a newer one (`naive`, `request-id-guard`) needs two list replies to overtake one
/// another, and a torn offset walk (`offset-cursor`) a removal between two pages of one walk,
/// neither of which 400 default-plan stack seeds produce (the machine level catches all three);
/// `cluster-notify-before-visible` needs nodes; `unvalidated-dispatch` needs a tool whose input
/// schema changes, and the runtime builds every generated tool with one schema (a change is a
/// new description), so no call's arguments go stale there (the machine level, whose plain
/// definitions are their own schema, catches it); `prefix-from-server-info` needs one
/// application over several connections, and each stack-level application is one client (the
/// machine level and rt's `many_servers` test catch it).
const NOT_ON_THE_STACK: [&str; 6] = [
    "naive",
    "request-id-guard",
    "offset-cursor",
    "cluster-notify-before-visible",
    "unvalidated-dispatch",
    "prefix-from-server-info",
];

/// Every other known-bad strategy, client or server, run on the runtime is caught by the
/// property its bug breaks, as the summary counts it: judged from what the observers saw (the
/// wire, the ground truth), not from what the machines say about themselves. The lying
/// registry claims every announced version visible and every tool it runs present; it is
/// caught for both.
#[test]
fn known_bad_strategies_are_caught_on_the_stack_by_their_own_property() {
    let names = ClientStrategy::ALL
        .iter()
        .skip(1)
        .map(|s| s.as_str())
        .chain(ServerStrategy::ALL.iter().skip(1).map(|s| s.as_str()))
        .filter(|n| !NOT_ON_THE_STACK.contains(n));
    for name in names {
        let r = caught_on_the_stack(name, 400);
        if name == ServerStrategy::LyingRegistry.as_str() {
            assert!(
                r.failing.contains_key(&Property::NoCallToRemoved),
                "{name}: no_call_to_removed not caught: {:?}",
                r.failing.keys()
            );
        }
    }
}
