//! A server that announces a change after every list it answers: the reference client's walks
//! stay bounded between the moments time passes; a client that does not pace walks without end.

use listsync_core::client::{Coalesce, Pacing};
use listsync_model::pacing::{check, storm};

const DEPTH: usize = 48;

#[test]
fn the_default_pacing_bounds_walks_in_an_endless_storm() {
    let p = Pacing::default();
    let scn = storm(p);
    let r = check(&scn, DEPTH);
    // The model's clock stands still, so every notification interval is 0 and the adaptive gap
    // asks for no delay: here the storm back-off is what makes the client wait — after the
    // first walk and `storm_after` unchanged ones, once more after the real batch.
    let bound = (1 + scn.script.len() as u32) * (1 + u32::from(p.storm_after));
    assert!(
        r.max_walks <= bound,
        "{} walks without a wait: {:?}",
        r.max_walks,
        r.path
    );
    assert!(
        r.states > 100,
        "the storm was explored ({} states)",
        r.states
    );
}

#[test]
fn the_storm_back_off_alone_bounds_walks() {
    let p = Pacing {
        coalesce: Coalesce::Off,
        ..Pacing::default()
    };
    let scn = storm(p);
    let r = check(&scn, DEPTH);
    // The first walk and `storm_after` walks that find the list unchanged, then a wait; the
    // real batch resets the count once (a walk that publishes a change ends the back-off).
    let changes = 1 + scn.script.len() as u32;
    let bound = changes * (1 + u32::from(p.storm_after));
    assert!(
        r.max_walks <= bound,
        "{} walks without a wait: {:?}",
        r.max_walks,
        r.path
    );
}

#[test]
fn without_pacing_the_storm_makes_the_client_walk_without_end() {
    let r = check(&storm(Pacing::OFF), DEPTH);
    // Every few steps another walk, and no timer in between: the count grows with the depth.
    assert!(r.max_walks >= 6, "only {} walks: {:?}", r.max_walks, r.path);
}

#[test]
fn the_documented_storm_bound() {
    let p = Pacing::default();
    // 2 back to back, then 100, 200, ..., 6400 ms, then every 10 s.
    assert_eq!(p.storm_bound(0.0), Some(3));
    assert_eq!(p.storm_bound(0.1), Some(4));
    assert_eq!(p.storm_bound(60.0), Some(3 + 7 + 4));
    assert_eq!(Pacing::OFF.storm_bound(60.0), None);
    // The back-off is off when either knob is 0.
    let no_delay = Pacing {
        storm_base_ms: 0,
        ..p
    };
    assert_eq!(no_delay.storm_bound(60.0), None);
    let never = Pacing {
        storm_after: 0,
        ..p
    };
    assert_eq!(never.storm_bound(60.0), None);
}
