//! A scenario: everything that fixes one closed world — the era and transport, the server's
//! strategy, page size and initial catalog, the clients and their strategies, the
//! administrator's scripted batches, authorization changes and tool calls, and the fault
//! budgets. Model configurations, simulator runs and traces are all scenarios.

use crate::aggregate::{self, Member};
use crate::client::ClientConfig;
use crate::history::ClientId;
use crate::property::{Property, Verdict, Verdicts};
use crate::server::ServerConfig;
use crate::strategy::{ClientStrategy, ServerStrategy};
use crate::vocab::{AuthCtx, Era, Name, Op};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// How messages travel between a client and the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// One ordered pipe each way: responses and notifications share the server's pipe (FIFO).
    Stdio,
    /// Streamable HTTP: each request is its own POST, so requests and responses may overtake
    /// one another; notifications travel in order on their own stream (the GET stream, or a
    /// `subscriptions/listen` stream).
    Http,
}

/// Fault budgets: how many times the network may misbehave in one run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Faults {
    /// Notifications that may be delivered twice.
    #[serde(default)]
    pub duplicate: u32,
    /// Notifications that may be lost.
    #[serde(default)]
    pub drop: u32,
    /// Client connections that may be cut (the client reconnects).
    #[serde(default)]
    pub disconnect: u32,
    /// Tool calls that may fail in the server's place with an internal error (an error that is
    /// not a list change).
    #[serde(default)]
    pub call_error: u32,
    /// List requests (any kind's list, a page of a walk) that may fail in the server's place with
    /// an internal error: the client keeps the refresh running and retries it after a back-off.
    /// (Left out of the JSON when 0, so traces written before it existed read the same.)
    #[serde(default, skip_serializing_if = "is_zero")]
    pub list_error: u32,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// One closed world.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Scenario {
    /// Name (a model configuration's name, or a simulator run's label).
    pub name: String,
    /// Protocol era.
    pub era: Era,
    /// Transport.
    pub transport: Transport,
    /// Server settings.
    pub server: ServerConfig,
    /// The catalog before anything happens.
    pub initial: Vec<Op>,
    /// The clients.
    pub clients: Vec<ClientConfig>,
    /// Batches the administrator applies, in this order, each at any moment.
    #[serde(default)]
    pub script: Vec<Vec<Op>>,
    /// Authorization switches, in this order, each at any moment.
    #[serde(default)]
    pub auth_changes: Vec<(ClientId, AuthCtx)>,
    /// Tool calls the applications make, each at any moment.
    #[serde(default)]
    pub calls: Vec<(ClientId, Name)>,
    /// Approvals the users give (a client and a tool, approved as that client lists it then),
    /// each at any moment.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<(ClientId, Name)>,
    /// Fault budgets.
    #[serde(default)]
    pub faults: Faults,
    /// Several server nodes behind one logical server, sharing a versioned catalog store and a
    /// change bus (absent: one server that commits by itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<Cluster>,
    /// One application connected to several servers, one client per server (absent: each
    /// client is an application of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregate: Option<Aggregate>,
}

/// One application that connects to several servers and shows their tools in one combined
/// listing (docs/design.md, "Many servers in one client"). Client `i` is its connection to
/// server `i`; every client runs the same strategy, which also decides the prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Aggregate {
    /// Per client: the key the application configured for its server and the
    /// `serverInfo.name` that server reports.
    pub members: Vec<Member>,
    /// Calls the application makes under names of its combined listing (each name it shows
    /// at that moment may be the one called).
    #[serde(default)]
    pub calls: u8,
}

/// Most servers one application connects to in a scenario.
pub const MAX_MEMBERS: usize = 16;

/// A multi-node deployment: every node keeps a local copy of the shared catalog, learns of new
/// versions from a bus that may duplicate, reorder and lose events, catches up by reading the
/// store when it missed one, and notifies its own clients after the new version is visible
/// locally.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Cluster {
    /// Number of nodes (1-16).
    pub nodes: u8,
    /// Node each client connects to first (default: round robin).
    #[serde(default)]
    pub client_nodes: Vec<u8>,
    /// Node each scripted batch is applied through (default: round robin).
    #[serde(default)]
    pub batch_nodes: Vec<u8>,
    /// Bus events that may be delivered twice.
    #[serde(default)]
    pub bus_duplicate: u32,
    /// Bus events that may be lost (the node catches up by reading the store).
    #[serde(default)]
    pub bus_drop: u32,
    /// Client connections that may move to another node (load balancer).
    #[serde(default)]
    pub migrate: u32,
}

impl Cluster {
    /// The node client `c` connects to first.
    pub fn node_of_client(&self, c: usize) -> u8 {
        self.client_nodes
            .get(c)
            .copied()
            .unwrap_or((c % usize::from(self.nodes.max(1))) as u8)
    }

    /// The node scripted batch `b` is applied through.
    pub fn node_of_batch(&self, b: usize) -> u8 {
        self.batch_nodes
            .get(b)
            .copied()
            .unwrap_or((b % usize::from(self.nodes.max(1))) as u8)
    }
}

impl Scenario {
    /// The client strategy (of the first client; configs use one strategy for all).
    pub fn client_strategy(&self) -> ClientStrategy {
        self.clients
            .first()
            .map(|c| c.strategy)
            .unwrap_or(ClientStrategy::Reference)
    }

    /// The server strategy.
    pub fn server_strategy(&self) -> ServerStrategy {
        self.server.strategy
    }

    /// The authorization contexts that appear in this scenario.
    pub fn auth_contexts(&self) -> BTreeSet<AuthCtx> {
        let mut s: BTreeSet<AuthCtx> = self.clients.iter().map(|c| c.auth).collect();
        s.extend(self.auth_changes.iter().map(|(_, a)| *a));
        s
    }

    /// Which properties can be judged in this scenario: `listen_then_list` only in 2026-07-28,
    /// `auth_isolation` only with scoped items, `no_call_to_removed` only with tool calls.
    pub fn applicable(&self, p: Property) -> bool {
        match p {
            Property::ListenThenList => self.era == Era::V2026_07_28,
            Property::AuthIsolation => {
                let scoped = |ops: &[Op]| {
                    ops.iter().any(|o| {
                        matches!(o, Op::Add { scope, .. } if *scope != crate::vocab::Scope::Public)
                    })
                };
                scoped(&self.initial) || self.script.iter().any(|b| scoped(b))
            }
            Property::NoCallToRemoved
            | Property::ErrorsNotChanges
            | Property::ConsumersAgree
            | Property::NoStaleArguments => self.makes_calls(),
            Property::NoNameCollision => self.aggregate.is_some(),
            Property::ApprovalNotInherited => {
                !self.calls.is_empty() && self.clients.iter().any(|c| c.ask_approval)
            }
            _ => true,
        }
    }

    /// Whether any application calls a tool (scripted calls, or calls through a combined
    /// listing).
    pub fn makes_calls(&self) -> bool {
        !self.calls.is_empty() || self.aggregate.as_ref().is_some_and(|a| a.calls > 0)
    }

    /// Verdicts with inapplicable properties replaced by n/a.
    pub fn mask(&self, verdicts: &Verdicts) -> Verdicts {
        verdicts
            .iter()
            .map(|(p, v)| {
                let v = if self.applicable(*p) {
                    *v
                } else {
                    Verdict::NotApplicable
                };
                (*p, v)
            })
            .collect()
    }

    /// Checks the scenario for mistakes a person could make in a file; returns what is wrong.
    pub fn validate(&self) -> Result<(), String> {
        if self.clients.is_empty() {
            return Err("a scenario needs at least one client".into());
        }
        if self.clients.len() > 10_000_000 {
            return Err(format!("too many clients ({})", self.clients.len()));
        }
        for (i, c) in self.clients.iter().enumerate() {
            if c.era != self.era {
                return Err(format!(
                    "client {i} speaks {} but the scenario is {}",
                    c.era, self.era
                ));
            }
            if c.kinds.is_empty() {
                return Err(format!("client {i} keeps no list"));
            }
        }
        if self.server.era != self.era {
            return Err(format!(
                "server speaks {} but the scenario is {}",
                self.server.era, self.era
            ));
        }
        let n = self.clients.len();
        if let Some((c, _)) = self.auth_changes.iter().find(|(c, _)| *c as usize >= n) {
            return Err(format!(
                "auth change for client {c}, but there are only {n} clients"
            ));
        }
        if let Some((c, _)) = self.calls.iter().find(|(c, _)| *c as usize >= n) {
            return Err(format!(
                "tool call by client {c}, but there are only {n} clients"
            ));
        }
        if let Some(cl) = &self.cluster {
            if cl.nodes == 0 || cl.nodes > 16 {
                return Err(format!("a cluster has 1 to 16 nodes, not {}", cl.nodes));
            }
            if let Some(n) = cl
                .client_nodes
                .iter()
                .chain(&cl.batch_nodes)
                .find(|n| **n >= cl.nodes)
            {
                return Err(format!(
                    "node {n} does not exist (the cluster has {} nodes)",
                    cl.nodes
                ));
            }
        }
        if let Some((c, _)) = self.approvals.iter().find(|(c, _)| *c as usize >= n) {
            return Err(format!(
                "approval by the user of client {c}, but there are only {n} clients"
            ));
        }
        if self.calls.len() > usize::from(u8::MAX) + 1
            || self.approvals.len() > usize::from(u8::MAX) + 1
        {
            return Err("at most 256 scripted tool calls and 256 approvals".into());
        }
        if self.script.len() > usize::from(u8::MAX) + 1
            || self.auth_changes.len() > usize::from(u8::MAX) + 1
        {
            return Err("at most 256 scripted batches and 256 auth changes".into());
        }
        if let Some(a) = &self.aggregate {
            if a.members.len() != n || n > MAX_MEMBERS {
                return Err(format!(
                    "an application with several servers names one server per client \
                     (at most {MAX_MEMBERS}); {} servers for {n} clients",
                    a.members.len()
                ));
            }
            aggregate::check_members(&a.members)?;
            let s = self.client_strategy();
            if self.clients.iter().any(|c| c.strategy != s) {
                return Err("the clients of one application run one strategy".into());
            }
            if self
                .clients
                .iter()
                .any(|c| c.ask_approval || c.calls_by_name)
            {
                return Err(
                    "an application with several servers asks no approvals and calls through \
                     its combined listing"
                        .into(),
                );
            }
        }
        Ok(())
    }
}
