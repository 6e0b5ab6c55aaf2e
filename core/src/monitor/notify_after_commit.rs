//! notify_after_commit: no `list_changed` is sent before the change it announces is visible to
//! a list request. Judged from `Notified`: the version the notification announces against the
//! version a list request of the session would see when it was sent (both dated by the
//! observer).

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::Kind;

/// A `list_changed` of `kind` announcing `announces` was sent to `client` while list requests
/// saw `visible`.
pub(super) fn notified(
    m: &mut Monitor,
    out: &mut Vec<Violation>,
    client: ClientId,
    kind: Kind,
    announces: u64,
    visible: u64,
) {
    if announces > visible {
        m.flag(
            out,
            Property::NotifyAfterCommit,
            format!(
                "{kind} list_changed to c{client} announces v{announces} while list requests still see v{visible}"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;

    #[test]
    fn a_notification_ahead_of_what_lists_see_is_early() {
        let sent = |visible| Event::Notified {
            client: 0,
            kind: Kind::Tools,
            announces: 2,
            visible,
        };
        assert_eq!(violated(&[v1(), sent(1)]), [Property::NotifyAfterCommit]);
        assert_eq!(violated(&[v1(), v2(), sent(2)]), []);
    }
}
