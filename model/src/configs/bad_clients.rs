//! Known-bad client strategies: each puts one bug of a real client (or of the application
//! around it) in the reference world, and must be caught by the properties it names.

use super::Config;
use super::spec::{Spec, tools, two_servers};
use crate::Search;
use listsync_core::property::Property::*;
use listsync_core::scenario::Transport;
use listsync_core::situation::Situation::*;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{Era, Kind, Op};

/// One refresh per notification, the last response winning.
pub(super) fn naive() -> Config {
    let mut s = Spec::bad("naive");
    s.client = ClientStrategy::Naive;
    s.transport = Transport::Http;
    s.page_size = 0;
    Config {
        scenario: s.build(),
        about: "one refresh per notification, last response wins: responses overtake and an older list replaces a newer one",
        search: Search::Bfs,
        violates: &[NoStaleOverwrite, Converges, BoundedRefresh],
        situations: &[BurstDuringRefresh, ResponseOvertakesResponse],
    }
}

/// The list cleared when a notification arrives, before the new one is fetched.
pub(super) fn clear_then_fetch() -> Config {
    let mut s = Spec::bad("clear-then-fetch");
    s.client = ClientStrategy::ClearThenFetch;
    s.page_size = 0;
    s.script.truncate(1);
    Config {
        scenario: s.build(),
        about: "clearing the list on notification publishes an empty flash",
        search: Search::Bfs,
        violates: &[NoTornSnapshot],
        situations: &[NotifyDuringRefresh],
    }
}

/// A refresh that stops after the first page.
pub(super) fn first_page_only() -> Config {
    let mut s = Spec::bad("first-page-only");
    s.client = ClientStrategy::FirstPageOnly;
    s.script.truncate(1);
    Config {
        scenario: s.build(),
        about: "a refresh that keeps only the first page publishes part of the list",
        search: Search::Bfs,
        violates: &[NoTornSnapshot, Converges],
        situations: &[NotifyDuringRefresh],
    }
}

/// Responses ordered by the client's request counter rather than by the list's version.
pub(super) fn request_id_guard() -> Config {
    let mut s = Spec::bad("request-id-guard");
    s.client = ClientStrategy::RequestIdGuard;
    s.transport = Transport::Http;
    s.page_size = 0;
    Config {
        scenario: s.build(),
        about: "guarding by the client's request counter: a later request served earlier wins over a newer list",
        search: Search::Bfs,
        violates: &[NoStaleOverwrite, BoundedRefresh],
        situations: &[BurstDuringRefresh, ResponseOvertakesResponse],
    }
}

/// A dirty flag cleared after the refresh's await, losing a wake-up.
pub(super) fn flag_cleared_after_await() -> Config {
    let mut s = Spec::bad("flag-cleared-after-await");
    s.client = ClientStrategy::FlagClearedAfterAwait;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    Config {
        scenario: s.build(),
        about: "the dirty flag cleared after the refresh's await loses a notification that arrived during it",
        search: Search::Bfs,
        violates: &[NoLostWakeup, Converges],
        situations: &[NotifyDuringRefresh],
    }
}

/// On 2026-07-28, a list taken before the listen stream is acknowledged and never again.
pub(super) fn listen_without_relist() -> Config {
    let mut s = Spec::bad("listen-without-relist");
    s.client = ClientStrategy::ListenWithoutRelist;
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    // Without a ttlMs to fall back on, the missed change is never fetched.
    s.server.ttl_ms = None;
    Config {
        scenario: s,
        about: "listing before the listen stream is acknowledged, and not after, misses a change in between",
        search: Search::Bfs,
        violates: &[ListenThenList, Converges, NoLostWakeup],
        situations: &[ChangeWhileAckInFlight],
    }
}

/// A client whose own reports say it converged while its readers keep an older list.
pub(super) fn lying_client() -> Config {
    let mut s = Spec::bad("lying-client");
    s.client = ClientStrategy::LyingClient;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    Config {
        scenario: s.build(),
        about: "a client whose readers keep its older list while its events name the newer one, and that reports none of its walks: judged from what its readers read and from its requests on the wire, it never converges",
        search: Search::Bfs,
        violates: &[Converges],
        situations: &[NotifyDuringRefresh],
    }
}

/// A refresh started by any failed call, though no list changed.
pub(super) fn refresh_on_any_error() -> Config {
    let mut s = Spec::bad("refresh-on-any-error");
    s.client = ClientStrategy::RefreshOnAnyError;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    s.faults.call_error = 1;
    Config {
        scenario: s,
        about: "a client that lists tools again after any failed call: a call that fails with an internal error (no list changed) starts a refresh (over stdio); judged from the wire, that refresh has no reason before it either, so after a burst's one further refresh it is a second one (bounded_refresh)",
        search: Search::Bfs,
        violates: &[ErrorsNotChanges, BoundedRefresh],
        situations: &[CallFailedOtherwise],
    }
}

/// A call router with a registry of its own, out of step with the published list.
pub(super) fn two_registries() -> Config {
    let mut s = Spec::bad("two-registries");
    s.client = ClientStrategy::TwoRegistries;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.calls = vec![(0, "c".into())];
    Config {
        scenario: s,
        about: "a call router with a tool registry of its own, filled once: after c is added and listed, the application's listing shows c and the router refuses to call it",
        search: Search::Bfs,
        violates: &[ConsumersAgree],
        situations: &[NotifyDuringRefresh],
    }
}

/// Preloaded tools kept after the server removed them.
pub(super) fn known_tools_survive() -> Config {
    let mut s = Spec::bad("known-tools-survive");
    s.client = ClientStrategy::KnownToolsSurvive;
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("k", "k1")]);
    s.script = vec![vec![Op::remove(Kind::Tools, "k")]];
    let mut s = s.build();
    s.clients[0].known = vec!["k".into()];
    s.calls = vec![(0, "k".into())];
    Config {
        scenario: s,
        about: "preloaded tools that survive every refresh: after the server removes k and the client has listed without it, the router still sends calls of k",
        search: Search::Bfs,
        violates: &[NoCallToRemoved, ConsumersAgree],
        situations: &[NotifyDuringRefresh],
    }
}

/// Approvals kept by tool name: the rug pull.
pub(super) fn approval_by_name() -> Config {
    let mut s = Spec::bad("approval-by-name");
    s.client = ClientStrategy::ApprovalByName;
    s.page_size = 0;
    s.script = vec![vec![Op::update(Kind::Tools, "a", "a2")]];
    let mut s = s.build();
    s.clients[0].ask_approval = true;
    s.approvals = vec![(0, "a".into())];
    s.calls = vec![(0, "a".into())];
    Config {
        scenario: s,
        about: "approvals kept by tool name: the user approves a, a's definition changes, and a call of a goes out under the old approval (the rug pull), or while the change is announced and not yet listed",
        search: Search::Bfs,
        violates: &[ApprovalNotInherited],
        situations: &[ApprovedDefinitionChanged],
    }
}

/// Tools prefixed with the name each server reports, which two servers share.
pub(super) fn prefix_from_server_info() -> Config {
    let mut s = Spec::bad("prefix-from-server-info");
    s.client = ClientStrategy::PrefixFromServerInfo;
    s.clients = 2;
    s.page_size = 0;
    s.initial = tools(&[("read", "r1")]);
    s.script = Vec::new();
    let mut s = two_servers(s.build());
    s.aggregate.as_mut().expect("two servers").calls = 2;
    Config {
        scenario: s,
        about: "an application that prefixes each server's tools with the serverInfo.name it reports: two servers both named \"files\" collide, so the combined listing hides one server's read, and a call of files__read reaches whichever server listed last",
        search: Search::Bfs,
        violates: &[NoNameCollision],
        situations: &[OneNameTwoServers],
    }
}
