//! no_spurious_notify: no `list_changed` reaches a session unless the list it announces differs,
//! for some authorization context the session has listed under, from what the session last knew.
//! Judged from `Notified` (a notification announcing a version other than the session's
//! previous one of that group; a repeat is bounded_refresh's), against what `Served` (the
//! version each list page was served at, per context) and the previous notification say the
//! session knew. `Connected` starts a session that has listed nothing.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::server::{MAX_SESSION_CONTEXTS, changed_kinds, visible_entries};
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Kind};
use std::collections::BTreeSet;

/// A page of `kind` under `auth` was served to `client` at `version`.
pub(super) fn served(m: &mut Monitor, client: ClientId, kind: Kind, auth: AuthCtx, version: u64) {
    if m.listed.get(&(client, kind, auth)) != Some(&version) {
        Shared::make_mut(&mut m.listed).insert((client, kind, auth), version);
    }
}

/// `client` opened a new session: it has listed nothing.
pub(super) fn connected(m: &mut Monitor, client: ClientId) {
    if m.listed.keys().any(|(c, _, _)| *c == client) {
        Shared::make_mut(&mut m.listed).retain(|(c, _, _), _| *c != client);
    }
}

/// A `list_changed` of notification group `group` announcing `announces` reached `client`,
/// whose previous one announced `prev` (not `announces`).
pub(super) fn notified(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    group: Kind,
    prev: Option<u64>,
    announces: u64,
) {
    if let Some(detail) = spurious(m, client, group, prev, announces) {
        m.flag(out, Property::NoSpuriousNotify, detail);
    }
}

/// Why a `list_changed` of notification group `group` to `client` that announces `announces`
/// (not what its previous one announced: a repeat is bounded_refresh's to judge) is spurious,
/// or `None` if some list it covers changed since the session last knew it. The session knew
/// each list it was last served before that version (at the version the observer dated the
/// page) and what its previous notification of the group (`prev`) announced, whichever is
/// newer; a session that has listed nothing yet knew the whole group as of its previous
/// notification. Where the history says too little (no earlier version to compare with, a
/// version it never committed, more contexts than a server keeps per session) the
/// notification is given the benefit of the doubt.
fn spurious(
    m: &Monitor,
    client: ClientId,
    group: Kind,
    prev: Option<u64>,
    announces: u64,
) -> Option<String> {
    let kinds = group.notification_group();
    let now = m.catalog_at(announces)?;
    let contexts: BTreeSet<AuthCtx> = m
        .listed
        .range((client, Kind::ALL[0], AuthCtx(0))..)
        .take_while(|((c, _, _), _)| *c == client)
        .map(|((_, _, a), _)| *a)
        .collect();
    if contexts.len() > MAX_SESSION_CONTEXTS {
        return None;
    }
    if contexts.is_empty() {
        let then = m.catalog_at(prev?)?;
        return (!changed_kinds(then, now).contains(group)).then(|| {
            format!(
                "c{client} was sent a {group} list_changed announcing v{announces}, but no {group} item changed since v{} (its previous one)",
                prev.unwrap_or_default()
            )
        });
    }
    for auth in &contexts {
        for k in kinds {
            // A page served at the announced version itself says nothing: the notification
            // may have been produced at the commit and handed over after the page (rt hands
            // notifications to transports asynchronously).
            let listed = m
                .listed
                .get(&(client, *k, *auth))
                .filter(|v| **v < announces);
            let base = match (listed, prev) {
                (Some(l), Some(p)) => (*l).max(p),
                (Some(l), None) => *l,
                (None, Some(p)) => p,
                (None, None) => return None,
            };
            let then = m.catalog_at(base)?;
            if !visible_entries(then, *k, *auth).eq(visible_entries(now, *k, *auth)) {
                return None;
            }
        }
    }
    let names: Vec<String> = contexts.iter().map(ToString::to_string).collect();
    Some(format!(
        "c{client} was sent a {group} list_changed announcing v{announces}, but its {group} list under {} is what it last knew",
        names.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;
    use crate::vocab::Op;

    #[test]
    fn a_notification_that_changes_nothing_the_session_listed_is_spurious() {
        let a = Op::add(Kind::Tools, "a", "a1");
        // v2 adds s for auth1 only; v3 adds public b.
        let h = |events: &[Event]| {
            let mut all = vec![
                commit(1, std::slice::from_ref(&a)),
                commit(2, &[a.clone(), scoped("s", "s1", 1)]),
                commit(
                    3,
                    &[
                        a.clone(),
                        scoped("s", "s1", 1),
                        Op::add(Kind::Tools, "b", "b1"),
                    ],
                ),
            ];
            all.extend_from_slice(events);
            violated(&all)
        };
        // Listed under auth0 at v1: v2 changes nothing it sees, v3 does.
        assert_eq!(
            h(&[serve(0, 0, 1), notify(0, 2)]),
            [Property::NoSpuriousNotify]
        );
        assert_eq!(h(&[serve(0, 0, 1), notify(0, 3)]), []);
        // Also listed under auth1: v2 is news.
        assert_eq!(h(&[serve(0, 0, 1), serve(0, 1, 1), notify(0, 2)]), []);
        // A notification of the version the session was last served at cannot be told from
        // one produced at that commit and handed over after the page: not judged.
        assert_eq!(h(&[serve(0, 0, 3), notify(0, 3)]), []);
        // Listed nothing: compared over every context with its previous notification; the
        // first one has nothing to compare with.
        assert_eq!(h(&[notify(0, 1), notify(0, 2)]), []);
        // A repeat of the same version is bounded_refresh's, not this property's.
        assert_eq!(
            h(&[serve(0, 0, 2), notify(0, 3), notify(0, 3)]),
            [Property::BoundedRefresh]
        );
        // A new session has listed nothing yet.
        assert_eq!(
            h(&[serve(0, 0, 1), Event::Connected { client: 0 }, notify(0, 2)]),
            []
        );
    }

    /// A session that listed nothing is judged over the whole group, from its previous
    /// notification: no item of the group changed in between is spurious.
    #[test]
    fn a_session_that_listed_nothing_is_judged_from_its_previous_notification() {
        let a = Op::add(Kind::Tools, "a", "a1");
        let p = Op::add(Kind::Prompts, "p", "p1");
        let h = [
            commit(1, std::slice::from_ref(&a)),
            commit(2, &[a.clone(), p]),
            commit(3, &[a, Op::add(Kind::Tools, "b", "b1")]),
        ];
        let mut quiet = h.to_vec();
        quiet.extend([notify(0, 1), notify(0, 2)]);
        assert_eq!(violated(&quiet), [Property::NoSpuriousNotify]);
        let mut news = h.to_vec();
        news.extend([notify(0, 1), notify(0, 3)]);
        assert_eq!(violated(&news), []);
    }

    /// What a session knew of a list under a context is the newer of its last page of it and its
    /// last notification: a change that came and went while the session did not list under that
    /// context is news once it has.
    #[test]
    fn a_context_listed_later_is_judged_from_when_it_was_listed() {
        let a = Op::add(Kind::Tools, "a", "a1");
        let h = [
            commit(1, &[a.clone(), scoped("s", "s1", 1)]),
            serve(0, 0, 1),
            commit(2, std::slice::from_ref(&a)),
            serve(0, 1, 2),
            commit(3, &[a.clone(), scoped("s", "s1", 1)]),
            notify(0, 3),
        ];
        assert_eq!(violated(&h), []);
    }
}
