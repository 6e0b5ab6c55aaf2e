//! Situations: named interleavings a configuration must reach for its verdicts to mean
//! something. A property that holds because its race never happens proves nothing, so each
//! configuration lists the situations its exploration must reach (`docs/design.md`,
//! "Situations"), and the checker counts how often and how early each is reached and fails a
//! configuration whose situation stays unreached. The simulator counts them across seeds.
//!
//! A situation is a predicate on one state of the world: messages in flight, what a client is
//! doing, what the administrator has committed. Each names the race it stands for.

use crate::history::ClientId;
use crate::machine::ClientMachine;
use crate::scenario::{Scenario, Transport};
use crate::shared::Shared;
use crate::vocab::Kind;
use crate::wire::{ErrorReason, Notification, Request, Response, ServerMsg};
use crate::world::{Links, World};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A named interleaving.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Situation {
    /// A `list_changed` is on its way to a client while a refresh of that list is running
    /// (its request or response in flight): the notification may arrive mid-refresh.
    #[serde(rename = "notify_during_refresh")]
    NotifyDuringRefresh,
    /// A `list_changed` is on its way to a client that already holds at least one page of an
    /// unfinished walk of that list: the pages in hand may predate the change.
    #[serde(rename = "notify_mid_walk")]
    NotifyMidWalk,
    /// Two or more `list_changed` of one list are on their way to a client while it refreshes
    /// that list: a burst during one refresh (what `bounded_refresh` is about).
    #[serde(rename = "burst_during_refresh")]
    BurstDuringRefresh,
    /// Two list responses are on their way to one client over a link that does not keep their
    /// order: the later-served one may arrive first.
    #[serde(rename = "response_overtakes_response")]
    ResponseOvertakesResponse,
    /// A `tools/call` is on its way to the server for a tool the administrator has removed.
    #[serde(rename = "call_in_flight_during_removal")]
    CallInFlightDuringRemoval,
    /// The server's refusal of a cursor (-32602) is on its way to a client: the list changed
    /// under a walk, or the walk moved to another node.
    #[serde(rename = "cursor_refused_after_change")]
    CursorRefusedAfterChange,
    /// A client runs a refresh under an authorization context it has since switched away from.
    #[serde(rename = "auth_switch_during_refresh")]
    AuthSwitchDuringRefresh,
    /// (cluster) A node serves an older version than the store while one of its clients has a
    /// list request on its way to it.
    #[serde(rename = "node_behind_store")]
    NodeBehindStore,
    /// (2026-07-28) A change is announced on a listen stream whose acknowledgement has not been
    /// delivered yet: a client that listed before the ack would miss it.
    #[serde(rename = "change_while_ack_in_flight")]
    ChangeWhileAckInFlight,
    /// (2026-07-28) A client's cached list is out of date with its `ttlMs` run out, and nothing
    /// else will bring it up to date (a notification was lost).
    #[serde(rename = "ttl_expiry_refetch")]
    TtlExpiryRefetch,
    /// A resource's content change (`resources/updated`) is on its way to a subscriber.
    #[serde(rename = "content_update_in_flight")]
    ContentUpdateInFlight,
    /// The network has duplicated a `list_changed` that is still on its way to a client.
    #[serde(rename = "duplicate_notification_in_flight")]
    DuplicateNotificationInFlight,
    /// A client's connection is cut while the administrator's changes are still to come or
    /// unseen: it must reconnect and list again.
    #[serde(rename = "cut_with_change_pending")]
    CutWithChangePending,
    /// The server's "unknown tool" refusal of a call is on its way to a client whose snapshot
    /// still lists a tool the administrator has removed (a response does not name its tool): the
    /// error is news of a removal, worth one re-list.
    #[serde(rename = "call_refused_as_gone")]
    CallRefusedAsGone,
    /// An error that is not a list change (an internal error) answering a tool call is on its
    /// way to a client: it must not start a refresh.
    #[serde(rename = "call_failed_otherwise")]
    CallFailedOtherwise,
    /// A client's list request failed with an error that is not a list change, and its retry
    /// timer is armed: the refresh must resume after the back-off.
    #[serde(rename = "retry_after_list_error")]
    RetryArmed,
    /// A client's published tool list shows a tool the user approved with a definition other
    /// than the approved one (changed, or a new tool under a removed one's name): a call now
    /// would run what the user never approved.
    #[serde(rename = "approved_definition_changed")]
    ApprovedDefinitionChanged,
    /// A client holds an application's call of a tool with side effects, waiting for its tool
    /// list to settle after a change was announced.
    #[serde(rename = "call_waits_for_settle")]
    CallWaitsForSettle,
    /// A `tools/call` is on its way to the server with arguments built for an input schema the
    /// tool (still present) no longer has: the schema-change race.
    #[serde(rename = "call_in_flight_during_schema_change")]
    CallInFlightDuringSchemaChange,
    /// (several servers) Two clients of one application have published a tool of the same
    /// name: the collision the application's prefixes must keep apart.
    #[serde(rename = "one_name_two_servers")]
    OneNameTwoServers,
}

impl Situation {
    /// Every situation, in report order.
    pub const ALL: [Situation; 20] = [
        Situation::NotifyDuringRefresh,
        Situation::NotifyMidWalk,
        Situation::BurstDuringRefresh,
        Situation::ResponseOvertakesResponse,
        Situation::CallInFlightDuringRemoval,
        Situation::CursorRefusedAfterChange,
        Situation::AuthSwitchDuringRefresh,
        Situation::NodeBehindStore,
        Situation::ChangeWhileAckInFlight,
        Situation::TtlExpiryRefetch,
        Situation::ContentUpdateInFlight,
        Situation::DuplicateNotificationInFlight,
        Situation::CutWithChangePending,
        Situation::CallRefusedAsGone,
        Situation::CallFailedOtherwise,
        Situation::RetryArmed,
        Situation::ApprovedDefinitionChanged,
        Situation::CallWaitsForSettle,
        Situation::CallInFlightDuringSchemaChange,
        Situation::OneNameTwoServers,
    ];

    /// The fixed name.
    pub fn as_str(self) -> &'static str {
        match self {
            Situation::NotifyDuringRefresh => "notify_during_refresh",
            Situation::NotifyMidWalk => "notify_mid_walk",
            Situation::BurstDuringRefresh => "burst_during_refresh",
            Situation::ResponseOvertakesResponse => "response_overtakes_response",
            Situation::CallInFlightDuringRemoval => "call_in_flight_during_removal",
            Situation::CursorRefusedAfterChange => "cursor_refused_after_change",
            Situation::AuthSwitchDuringRefresh => "auth_switch_during_refresh",
            Situation::NodeBehindStore => "node_behind_store",
            Situation::ChangeWhileAckInFlight => "change_while_ack_in_flight",
            Situation::TtlExpiryRefetch => "ttl_expiry_refetch",
            Situation::ContentUpdateInFlight => "content_update_in_flight",
            Situation::DuplicateNotificationInFlight => "duplicate_notification_in_flight",
            Situation::CutWithChangePending => "cut_with_change_pending",
            Situation::CallRefusedAsGone => "call_refused_as_gone",
            Situation::CallFailedOtherwise => "call_failed_otherwise",
            Situation::RetryArmed => "retry_after_list_error",
            Situation::ApprovedDefinitionChanged => "approved_definition_changed",
            Situation::CallWaitsForSettle => "call_waits_for_settle",
            Situation::CallInFlightDuringSchemaChange => "call_in_flight_during_schema_change",
            Situation::OneNameTwoServers => "one_name_two_servers",
        }
    }

    /// Position in [`Situation::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// Whether the world is in this situation.
    pub fn holds<C: ClientMachine>(self, scn: &Scenario, w: &World<C>) -> bool {
        let clients = 0..w.clients.len() as ClientId;
        match self {
            Situation::NotifyDuringRefresh => clients
                .into_iter()
                .any(|c| refreshing(w, c).any(|(k, _)| notifications_to(w, c, k) > 0)),
            Situation::NotifyMidWalk => clients.into_iter().any(|c| {
                refreshing(w, c).any(|(k, pages)| pages > 0 && notifications_to(w, c, k) > 0)
            }),
            Situation::BurstDuringRefresh => clients
                .into_iter()
                .any(|c| refreshing(w, c).any(|(k, _)| notifications_to(w, c, k) >= 2)),
            // Only the HTTP response link is unordered: stdio links are ordered, and the HTTP
            // stream carries notifications.
            Situation::ResponseOvertakesResponse => {
                scn.transport == Transport::Http && w.links.iter().any(two_pages_on_their_way)
            }
            Situation::CallInFlightDuringRemoval => w.links.iter().any(|l| {
                l.up.iter().any(|m| match &m.req {
                    Request::CallTool { name, .. } => w.truth.1.get(Kind::Tools, name).is_none(),
                    _ => false,
                })
            }),
            Situation::CursorRefusedAfterChange => w.links.iter().any(|l| {
                l.down.iter().any(|m| {
                    matches!(
                        m,
                        ServerMsg::Response {
                            resp: Response::Error(e),
                            ..
                        } if e.reason == ErrorReason::InvalidCursor
                    )
                })
            }),
            Situation::AuthSwitchDuringRefresh => w
                .clients
                .iter()
                .any(|c| c.walks_in_progress().any(|(_, auth, _)| auth != c.auth())),
            Situation::NodeBehindStore => {
                w.is_cluster()
                    && clients.into_iter().any(|c| {
                        let node = &w.nodes[usize::from(w.node_of[c as usize])];
                        node.version() < w.truth.0
                            && w.links[c as usize]
                                .up
                                .iter()
                                .any(|m| matches!(m.req, Request::List { .. }))
                    })
            }
            Situation::ChangeWhileAckInFlight => w.links.iter().any(|l| {
                let mut ack = false;
                l.stream.iter().any(|m| match m {
                    ServerMsg::Notification(Notification::Acknowledged { .. }) => {
                        ack = true;
                        false
                    }
                    ServerMsg::Notification(Notification::ListChanged { .. }) => ack,
                    _ => false,
                })
            }),
            // Only a server that sets a `ttlMs` gives a list one.
            Situation::TtlExpiryRefetch => {
                scn.server.ttl_ms.is_some() && clients.into_iter().any(|c| w.ttl_is_due(c))
            }
            Situation::ContentUpdateInFlight => w.links.iter().any(|l| {
                l.down.iter().chain(&l.stream).any(|m| {
                    matches!(
                        m,
                        ServerMsg::Notification(Notification::ResourceUpdated { .. })
                    )
                })
            }),
            Situation::DuplicateNotificationInFlight => w.links.iter().any(|l| {
                [&l.down, &l.stream].into_iter().any(|q| {
                    q.iter().enumerate().any(|(i, m)| {
                        matches!(m, ServerMsg::Notification(Notification::ListChanged { .. }))
                            && q[i + 1..].contains(m)
                    })
                })
            }),
            Situation::CutWithChangePending => !w.cut.is_empty() && some_client_is_behind(w),
            Situation::CallRefusedAsGone => clients.into_iter().any(|c| {
                error_to(w, c, |r| *r == ErrorReason::UnknownTool)
                    && w.clients[c as usize]
                        .snapshot(Kind::Tools)
                        .is_some_and(|s| {
                            s.items
                                .iter()
                                .any(|i| w.truth.1.get(Kind::Tools, &i.name).is_none())
                        })
            }),
            Situation::CallFailedOtherwise => clients
                .into_iter()
                .any(|c| error_to(w, c, |r| matches!(r, ErrorReason::Other(_)))),
            Situation::RetryArmed => w.clients.iter().any(|c| c.armed_retries().next().is_some()),
            Situation::ApprovedDefinitionChanged => w.clients.iter().any(|c| c.approval_outdated()),
            Situation::CallWaitsForSettle => w.clients.iter().any(|c| c.paused_calls() > 0),
            Situation::CallInFlightDuringSchemaChange => w.links.iter().any(|l| {
                l.up.iter().any(|m| match &m.req {
                    Request::CallTool { name, schema } if *schema != 0 => w
                        .truth
                        .1
                        .get(Kind::Tools, name)
                        .is_some_and(|e| crate::vocab::schema_fingerprint(&e.def) != *schema),
                    _ => false,
                })
            }),
            Situation::OneNameTwoServers => scn.aggregate.is_some() && one_tool_name_twice(w),
        }
    }
}

impl Situation {
    /// This situation's bit in a set of situations (`1 << index`).
    pub fn bit(self) -> u32 {
        1 << self.index()
    }

    /// The situations among `among` (a set of [`Situation::bit`]s) the world is in: for each,
    /// what [`Situation::holds`] says, found in one pass over each client's links and walks
    /// (the simulator asks after every step).
    pub fn holding<C: ClientMachine>(scn: &Scenario, w: &World<C>, among: u32) -> u32 {
        use Situation as S;
        let want = |s: Situation| among & s.bit() != 0;
        let mut found = 0u32;
        let http = scn.transport == Transport::Http;
        let behind = w.is_cluster();
        let truth = &w.truth.1;
        for (c, (l, cl)) in w.links.iter().zip(&w.clients).enumerate() {
            // What is on its way to the server.
            let mut list_request = false;
            for m in &l.up {
                match &m.req {
                    Request::CallTool { name, schema }
                        if want(S::CallInFlightDuringRemoval)
                            || want(S::CallInFlightDuringSchemaChange) =>
                    {
                        match truth.get(Kind::Tools, name) {
                            None => found |= S::CallInFlightDuringRemoval.bit(),
                            Some(e)
                                if *schema != 0
                                    && want(S::CallInFlightDuringSchemaChange)
                                    && crate::vocab::schema_fingerprint(&e.def) != *schema =>
                            {
                                found |= S::CallInFlightDuringSchemaChange.bit();
                            }
                            Some(_) => {}
                        }
                    }
                    Request::List { .. } => list_request = true,
                    _ => {}
                }
            }
            // What is on its way to the client: `list_changed` notifications per kind they
            // cover, on the response link and the stream together.
            let mut changed = [0usize; Kind::ALL.len()];
            let mut pages = 0;
            let mut unknown_tool = false;
            for m in &l.down {
                match m {
                    ServerMsg::Response { resp, .. } => match resp {
                        Response::Page(_) => pages += 1,
                        Response::Error(e) => match e.reason {
                            ErrorReason::InvalidCursor => {
                                found |= S::CursorRefusedAfterChange.bit()
                            }
                            ErrorReason::UnknownTool => unknown_tool = true,
                            ErrorReason::Other(_) => found |= S::CallFailedOtherwise.bit(),
                            _ => {}
                        },
                        _ => {}
                    },
                    ServerMsg::Notification(n) => notice(n, &mut changed, &mut found),
                }
            }
            let mut ack = false;
            for m in &l.stream {
                if let ServerMsg::Notification(n) = m {
                    match n {
                        Notification::Acknowledged { .. } => ack = true,
                        Notification::ListChanged { .. } if ack => {
                            found |= S::ChangeWhileAckInFlight.bit();
                        }
                        _ => {}
                    }
                    notice(n, &mut changed, &mut found);
                }
            }
            if http && pages >= 2 {
                found |= S::ResponseOvertakesResponse.bit();
            }
            if want(S::DuplicateNotificationInFlight)
                && changed.iter().sum::<usize>() >= 2
                && [&l.down, &l.stream].into_iter().any(|q| {
                    q.iter().enumerate().any(|(i, m)| {
                        matches!(m, ServerMsg::Notification(Notification::ListChanged { .. }))
                            && q[i + 1..].contains(m)
                    })
                })
            {
                found |= S::DuplicateNotificationInFlight.bit();
            }
            if unknown_tool
                && want(S::CallRefusedAsGone)
                && cl.snapshot(Kind::Tools).is_some_and(|s| {
                    s.items
                        .iter()
                        .any(|i| truth.get(Kind::Tools, &i.name).is_none())
                })
            {
                found |= S::CallRefusedAsGone.bit();
            }
            if behind && list_request && w.nodes[usize::from(w.node_of[c])].version() < w.truth.0 {
                found |= S::NodeBehindStore.bit();
            }
            // What the client is doing.
            for (k, auth, walked) in cl.walks_in_progress() {
                if auth != cl.auth() {
                    found |= S::AuthSwitchDuringRefresh.bit();
                }
                let n = changed[k as usize];
                if n > 0 {
                    found |= S::NotifyDuringRefresh.bit();
                    if walked > 0 {
                        found |= S::NotifyMidWalk.bit();
                    }
                    if n >= 2 {
                        found |= S::BurstDuringRefresh.bit();
                    }
                }
            }
            if cl.armed_retries().next().is_some() {
                found |= S::RetryArmed.bit();
            }
            if cl.paused_calls() > 0 {
                found |= S::CallWaitsForSettle.bit();
            }
            if want(S::ApprovedDefinitionChanged) && cl.approval_outdated() {
                found |= S::ApprovedDefinitionChanged.bit();
            }
            if want(S::TtlExpiryRefetch)
                && scn.server.ttl_ms.is_some()
                && w.ttl_is_due(c as ClientId)
            {
                found |= S::TtlExpiryRefetch.bit();
            }
        }
        // Over every client at once.
        for s in [S::CutWithChangePending, S::OneNameTwoServers] {
            if want(s) && s.holds(scn, w) {
                found |= s.bit();
            }
        }
        found & among
    }
}

/// Whether two list pages are on their way to a client on its response link.
fn two_pages_on_their_way(l: &Shared<Links>) -> bool {
    l.down.len() >= 2
        && l.down
            .iter()
            .filter(|m| {
                matches!(
                    m,
                    ServerMsg::Response {
                        resp: Response::Page(_),
                        ..
                    }
                )
            })
            .count()
            >= 2
}

/// Whether some client's snapshot of a kind it follows is missing or other than the world's
/// current visible list.
fn some_client_is_behind<C: ClientMachine>(w: &World<C>) -> bool {
    w.clients.iter().any(|c| {
        c.config().kinds.iter().any(|k| {
            c.snapshot(k).is_none_or(|s| {
                crate::vocab::Digest::of(&s.items)
                    != crate::monitor::visible_digest(&w.truth.1, k, c.auth())
            })
        })
    })
}

/// Whether some name is in the published tool lists of two clients (looked for pair by pair,
/// without collecting the names).
fn one_tool_name_twice<C: ClientMachine>(w: &World<C>) -> bool {
    w.clients.iter().enumerate().any(|(i, a)| {
        a.snapshot(Kind::Tools).is_some_and(|a| {
            w.clients[i + 1..]
                .iter()
                .filter_map(|b| b.snapshot(Kind::Tools))
                .any(|b| {
                    a.items
                        .iter()
                        .any(|x| b.items.iter().any(|y| x.name == y.name))
                })
        })
    })
}

/// Counts a notification on its way to a client: a `list_changed` for each kind it covers, a
/// resource's content change as the situation it is.
fn notice(n: &Notification, changed: &mut [usize; Kind::ALL.len()], found: &mut u32) {
    match n {
        Notification::ListChanged { kind, .. } => {
            for k in kind.notification_group() {
                changed[*k as usize] += 1;
            }
        }
        Notification::ResourceUpdated { .. } => {
            *found |= Situation::ContentUpdateInFlight.bit();
        }
        _ => {}
    }
}

/// Whether an error with a reason `is` is on its way to client `c` on its response link.
fn error_to<C: ClientMachine>(
    w: &World<C>,
    c: ClientId,
    is: impl Fn(&ErrorReason) -> bool,
) -> bool {
    w.links[c as usize]
        .down
        .iter()
        .any(|m| matches!(m, ServerMsg::Response { resp: Response::Error(e), .. } if is(&e.reason)))
}

/// The lists client `c` is refreshing while something is on its way to it: (kind, pages in
/// hand of its walk). Nothing is yielded while its server-to-client links are empty (no
/// notification can be on its way then, and every caller looks for one).
fn refreshing<C: ClientMachine>(
    w: &World<C>,
    c: ClientId,
) -> impl Iterator<Item = (Kind, u32)> + '_ {
    let l = &w.links[c as usize];
    let inbound = !(l.down.is_empty() && l.stream.is_empty());
    inbound
        .then(|| w.clients[c as usize].walks_in_progress())
        .into_iter()
        .flatten()
        .map(|(k, _, pages)| (k, pages))
}

/// `list_changed` notifications covering `kind` on their way to client `c`.
fn notifications_to<C: ClientMachine>(w: &World<C>, c: ClientId, kind: Kind) -> usize {
    let l = &w.links[c as usize];
    l.down
        .iter()
        .chain(&l.stream)
        .filter(|m| {
            matches!(m, ServerMsg::Notification(Notification::ListChanged { kind: g, .. })
                if g.notification_group().contains(&kind))
        })
        .count()
}

impl fmt::Display for Situation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Situation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Situation::ALL
            .into_iter()
            .find(|x| x.as_str() == s)
            .ok_or_else(|| format!("unknown situation '{s}'"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Situation::ALL {
            assert_eq!(Situation::ALL[s.index()], s);
            assert_eq!(s.as_str().parse::<Situation>().unwrap(), s);
            assert_eq!(serde_json::to_string(&s).unwrap(), format!("\"{s}\""));
        }
    }
}
