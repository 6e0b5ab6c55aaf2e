//! The named model configurations `listsync check` runs, each a small closed world with its
//! expected verdicts. Reference configurations must hold every applicable property, explored
//! exhaustively; each known-bad configuration puts one shipped bug in the same world and must be
//! caught. The table in `model/README.md` documents each with its state count and time.

use crate::Search;
use listsync_core::aggregate::Member;
use listsync_core::client::{ClientConfig, Limits, Pacing};
use listsync_core::history::ClientId;
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::scenario::{Aggregate, Cluster, Faults, Scenario, Transport};
use listsync_core::server::ServerConfig;
use listsync_core::situation::Situation;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Op, Scope};

/// One named configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The world.
    pub scenario: Scenario,
    /// What it demonstrates.
    pub about: &'static str,
    /// How to explore it.
    pub search: Search,
    /// Properties expected to be violated (every other applicable one must hold).
    pub violates: &'static [Property],
    /// Situations the exploration must reach for its verdicts to mean something.
    pub situations: &'static [Situation],
}

impl Config {
    /// The configuration's name.
    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    /// Expected verdict of every property.
    pub fn expected(&self) -> Verdicts {
        let v = Property::ALL
            .into_iter()
            .map(|p| {
                let v = if self.violates.contains(&p) {
                    Verdict::Violated
                } else {
                    Verdict::Holds
                };
                (p, v)
            })
            .collect();
        self.scenario.mask(&v)
    }

    /// Whether this is a reference configuration (every strategy `reference`).
    pub fn is_reference(&self) -> bool {
        self.violates.is_empty()
    }
}

fn tools(ops: &[(&str, &str)]) -> Vec<Op> {
    ops.iter()
        .map(|(n, d)| Op::add(Kind::Tools, n, d))
        .collect()
}

struct Spec {
    name: &'static str,
    era: Era,
    transport: Transport,
    server: ServerStrategy,
    client: ClientStrategy,
    clients: usize,
    page_size: u16,
    initial: Vec<Op>,
    script: Vec<Vec<Op>>,
    pacing: Pacing,
    retain_versions: u8,
}

impl Spec {
    fn new(name: &'static str) -> Spec {
        Spec {
            name,
            era: Era::V2025_11_25,
            transport: Transport::Stdio,
            server: ServerStrategy::Reference,
            client: ClientStrategy::Reference,
            clients: 1,
            page_size: 1,
            initial: tools(&[("a", "a1"), ("b", "b1")]),
            script: vec![
                vec![Op::add(Kind::Tools, "c", "c1")],
                vec![Op::remove(Kind::Tools, "a")],
                vec![Op::update(Kind::Tools, "b", "b2")],
            ],
            // The reference client's default pacing; a server that refuses every cursor of an
            // earlier version (the walk restarts), as the reference server does with
            // `retain_versions` 0.
            pacing: Pacing::default(),
            retain_versions: 0,
        }
    }

    /// A known-bad configuration: the client does not pace (the bug is what it shows, and its
    /// counterexample stays one the harness replays step by step).
    fn bad(name: &'static str) -> Spec {
        Spec {
            pacing: Pacing::OFF,
            ..Spec::new(name)
        }
    }

    fn build(self) -> Scenario {
        let client = ClientConfig {
            limits: Limits {
                max_restarts: 3,
                max_retries: 2,
                ..Limits::default()
            },
            pacing: self.pacing,
            ..ClientConfig::tools(self.client, self.era)
        };
        Scenario {
            name: self.name.into(),
            era: self.era,
            transport: self.transport,
            server: ServerConfig {
                strategy: self.server,
                era: self.era,
                page_size: self.page_size,
                ttl_ms: (self.era == Era::V2026_07_28).then_some(60_000),
                catalog_id: 1,
                retain_versions: self.retain_versions,
                notify_on_list: false,
            },
            initial: self.initial,
            clients: vec![client; self.clients],
            script: self.script,
            auth_changes: Vec::new(),
            calls: Vec::new(),
            approvals: Vec::new(),
            faults: Faults::default(),
            cluster: None,
            aggregate: None,
        }
    }
}

fn cfg(scenario: Scenario, about: &'static str, violates: &'static [Property]) -> Config {
    Config {
        situations: must_reach(&scenario.name),
        scenario,
        about,
        search: Search::Bfs,
        violates,
    }
}

/// The situations each configuration must reach: the races its verdicts are about.
fn must_reach(name: &str) -> &'static [Situation] {
    use Situation::*;
    match name {
        "reference" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
        ],
        // Not `response_overtakes_response`: against version-bound cursors the reference client
        // keeps one list request in flight per list (a notification mid-walk no longer restarts
        // the walk), so two responses cannot race; naive clients reach it below.
        "reference-http" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
        ],
        "reference-2026" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            ChangeWhileAckInFlight,
            TtlExpiryRefetch,
        ],
        "reference-2026-lossy" => &[NotifyDuringRefresh, TtlExpiryRefetch],
        "reference-multi-client" => &[NotifyDuringRefresh, BurstDuringRefresh],
        "reference-auth" => &[NotifyDuringRefresh, AuthSwitchDuringRefresh],
        "reference-resources" => &[ContentUpdateInFlight, NotifyDuringRefresh],
        "reference-faults" => &[
            NotifyMidWalk,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
        // Not `call_failed_otherwise`: its predicate (an internal error on its way to a client)
        // holds here too, but what it names is a failed tool call, and no tool is called.
        "reference-list-errors" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            RetryArmed,
        ],
        "reference-errors" => &[CallRefusedAsGone, CallFailedOtherwise],
        "reference-known-tools" => &[CallInFlightDuringRemoval],
        "reference-approvals" => &[ApprovedDefinitionChanged, CallWaitsForSettle],
        "reference-schema-change" => &[CallInFlightDuringSchemaChange],
        "reference-migration" => &[CallInFlightDuringRemoval],
        "reference-cluster" => &[NotifyDuringRefresh, BurstDuringRefresh, NodeBehindStore],
        "reference-cluster-migrate" => &[NodeBehindStore, CursorRefusedAfterChange],
        "naive" | "request-id-guard" => &[BurstDuringRefresh, ResponseOvertakesResponse],
        "clear-then-fetch"
        | "first-page-only"
        | "flag-cleared-after-await"
        | "lying-client"
        | "notify-before-commit" => &[NotifyDuringRefresh],
        "listen-without-relist" => &[ChangeWhileAckInFlight],
        "notify-per-mutation" => &[BurstDuringRefresh],
        "offset-cursor" => &[NotifyMidWalk, ResponseOvertakesResponse],
        "stale-dispatch" | "lying-registry" => &[CallInFlightDuringRemoval],
        "cluster-notify-before-visible" => &[NodeBehindStore],
        "notify-on-noop" => &[NotifyDuringRefresh],
        "refresh-on-any-error" => &[CallFailedOtherwise],
        "two-registries" | "known-tools-survive" => &[NotifyDuringRefresh],
        "approval-by-name" => &[ApprovedDefinitionChanged],
        "unvalidated-dispatch" => &[CallInFlightDuringSchemaChange],
        "reference-two-servers" | "prefix-from-server-info" => &[OneNameTwoServers],
        "reference-burst" | "reference-burst-paced" => &[
            NotifyMidWalk,
            BurstDuringRefresh,
            DuplicateNotificationInFlight,
        ],
        "reference-burst-unbound" => &[NotifyMidWalk, BurstDuringRefresh],
        "reference-large" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
        "reference-large-pair" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
        ],
        "reference-large-2026" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            ChangeWhileAckInFlight,
            TtlExpiryRefetch,
        ],
        "reference-large-http" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
        ],
        "deep-clients" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            DuplicateNotificationInFlight,
            CutWithChangePending,
        ],
        "deep-auth" => &[
            NotifyMidWalk,
            BurstDuringRefresh,
            CallInFlightDuringRemoval,
            CursorRefusedAfterChange,
            AuthSwitchDuringRefresh,
            CutWithChangePending,
        ],
        "deep-cluster" => &[
            NotifyDuringRefresh,
            NotifyMidWalk,
            BurstDuringRefresh,
            CursorRefusedAfterChange,
            NodeBehindStore,
        ],
        other => panic!("configuration {other} names no situation it must reach"),
    }
}

/// Every configuration, in report order: reference configurations first, then one per
/// known-bad strategy.
pub fn all() -> Vec<Config> {
    use Property::*;
    let mut out = Vec::new();

    // ---- reference configurations --------------------------------------------------------
    let mut s = Spec::new("reference").build();
    s.calls = vec![(0, "a".into())];
    s.faults.duplicate = 1;
    out.push(cfg(
        s,
        "2025-11-25 over stdio: two-page lists, three batches (add, remove, update), a call to the tool being removed, one duplicated notification",
        &[],
    ));

    let mut s = Spec::new("reference-http");
    s.transport = Transport::Http;
    out.push(cfg(
        s.build(),
        "2025-11-25 over Streamable HTTP: requests and responses overtake one another, notifications on their own stream; two-page lists, three batches",
        &[],
    ));

    let mut s = Spec::new("reference-2026");
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    out.push(cfg(
        s.build(),
        "2026-07-28 stateless over HTTP: listen, acknowledgement, list after it; two-page lists, three batches",
        &[],
    ));

    let mut s = Spec::new("reference-2026-lossy");
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    s.script.truncate(2);
    let mut s = s.build();
    s.faults.drop = 1;
    out.push(cfg(
        s,
        "2026-07-28 with a lost notification: the list's ttlMs runs out and the client re-fetches, so it still converges",
        &[],
    ));

    let mut s = Spec::new("reference-multi-client");
    s.clients = 3;
    s.page_size = 0;
    s.script.truncate(2);
    let mut c = cfg(
        s.build(),
        "three interchangeable clients on stdio (symmetry-reduced DFS), two batches",
        &[],
    );
    c.search = Search::DfsSymmetric;
    out.push(c);

    let mut s = Spec::new("reference-auth");
    s.page_size = 0;
    s.script = vec![
        vec![Op::Add {
            kind: Kind::Tools,
            name: "s".into(),
            def: "s1".into(),
            scope: Scope::Only(AuthCtx(1)),
        }],
        // A rebuild that leaves every list as it was: no version, no notification.
        vec![Op::update(Kind::Tools, "a", "a1")],
    ];
    let mut s = s.build();
    s.initial.push(Op::Add {
        kind: Kind::Tools,
        name: "t".into(),
        def: "t1".into(),
        scope: Scope::Only(AuthCtx(1)),
    });
    s.auth_changes = vec![(0, AuthCtx(1)), (0, AuthCtx(0))];
    // The application calls the auth1-only tool by name at any moment, listed or not: under
    // auth0 the server must refuse it (judged by the world, from its own catalog).
    s.calls = vec![(0, "t".into())];
    s.clients[0].calls_by_name = true;
    out.push(cfg(
        s,
        "two authorization contexts: the client switches to auth1 and back while items scoped to auth1 are added, and calls an auth1-only tool at any moment; caches are per context, calls answered per context; a rebuild that changes nothing, and a change only auth1 sees, are announced only to whom they change something",
        &[],
    ));

    let mut s = Spec::new("reference-resources");
    s.page_size = 0;
    s.initial = vec![
        Op::add(Kind::Resources, "file:///r1", "r1"),
        Op::add(Kind::Tools, "a", "a1"),
    ];
    s.script = vec![
        vec![Op::SetContent {
            uri: "file:///r1".into(),
            text: "hello".into(),
        }],
        vec![Op::add(Kind::Resources, "file:///r2", "r2")],
    ];
    let mut s = s.build();
    s.clients[0].kinds = KindSet::only(Kind::Resources);
    s.clients[0].watch = vec!["file:///r1".into()];
    out.push(cfg(
        s,
        "resources: a content change (resources/updated to the subscriber) and a list change (list_changed) are told apart",
        &[],
    ));

    let mut s = Spec::new("reference-faults");
    s.script.truncate(2);
    let mut s = s.build();
    s.faults = Faults {
        duplicate: 1,
        drop: 0,
        disconnect: 1,
        call_error: 0,
        list_error: 0,
    };
    out.push(cfg(
        s,
        "two pages, two batches, a duplicated notification and a cut connection (reconnect, re-initialize, re-list)",
        &[],
    ));

    let mut s = Spec::new("reference-list-errors");
    s.script.truncate(2);
    let mut s = s.build();
    s.faults.list_error = 2;
    out.push(cfg(
        s,
        "two pages, two batches, and two list requests (any page of any walk) that fail with an internal error: the client keeps the refresh running and retries it after a back-off, a second failure backing off again, and still converges",
        &[],
    ));

    let mut s = Spec::new("reference-errors");
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "b".into())];
    s.faults.call_error = 1;
    out.push(cfg(
        s,
        "errors are not changes: a call to a tool being removed is refused as unknown (one re-list of tools, only while the snapshot still lists it), and a call that fails with an internal error starts no refresh",
        &[],
    ));

    let mut s = Spec::new("reference-known-tools");
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("k", "k1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "k")],
        vec![Op::add(Kind::Tools, "c", "c1")],
    ];
    let mut s = s.build();
    s.clients[0].known = vec!["k".into()];
    s.calls = vec![(0, "k".into()), (0, "c".into())];
    out.push(cfg(
        s,
        "one snapshot for every consumer: the application preloads tool k, which the server then removes, and adds c; calls of k and c at any moment are routed exactly when the published list shows the tool (k before the first list too)",
        &[],
    ));

    let mut s = Spec::new("reference-approvals");
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("r", READ_ONLY)]);
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", "a2")],
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::add(Kind::Tools, "a", "a3")],
    ];
    let mut s = s.build();
    s.clients[0].ask_approval = true;
    s.approvals = vec![(0, "a".into())];
    s.calls = vec![(0, "a".into()), (0, "r".into())];
    out.push(cfg(
        s,
        "approval is never inherited: the user approves tool a (side effects) as listed at any moment, while a's definition changes, a is removed, and a new a takes its name; calls of a and of the read-only r at any moment go out only under an approval of the definition listed, and wait while a change is announced and not yet listed",
        &[],
    ));

    let mut s = Spec::new("reference-schema-change");
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", A_X_REWORDED)],
        vec![Op::update(Kind::Tools, "a", A_Y)],
    ];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "a".into())];
    out.push(cfg(
        s,
        "the schema-change race: tool a's description is reworded (same input schema), then its input schema changes; calls built against whatever the client lists run only if their arguments fit the current schema, else -32602 names the change and the client lists tools once",
        &[],
    ));

    let mut s = Spec::new("reference-migration");
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![
        vec![Op::add(Kind::Tools, "a_v2", A_Y)],
        vec![Op::remove(Kind::Tools, "a")],
    ];
    let mut s = s.build();
    s.calls = vec![(0, "a".into()), (0, "a_v2".into())];
    out.push(cfg(
        s,
        "the versioned migration: add a_v2 with the new input schema, move callers over, then remove a; no tool's schema changes under a name, so no call's arguments go stale",
        &[],
    ));

    let mut s = Spec::new("reference-two-servers");
    s.clients = 2;
    s.page_size = 0;
    s.initial = tools(&[("read", "r1"), ("a", "a1")]);
    s.script = vec![vec![
        Op::add(Kind::Tools, "b", "b1"),
        Op::remove(Kind::Tools, "a"),
    ]];
    let mut s = two_servers(s.build());
    s.aggregate.as_mut().expect("two servers").calls = 2;
    out.push(cfg(
        s,
        "one application, two servers that both report serverInfo.name \"files\" and list the same tool names (two sessions of one registry, as two instances of one server program): the combined listing names every tool of both, and two calls of any names it shows at any moment each reach the server it named, while one batch adds a tool and removes another",
        &[],
    ));

    let mut s = Spec::new("reference-cluster");
    s.clients = 2;
    s.page_size = 0;
    s.script.truncate(2);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0, 1],
        bus_duplicate: 1,
        bus_drop: 1,
        migrate: 0,
    });
    out.push(cfg(
        s,
        "two nodes sharing a versioned store; a bus that duplicates, reorders and loses events (nodes catch up by reading the store); one client per node; two batches through different nodes",
        &[],
    ));

    let mut s = Spec::new("reference-cluster-migrate");
    s.clients = 2;
    s.page_size = 1;
    s.script.truncate(1);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0],
        migrate: 1,
        ..Cluster::default()
    });
    out.push(cfg(
        s,
        "two nodes; a client moved to the other node (which may lag behind) mid-walk: its cursor is refused there, and an older list never replaces a newer one",
        &[],
    ));

    let mut s = Spec::new("reference-large");
    three_pages_four_batches(&mut s);
    let mut s = s.build();
    duplicate_cut_and_call(&mut s, 0);
    out.push(cfg(
        s,
        "three-page lists through four batches (add, remove, update, add), a call to the tool being removed, a duplicated notification and a cut connection",
        &[],
    ));

    let mut s = Spec::new("reference-large-pair");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script.truncate(3);
    let mut c = cfg(
        s.build(),
        "two interchangeable clients (symmetry-reduced DFS) walking three-page lists through three batches (add, remove, update)",
        &[],
    );
    c.search = Search::DfsSymmetric;
    out.push(c);

    let mut s = Spec::new("reference-large-2026");
    three_pages_four_batches(&mut s);
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "2026-07-28 stateless over HTTP at size: listen, acknowledgement and three-page walks through four batches (add, remove, update, add), a call to the tool being removed",
        &[],
    ));

    let mut s = Spec::new("reference-large-http");
    three_pages_four_batches(&mut s);
    s.transport = Transport::Http;
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "2025-11-25 over Streamable HTTP at size: requests, responses and notifications overtake one another through three-page walks and four batches, a call to the tool being removed",
        &[],
    ));

    // ---- walks under a burst of commits (docs/design.md, "Version-bound walks", "Pacing") ---
    let mut s = Spec::new("reference-burst");
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
        vec![Op::add(Kind::Tools, "d", "d1")],
    ];
    s.pacing = Pacing::OFF;
    s.retain_versions = 1;
    out.push(cfg(
        s.build(),
        "a server that keeps serving through a burst of three commits, cursors version-bound and declared so (one earlier walk version retained): a notification mid-walk does not restart the walk; it is finished, published if newer, and followed by one more walk (pacing off)",
        &[],
    ));

    let mut s = Spec::new("reference-burst-unbound");
    s.server = ServerStrategy::OffsetCursor;
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
    ];
    s.pacing = Pacing::OFF;
    out.push(cfg(
        s.build(),
        "the same burst from a server that promises nothing (bare offset cursors, no version) over stdio, where a notification always precedes the pages cut after its commit: restarting the walk on the notification keeps every snapshot untorn",
        &[],
    ));

    let mut s = Spec::new("reference-burst-paced");
    s.transport = Transport::Http;
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "c", "c2")],
        vec![Op::add(Kind::Tools, "d", "d1")],
    ];
    s.retain_versions = 1;
    let mut s = s.build();
    s.faults.duplicate = 1;
    out.push(cfg(
        s,
        "the burst over Streamable HTTP with the default pacing (adaptive gap, storm back-off) and a duplicated notification: walks held back by a pacing timer that fires at any moment still converge and never lose a wake-up",
        &[],
    ));

    // ---- known-bad client strategies -------------------------------------------------------
    let mut s = Spec::bad("naive");
    s.client = ClientStrategy::Naive;
    s.transport = Transport::Http;
    s.page_size = 0;
    out.push(cfg(
        s.build(),
        "one refresh per notification, last response wins: responses overtake and an older list replaces a newer one",
        &[NoStaleOverwrite, Converges, BoundedRefresh],
    ));

    let mut s = Spec::bad("clear-then-fetch");
    s.client = ClientStrategy::ClearThenFetch;
    s.page_size = 0;
    s.script.truncate(1);
    out.push(cfg(
        s.build(),
        "clearing the list on notification publishes an empty flash",
        &[NoTornSnapshot],
    ));

    let mut s = Spec::bad("first-page-only");
    s.client = ClientStrategy::FirstPageOnly;
    s.script.truncate(1);
    out.push(cfg(
        s.build(),
        "a refresh that keeps only the first page publishes part of the list",
        &[NoTornSnapshot, Converges],
    ));

    let mut s = Spec::bad("request-id-guard");
    s.client = ClientStrategy::RequestIdGuard;
    s.transport = Transport::Http;
    s.page_size = 0;
    out.push(cfg(
        s.build(),
        "guarding by the client's request counter: a later request served earlier wins over a newer list",
        &[NoStaleOverwrite, BoundedRefresh],
    ));

    let mut s = Spec::bad("flag-cleared-after-await");
    s.client = ClientStrategy::FlagClearedAfterAwait;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    out.push(cfg(
        s.build(),
        "the dirty flag cleared after the refresh's await loses a notification that arrived during it",
        &[NoLostWakeup, Converges],
    ));

    let mut s = Spec::bad("listen-without-relist");
    s.client = ClientStrategy::ListenWithoutRelist;
    s.era = Era::V2026_07_28;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    // Without a ttlMs to fall back on, the missed change is never fetched.
    s.server.ttl_ms = None;
    out.push(cfg(
        s,
        "listing before the listen stream is acknowledged, and not after, misses a change in between",
        &[ListenThenList, Converges, NoLostWakeup],
    ));

    let mut s = Spec::bad("lying-client");
    s.client = ClientStrategy::LyingClient;
    s.transport = Transport::Http;
    s.page_size = 0;
    s.script.truncate(1);
    out.push(cfg(
        s.build(),
        "a client whose readers keep its older list while its events name the newer one, and that reports none of its walks: judged from what its readers read and from its requests on the wire, it never converges",
        &[Converges],
    ));

    // ---- known-bad server strategies -------------------------------------------------------
    let mut s = Spec::bad("notify-before-commit");
    s.server = ServerStrategy::NotifyBeforeCommit;
    s.page_size = 0;
    s.script.truncate(1);
    out.push(cfg(
        s.build(),
        "list_changed sent before the commit: the client re-lists, sees the old list, and is never told again (its refresh began after the change was committed, so no wake-up was lost: the server's fault, not the client's)",
        &[NotifyAfterCommit, Converges],
    ));

    let mut s = Spec::bad("offset-cursor");
    s.server = ServerStrategy::OffsetCursor;
    s.transport = Transport::Http;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    out.push(cfg(
        s.build(),
        "bare offset cursors and no version: a removal between two pages makes the walk skip an item",
        &[NoTornSnapshot],
    ));

    let mut s = Spec::bad("notify-per-mutation");
    s.server = ServerStrategy::NotifyPerMutation;
    s.page_size = 0;
    s.script = vec![vec![
        Op::add(Kind::Tools, "c", "c1"),
        Op::remove(Kind::Tools, "a"),
    ]];
    out.push(cfg(
        s.build(),
        "one list_changed per mutation of a batch: a batch of two sends two",
        &[BoundedRefresh],
    ));

    let mut s = Spec::bad("stale-dispatch");
    s.server = ServerStrategy::StaleDispatch;
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "dispatch through the session's captured tool table runs a tool the registry no longer has",
        &[NoCallToRemoved],
    ));

    let mut s = Spec::bad("cluster-notify-before-visible");
    s.server = ServerStrategy::ClusterNotifyBeforeVisible;
    s.clients = 2;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0],
        ..Cluster::default()
    });
    out.push(cfg(
        s,
        "a node that notifies its clients on the bus event before loading the new version: they re-list, see the old one, and are not told again",
        &[NotifyAfterCommit, Converges],
    ));

    let mut s = Spec::bad("lying-registry");
    s.server = ServerStrategy::LyingRegistry;
    s.page_size = 0;
    s.script = vec![vec![Op::remove(Kind::Tools, "a")]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "a registry that notifies before commit and runs a removed tool while claiming the announced version is visible and the tool present: the world's observer judges the wire, so both are caught",
        &[NotifyAfterCommit, NoCallToRemoved, Converges],
    ));

    let mut s = Spec::bad("notify-on-noop");
    s.server = ServerStrategy::NotifyOnNoop;
    s.page_size = 0;
    s.initial.push(Op::add(Kind::Prompts, "p", "p1"));
    s.script = vec![
        vec![Op::update(Kind::Tools, "a", "a1")],
        vec![Op::add(Kind::Tools, "c", "c1")],
    ];
    let mut s = s.build();
    s.clients[0].kinds = [Kind::Tools, Kind::Prompts].into_iter().collect();
    out.push(cfg(
        s,
        "a server that announces every list after every batch: a rebuild that changes nothing, and a tool added, send prompts/list_changed too, for a prompts list that did not change (over stdio, so the harness replays it)",
        &[NoSpuriousNotify],
    ));

    let mut s = Spec::bad("refresh-on-any-error");
    s.client = ClientStrategy::RefreshOnAnyError;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    s.faults.call_error = 1;
    out.push(cfg(
        s,
        "a client that lists tools again after any failed call: a call that fails with an internal error (no list changed) starts a refresh (over stdio)",
        &[ErrorsNotChanges],
    ));

    let mut s = Spec::bad("two-registries");
    s.client = ClientStrategy::TwoRegistries;
    s.page_size = 0;
    s.script.truncate(1);
    let mut s = s.build();
    s.calls = vec![(0, "c".into())];
    out.push(cfg(
        s,
        "a call router with a tool registry of its own, filled once: after c is added and listed, the application's listing shows c and the router refuses to call it",
        &[ConsumersAgree],
    ));

    let mut s = Spec::bad("known-tools-survive");
    s.client = ClientStrategy::KnownToolsSurvive;
    s.page_size = 0;
    s.initial = tools(&[("a", "a1"), ("k", "k1")]);
    s.script = vec![vec![Op::remove(Kind::Tools, "k")]];
    let mut s = s.build();
    s.clients[0].known = vec!["k".into()];
    s.calls = vec![(0, "k".into())];
    out.push(cfg(
        s,
        "preloaded tools that survive every refresh: after the server removes k and the client has listed without it, the router still sends calls of k",
        &[NoCallToRemoved, ConsumersAgree],
    ));

    let mut s = Spec::bad("approval-by-name");
    s.client = ClientStrategy::ApprovalByName;
    s.page_size = 0;
    s.script = vec![vec![Op::update(Kind::Tools, "a", "a2")]];
    let mut s = s.build();
    s.clients[0].ask_approval = true;
    s.approvals = vec![(0, "a".into())];
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "approvals kept by tool name: the user approves a, a's definition changes, and a call of a goes out under the old approval (the rug pull), or while the change is announced and not yet listed",
        &[ApprovalNotInherited],
    ));

    let mut s = Spec::bad("unvalidated-dispatch");
    s.server = ServerStrategy::UnvalidatedDispatch;
    s.page_size = 0;
    s.initial = tools(&[("a", A_X)]);
    s.script = vec![vec![Op::update(Kind::Tools, "a", A_Y)]];
    let mut s = s.build();
    s.calls = vec![(0, "a".into())];
    out.push(cfg(
        s,
        "a server that runs every call of a tool it has without checking its arguments: a call built for a's old input schema, in flight while the schema changes, runs against the new one",
        &[NoStaleArguments],
    ));

    let mut s = Spec::bad("prefix-from-server-info");
    s.client = ClientStrategy::PrefixFromServerInfo;
    s.clients = 2;
    s.page_size = 0;
    s.initial = tools(&[("read", "r1")]);
    s.script = Vec::new();
    let mut s = two_servers(s.build());
    s.aggregate.as_mut().expect("two servers").calls = 2;
    out.push(cfg(
        s,
        "an application that prefixes each server's tools with the serverInfo.name it reports: two servers both named \"files\" collide, so the combined listing hides one server's read, and a call of files__read reaches whichever server listed last",
        &[NoNameCollision],
    ));

    out
}

/// Makes a two-client scenario one application connected to two servers that both report
/// `serverInfo.name` "files", configured as `alpha` and `beta`. The two servers are two sessions
/// of one registry (two instances of one server program with one catalog, the usual way two
/// servers come to report the same name): the application cannot tell, and what
/// `no_name_collision` judges is which connection a name reaches.
fn two_servers(mut s: Scenario) -> Scenario {
    s.aggregate = Some(Aggregate {
        members: ["alpha", "beta"]
            .map(|key| Member {
                key: key.into(),
                server_name: "files".into(),
            })
            .to_vec(),
        calls: 0,
    });
    s
}

/// Tool `a` taking argument `x`.
const A_X: &str = r#"{"description":"a","inputSchema":{"properties":{"x":{}}}}"#;
/// Tool `a` reworded: the same input schema.
const A_X_REWORDED: &str = r#"{"description":"a, reworded","inputSchema":{"properties":{"x":{}}}}"#;
/// Tool `a` (or its successor) taking argument `y` instead: a new input schema.
const A_Y: &str = r#"{"description":"a","inputSchema":{"properties":{"y":{}}}}"#;

/// A tool definition that declares itself read-only (canonical JSON, as rt builds it).
const READ_ONLY: &str = r#"{"annotations":{"readOnlyHint":true}}"#;

/// Three pages and four batches: add, remove, update, add (the deep suite's script).
fn three_pages_four_batches(s: &mut Spec) {
    s.initial = tools(&[("a", "a1"), ("b", "b1"), ("c", "c1")]);
    s.script = vec![
        vec![Op::add(Kind::Tools, "d", "d1")],
        vec![Op::remove(Kind::Tools, "a")],
        vec![Op::update(Kind::Tools, "b", "b2")],
        vec![Op::add(Kind::Tools, "e", "e1")],
    ];
}

/// One duplicated notification, one cut connection, and client `caller` calling tool `a` (which
/// the script's second batch removes) at any moment.
fn duplicate_cut_and_call(s: &mut Scenario, caller: ClientId) {
    s.faults.duplicate = 1;
    s.faults.disconnect = 1;
    s.calls = vec![(caller, "a".into())];
}

/// The deep suite (`listsync check --deep`): the reference machines in worlds far larger than the
/// default suite's, run by hand and bounded (`--max-states`: none finishes in hours); their
/// figures are committed in reports/model-check.md.
pub fn deep() -> Vec<Config> {
    let mut out = Vec::new();

    let mut s = Spec::new("deep-clients");
    three_pages_four_batches(&mut s);
    s.clients = 3;
    let mut s = s.build();
    s.faults.duplicate = 1;
    s.faults.disconnect = 1;
    let mut c = cfg(
        s,
        "three interchangeable clients (symmetry-reduced DFS) walking three-page lists through four batches, with a duplicated notification and a cut connection",
        &[],
    );
    c.search = Search::DfsSymmetric;
    out.push(c);

    let mut s = Spec::new("deep-auth");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script[3] = vec![Op::Add {
        kind: Kind::Tools,
        name: "s".into(),
        def: "s1".into(),
        scope: Scope::Only(AuthCtx(1)),
    }];
    let mut s = s.build();
    s.auth_changes = vec![(0, AuthCtx(1)), (0, AuthCtx(0))];
    duplicate_cut_and_call(&mut s, 1);
    let mut c = cfg(
        s,
        "two clients (random walks), three-page lists, four batches (the last one seen only by auth1) while client 0 switches to auth1 and back and client 1 calls the tool being removed; a duplicated notification and a cut connection",
        &[],
    );
    // Random walks: a breadth-first frontier of this world outgrows the machine's memory (at
    // depth 12, 0.84M states, it holds 3 GiB), and a bounded depth-first search spends client
    // 1's one call before the client has listed, so the call never meets the removal in the
    // 19M states it explores (nor in any order of the steps tried: natural, reversed, shuffled).
    c.search = Search::Walks;
    out.push(c);

    let mut s = Spec::new("deep-cluster");
    three_pages_four_batches(&mut s);
    s.clients = 2;
    s.script.truncate(3);
    let mut s = s.build();
    s.cluster = Some(Cluster {
        nodes: 2,
        client_nodes: vec![0, 1],
        batch_nodes: vec![0, 1, 0],
        bus_duplicate: 1,
        bus_drop: 1,
        migrate: 1,
    });
    let mut c = cfg(
        s,
        "two nodes (DFS) on a bus that duplicates, reorders and loses events, one client per node walking three-page lists, three batches through both nodes, and a client moved to the other node mid-walk",
        &[],
    );
    c.search = Search::Dfs;
    out.push(c);
    out
}

/// The reference configurations that exercise only how a client keeps its tool list current
/// (and routes the application's calls by it): no approvals, authorization switches, watched
/// resources, several servers or known tools, and small enough to explore in seconds (the large ones are left to
/// `listsync check`). These are the worlds a refresh algorithm written outside listsync is
/// checked in (docs/library.md): the reference client holds every property in each.
pub fn list_refresh() -> Vec<Config> {
    const LARGE: &[&str] = &[
        "reference-large",
        "reference-large-pair",
        "reference-large-2026",
        "reference-large-http",
    ];
    all()
        .into_iter()
        .filter(|c| {
            let s = &c.scenario;
            c.is_reference()
                && !LARGE.contains(&c.name())
                && s.approvals.is_empty()
                && s.auth_changes.is_empty()
                && s.aggregate.is_none()
                && s.clients.iter().all(|k| {
                    k.watch.is_empty() && k.known.is_empty() && !k.ask_approval && !k.calls_by_name
                })
        })
        .collect()
}

/// Looks a configuration up by name (the default suite's, then the deep suite's).
pub fn by_name(name: &str) -> Option<Config> {
    all().into_iter().chain(deep()).find(|c| c.name() == name)
}
