//! Every model configuration gives its expected verdicts, explored exhaustively; every
//! configuration's state count is pinned (a change to the machines that changes them must
//! update them here, and in model/README.md, on purpose).

use listsync_core::property::{Property, Verdict};
use listsync_model::configs::{self, Config};
use listsync_model::{CheckResult, Search, check};

/// Unique states of every configuration (exhaustive exploration). A known-bad configuration's
/// count is pinned too: its verdicts alone do not notice a change to the bad strategy's own
/// path (a staged batch's version arithmetic, how many copies a batch announces).
const STATES: &[(&str, usize)] = &[
    ("reference", 21632),
    ("reference-http", 5887),
    ("reference-2026", 9685),
    ("reference-2026-lossy", 2141),
    ("reference-multi-client", 169610),
    ("reference-auth", 10982),
    ("reference-resources", 165),
    ("reference-faults", 9465),
    ("reference-list-errors", 7604),
    ("reference-errors", 594),
    ("reference-known-tools", 1511),
    ("reference-approvals", 20284),
    ("reference-schema-change", 2476),
    ("reference-migration", 2230),
    ("reference-two-servers", 34795),
    ("reference-cluster", 722496),
    ("reference-cluster-migrate", 258681),
    ("reference-large", 1547840),
    ("reference-large-pair", 4889295),
    ("reference-large-2026", 2219364),
    ("reference-large-http", 944337),
    ("reference-burst", 864),
    ("reference-burst-unbound", 320),
    ("reference-burst-paced", 7780),
    ("naive", 3921),
    ("clear-then-fetch", 26),
    ("first-page-only", 26),
    ("request-id-guard", 2785),
    ("flag-cleared-after-await", 37),
    ("listen-without-relist", 54),
    ("notify-before-commit", 62),
    ("offset-cursor", 64),
    ("notify-per-mutation", 35),
    ("stale-dispatch", 76),
    ("cluster-notify-before-visible", 4786),
    ("lying-registry", 196),
    ("lying-client", 40),
    ("notify-on-noop", 426),
    ("refresh-on-any-error", 125),
    ("two-registries", 64),
    ("known-tools-survive", 123),
    ("approval-by-name", 172),
    ("unvalidated-dispatch", 88),
    ("prefix-from-server-info", 124),
];

/// The stateright model declares one `always` property per property of core that applies to
/// the configuration (its list is written out, one line per property, and must not fall
/// behind), and none for a property that does not apply; every property applies somewhere.
#[test]
fn the_model_checks_every_property() {
    use stateright::Model;
    let mut somewhere = std::collections::BTreeSet::new();
    for c in configs::all() {
        let m = listsync_model::ListModel::new(c.scenario.clone());
        let names: Vec<&str> = m.properties().iter().map(|p| p.name).collect();
        for p in Property::ALL {
            let applies = c.scenario.applicable(p);
            assert_eq!(
                names.contains(&p.as_str()),
                applies,
                "{}: {p} applies: {applies}, checked by the model: {}",
                c.name(),
                !applies
            );
            if applies {
                somewhere.insert(p);
            }
        }
    }
    assert_eq!(
        somewhere.len(),
        Property::ALL.len(),
        "applies nowhere: {somewhere:?}"
    );
}

fn run(c: &Config) -> CheckResult {
    check(&c.scenario, c.search, c.situations, 1, &mut |_, _| {})
}

/// `c` explored by `search` on one thread until `bound` states are generated.
fn run_bounded(c: &Config, search: Search, bound: usize) -> CheckResult {
    listsync_model::check_bounded(
        &c.scenario,
        search,
        c.situations,
        1,
        Some(bound),
        &mut |_, _| {},
    )
}

/// The configurations `which` selects, checked and spread over the machine's cores (each
/// configuration on one thread, the largest first), in the suite's order.
fn run_all(which: impl Fn(&Config) -> bool) -> Vec<(Config, CheckResult)> {
    let mut all: Vec<(usize, Config)> = configs::all()
        .into_iter()
        .filter(|c| which(c))
        .enumerate()
        .collect();
    // Largest first, so that the two cluster configurations do not end up on one thread last.
    all.sort_by_key(|(_, c)| std::cmp::Reverse(pinned(c)));
    let queue = std::sync::Mutex::new(all.into_iter());
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut done: Vec<(usize, Config, CheckResult)> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let next = queue.lock().expect("queue").next();
                        let Some((i, c)) = next else { break mine };
                        let r = run(&c);
                        mine.push((i, c, r));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a configuration's check panicked"))
            .collect()
    });
    done.sort_by_key(|(i, _, _)| *i);
    done.into_iter().map(|(_, c, r)| (c, r)).collect()
}

/// A configuration of several server nodes sharing a store.
fn clustered(c: &Config) -> bool {
    c.scenario.cluster.as_ref().is_some_and(|k| k.nodes > 1)
}

/// A single-node configuration of half a million states or more (`reference-large`,
/// `reference-large-pair`, `reference-large-2026`, `reference-large-http`).
fn large(c: &Config) -> bool {
    !clustered(c) && pinned(c) >= 500_000
}

fn pinned(c: &Config) -> usize {
    STATES
        .iter()
        .find(|(n, _)| *n == c.name())
        .unwrap_or_else(|| panic!("no pinned state count for {}", c.name()))
        .1
}

// Three tests, so that the mutation run (scripts/mutants.sh) can judge every mutant by the
// small single-node configurations first (a tenth of the suite's states) and by the large and
// cluster ones only where those let it survive.
#[test]
fn every_single_node_config_gives_its_expected_verdicts() {
    expected_verdicts(|c| !clustered(c) && !large(c));
}

#[test]
fn every_large_config_gives_its_expected_verdicts() {
    expected_verdicts(large);
}

#[test]
fn every_cluster_config_gives_its_expected_verdicts() {
    expected_verdicts(clustered);
}

fn expected_verdicts(which: impl Fn(&Config) -> bool) {
    let mut failures = Vec::new();
    let checked = run_all(which);
    assert!(!checked.is_empty(), "no configuration selected");
    for (c, r) in checked {
        assert!(r.exhaustive, "{} was cut short", c.name());
        // Its verdicts mean something: every situation it names was reached ...
        assert!(!c.situations.is_empty(), "{} names no situation", c.name());
        assert_eq!(r.situations.len(), c.situations.len(), "{}", c.name());
        for s in &r.situations {
            if s.states == 0 || s.depth.is_none() {
                failures.push(format!("{}: {} unreached", c.name(), s.situation));
            }
        }
        // ... and quiescence stays reachable from every state (no livelock).
        if !r.progress.holds() {
            failures.push(format!(
                "{}: {} states cannot reach quiescence, e.g. after {:?}",
                c.name(),
                r.progress.stuck,
                r.progress.stuck_path
            ));
        }
        if r.verdicts != c.expected() {
            failures.push(format!(
                "{}: expected {:?}, got {:?}",
                c.name(),
                c.expected(),
                r.verdicts
            ));
        }
        // Every violated property comes with a counterexample that shows it.
        for (p, v) in &r.verdicts {
            if *v == Verdict::Violated {
                let cx = r
                    .counterexamples
                    .iter()
                    .find(|x| x.property == *p)
                    .unwrap_or_else(|| {
                        panic!("{}: {p} violated without a counterexample", c.name())
                    });
                assert_eq!(cx.trace.expected[p], Verdict::Violated, "{} {p}", c.name());
                assert_eq!(cx.depth, cx.trace.steps.len());
            }
        }
        let want = pinned(&c);
        if r.unique_states != want {
            failures.push(format!(
                "{}: {} unique states, pinned {want}",
                c.name(),
                r.unique_states
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// `reference-2026-lossy` holds because of its lists' `ttlMs`: the same world without it loses
/// the change for good.
#[test]
fn the_lossy_2026_config_converges_only_through_ttl() {
    let mut c = configs::by_name("reference-2026-lossy").unwrap();
    assert!(c.scenario.server.ttl_ms.is_some());
    assert_eq!(run(&c).verdicts[&Property::Converges], Verdict::Holds);
    c.scenario.server.ttl_ms = None;
    let r = run(&c);
    assert!(r.exhaustive);
    assert_eq!(r.verdicts[&Property::Converges], Verdict::Violated);
}

#[test]
fn configurations_are_well_formed() {
    let deep = configs::deep();
    assert!(
        deep.iter().all(Config::is_reference),
        "the deep suite holds reference configurations"
    );
    let all: Vec<Config> = configs::all().into_iter().chain(deep).collect();
    let mut names: Vec<_> = all.iter().map(|c| c.name().to_owned()).collect();
    names.sort();
    names.dedup();
    assert_eq!(names.len(), all.len(), "duplicate configuration names");
    for c in &all {
        c.scenario.validate().unwrap();
        if c.search == Search::DfsSymmetric {
            let first = &c.scenario.clients[0];
            assert!(
                c.scenario.clients.iter().all(|x| x == first),
                "{}: symmetry needs identical clients",
                c.name()
            );
            assert!(
                c.scenario.calls.is_empty() && c.scenario.auth_changes.is_empty(),
                "{}: symmetry needs no client-specific script",
                c.name()
            );
        }
    }
    // At least one reference configuration per era, and one configuration per known-bad
    // strategy, named after it.
    for era in listsync_core::vocab::Era::ALL {
        assert!(
            all.iter()
                .any(|c| c.is_reference() && c.scenario.era == era)
        );
    }
    for s in listsync_core::strategy::ClientStrategy::ALL.iter().skip(1) {
        let c = configs::by_name(s.as_str()).unwrap_or_else(|| panic!("no config for {s}"));
        assert_eq!(c.scenario.client_strategy(), *s);
        assert!(!c.violates.is_empty());
    }
    for s in listsync_core::strategy::ServerStrategy::ALL.iter().skip(1) {
        let c = configs::by_name(s.as_str()).unwrap_or_else(|| panic!("no config for {s}"));
        assert_eq!(c.scenario.server_strategy(), *s);
        assert!(!c.violates.is_empty());
    }
    // Expected verdicts use only applicable properties.
    for c in &all {
        for p in c.violates {
            assert!(c.scenario.applicable(*p), "{}: {p} is n/a", c.name());
        }
        assert_eq!(c.expected().len(), Property::ALL.len());
    }
}

/// Each known-bad configuration is about one strategy, and its first expected violation is the
/// property that strategy is known to break (what the simulator and the harness count as
/// caught).
#[test]
fn known_bad_configs_expect_their_strategys_property_first() {
    for c in configs::all().iter().filter(|c| !c.is_reference()) {
        let s = &c.scenario;
        let breaks = s
            .client_strategy()
            .breaks()
            .or(s.server_strategy().breaks())
            .unwrap_or_else(|| panic!("{}: known-bad without a known-bad strategy", c.name()));
        assert_eq!(c.violates.first(), Some(&breaks), "{}", c.name());
    }
}

/// The versioned migration (add the new tool, move callers, remove the old one) keeps calls'
/// arguments current even on a server that never checks them: no tool's input schema changes
/// under its name, so `unvalidated-dispatch` cannot run stale arguments (docs/design.md, "The
/// schema-change race").
#[test]
fn the_versioned_migration_holds_even_without_validation() {
    let mut c = configs::by_name("reference-migration").expect("config");
    c.scenario.server.strategy = listsync_core::strategy::ServerStrategy::UnvalidatedDispatch;
    let r = run(&c);
    assert!(r.exhaustive);
    assert_eq!(r.verdicts[&Property::NoStaleArguments], Verdict::Holds);
    assert_eq!(r.verdicts[&Property::NoCallToRemoved], Verdict::Holds);
}

/// A bounded exploration (`listsync check --max-states`) says it was cut short, does not judge
/// progress on its partial graph, and still reports a violation it reaches: `naive`'s
/// counterexamples are short, so a bound well below its state count still finds them.
#[test]
fn a_bounded_exploration_is_not_exhaustive_and_still_finds_short_violations() {
    let c = configs::by_name("naive").unwrap();
    let full = run(&c);
    let bound = 2000;
    let r = run_bounded(&c, c.search, bound);
    assert!(!r.exhaustive);
    assert!(r.states >= bound && r.unique_states < full.unique_states);
    assert_eq!(
        r.progress.states, 0,
        "progress is not judged on a partial graph"
    );
    assert_eq!(r.verdicts[&Property::NoStaleOverwrite], Verdict::Violated);
    // A bound the exploration never reaches leaves it exhaustive, with progress judged.
    let r = run_bounded(&c, c.search, usize::MAX);
    assert!(r.exhaustive);
    assert_eq!(r.unique_states, full.unique_states);
    assert_eq!(r.progress.states, full.progress.states);
}

/// Random walks (the deep suite's search for a world a bounded depth-first search cannot spread
/// over) are never exhaustive, count distinct states apart from visits, reach the situations of
/// a small world, and catch a known-bad strategy by the property it breaks.
#[test]
fn random_walks_reach_the_situations_and_catch_a_known_bad_strategy() {
    let c = configs::by_name("reference").unwrap();
    let full = run(&c);
    let bound = 200_000;
    let r = run_bounded(&c, Search::Walks, bound);
    assert!(!r.exhaustive, "walks never cover a world exhaustively");
    assert!(r.states >= bound, "walks run until the bound");
    assert!(
        r.unique_states < r.states && r.unique_states <= full.unique_states,
        "distinct states ({}) are counted apart from visits ({}), within the world's {}",
        r.unique_states,
        r.states,
        full.unique_states
    );
    assert_eq!(r.progress.states, 0, "progress is not judged");
    for s in &r.situations {
        assert!(s.depth.is_some(), "{:?} unreached by walks", s.situation);
    }
    assert!(r.verdicts.values().all(|v| *v != Verdict::Violated));

    let c = configs::by_name("naive").unwrap();
    let r = run_bounded(&c, Search::Walks, bound);
    assert_eq!(r.verdicts[&Property::NoStaleOverwrite], Verdict::Violated);
}
