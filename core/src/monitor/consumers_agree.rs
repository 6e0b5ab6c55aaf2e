//! consumers_agree: every consumer of a client reads the one published list: the call router
//! sends a call exactly when the application's listing (the published tool list) shows the
//! tool. Judged from `Routed`: the router's decision against the client's last published tool
//! list under the call's context, read off the committed version it matched (not judged while
//! that list is unknown: nothing published, or torn).

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::{AuthCtx, Name};

/// `client`'s router sent (`sent`) or refused a call of `tool`; `listed`: whether its published
/// tool list shows the tool (None: unknown).
pub(super) fn routed(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    (client, tool, _): (ClientId, &Name, AuthCtx),
    sent: bool,
    listed: Option<bool>,
) {
    if let Some(listed) = listed
        && listed != sent
    {
        m.flag(
            out,
            Property::ConsumersAgree,
            format!(
                "c{client}'s router {} a call of {tool}, which its published tools list {}",
                if sent { "sent" } else { "refused" },
                if listed { "shows" } else { "does not show" }
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn the_router_follows_the_published_list() {
        let h = |call| violated(&[v1(), publish(0, &[("a", "a1"), ("b", "b1")]), call]);
        assert_eq!(h(route(0, "a", true, false)), []);
        assert_eq!(h(route(0, "c", false, false)), []);
        assert_eq!(h(route(0, "a", false, false)), [Property::ConsumersAgree]);
        // Sent for a tool the list lacks (the server still has it: not a removed tool).
        let sent = [
            v1(),
            v2(),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            route(0, "c", true, false),
        ];
        assert_eq!(violated(&sent), [Property::ConsumersAgree]);
        // Nothing published: nothing to agree with.
        assert_eq!(violated(&[v1(), route(0, "a", false, false)]), []);
    }
}
