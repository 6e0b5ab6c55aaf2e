//! no_stale_overwrite: the catalog version behind a client's published list never goes
//! backwards. Judged from `Published`: the committed versions the new snapshot matches against
//! those the last untorn snapshot of the same list matched; a snapshot all of whose versions
//! are older than every version of the one it replaces overwrote newer data with stale data (an
//! older refresh finishing after a newer one). A torn snapshot is no_torn_snapshot's and leaves
//! the last untorn one in place.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Kind};

/// The list `key` was published again, matching the committed versions `matched`.
pub(super) fn published(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    key: (ClientId, Kind, AuthCtx),
    matched: Option<(u64, u64)>,
) {
    let Some((_, hi)) = matched else {
        return;
    };
    let state = Shared::make_mut(&mut m.keys).entry(key).or_default();
    let prev_good = state.last_good;
    state.last_good = matched;
    if let Some((plo, _)) = prev_good
        && hi < plo
    {
        let (client, kind, _) = key;
        m.flag(
            out,
            Property::NoStaleOverwrite,
            format!(
                "c{client} replaced its {kind} snapshot of v{plo} with an older one (at most v{hi})"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn stale_overwrite_is_caught() {
        let h = [
            v1(),
            v2(),
            publish(0, &[("a", "a1"), ("b", "b1"), ("c", "c1")]),
            publish(0, &[("a", "a1"), ("b", "b1")]),
        ];
        assert_eq!(violated(&h), [Property::NoStaleOverwrite]);
    }

    /// Newer after older is fine, and so is the same list again; another client's snapshot is
    /// not a predecessor; a torn snapshot in between does not hide the last untorn one.
    #[test]
    fn only_an_older_snapshot_of_the_same_list_is_stale() {
        let old = || publish(0, &[("a", "a1"), ("b", "b1")]);
        let new = || publish(0, &[("a", "a1"), ("b", "b1"), ("c", "c1")]);
        assert_eq!(violated(&[v1(), v2(), old(), new(), new()]), []);
        let other = publish(1, &[("a", "a1"), ("b", "b1")]);
        assert_eq!(violated(&[v1(), v2(), new(), other]), []);
        let torn = publish(0, &[("c", "c1")]);
        assert_eq!(
            violated(&[v1(), v2(), new(), torn, old()]),
            [Property::NoTornSnapshot, Property::NoStaleOverwrite]
        );
    }
}
