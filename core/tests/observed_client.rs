//! The client side is judged from observation (docs/design.md, "Who observes"): a publish is what
//! the client's readers read, a walk is what its requests on the wire show. The `lying-client`
//! strategy says otherwise about both (its event names the newer list while its readers keep the
//! older one; it reports none of its walks): the world records what it says as claims and judges
//! what it sees.

mod common;

use common::{one_client, settle};
use listsync_core::history::Event;
use listsync_core::property::Property;
use listsync_core::record::{Note, Recorder};
use listsync_core::scenario::Scenario;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Kind, Op};
use listsync_core::world::{Step, World};

/// Keeps the observed events and the client's claims apart.
#[derive(Default)]
struct Split {
    observed: Vec<Event>,
    claims: Vec<Event>,
}

impl Recorder for Split {
    fn event(&mut self, e: &Event) {
        self.observed.push(e.clone());
    }
    fn claim(&mut self, e: &Event) {
        self.claims.push(e.clone());
    }
    fn wants_notes(&self) -> bool {
        false
    }
    fn note(&mut self, _: Note) {}
}

/// One stdio client of tool `a`; one batch adding `b`.
fn scenario(strategy: ClientStrategy) -> Scenario {
    one_client(
        "observed-client",
        strategy,
        vec![Op::add(Kind::Tools, "a", "a1")],
        vec![vec![Op::add(Kind::Tools, "b", "b1")]],
        &[],
    )
}

/// Lists, takes the batch, lists again, settles: what was observed and what the client said.
fn run(strategy: ClientStrategy) -> (World, Split) {
    let scn = scenario(strategy);
    let mut rec = Split::default();
    let mut w = World::start_recorded(&scn, &mut rec);
    settle(&mut w, &scn, &mut rec);
    w.apply(&scn, &Step::Mutate { batch: 0 }, &mut rec).unwrap();
    settle(&mut w, &scn, &mut rec);
    assert!(w.quiescent(), "{strategy}: the world settles");
    (w, rec)
}

fn published_names(events: &[Event]) -> Vec<Vec<String>> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Published { items, .. } => {
                Some(items.iter().map(|i| i.name.to_string()).collect())
            }
            _ => None,
        })
        .collect()
}

fn walks(events: &[Event]) -> usize {
    events
        .iter()
        .filter(|e| {
            matches!(
                e,
                Event::RefreshStarted { .. } | Event::WalkRestarted { .. }
            )
        })
        .count()
}

/// The reference client's claims and the observation agree: the same publishes, the same walks.
#[test]
fn the_reference_client_is_seen_doing_what_it_says() {
    let (w, rec) = run(ClientStrategy::Reference);
    assert_eq!(
        published_names(&rec.observed),
        vec![vec!["a"], vec!["a", "b"]]
    );
    assert_eq!(published_names(&rec.observed), published_names(&rec.claims));
    assert_eq!(walks(&rec.observed), 2);
    assert_eq!(walks(&rec.observed), walks(&rec.claims));
    assert!(w.holds(Property::Converges));
}

/// The lying client names `[a, b]` while its readers keep `[a]`, and reports no walk while two go
/// on the wire: judged from what was observed, it does not converge.
#[test]
fn a_lying_client_is_judged_by_what_its_readers_read_and_its_wire() {
    let (w, rec) = run(ClientStrategy::LyingClient);
    assert_eq!(
        published_names(&rec.claims),
        vec![vec!["a"], vec!["a", "b"]]
    );
    assert_eq!(published_names(&rec.observed), vec![vec!["a"]]);
    assert_eq!(walks(&rec.claims), 0);
    assert_eq!(walks(&rec.observed), 2);
    assert!(!w.holds(Property::Converges));
    assert!(w.holds(Property::NoTornSnapshot));
}
