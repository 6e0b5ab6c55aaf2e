//! The events of a recorded history: what the server committed, served, notified and
//! dispatched, and what each client noticed, started and published. The machines emit these as
//! they step; the harness reconstructs them from real implementations; the property checkers
//! (`monitor`) judge them. The event vocabulary is the contract between all three instruments.

use crate::vocab::{AuthCtx, Catalog, ItemList, Kind, KindSet, Name};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// Index of a client (and of its connection) within one run.
pub type ClientId = u32;

/// Why a client woke up to refresh (or at least reconsider) a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Cause {
    /// Its first list after connecting (2025-11-25: after `initialize`).
    Startup,
    /// A `list_changed` notification.
    ListChanged,
    /// A `subscriptions/listen` acknowledgement (2026-07-28).
    ListenAck,
    /// A cached page's `ttlMs` ran out.
    TtlExpired,
    /// The application switched authorization context.
    AuthChanged,
    /// The application asked for a refresh.
    Requested,
    /// A call failed because the server no longer has the item (an "unknown tool" error) that
    /// the client's snapshot still lists.
    ItemGone,
}

/// How a refresh ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshOutcome {
    /// Its result was published.
    Published,
    /// Its result was not newer than what the client holds (or was superseded), and dropped.
    Discarded,
    /// It failed (error, lying server, disconnect) and will not be retried.
    Failed,
}

/// Why a walk over the pages of a list began again from the first page.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Restart {
    /// The server rejected a cursor (-32602).
    InvalidCursor,
    /// A `list_changed` arrived after some pages were already in hand.
    NotifiedMidWalk,
    /// Pages came back at different catalog versions.
    VersionChanged,
    /// A retry after a failure, once its backoff elapsed.
    Retry,
}

/// One event of a history.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A client opened a session (or a stateless connection) with the server.
    Connected {
        /// Client.
        client: ClientId,
    },
    /// The server made catalog `version` visible to list requests (also the initial catalog).
    Committed {
        /// Catalog version.
        version: u64,
        /// The whole catalog at that version.
        catalog: Arc<Catalog>,
    },
    /// The server sent a `list_changed` for `kind` to `client`.
    Notified {
        /// Receiving client.
        client: ClientId,
        /// List kind (notification group).
        kind: Kind,
        /// The catalog version the notification announces.
        announces: u64,
        /// The version visible to list requests when it was sent.
        visible: u64,
    },
    /// The server served one page of a list.
    Served {
        /// Requesting client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context of the request.
        auth: AuthCtx,
        /// Catalog version the page was cut from.
        version: u64,
        /// Items on the page.
        items: u32,
        /// Whether a next cursor was given.
        more: bool,
    },
    /// The server started running a tool.
    Dispatched {
        /// Calling client.
        client: ClientId,
        /// Tool name.
        tool: Name,
        /// Whether the tool is in the server's registry at this moment.
        present: bool,
    },
    /// The server ran a call whose arguments were built for an input schema the tool no longer
    /// has (observed: the call's schema fingerprint on the wire against the definition the
    /// observer's catalog holds at dispatch).
    RanStaleArguments {
        /// Calling client.
        client: ClientId,
        /// Tool name.
        tool: Name,
    },
    /// The server refused a call to an unknown or removed tool.
    CallRejected {
        /// Calling client.
        client: ClientId,
        /// Tool name.
        tool: Name,
    },
    /// A client was handed a failed tool call (an error response on the wire, or the call lost
    /// in transport), observed with the list requests the client sent in reaction to it.
    CallFailed {
        /// Client.
        client: ClientId,
        /// Tool name.
        tool: Name,
        /// Authorization context the call was made under.
        auth: AuthCtx,
        /// Whether the error says the tool is gone (`-32602` unknown tool); anything else (an
        /// internal, permission or argument error, a lost connection) is not a list change.
        gone: bool,
        /// The kinds the client started listing afresh (a first-page request) in reaction.
        relisted: KindSet,
    },
    /// A client's call router decided on an application's call of a tool it looked up (not
    /// one called by name): whether the call went on the wire, or was refused in the client as
    /// not in its list.
    Routed {
        /// Client.
        client: ClientId,
        /// Tool name.
        tool: Name,
        /// Authorization context the client was in.
        auth: AuthCtx,
        /// Whether a `tools/call` was sent.
        sent: bool,
        /// Whether the client's application asks the user to approve tools with side effects
        /// (its configuration, which the world knows: `approval_not_inherited` judges it).
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        approval: bool,
    },
    /// The user approved a tool as the client's published tool list shows it now (the
    /// definition there is what the approval is of).
    Approved {
        /// Client.
        client: ClientId,
        /// Tool name.
        tool: Name,
        /// Authorization context the client was in.
        auth: AuthCtx,
    },
    /// A `list_changed` of `kind` reached a client whose application asks the user to approve
    /// tools with side effects (the delivery, observed where the client reads its connection).
    NoticeReceived {
        /// Client.
        client: ClientId,
        /// Notification group.
        kind: Kind,
    },
    /// (several servers) The application's combined listing, rebuilt after one of its clients
    /// published a tool list: how many entries it shows, and how many tools its clients'
    /// published lists hold together (what it should show, each under a name of its own).
    CombinedListing {
        /// The client whose publication rebuilt it.
        client: ClientId,
        /// Entries the combined listing shows.
        shown: u32,
        /// Tools in the clients' published lists, all servers together.
        listed: u32,
    },
    /// (several servers) The application called a name of its combined listing, and the call
    /// went on the wire of `client`'s connection as a call of `tool`.
    CalledCombined {
        /// The combined name the application called.
        name: Name,
        /// Whose connection (that is, which server) carried the call.
        client: ClientId,
        /// The tool named on the wire.
        tool: Name,
    },
    /// A client woke up for a reason that may warrant a refresh.
    Woken {
        /// Client.
        client: ClientId,
        /// Kinds concerned.
        kinds: KindSet,
        /// Why.
        cause: Cause,
    },
    /// A client started refreshing a list (its first page request).
    RefreshStarted {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context the refresh runs under.
        auth: AuthCtx,
        /// Refresh id, unique per client.
        refresh: u32,
    },
    /// A refresh's walk began again at the first page.
    WalkRestarted {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Refresh id.
        refresh: u32,
        /// Why.
        reason: Restart,
    },
    /// A refresh ended.
    RefreshEnded {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context.
        auth: AuthCtx,
        /// Refresh id.
        refresh: u32,
        /// How.
        outcome: RefreshOutcome,
    },
    /// A client published a new snapshot that applications now read.
    Published {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context the snapshot is cached for.
        auth: AuthCtx,
        /// The snapshot.
        items: ItemList,
        /// Server catalog version behind it, if the server said.
        version: Option<u64>,
    },
    /// A client marked its snapshot stale (kept, but known to be out of date).
    MarkedStale {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Authorization context.
        auth: AuthCtx,
    },
    /// A client received the acknowledgement of its `subscriptions/listen` (2026-07-28).
    ListenAcked {
        /// Client.
        client: ClientId,
        /// Kinds the server will deliver.
        kinds: KindSet,
    },
    /// The environment declares the system quiescent: no mutation pending, no message in
    /// flight, no refresh running. Each listed client list must now equal the server's.
    Quiescent {
        /// The (client, kind, authorization context) snapshots expected to have converged.
        expect: Vec<(ClientId, Kind, AuthCtx)>,
    },
}

/// Whether a client's tool list is unsettled: the client has been told the list changed and no
/// walk of it that began after the notice has ended well (docs/design.md, "Approval is never
/// inherited"). A call of a tool with side effects waits while it is. The client machine and the
/// monitor fold the same events through [`Unsettled::after`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Unsettled {
    /// Told of a change; no walk of the tool list has begun since.
    Told,
    /// Walk `refresh` of the tool list began (or began again) after the notice: the list settles
    /// when it ends with its result published or found current.
    Walking(u32),
}

impl Unsettled {
    /// The state after client event `e` (None: settled). A walk that ends failed leaves the list
    /// told of a change it has not fetched.
    pub fn after(state: Option<Unsettled>, e: &Event) -> Option<Unsettled> {
        match (state, e) {
            (
                Some(Unsettled::Told),
                Event::RefreshStarted {
                    kind: Kind::Tools,
                    refresh,
                    ..
                }
                | Event::WalkRestarted {
                    kind: Kind::Tools,
                    refresh,
                    ..
                },
            ) => Some(Unsettled::Walking(*refresh)),
            (
                Some(Unsettled::Walking(r)),
                Event::RefreshEnded {
                    kind: Kind::Tools,
                    refresh,
                    outcome,
                    ..
                },
            ) if r == *refresh => (*outcome == RefreshOutcome::Failed).then_some(Unsettled::Told),
            (s, _) => s,
        }
    }
}

impl Event {
    /// Whether this event, emitted by a client machine about itself, is only its claim: its
    /// refreshes, walks, publishes, wake-ups and acknowledged listens are observed instead (the
    /// world and rt's actor: `world::Watch`, `world::observe_publishes`,
    /// `world::observe_input`), and the machine's own word on them is kept as an explanation
    /// that no verdict reads.
    pub fn is_claim(&self) -> bool {
        matches!(
            self,
            Event::Published { .. }
                | Event::RefreshStarted { .. }
                | Event::WalkRestarted { .. }
                | Event::RefreshEnded { .. }
                | Event::ListenAcked { .. }
                | Event::Woken { .. }
        )
    }

    /// A `Served` page dated at `version`: an observer dates the pages it sees by its own ground
    /// truth, never by the server's word (the page's client, kind, context and size are on the
    /// wire). Any other event is returned as it is.
    pub fn dated(self, version: u64) -> Event {
        match self {
            Event::Served {
                client,
                kind,
                auth,
                items,
                more,
                ..
            } => Event::Served {
                client,
                kind,
                auth,
                version,
                items,
                more,
            },
            e => e,
        }
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Event::Committed { version, catalog } => {
                write!(
                    f,
                    "server commits v{version} ({} items)",
                    catalog.items.len()
                )
            }
            Event::Connected { client } => write!(f, "c{client} connects"),
            Event::Notified {
                client,
                kind,
                announces,
                visible,
            } => write!(
                f,
                "server notifies c{client} {kind} list_changed (announces v{announces}, visible v{visible})"
            ),
            Event::Served {
                client,
                kind,
                version,
                items,
                more,
                ..
            } => write!(
                f,
                "server serves c{client} {kind} page at v{version} ({items} items{})",
                if *more { ", more" } else { "" }
            ),
            Event::Dispatched {
                client,
                tool,
                present,
            } => write!(
                f,
                "server runs {tool} for c{client}{}",
                if *present { "" } else { " (NOT in registry)" }
            ),
            Event::RanStaleArguments { client, tool } => write!(
                f,
                "server runs {tool} for c{client} with arguments built for an earlier input schema"
            ),
            Event::CallRejected { client, tool } => {
                write!(f, "server rejects call of {tool} from c{client} (-32602)")
            }
            Event::CallFailed {
                client,
                tool,
                gone,
                relisted,
                ..
            } => write!(
                f,
                "c{client}'s call of {tool} fails ({}){}",
                if *gone { "tool gone" } else { "not a change" },
                if relisted.is_empty() {
                    String::new()
                } else {
                    format!("; it lists {relisted} again")
                }
            ),
            Event::Routed {
                client, tool, sent, ..
            } => write!(
                f,
                "c{client} {} a call of {tool}",
                if *sent { "routes" } else { "refuses" }
            ),
            Event::Approved { client, tool, .. } => {
                write!(f, "the user approves {tool} as c{client} lists it")
            }
            Event::NoticeReceived { client, kind } => {
                write!(f, "c{client} receives a {kind} list_changed")
            }
            Event::CombinedListing {
                client,
                shown,
                listed,
            } => write!(
                f,
                "after c{client} publishes, the combined listing shows {shown} of {listed} tools"
            ),
            Event::CalledCombined { name, client, tool } => {
                write!(
                    f,
                    "the application's call of {name} goes to c{client} as {tool}"
                )
            }

            Event::Woken {
                client,
                kinds,
                cause,
            } => write!(f, "c{client} woken ({cause:?}) for {kinds}"),
            Event::RefreshStarted {
                client,
                kind,
                refresh,
                ..
            } => write!(f, "c{client} starts refresh r{refresh} of {kind}"),
            Event::WalkRestarted {
                client,
                kind,
                refresh,
                reason,
            } => write!(
                f,
                "c{client} restarts walk r{refresh} of {kind} ({reason:?})"
            ),
            Event::RefreshEnded {
                client,
                kind,
                refresh,
                outcome,
                ..
            } => write!(
                f,
                "c{client} ends refresh r{refresh} of {kind}: {outcome:?}"
            ),
            Event::Published {
                client,
                kind,
                items,
                version,
                ..
            } => write!(
                f,
                "c{client} publishes {kind} [{}]{}",
                items
                    .iter()
                    .map(|i| format!("{}={}", i.name, i.def))
                    .collect::<Vec<_>>()
                    .join(","),
                version.map(|v| format!(" v{v}")).unwrap_or_default()
            ),
            Event::MarkedStale { client, kind, .. } => {
                write!(f, "c{client} marks {kind} stale")
            }
            Event::ListenAcked { client, .. } => write!(f, "c{client} listen acknowledged"),
            Event::Quiescent { .. } => write!(f, "quiescent"),
        }
    }
}
