//! errors_not_changes: a failed call makes a client list again only when the error says the
//! tool is gone and its published list still shows it, and then only the tool list; any other
//! error starts no refresh. Judged from `CallFailed`: the kinds whose first page the client put
//! on the wire in reaction to the failure, against the error and the client's published tool
//! list.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::{AuthCtx, Kind, KindSet, Name};

/// `client`'s call of `tool` under `auth` failed; `gone`: the error says the tool is gone;
/// `relisted`: the kinds the client listed again in reaction.
pub(super) fn call_failed(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    (client, tool, auth): (ClientId, &Name, AuthCtx),
    gone: bool,
    relisted: KindSet,
) {
    let why = if let Some(k) = relisted.iter().find(|k| *k != Kind::Tools) {
        Some(format!(
            "c{client} listed {k} again because its call of {tool} failed"
        ))
    } else if relisted.is_empty() {
        None
    } else if !gone {
        Some(format!(
            "c{client} listed tools again because its call of {tool} failed with an error that is not a list change"
        ))
    } else if m.published_lists(client, tool, auth) == Some(false) {
        Some(format!(
            "c{client} listed tools again for its call of {tool}, which its snapshot already lacked"
        ))
    } else {
        None
    };
    if let Some(why) = why {
        m.flag(out, Property::ErrorsNotChanges, why);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;

    fn failed(gone: bool, relisted: KindSet) -> Event {
        Event::CallFailed {
            client: 0,
            tool: "a".into(),
            auth: AuthCtx(0),
            gone,
            relisted,
        }
    }

    #[test]
    fn only_a_gone_tool_the_list_still_shows_is_worth_a_relist() {
        let tools = KindSet::only(Kind::Tools);
        let h = |published: &[(&str, &str)], e| violated(&[v1(), publish(0, published), e]);
        let ab = [("a", "a1"), ("b", "b1")];
        // Gone and still listed: one re-list of tools is right; no re-list is fine too.
        assert_eq!(h(&ab, failed(true, tools)), []);
        assert_eq!(h(&ab, failed(true, KindSet::EMPTY)), []);
        assert_eq!(h(&ab, failed(false, KindSet::EMPTY)), []);
        // Another error, another kind, or a tool the list already lacks: no re-list.
        assert_eq!(h(&ab, failed(false, tools)), [Property::ErrorsNotChanges]);
        let prompts = KindSet::only(Kind::Prompts);
        assert_eq!(h(&ab, failed(true, prompts)), [Property::ErrorsNotChanges]);
        // (b alone is no committed list: a torn snapshot, whose contents are unknown.)
        let h = [v1(), v2(), publish(0, &[("b", "b1")]), failed(true, tools)];
        assert_eq!(violated(&h), [Property::NoTornSnapshot]);
        let lacked = [
            commit(1, &[crate::vocab::Op::add(Kind::Tools, "b", "b1")]),
            publish(0, &[("b", "b1")]),
            failed(true, tools),
        ];
        assert_eq!(violated(&lacked), [Property::ErrorsNotChanges]);
    }
}
