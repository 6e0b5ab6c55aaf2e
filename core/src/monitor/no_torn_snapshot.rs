//! no_torn_snapshot: every list a client publishes is the server's visible list (of that kind,
//! under the snapshot's authorization context) at one single committed version. Judged from
//! `Published`: the snapshot's digest against the digests of every committed version's visible
//! list. A list the server never showed at once (pages of two versions, an item missing, or an
//! empty list flashed while the server had items) is torn.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::{Item, Kind};

/// Client `client` published `items` of `kind`, which match the committed versions `matched`.
pub(super) fn published(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    kind: Kind,
    items: &[Item],
    matched: Option<(u64, u64)>,
) {
    if matched.is_none() {
        let names: Vec<_> = items
            .iter()
            .map(|i| format!("{}={}", i.name, i.def))
            .collect();
        m.flag(
            out,
            Property::NoTornSnapshot,
            format!(
                "c{client} published {kind} [{}], which is the server's {kind} list at no committed version",
                names.join(",")
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn torn_and_empty_flash_are_caught() {
        let torn = [v1(), v2(), publish(0, &[("a", "a1"), ("c", "c1")])];
        assert_eq!(violated(&torn), [Property::NoTornSnapshot]);
        let flash = [v1(), publish(0, &[])];
        assert_eq!(violated(&flash), [Property::NoTornSnapshot]);
    }

    #[test]
    fn a_list_of_any_committed_version_in_any_order_is_whole() {
        let old = [v1(), v2(), publish(0, &[("b", "b1"), ("a", "a1")])];
        assert_eq!(violated(&old), []);
        // A definition no version had is torn too.
        let redefined = [v1(), publish(0, &[("a", "a2"), ("b", "b1")])];
        assert_eq!(violated(&redefined), [Property::NoTornSnapshot]);
    }
}
