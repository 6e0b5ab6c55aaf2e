//! no_name_collision: an application connected to several servers shows every tool of every
//! server under a name of its own: a name it calls always reaches the same server's tool, that
//! tool is always called by the same name, and its combined listing holds every server's tools,
//! none hidden by another's. Judged from `CombinedListing` (how many tools the combined listing
//! shows against how many the servers' published lists hold) and from `CalledCombined` (which
//! connection and tool each call of a combined name reached on the wire).

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::shared::Shared;
use crate::vocab::Name;

/// After `client` published its tools, the combined listing showed `shown` of the `listed`
/// tools the published lists hold.
pub(super) fn combined_listing(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    shown: u32,
    listed: u32,
) {
    if shown != listed {
        m.flag(
            out,
            Property::NoNameCollision,
            format!(
                "after c{client} published its tools, the application's combined \
                 listing shows {shown} of the {listed} tools its servers' published \
                 lists hold: one name stands for tools of several servers"
            ),
        );
    }
}

/// The application's call of `name` reached `client`'s server as `tool`.
pub(super) fn called_combined(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    name: &Name,
    client: ClientId,
    tool: &Name,
) {
    let reached = (client, tool.clone());
    let other_name = m
        .combined
        .iter()
        .find(|(n, r)| *n != name && **r == reached)
        .map(|(n, _)| n.clone());
    match m.combined.get(name) {
        Some(first) if *first != reached => {
            let why = format!(
                "the application's call of {name} reached c{client}'s server as \
                 {tool}, where an earlier call of the same name reached c{}'s server \
                 as {}",
                first.0, first.1
            );
            m.flag(out, Property::NoNameCollision, why);
        }
        Some(_) => {}
        None => {
            Shared::make_mut(&mut m.combined).insert(name.clone(), reached);
        }
    }
    if let Some(other) = other_name {
        let why = format!(
            "c{client}'s server's {tool} was called as {name} after being called as \
             {other}: its name in the combined listing changed"
        );
        m.flag(out, Property::NoNameCollision, why);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;

    fn call(name: &str, client: ClientId, tool: &str) -> Event {
        Event::CalledCombined {
            name: name.into(),
            client,
            tool: tool.into(),
        }
    }

    #[test]
    fn a_combined_listing_hides_no_tool() {
        let listing = |shown| Event::CombinedListing {
            client: 0,
            shown,
            listed: 4,
        };
        assert_eq!(violated(&[v1(), listing(4)]), []);
        assert_eq!(violated(&[v1(), listing(3)]), [Property::NoNameCollision]);
    }

    #[test]
    fn a_name_reaches_one_tool_and_a_tool_has_one_name() {
        let ok = [
            call("s0_a", 0, "a"),
            call("s1_a", 1, "a"),
            call("s0_a", 0, "a"),
        ];
        assert_eq!(violated(&ok), []);
        // One name, two servers' tools.
        let moved = [call("a", 0, "a"), call("a", 1, "a")];
        assert_eq!(violated(&moved), [Property::NoNameCollision]);
        // One tool, two names.
        let renamed = [call("a", 0, "a"), call("s0_a", 0, "a")];
        assert_eq!(violated(&renamed), [Property::NoNameCollision]);
    }
}
