//! The client machine a world runs: [`ClientMachine`], the contract between a refresh algorithm
//! and the worlds that check it (the model, the simulator, trace replay).
//!
//! A world drives each client by [`ClientMachine::step`] alone (connect, messages from the
//! server, timers, the application's calls) and routes what the step outputs; the queries below
//! are what the world's step enumeration (which timers are armed), its quiescence test and its
//! situations read. [`CatalogClient`] — the reference algorithm and the known-bad strategies —
//! implements it, and so can a client written outside listsync (docs/library.md,
//! `examples/own-strategy`): the same worlds, the same monitor, the same properties.

use crate::client::{Activity, CatalogClient, ClientConfig, ClientInput, ClientOutput, Snapshot};
use crate::history::ClientId;
use crate::vocab::{AuthCtx, Kind};
use std::fmt::Debug;
use std::hash::Hash;
use std::sync::Arc;

/// A client's refresh algorithm as a sans-IO state machine.
///
/// The state is plain data (`Clone + Eq + Hash`): the model checker stores and compares it. Its
/// `Hash` should leave the client's id out, so that interchangeable clients hash alike (the
/// model's symmetry reduction orders clients by it); a hash that includes the id is still
/// sound, it only reduces less.
///
/// What a world judges a client by: the messages it sends (its [`ClientOutput::Send`]s), the
/// list its readers see ([`snapshot_for`](Self::snapshot_for)), and the history events it
/// emits ([`ClientOutput::Event`]: `RefreshStarted`, `Published`, `RefreshEnded` … — the
/// monitor's properties are stated over them, docs/design.md).
pub trait ClientMachine: Clone + Debug + Eq + Hash + Send + Sync + 'static {
    /// A client that has not connected yet. `cfg` is the scenario's configuration of this
    /// client (its era, the lists it keeps, its limits); a machine may ignore what it has no
    /// use for, `cfg.strategy` included.
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self;

    /// Steps the machine with one input, appending its outputs to `out`.
    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>);

    /// This client's id.
    fn id(&self) -> ClientId;

    /// The same client under another id (symmetry reduction renumbers clients).
    fn with_id(&self, id: ClientId) -> Self;

    /// The configuration it was made with.
    fn config(&self) -> &ClientConfig;

    /// Its current authorization context.
    fn auth(&self) -> AuthCtx;

    /// The list its readers see for `kind` under `auth`, if it has one.
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot>;

    /// Whether it is connected and past its handshake.
    fn is_ready(&self) -> bool;

    /// Whether nothing is in progress: no request outstanding, no walk running, no timer armed.
    /// The world is quiescent only when every client is idle and ready.
    fn is_idle(&self) -> bool;

    /// The list its readers see for `kind` under the current authorization context.
    fn snapshot(&self, kind: Kind) -> Option<&Snapshot> {
        self.snapshot_for(kind, self.auth())
    }

    /// What a driver watches after each step: idle, a retry armed, a walk held. Default:
    /// computed from [`is_idle`](Self::is_idle), [`armed_retries`](Self::armed_retries) and
    /// [`held_walks`](Self::held_walks).
    fn activity(&self) -> Activity {
        Activity {
            idle: self.is_idle(),
            armed: self.armed_retries().next().is_some(),
            held: self.held_walks().next().is_some(),
        }
    }

    /// Sets the driver's clock (µs); machines that pace their walks read it. Default: ignored.
    fn set_clock(&mut self, _now_us: u64) {}

    /// The (client, kind, auth) lists it is expected to keep equal to the server's at
    /// quiescence. Default: every kind of its configuration, under its current context.
    fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        self.config()
            .kinds
            .iter()
            .map(|k| (self.id(), k, self.auth()))
            .collect()
    }

    /// Whether a retry timer ([`ClientOutput::ScheduleRetry`]) is armed for (kind, auth): the
    /// world then may fire [`ClientInput::RetryDue`]. Default: never.
    fn retry_armed(&self, _kind: Kind, _auth: AuthCtx) -> bool {
        false
    }

    /// Every (kind, auth) with an armed retry timer. Default: none.
    fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        std::iter::empty()
    }

    /// Whether a walk of (kind, auth) waits for its pacing timer
    /// ([`ClientOutput::ScheduleWalk`]): the world then may fire [`ClientInput::WalkDue`].
    /// Default: never.
    fn walk_held(&self, _kind: Kind, _auth: AuthCtx) -> bool {
        false
    }

    /// Every held walk with the clock (µs) it is due at. Default: none.
    fn held_walks(&self) -> impl Iterator<Item = (Kind, AuthCtx, u64)> + '_ {
        std::iter::empty()
    }

    /// The walks in progress: (kind, auth, pages in hand) each (read by the world's situations
    /// and the simulator's statistics). Default: none reported.
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        std::iter::empty()
    }

    /// The kinds whose cached list should be fetched again now that its `ttlMs` ran out, given
    /// the server's version: the world then may fire [`ClientInput::TtlExpired`]. Default:
    /// none.
    fn ttl_due(&self, _server_version: u64) -> Vec<Kind> {
        Vec::new()
    }

    /// Whether any kind is [`ttl_due`](Self::ttl_due).
    fn ttl_is_due(&self, server_version: u64) -> bool {
        !self.ttl_due(server_version).is_empty()
    }

    /// (approvals) Whether the list shows, for a tool the user approved, another definition.
    /// Default: false.
    fn approval_outdated(&self) -> bool {
        false
    }

    /// (approvals) Calls waiting for the tool list to settle. Default: 0.
    fn paused_calls(&self) -> usize {
        0
    }
}

impl ClientMachine for CatalogClient {
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        CatalogClient::new(id, cfg)
    }
    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        CatalogClient::step(self, input, out)
    }
    fn id(&self) -> ClientId {
        CatalogClient::id(self)
    }
    fn with_id(&self, id: ClientId) -> Self {
        CatalogClient::with_id(self, id)
    }
    fn config(&self) -> &ClientConfig {
        CatalogClient::config(self)
    }
    fn auth(&self) -> AuthCtx {
        CatalogClient::auth(self)
    }
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        CatalogClient::snapshot_for(self, kind, auth)
    }
    fn is_ready(&self) -> bool {
        CatalogClient::is_ready(self)
    }
    fn is_idle(&self) -> bool {
        CatalogClient::is_idle(self)
    }
    fn set_clock(&mut self, now_us: u64) {
        CatalogClient::set_clock(self, now_us)
    }
    fn activity(&self) -> Activity {
        CatalogClient::activity(self)
    }
    fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        CatalogClient::expectations(self)
    }
    fn retry_armed(&self, kind: Kind, auth: AuthCtx) -> bool {
        CatalogClient::retry_armed(self, kind, auth)
    }
    fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        CatalogClient::armed_retries(self)
    }
    fn walk_held(&self, kind: Kind, auth: AuthCtx) -> bool {
        CatalogClient::walk_held(self, kind, auth)
    }
    fn held_walks(&self) -> impl Iterator<Item = (Kind, AuthCtx, u64)> + '_ {
        CatalogClient::held_walks(self)
    }
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        CatalogClient::walks_in_progress(self)
    }
    fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        CatalogClient::ttl_due(self, server_version)
    }
    fn ttl_is_due(&self, server_version: u64) -> bool {
        CatalogClient::ttl_is_due(self, server_version)
    }
    fn approval_outdated(&self) -> bool {
        CatalogClient::approval_outdated(self)
    }
    fn paused_calls(&self) -> usize {
        CatalogClient::paused_calls(self)
    }
}
