//! One snapshot for every consumer (docs/design.md, "One snapshot for every consumer"): the
//! judge of `consumers_agree` and of `no_call_to_removed`'s client half, fed the observer's
//! `Routed` events, against a client's last published tool list.

use listsync_core::history::Event;
use listsync_core::monitor::judge;
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::{AuthCtx, Catalog, Kind, Op};
use std::sync::Arc;

fn history(routed: &str, sent: bool) -> Vec<Event> {
    let v1 = Catalog::from_ops(&[
        Op::add(Kind::Tools, "a", "a1"),
        Op::add(Kind::Tools, "k", "k1"),
    ]);
    let v2 = Catalog::from_ops(&[Op::add(Kind::Tools, "a", "a1")]);
    vec![
        Event::Committed {
            version: 1,
            catalog: Arc::new(v1),
        },
        Event::Committed {
            version: 2,
            catalog: Arc::new(v2.clone()),
        },
        Event::Published {
            client: 0,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            items: v2.visible(Kind::Tools, AuthCtx(0)).into(),
            version: Some(2),
        },
        Event::Routed {
            client: 0,
            tool: routed.into(),
            auth: AuthCtx(0),
            sent,
            approval: false,
        },
    ]
}

fn verdict(h: Vec<Event>, p: Property) -> Verdict {
    judge(&h).verdicts[&p]
}

#[test]
fn the_router_follows_the_published_list() {
    use Property::*;
    use Verdict::*;
    // Routing a listed tool, refusing an unlisted one: both agree.
    assert_eq!(verdict(history("a", true), ConsumersAgree), Holds);
    assert_eq!(verdict(history("k", false), ConsumersAgree), Holds);
    // Refusing a listed tool: the listing and the router disagree (two registries).
    assert_eq!(verdict(history("a", false), ConsumersAgree), Violated);
    assert_eq!(verdict(history("a", false), NoCallToRemoved), Holds);
    // Sending a call of a removed tool the list no longer shows (a preloaded tool that survived).
    assert_eq!(verdict(history("k", true), ConsumersAgree), Violated);
    assert_eq!(verdict(history("k", true), NoCallToRemoved), Violated);
}

#[test]
fn before_anything_is_published_the_router_is_not_judged() {
    let mut h = history("k", true);
    h.remove(2);
    assert_eq!(
        verdict(h, Property::ConsumersAgree),
        Verdict::Holds,
        "a preloaded tool may be called before the first list"
    );
}
