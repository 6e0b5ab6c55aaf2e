//! listen_then_list (2026-07-28): a client that opens `subscriptions/listen` lists again after
//! the acknowledgement, so that a change committed between its listen request and the
//! acknowledgement is not missed. Judged from `Quiescent`: a kind the acknowledged listen
//! covers (`ListenAcked`) that the client has not started listing since (`RefreshStarted`, or
//! a walk begun again: `WalkRestarted`).

use super::Monitor;
use crate::history::ClientId;
use crate::shared::Shared;
use crate::vocab::{Kind, KindSet};

/// `client`'s listen covering `kinds` was acknowledged.
pub(super) fn acked(m: &mut Monitor, client: ClientId, kinds: KindSet) {
    let e = Shared::make_mut(&mut m.acked_unlisted)
        .entry(client)
        .or_default();
    *e = kinds.iter().chain(e.iter()).collect();
}

/// `client` started listing `kind` (a refresh, or a walk begun again).
pub(super) fn listing(m: &mut Monitor, client: ClientId, kind: Kind) {
    if m.acked_unlisted
        .get(&client)
        .is_some_and(|a| a.contains(kind))
        && let Some(acked) = Shared::make_mut(&mut m.acked_unlisted).get_mut(&client)
    {
        *acked = acked.iter().filter(|k| *k != kind).collect();
    }
}

/// Why `client` at rest has not listed `kind` since its listen was acknowledged, or None.
pub(super) fn at_rest(m: &Monitor, client: ClientId, kind: Kind) -> Option<String> {
    m.acked_unlisted
        .get(&client)
        .is_some_and(|k| k.contains(kind))
        .then(|| format!("c{client} never listed {kind} after its listen was acknowledged"))
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use crate::history::Event;
    use crate::property::Property;
    use crate::vocab::{Kind, KindSet};

    #[test]
    fn a_client_lists_after_its_listen_is_acknowledged() {
        let ack = Event::ListenAcked {
            client: 0,
            kinds: KindSet::only(Kind::Tools),
        };
        let h = [
            v1(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            ack.clone(),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::ListenThenList]);
        let h = [
            v1(),
            ack.clone(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), []);
        // A listen of prompts asks nothing of the tool list.
        let prompts = Event::ListenAcked {
            client: 0,
            kinds: KindSet::only(Kind::Prompts),
        };
        let h = [
            v1(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            prompts,
            quiescent(0),
        ];
        assert_eq!(violated(&h), []);
    }
}
