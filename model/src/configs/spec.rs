//! The building blocks the configurations share: the default world every configuration starts
//! from ([`Spec`]: one reference client on stdio, two tools on two pages, three batches), and the
//! tool definitions, scripts and fault budgets several families use.

use listsync_core::aggregate::Member;
use listsync_core::client::{ClientConfig, Limits, Pacing};
use listsync_core::history::ClientId;
use listsync_core::scenario::{Aggregate, Faults, Scenario, Transport};
use listsync_core::server::ServerConfig;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::vocab::{Era, Kind, Op};

/// Tools added with the given names and definitions.
pub(super) fn tools(ops: &[(&str, &str)]) -> Vec<Op> {
    ops.iter()
        .map(|(n, d)| Op::add(Kind::Tools, n, d))
        .collect()
}

/// A configuration's world before [`Spec::build`]: the fields most configurations change.
pub(super) struct Spec {
    pub(super) name: &'static str,
    pub(super) era: Era,
    pub(super) transport: Transport,
    pub(super) server: ServerStrategy,
    pub(super) client: ClientStrategy,
    pub(super) clients: usize,
    pub(super) page_size: u16,
    pub(super) initial: Vec<Op>,
    pub(super) script: Vec<Vec<Op>>,
    pub(super) pacing: Pacing,
    pub(super) retain_versions: u8,
}

impl Spec {
    pub(super) fn new(name: &'static str) -> Spec {
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
    pub(super) fn bad(name: &'static str) -> Spec {
        Spec {
            pacing: Pacing::OFF,
            ..Spec::new(name)
        }
    }

    pub(super) fn build(self) -> Scenario {
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

/// Makes a two-client scenario one application connected to two servers that both report
/// `serverInfo.name` "files", configured as `alpha` and `beta`. The two servers are two sessions
/// of one registry (two instances of one server program with one catalog, the usual way two
/// servers come to report the same name): the application cannot tell, and what
/// `no_name_collision` judges is which connection a name reaches.
pub(super) fn two_servers(mut s: Scenario) -> Scenario {
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
pub(super) const A_X: &str = r#"{"description":"a","inputSchema":{"properties":{"x":{}}}}"#;
/// Tool `a` reworded: the same input schema.
pub(super) const A_X_REWORDED: &str =
    r#"{"description":"a, reworded","inputSchema":{"properties":{"x":{}}}}"#;
/// Tool `a` (or its successor) taking argument `y` instead: a new input schema.
pub(super) const A_Y: &str = r#"{"description":"a","inputSchema":{"properties":{"y":{}}}}"#;

/// A tool definition that declares itself read-only (canonical JSON, as rt builds it).
pub(super) const READ_ONLY: &str = r#"{"annotations":{"readOnlyHint":true}}"#;

/// Three pages and four batches: add, remove, update, add (the deep suite's script).
pub(super) fn three_pages_four_batches(s: &mut Spec) {
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
pub(super) fn duplicate_cut_and_call(s: &mut Scenario, caller: ClientId) {
    s.faults.duplicate = 1;
    s.faults.disconnect = 1;
    s.calls = vec![(caller, "a".into())];
}
