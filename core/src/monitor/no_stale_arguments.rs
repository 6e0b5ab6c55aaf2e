//! no_stale_arguments: the server never runs a call whose arguments were built for an input
//! schema the tool no longer has: it checks them against the current definition at dispatch.
//! Judged from `RanStaleArguments`, which the observer records when the server ran a call
//! whose schema fingerprint (sent with the call) is not the current definition's.

use super::{Monitor, Violation};
use crate::history::ClientId;
use crate::property::Property;
use crate::vocab::Name;

/// The server ran `tool` for `client` with arguments built for another input schema.
pub(super) fn ran(m: &mut Monitor, out: &mut Vec<Violation>, client: ClientId, tool: &Name) {
    m.flag(
        out,
        Property::NoStaleArguments,
        format!(
            "server ran {tool} for c{client} with arguments built for an input schema it no longer has"
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::super::testing::*;
    use super::*;
    use crate::history::Event;

    #[test]
    fn a_run_on_stale_arguments_is_caught() {
        let ran = Event::RanStaleArguments {
            client: 0,
            tool: "a".into(),
        };
        assert_eq!(violated(&[v1(), ran]), [Property::NoStaleArguments]);
        let checked = Event::Dispatched {
            client: 0,
            tool: "a".into(),
            present: true,
        };
        assert_eq!(violated(&[v1(), checked]), []);
    }
}
