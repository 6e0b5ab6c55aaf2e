//! no_call_to_removed: the server never runs a tool absent from its registry, and a client
//! never routes a call to a tool that the server removed and its own published list no longer
//! has. Judged from `Dispatched` (the server's dispatch, with whether the tool was in its
//! registry) and from `Routed` (a call the client's router sent, against its published tool
//! list and the latest committed catalog).

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::{AuthCtx, Kind, Name};

/// The server ran `tool` for `client`; `present`: the tool was in its registry.
pub(super) fn dispatched(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    tool: &Name,
    present: bool,
) {
    if !present {
        m.flag(
            out,
            Property::NoCallToRemoved,
            format!("server ran {tool} for c{client} although it is not in its registry"),
        );
    }
}

/// `client`'s router sent (`sent`) or refused a call of `tool` under `auth`; `listed`: whether
/// its published tool list shows the tool (None: unknown).
pub(super) fn routed(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    (client, tool, auth): (ClientId, &Name, AuthCtx),
    sent: bool,
    listed: Option<bool>,
) {
    let removed = !m
        .latest_catalog()
        .and_then(|c| c.get(Kind::Tools, tool))
        .is_some_and(|e| e.scope.visible_to(auth));
    if sent && listed == Some(false) && removed {
        m.flag(
            out,
            Property::NoCallToRemoved,
            format!(
                "c{client} sent a call of {tool}, which the server does not have and its published list does not show"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;
    use crate::vocab::Op;

    #[test]
    fn the_server_runs_no_tool_it_does_not_have() {
        let call = |present| Event::Dispatched {
            client: 0,
            tool: "a".into(),
            present,
        };
        assert_eq!(violated(&[v1(), call(false)]), [Property::NoCallToRemoved]);
        assert_eq!(violated(&[v1(), call(true)]), []);
    }

    /// A client sends no call of a tool the server removed and its published list lacks; a
    /// refusal is fine, and so is a call its list shows (the server answers it).
    #[test]
    fn a_client_sends_no_call_of_a_removed_tool() {
        let only_b = commit(2, &[Op::add(Kind::Tools, "b", "b1")]);
        let h = |call: Event| violated(&[v1(), only_b.clone(), publish(0, &[("b", "b1")]), call]);
        // The router sent what the list does not show: consumers_agree's too.
        assert_eq!(
            h(route(0, "a", true, false)),
            [Property::NoCallToRemoved, Property::ConsumersAgree]
        );
        assert_eq!(h(route(0, "a", false, false)), []);
        // Listed at v1 still: the call follows the list (the server refuses it).
        let stale = [
            v1(),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            only_b,
            route(0, "a", true, false),
        ];
        assert_eq!(violated(&stale), []);
    }
}
