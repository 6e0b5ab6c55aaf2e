//! A step the world cannot take is refused with a reason and changes nothing: a replayed trace
//! (a recorded session, a shrunk simulator run, a hand-edited file) may name a timer that is not
//! armed or a message that is not there, and replaying it must say so rather than drive a
//! machine through an input its driver would never give it.

mod common;

use common::{one_client, settle};
use listsync_core::record::Log;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Kind, Op};
use listsync_core::world::{Link, Step, World};

#[test]
fn a_timer_that_is_not_armed_is_refused_and_changes_nothing() {
    let scn = one_client(
        "refused-steps",
        ClientStrategy::Reference,
        vec![Op::add(Kind::Tools, "a", "a1")],
        vec![vec![Op::add(Kind::Tools, "b", "b1")]],
        &[],
    );
    let mut w = World::new(&scn);
    let mut log = Log::default();
    settle(&mut w, &scn, &mut log);
    let before = w.clone();
    let (client, kind, auth) = (0, Kind::Tools, AuthCtx::default());
    let refused = [
        (
            Step::Retry { client, kind, auth },
            "c0 has no retry armed for tools",
        ),
        (
            Step::WalkDue { client, kind, auth },
            "c0 holds no walk of tools",
        ),
        (
            Step::Deliver {
                client,
                link: Link::Down,
                index: 0,
            },
            "Down",
        ),
    ];
    for (step, reason) in refused {
        let err = w
            .apply(&scn, &step, &mut log)
            .expect_err(&format!("{step} was taken"));
        assert!(err.contains(reason), "{step}: {err}");
        assert_eq!(w, before, "{step} changed the world");
    }
    // And the world still takes the steps it offers.
    w.apply(&scn, &Step::Mutate { batch: 0 }, &mut log).unwrap();
}
