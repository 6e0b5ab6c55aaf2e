//! bounded_refresh: a burst of notifications during one refresh causes at most one further
//! refresh, and one committed batch at most one `list_changed` per list per client. Judged from
//! `RefreshStarted` (refreshes started inside an observation window: opened when a refresh
//! starts, closed by the first `Woken` after that refresh's `RefreshEnded`) and from `Notified`
//! (a second notification announcing the same version as the session's previous one).

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Kind, KindSet};

/// An observation window: opened when a refresh starts, closed by the first wake-up after
/// that refresh ends. Counts refreshes started inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(super) struct Window {
    pub(super) refresh: u32,
    pub(super) ended: bool,
    further: u8,
}

/// Client `client` was woken for `kinds`: the windows of those lists whose refresh ended close.
pub(super) fn woken(m: &mut Monitor, client: ClientId, kinds: KindSet) {
    let from = (client, Kind::ALL[0], AuthCtx(0));
    let ended = |((c, k, _), ws): (&(ClientId, Kind, AuthCtx), &Vec<Window>)| {
        *c == client && kinds.contains(*k) && ws.iter().any(|w| w.ended)
    };
    if m.windows.range(from..).any(ended) {
        for ((_, k, _), ws) in Shared::make_mut(&mut m.windows)
            .range_mut(from..)
            .take_while(|((c, _, _), _)| *c == client)
        {
            if kinds.contains(*k) {
                ws.retain(|w| !w.ended);
            }
        }
    }
}

/// Refresh `refresh` of the list `key` started: counted in every open window of the list, and
/// opens its own.
pub(super) fn refresh_started(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    key: (ClientId, Kind, AuthCtx),
    refresh: u32,
) {
    let ws = Shared::make_mut(&mut m.windows).entry(key).or_default();
    let mut over = None;
    for w in ws.iter_mut() {
        w.further = w.further.saturating_add(1);
        if w.further > 1 {
            over = Some(w.refresh);
        }
    }
    ws.push(Window {
        refresh,
        ended: false,
        further: 0,
    });
    if let Some(r) = over {
        let (client, kind, _) = key;
        m.flag(
            out,
            Property::BoundedRefresh,
            format!(
                "c{client} started a second further refresh of {kind} (r{refresh}) for the notifications that arrived during r{r}"
            ),
        );
    }
}

/// Refresh `refresh` of the list `key` ended: its window waits for the next wake-up.
pub(super) fn refresh_ended(m: &mut Monitor, key: (ClientId, Kind, AuthCtx), refresh: u32) {
    if m.windows.contains_key(&key)
        && let Some(ws) = Shared::make_mut(&mut m.windows).get_mut(&key)
    {
        for w in ws.iter_mut().filter(|w| w.refresh == refresh) {
            w.ended = true;
        }
    }
}

/// A second `list_changed` of `kind` announcing `announces` reached `client`, as its previous
/// one did.
pub(super) fn notified_again(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    kind: Kind,
    announces: u64,
) {
    m.flag(
        out,
        Property::BoundedRefresh,
        format!(
            "server sent c{client} a second {kind} list_changed for the same committed batch v{announces}"
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;

    #[test]
    fn bounded_refresh_counts_further_refreshes_per_burst() {
        // Single flight: a burst during r0 leads to exactly one more refresh.
        let good = [
            v1(),
            started(0, 0),
            wake(0),
            wake(0),
            wake(0),
            ended(0, 0),
            started(0, 1),
            ended(0, 1),
        ];
        assert_eq!(violated(&good), []);
        // One refresh per notification, concurrently.
        let naive = [
            v1(),
            wake(0),
            started(0, 0),
            wake(0),
            started(0, 1),
            wake(0),
            started(0, 2),
        ];
        assert_eq!(violated(&naive), [Property::BoundedRefresh]);
    }

    /// A window closes at the first wake-up after its refresh ended: later refreshes belong to
    /// later bursts.
    #[test]
    fn a_wake_up_after_the_refresh_ended_closes_its_window() {
        let sequential = [
            v1(),
            started(0, 0),
            ended(0, 0),
            wake(0),
            started(0, 1),
            ended(0, 1),
            wake(0),
            started(0, 2),
        ];
        assert_eq!(violated(&sequential), []);
        // Without the wake-ups, the window of r0 counts r1 and r2.
        let unclosed = [
            v1(),
            started(0, 0),
            ended(0, 0),
            started(0, 1),
            started(0, 2),
        ];
        assert_eq!(violated(&unclosed), [Property::BoundedRefresh]);
    }

    #[test]
    fn one_batch_is_announced_once() {
        let ok = notify(0, 2);
        assert_eq!(violated(&[v1(), v2(), ok.clone()]), []);
        assert_eq!(
            violated(&[v1(), v2(), ok.clone(), ok]),
            [Property::BoundedRefresh]
        );
        // Another client's notification of the same batch is its own.
        assert_eq!(violated(&[v1(), v2(), notify(0, 2), notify(1, 2)]), []);
    }
}
