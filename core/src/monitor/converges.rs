//! converges: once nothing is in flight, every client's list equals the server's current
//! visible list. Judged from `Quiescent` (the world at rest names the snapshots it expects):
//! each expected snapshot's digest, as last published, against the digest of the latest
//! committed version's visible list of that kind under that context.

use super::Monitor;
use super::commits::visible_digest;
use crate::history::ClientId;
use crate::vocab::{AuthCtx, Catalog, Kind};

/// Why the snapshot `key` differs at rest from the `latest` committed version (`catalog`), or
/// None when it is that version's list.
pub(super) fn at_rest(
    m: &Monitor,
    key: (ClientId, Kind, AuthCtx),
    latest: u64,
    catalog: &Catalog,
) -> Option<String> {
    let (client, kind, auth) = key;
    // Folded already when a snapshot of it was matched since the last commit.
    let want = m
        .memo
        .get(&(kind, auth))
        .filter(|x| x.folded == m.commits.len())
        .and_then(|x| x.last)
        .unwrap_or_else(|| visible_digest(catalog, kind, auth));
    let have = m.keys.get(&key).and_then(|k| k.last).map(|(d, _)| d);
    (have != Some(want)).then(|| {
        format!("at quiescence c{client}'s {kind} snapshot differs from the server's v{latest}")
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::property::Property;

    #[test]
    fn a_snapshot_behind_at_rest_does_not_converge() {
        // The refresh started after the last commit (not a lost wakeup), yet published v1's.
        let h = [
            v1(),
            v2(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::Converges]);
        // In any order, the latest version's list converges.
        let h = [
            v1(),
            v2(),
            started(0, 0),
            publish(0, &[("c", "c1"), ("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), []);
        // A client that never published has not converged either; nothing committed, nothing
        // to converge to.
        assert_eq!(
            violated(&[v1(), started(0, 0), quiescent(0)]),
            [Property::Converges]
        );
        assert_eq!(violated(&[started(0, 0), quiescent(0)]), []);
    }
}
