//! What the monitor knows of the server: the committed versions in the order the history
//! committed them, and the index derived from them that every snapshot is matched against (which
//! committed versions show a given list of one kind under one authorization context).

use super::{Monitor, Violation};
use crate::property::Property;
use crate::server::visible_entries;
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Catalog, Digest, Fnv, Kind};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

/// Digests of the committed versions' visible lists of one (kind, auth), folded so far.
#[derive(Clone, Debug, Default)]
pub(super) struct Matches {
    /// Commits folded.
    pub(super) folded: usize,
    /// Digest → (first, last) committed version with that visible list.
    ranges: FastMap<Digest, (u64, u64)>,
    /// The digest of the last commit folded.
    pub(super) last: Option<Digest>,
}

/// The monitor's derived indexes are only looked up, never iterated, and are rebuilt from the
/// commits: a fast hasher with fixed keys (ahash) instead of the default SipHash.
pub(super) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<ahash::AHasher>>;

/// The digest of the list a request of `kind` under `auth` sees in `c`: what
/// `Digest::of(&c.visible(kind, auth))` gives, hashed in place (the visible list is in name order,
/// the order `Digest::of` sorts items into, and names are unique within a kind).
pub(crate) fn visible_digest(c: &Catalog, kind: Kind, auth: AuthCtx) -> Digest {
    let mut h = Fnv::default();
    visible_entries(c, kind, auth).count().hash(&mut h);
    for (name, e) in visible_entries(c, kind, auth) {
        // An `Item`'s hash: its fields in order.
        name.hash(&mut h);
        e.def.hash(&mut h);
        e.scope.hash(&mut h);
    }
    Digest(h.finish())
}

impl Monitor {
    /// Folds a commit of `catalog` as `version`.
    pub(super) fn commit(
        &mut self,
        out: &mut Vec<Violation>,
        version: u64,
        catalog: &Arc<Catalog>,
    ) {
        if let Some((last, _)) = self.commits.last()
            && version <= *last
        {
            // A history that commits versions out of order is malformed input to the
            // checker, not a property violation; record it without panicking.
            self.flag(
                out,
                Property::NoStaleOverwrite,
                format!("history commits v{version} after v{last}: versions must increase"),
            );
        } else {
            Shared::make_mut(&mut self.commits).push((version, Shared::from_arc(catalog.clone())));
        }
    }

    /// The range of committed versions whose visible list (for `kind` under `auth`) has digest
    /// `digest`.
    pub(super) fn matching(
        &mut self,
        kind: Kind,
        auth: AuthCtx,
        digest: Digest,
    ) -> Option<(u64, u64)> {
        // Shared with the monitor's copies until a new commit is folded in.
        let folded = self.memo.get(&(kind, auth)).map_or(0, |m| m.folded);
        if folded < self.commits.len() {
            let m = Arc::make_mut(&mut self.memo)
                .entry((kind, auth))
                .or_default();
            while m.folded < self.commits.len() {
                let (v, c) = &self.commits[m.folded];
                let d = visible_digest(c, kind, auth);
                m.ranges.entry(d).or_insert((*v, *v)).1 = *v;
                m.last = Some(d);
                m.folded += 1;
            }
        }
        self.memo
            .get(&(kind, auth))
            .and_then(|m| m.ranges.get(&digest).copied())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::vocab::{Item, Op};

    /// The digest of a visible list hashed in place is the digest of the list `Catalog::visible`
    /// copies out, for every kind and context, scoped items and templates included.
    #[test]
    fn a_visible_list_digests_in_place_as_copied() {
        let ops = [
            Op::add(Kind::Tools, "b", "b1"),
            Op::add(Kind::Tools, "a", "a1"),
            scoped("s", "s1", 1),
            scoped("t", "t2", 2),
            Op::add(Kind::Prompts, "p", "p1"),
            Op::add(Kind::ResourceTemplates, "r/{x}", "r1"),
            Op::add(Kind::Resources, "file:///a", "f1"),
        ];
        for n in 0..=ops.len() {
            let c = Catalog::from_ops(&ops[..n]);
            for kind in Kind::ALL {
                for auth in [AuthCtx(0), AuthCtx(1), AuthCtx(2)] {
                    assert_eq!(
                        visible_digest(&c, kind, auth),
                        Digest::of(&c.visible(kind, auth)),
                        "{n} ops, {kind} under {auth}"
                    );
                }
            }
        }
        // Not a constant: another list, another digest.
        let c = Catalog::from_ops(&ops);
        assert_ne!(
            visible_digest(&c, Kind::Tools, AuthCtx(1)),
            visible_digest(&c, Kind::Tools, AuthCtx(2))
        );
    }

    /// A list is matched to the range of committed versions that show it, the latest included;
    /// a list no version shows matches nothing.
    #[test]
    fn a_list_matches_the_versions_that_show_it() {
        let a = Op::add(Kind::Tools, "a", "a1");
        let b = Op::add(Kind::Tools, "b", "b1");
        let mut m = Monitor::new();
        for e in [
            commit(1, std::slice::from_ref(&a)),
            commit(2, std::slice::from_ref(&a)),
            commit(3, &[a.clone(), b.clone()]),
            commit(4, std::slice::from_ref(&a)),
        ] {
            m.observe(&e);
        }
        let only_a = [Item::new("a", "a1")];
        let both = [Item::new("b", "b1"), Item::new("a", "a1")];
        let tools = |m: &mut Monitor, items: &[Item]| {
            m.matching(Kind::Tools, AuthCtx(0), Digest::of(items))
        };
        assert_eq!(tools(&mut m, &only_a), Some((1, 4)));
        assert_eq!(tools(&mut m, &both), Some((3, 3)));
        assert_eq!(tools(&mut m, &[Item::new("b", "b1")]), None);
        assert_eq!(m.latest_version_of(Kind::Tools, AuthCtx(0), &both), Some(3));
        // Folded again after a later commit.
        m.observe(&commit(5, &[a, b]));
        assert_eq!(tools(&mut m, &both), Some((3, 5)));
        // Versions out of order are malformed: flagged, not folded.
        let v = m.observe(&commit(5, &[]));
        assert_eq!(v.len(), 1);
        assert_eq!(m.latest_version(), Some(5));
        assert!(m.violated(Property::NoStaleOverwrite));
    }
}
