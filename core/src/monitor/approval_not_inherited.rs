//! approval_not_inherited: a client whose application asks the user to approve tools with side
//! effects sends a call of such a tool only under the user's approval of exactly the definition
//! its published list shows, and not while it has been told the tool list changed and has not
//! listed it again since. Judged from `Routed` (a call sent under the approval rule), against
//! the approvals recorded by `Approved` (the definition the published list showed then) and
//! whether the tool list is unsettled: told of a change by `NoticeReceived`, settled again when
//! a refresh of it started after the notice ends other than failed. A tool whose published
//! definition declares itself read-only needs neither.

use super::{Monitor, Violation};
use crate::history::{ClientId, Event, Unsettled};
use crate::property::Property;
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Kind, Name, declares_read_only, fingerprint};

/// Follows the refreshes that settle an unsettled tool list (every event goes through here
/// first).
pub(super) fn settle(m: &mut Monitor, e: &Event) {
    if let Event::RefreshStarted { client, .. }
    | Event::WalkRestarted { client, .. }
    | Event::RefreshEnded { client, .. } = e
        && let Some(u) = m.unsettled.get(client).copied()
    {
        match Unsettled::after(Some(u), e) {
            Some(u) => Shared::make_mut(&mut m.unsettled).insert(*client, u),
            None => Shared::make_mut(&mut m.unsettled).remove(client),
        };
    }
}

/// `client` received a `list_changed` of `kind`'s group: its tool list is unsettled if the
/// group covers tools.
pub(super) fn notice_received(m: &mut Monitor, client: ClientId, kind: Kind) {
    if kind.notification_group().contains(&Kind::Tools) {
        Shared::make_mut(&mut m.unsettled).insert(client, Unsettled::Told);
    }
}

/// The user approved `tool` for `client`: the definition its published list under `auth`
/// shows is approved.
pub(super) fn approved(m: &mut Monitor, client: ClientId, tool: &Name, auth: AuthCtx) {
    if let Some(Some(entry)) = m.published_entry(client, tool, auth) {
        let fp = fingerprint(&entry.def);
        let approval = (client, tool.clone(), fp);
        if !m.approvals.contains(&approval) {
            Shared::make_mut(&mut m.approvals).insert(approval);
        }
    }
}

/// `call` (client, tool, context) went out under the approval rule.
pub(super) fn routed(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    (client, tool, auth): (ClientId, &Name, AuthCtx),
) {
    if let Some(why) = breach(m, client, tool, auth) {
        m.flag(out, Property::ApprovalNotInherited, why);
    }
}

/// Why client `c`'s call of `tool` under `auth`, which went out, breaks the rule, or None. A
/// tool whose published definition declares itself read-only needs nothing; any other call
/// needs the tool list settled and, where the published definition is known, the user's
/// approval of exactly it.
fn breach(m: &Monitor, c: ClientId, tool: &Name, auth: AuthCtx) -> Option<String> {
    let entry = m.published_entry(c, tool, auth);
    if let Some(Some(e)) = entry
        && declares_read_only(&e.def)
    {
        return None;
    }
    if m.unsettled.contains_key(&c) {
        return Some(format!(
            "c{c} sent a call of {tool}, which may have side effects, while told its tool list changed and before listing it again"
        ));
    }
    let Some(Some(e)) = entry else {
        return None;
    };
    let fp = fingerprint(&e.def);
    (!m.approvals.contains(&(c, tool.clone(), fp))).then(|| {
        format!(
            "c{c} sent a call of {tool} (definition {}) under no approval of that definition",
            e.def
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    fn approve(tool: &str) -> Event {
        Event::Approved {
            client: 0,
            tool: tool.into(),
            auth: AuthCtx(0),
        }
    }

    fn told() -> Event {
        Event::NoticeReceived {
            client: 0,
            kind: Kind::Tools,
        }
    }

    fn listed_at_v1() -> Vec<Event> {
        vec![v1(), publish(0, &[("a", "a1"), ("b", "b1")])]
    }

    #[test]
    fn a_call_goes_out_only_under_approval_of_the_definition_shown() {
        let h = |events: &[Event]| {
            let mut all = listed_at_v1();
            all.extend_from_slice(events);
            violated(&all)
        };
        let call = route(0, "a", true, true);
        assert_eq!(h(&[approve("a"), call.clone()]), []);
        assert_eq!(
            h(std::slice::from_ref(&call)),
            [Property::ApprovalNotInherited]
        );
        assert_eq!(
            h(&[approve("b"), call.clone()]),
            [Property::ApprovalNotInherited]
        );
        // Approved as a1; the list now shows a2: the approval is not inherited.
        let a2 = commit(
            2,
            &[
                crate::vocab::Op::add(Kind::Tools, "a", "a2"),
                crate::vocab::Op::add(Kind::Tools, "b", "b1"),
            ],
        );
        assert_eq!(
            h(&[
                approve("a"),
                a2,
                publish(0, &[("a", "a2"), ("b", "b1")]),
                call.clone()
            ]),
            [Property::ApprovalNotInherited]
        );
        // A call outside the rule (no approval asked) is not judged.
        assert_eq!(h(&[route(0, "a", true, false)]), []);
    }

    /// A tool whose published definition declares itself read-only needs no approval, even
    /// while the tool list is unsettled.
    #[test]
    fn a_read_only_tool_needs_no_approval() {
        let ro = r#"{"annotations":{"readOnlyHint":true}}"#;
        let h = [
            commit(1, &[crate::vocab::Op::add(Kind::Tools, "r", ro)]),
            publish(0, &[("r", ro)]),
            told(),
            route(0, "r", true, true),
        ];
        assert_eq!(violated(&h), []);
    }

    /// Told of a change, a client sends no call needing approval until a refresh started after
    /// the notice has ended.
    #[test]
    fn no_call_while_the_tool_list_is_unsettled() {
        let h = |events: &[Event]| {
            let mut all = listed_at_v1();
            all.push(approve("a"));
            all.extend_from_slice(events);
            violated(&all)
        };
        let call = route(0, "a", true, true);
        assert_eq!(h(&[told(), call.clone()]), [Property::ApprovalNotInherited]);
        assert_eq!(
            h(&[told(), started(0, 0), call.clone()]),
            [Property::ApprovalNotInherited]
        );
        assert_eq!(h(&[told(), started(0, 0), ended(0, 0), call.clone()]), []);
        // Another group's notice does not unsettle tools.
        let prompts = Event::NoticeReceived {
            client: 0,
            kind: Kind::Prompts,
        };
        assert_eq!(h(&[prompts, call]), []);
    }
}
