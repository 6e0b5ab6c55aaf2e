//! auth_isolation: a list cached for one authorization context never holds an item visible
//! only to another. Judged from `Published`: each item of the snapshot against the scopes the
//! committed versions gave an item of that name (an item every version scoped away from the
//! snapshot's context is foreign), and, for an item no version holds, against the scope the
//! snapshot itself carries.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::{AuthCtx, Item, Kind, Name, Scope};
use std::sync::Arc;

/// The authorization contexts committed versions have shown one item to.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Seen {
    public: bool,
    only: [u64; 4],
}

impl Seen {
    fn add(&mut self, scope: Scope) {
        match scope {
            Scope::Public => self.public = true,
            Scope::Only(a) => self.only[usize::from(a.0 / 64)] |= 1 << (a.0 % 64),
        }
    }

    fn visible_to(&self, auth: AuthCtx) -> bool {
        self.public || self.only[usize::from(auth.0 / 64)] & (1 << (auth.0 % 64)) != 0
    }
}

/// Client `client` published `items` as its list `key`.
pub(super) fn published(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    key: (ClientId, Kind, AuthCtx),
    items: &[Item],
) {
    let (client, kind, auth) = key;
    for item in items {
        let (seen, visible) = seen(m, kind, &item.name, auth);
        if seen && !visible {
            m.flag(
                out,
                Property::AuthIsolation,
                format!(
                    "c{client} cached {kind} item {} for {auth}, but it is visible only to another context",
                    item.name
                ),
            );
        }
        if item.scope != Scope::Public && !item.scope.visible_to(auth) && !seen {
            m.flag(
                out,
                Property::AuthIsolation,
                format!(
                    "c{client} cached {kind} item {} scoped to another context under {auth}",
                    item.name
                ),
            );
        }
    }
}

/// Whether any committed version holds `kind` item `name`, and whether any shows it to
/// `auth`.
fn seen(m: &mut Monitor, kind: Kind, name: &Name, auth: AuthCtx) -> (bool, bool) {
    while m.scopes_folded < m.commits.len() {
        let c = &m.commits[m.scopes_folded].1;
        let scopes = Arc::make_mut(&mut m.scopes);
        for ((k, n), e) in &c.items {
            scopes.entry((*k, n.clone())).or_default().add(e.scope);
        }
        m.scopes_folded += 1;
    }
    match m.scopes.get(&(kind, name.clone())) {
        Some(s) => (true, s.visible_to(auth)),
        None => (false, false),
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;
    use crate::vocab::{Catalog, Op};

    fn cached(auth: u8, items: Vec<Item>) -> Event {
        Event::Published {
            client: 0,
            kind: Kind::Tools,
            auth: AuthCtx(auth),
            items: items.into(),
            version: None,
        }
    }

    #[test]
    fn auth_isolation_rejects_foreign_items() {
        let c = commit(1, &[Op::add(Kind::Tools, "a", "a1"), scoped("s", "s1", 1)]);
        let leak = cached(0, vec![Item::new("a", "a1"), Item::new("s", "s1")]);
        let v = violated(&[c.clone(), leak]);
        assert!(v.contains(&Property::AuthIsolation), "{v:?}");
        // The context it is scoped to may cache it.
        let own = Catalog::from_ops(&[Op::add(Kind::Tools, "a", "a1"), scoped("s", "s1", 1)])
            .visible(Kind::Tools, AuthCtx(1));
        assert_eq!(violated(&[c, cached(1, own)]), []);
    }

    /// An item no version ever held is judged by the scope it carries.
    #[test]
    fn an_unknown_item_scoped_elsewhere_is_foreign() {
        let c = commit(1, &[Op::add(Kind::Tools, "a", "a1")]);
        let mut x = Item::new("x", "x1");
        x.scope = Scope::Only(AuthCtx(1));
        let v = violated(&[c.clone(), cached(0, vec![Item::new("a", "a1"), x])]);
        assert!(v.contains(&Property::AuthIsolation), "{v:?}");
        let v = violated(&[
            c,
            cached(0, vec![Item::new("a", "a1"), Item::new("x", "x1")]),
        ]);
        assert!(!v.contains(&Property::AuthIsolation), "{v:?}");
    }
}
