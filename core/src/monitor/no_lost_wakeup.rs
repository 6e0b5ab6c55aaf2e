//! no_lost_wakeup: a change committed after a client's last refresh of a list started is never
//! left unfetched once nothing is in flight. Judged from `Quiescent`, for a snapshot that does
//! not converge: the latest committed version against the version that was latest when the
//! client last started fetching the list (`RefreshStarted`, or `WalkRestarted`: a walk begun
//! again fetches the list as of then). A client that started after the last commit and still
//! diverges has another fault, converges' alone.

use super::Monitor;
use crate::history::ClientId;
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Kind};

/// Client `client` started a refresh of `kind` under `auth`.
pub(super) fn refresh_started(m: &mut Monitor, client: ClientId, kind: Kind, auth: AuthCtx) {
    let at = m.latest_version();
    Shared::make_mut(&mut m.keys)
        .entry((client, kind, auth))
        .or_default()
        .refresh_started_at = at;
}

/// Client `client` began the walk of refresh `refresh` of `kind` again, from the first page.
pub(super) fn walk_restarted(m: &mut Monitor, client: ClientId, kind: Kind, refresh: u32) {
    // A walk begun again lists afresh from the first page: the list is fetched as of now, as
    // when a refresh starts (the walk's context is its refresh's, read off bounded_refresh's
    // windows, which are open from a refresh's start).
    let from = (client, kind, AuthCtx(0));
    let auth = m
        .windows
        .range(from..)
        .take_while(|((c, k, _), _)| *c == client && *k == kind)
        .find(|(_, ws)| ws.iter().any(|w| w.refresh == refresh && !w.ended))
        .map(|((_, _, a), _)| *a);
    if let Some(auth) = auth {
        let at = m.latest_version();
        let key = (client, kind, auth);
        if m.keys.get(&key).is_none_or(|k| k.refresh_started_at != at) {
            Shared::make_mut(&mut m.keys)
                .entry(key)
                .or_default()
                .refresh_started_at = at;
        }
    }
}

/// Why the diverged snapshot `key` at rest lost a wakeup: the `latest` version was committed
/// after its last refresh started. None when the refresh started at the latest version.
pub(super) fn at_rest(m: &Monitor, key: (ClientId, Kind, AuthCtx), latest: u64) -> Option<String> {
    let (client, kind, _) = key;
    let started = m.keys.get(&key).and_then(|k| k.refresh_started_at);
    started.is_none_or(|s| s < latest).then(|| {
        format!(
            "v{latest} was committed after c{client}'s last {kind} refresh started{}, and was never fetched",
            started.map(|s| format!(" (at v{s})")).unwrap_or_default()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::{Event, Restart};
    use crate::property::Property;

    #[test]
    fn lost_wakeup_and_divergence_at_quiescence() {
        let h = [
            v1(),
            started(0, 0),
            v2(),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            ended(0, 0),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::Converges, Property::NoLostWakeup]);
        // Diverged, but the refresh started after the last commit: not a lost wakeup.
        let h = [
            v1(),
            v2(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::Converges]);
    }

    /// A walk begun again after the last commit fetched it: the client that still diverges
    /// did not lose a wakeup.
    #[test]
    fn a_walk_begun_again_fetches_as_of_then() {
        let restarted = Event::WalkRestarted {
            client: 0,
            kind: Kind::Tools,
            refresh: 0,
            reason: Restart::InvalidCursor,
        };
        let h = |restart: Vec<Event>| {
            let mut all = vec![v1(), started(0, 0), v2()];
            all.extend(restart);
            all.extend([publish(0, &[("a", "a1"), ("b", "b1")]), quiescent(0)]);
            violated(&all)
        };
        assert_eq!(h(vec![]), [Property::Converges, Property::NoLostWakeup]);
        assert_eq!(h(vec![restarted]), [Property::Converges]);
    }
}
