//! The client and server strategies: the reference algorithm and the known-bad variants, each a
//! bug class someone shipped. Their names are fixed (docs/design.md): configs, traces, reports and
//! tests use exactly these strings.

use crate::property::Property;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// How a client keeps its snapshot of a server list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ClientStrategy {
    /// Single-flight refresh with a dirty flag; walks all pages; restarts the walk on an invalid
    /// cursor or a notification mid-walk; publishes atomically and only if newer; keeps the old
    /// snapshot marked stale on failure and retries with backoff; lists after the listen ack.
    #[serde(rename = "reference")]
    Reference,
    /// One refresh per notification, concurrently; the last response to arrive wins.
    #[serde(rename = "naive")]
    Naive,
    /// On a notification, clears the snapshot (publishes an empty list), then fetches.
    #[serde(rename = "clear-then-fetch")]
    ClearThenFetch,
    /// Refreshes fetch only the first page (one refresh per notification).
    #[serde(rename = "first-page-only")]
    FirstPageOnly,
    /// Concurrent refreshes, guarded by the client's own request counter: a response is applied
    /// only if its request was sent after the one behind the current snapshot. Request order is
    /// not serve order.
    #[serde(rename = "request-id-guard")]
    RequestIdGuard,
    /// Single flight, but the dirty flag is cleared after the refresh completes, so a
    /// notification that arrives during it is lost.
    #[serde(rename = "flag-cleared-after-await")]
    FlagClearedAfterAwait,
    /// (2026-07-28) Lists first, then opens `subscriptions/listen`, and never lists again after
    /// the acknowledgement.
    #[serde(rename = "listen-without-relist")]
    ListenWithoutRelist,
    /// Takes every failed tool call (an internal, permission or argument error, a lost
    /// connection) for a sign that the tool list changed and lists tools again: a call that keeps
    /// failing keeps the client refreshing.
    #[serde(rename = "refresh-on-any-error")]
    RefreshOnAnyError,
    /// The call router keeps a registry of its own, filled from the first tool list and never
    /// refreshed: the application's listing and the router disagree after the first change.
    #[serde(rename = "two-registries")]
    TwoRegistries,
    /// Tools the application preloaded survive every refresh: after the server removes one, the
    /// router still sends calls to it.
    #[serde(rename = "known-tools-survive")]
    KnownToolsSurvive,
    /// Keeps the user's approvals by tool name alone and calls at once while a change is
    /// announced: a tool whose definition changed (or a new tool reusing a removed one's name)
    /// runs under the approval of the old definition (the "rug pull").
    #[serde(rename = "approval-by-name")]
    ApprovalByName,
    /// An application connected to several servers prefixes each server's tools with the
    /// `serverInfo.name` that server reports: two servers reporting the same name collide, and
    /// one's tools shadow the other's (each connection is kept as `reference` keeps it).
    #[serde(rename = "prefix-from-server-info")]
    PrefixFromServerInfo,
    /// Keeps its lists as `reference` does, but lies about them: after a walk it publishes, its
    /// readers still read the list it held before, while its event names the new one; and it
    /// reports none of its walks. Only a judge that reads the client's snapshot as its readers
    /// read it, and counts walks on the wire, catches it (the twin of `lying-registry`).
    #[serde(rename = "lying-client")]
    LyingClient,
}

/// How a server applies mutations, paginates, notifies and dispatches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum ServerStrategy {
    /// Atomic batch commit, then one coalesced notification; deterministic order; cursors bound
    /// to the catalog version (stale cursor: -32602); list and call read the same snapshot.
    #[serde(rename = "reference")]
    Reference,
    /// Sends `list_changed` first and commits later.
    #[serde(rename = "notify-before-commit")]
    NotifyBeforeCommit,
    /// Cursors are bare offsets, valid across versions, and no version in `_meta`.
    #[serde(rename = "offset-cursor")]
    OffsetCursor,
    /// One notification per mutation of a batch instead of one per batch.
    #[serde(rename = "notify-per-mutation")]
    NotifyPerMutation,
    /// Resolves `tools/call` against the tool table the session captured when it started,
    /// so a removed tool still runs.
    #[serde(rename = "stale-dispatch")]
    StaleDispatch,
    /// (cluster node) On a change event from the bus, notifies its clients first and makes the
    /// new version visible locally later.
    #[serde(rename = "cluster-notify-before-visible")]
    ClusterNotifyBeforeVisible,
    /// Notifies before commit and dispatches tools it no longer has (as `notify-before-commit`
    /// and `stale-dispatch`) while claiming the opposite: that the announced version is visible
    /// and that every tool it runs is present. Only a judge that observes the wire instead of
    /// believing the server catches it.
    #[serde(rename = "lying-registry")]
    LyingRegistry,
    /// Announces every list it has, to every session, after every batch (a rebuild that re-registers
    /// everything): a rebuild that leaves the catalog as it was still sends `list_changed`, a
    /// change to one list announces the others too, and a change only one authorization context
    /// sees is announced to sessions that cannot see it.
    #[serde(rename = "notify-on-noop")]
    NotifyOnNoop,
    /// Runs every call of a tool it has without checking the arguments against the tool's
    /// current definition: a call built for an earlier input schema runs against the new one.
    #[serde(rename = "unvalidated-dispatch")]
    UnvalidatedDispatch,
}

macro_rules! names {
    ($t:ty, $($v:ident = $s:literal),+ $(,)?) => {
        impl $t {
            /// Every variant.
            pub const ALL: &'static [$t] = &[$(<$t>::$v),+];
            /// The fixed name.
            pub fn as_str(self) -> &'static str {
                match self { $(<$t>::$v => $s),+ }
            }
        }
        impl fmt::Display for $t {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
        impl FromStr for $t {
            type Err = String;
            fn from_str(s: &str) -> Result<Self, String> {
                Self::ALL.iter().copied().find(|v| v.as_str() == s).ok_or_else(|| {
                    let all: Vec<_> = Self::ALL.iter().map(|v| v.as_str()).collect();
                    format!("unknown strategy '{s}' (expected one of: {})", all.join(", "))
                })
            }
        }
    };
}

names!(
    ClientStrategy,
    Reference = "reference",
    Naive = "naive",
    ClearThenFetch = "clear-then-fetch",
    FirstPageOnly = "first-page-only",
    RequestIdGuard = "request-id-guard",
    FlagClearedAfterAwait = "flag-cleared-after-await",
    ListenWithoutRelist = "listen-without-relist",
    RefreshOnAnyError = "refresh-on-any-error",
    TwoRegistries = "two-registries",
    KnownToolsSurvive = "known-tools-survive",
    ApprovalByName = "approval-by-name",
    PrefixFromServerInfo = "prefix-from-server-info",
    LyingClient = "lying-client",
);

names!(
    ServerStrategy,
    Reference = "reference",
    NotifyBeforeCommit = "notify-before-commit",
    OffsetCursor = "offset-cursor",
    NotifyPerMutation = "notify-per-mutation",
    StaleDispatch = "stale-dispatch",
    ClusterNotifyBeforeVisible = "cluster-notify-before-visible",
    LyingRegistry = "lying-registry",
    NotifyOnNoop = "notify-on-noop",
    UnvalidatedDispatch = "unvalidated-dispatch",
);

impl ClientStrategy {
    /// The property this strategy's bug class breaks (none for `reference`): a run of it counts
    /// as caught only when this property is violated.
    pub fn breaks(self) -> Option<Property> {
        match self {
            ClientStrategy::Reference => None,
            ClientStrategy::Naive | ClientStrategy::RequestIdGuard => {
                Some(Property::NoStaleOverwrite)
            }
            ClientStrategy::ClearThenFetch | ClientStrategy::FirstPageOnly => {
                Some(Property::NoTornSnapshot)
            }
            ClientStrategy::FlagClearedAfterAwait => Some(Property::NoLostWakeup),
            ClientStrategy::ListenWithoutRelist => Some(Property::ListenThenList),
            ClientStrategy::RefreshOnAnyError => Some(Property::ErrorsNotChanges),
            ClientStrategy::TwoRegistries => Some(Property::ConsumersAgree),
            ClientStrategy::KnownToolsSurvive => Some(Property::NoCallToRemoved),
            ClientStrategy::ApprovalByName => Some(Property::ApprovalNotInherited),
            ClientStrategy::PrefixFromServerInfo => Some(Property::NoNameCollision),
            ClientStrategy::LyingClient => Some(Property::Converges),
        }
    }

    /// Whether refreshes are single-flight (at most one walk per list at a time).
    pub fn single_flight(self) -> bool {
        matches!(
            self,
            ClientStrategy::Reference
                | ClientStrategy::FlagClearedAfterAwait
                | ClientStrategy::ListenWithoutRelist
                | ClientStrategy::RefreshOnAnyError
                | ClientStrategy::TwoRegistries
                | ClientStrategy::KnownToolsSurvive
                | ClientStrategy::ApprovalByName
                | ClientStrategy::PrefixFromServerInfo
                | ClientStrategy::LyingClient
        )
    }
}

impl ServerStrategy {
    /// Whether a batch is announced first and made visible later (by a separate commit step),
    /// as `notify-before-commit` and `lying-registry` do.
    pub fn commits_after_notifying(self) -> bool {
        matches!(
            self,
            ServerStrategy::NotifyBeforeCommit | ServerStrategy::LyingRegistry
        )
    }

    /// Whether a node of a multi-node deployment announces a version it took from the shared
    /// store first and makes it visible later (by a separate load step), as
    /// `cluster-notify-before-visible` does and `lying-registry` does on a node.
    pub fn installs_after_notifying(self) -> bool {
        matches!(
            self,
            ServerStrategy::ClusterNotifyBeforeVisible | ServerStrategy::LyingRegistry
        )
    }

    /// The property this strategy's bug class breaks (none for `reference`): a run of it counts
    /// as caught only when this property is violated.
    pub fn breaks(self) -> Option<Property> {
        match self {
            ServerStrategy::Reference => None,
            ServerStrategy::NotifyBeforeCommit
            | ServerStrategy::ClusterNotifyBeforeVisible
            | ServerStrategy::LyingRegistry => Some(Property::NotifyAfterCommit),
            ServerStrategy::OffsetCursor => Some(Property::NoTornSnapshot),
            ServerStrategy::NotifyPerMutation => Some(Property::BoundedRefresh),
            ServerStrategy::StaleDispatch => Some(Property::NoCallToRemoved),
            ServerStrategy::NotifyOnNoop => Some(Property::NoSpuriousNotify),
            ServerStrategy::UnvalidatedDispatch => Some(Property::NoStaleArguments),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_match_serde_and_parse() {
        for s in ClientStrategy::ALL {
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(s.as_str().parse::<ClientStrategy>().unwrap(), *s);
        }
        for s in ServerStrategy::ALL {
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(json, format!("\"{}\"", s.as_str()));
            assert_eq!(s.as_str().parse::<ServerStrategy>().unwrap(), *s);
        }
        assert!("best".parse::<ClientStrategy>().is_err());
    }
}
