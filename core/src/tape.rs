//! Client tapes: what a client machine built outside listsync did in a trace, so that the trace
//! can be checked and replayed where that machine is not compiled in (`listsync trace show`,
//! `listsync replay`).
//!
//! A [`ClientTape`] holds, for each input the world gave one client, the outputs the machine
//! answered with and what its readers could see afterwards ([`ClientView`]). [`Taped`] wraps a
//! machine and records its tape while a trace is written; [`TapedClient`] plays a tape back as a
//! [`ClientMachine`]. Replaying a trace with tapes re-executes everything else — the server
//! machines, the links, the adversary's steps, the monitor — and checks that every input the
//! world hands a client is the input its tape recorded next: a trace whose steps were edited, or
//! whose world no longer produces the same inputs, fails at the first input that differs.
//! Only the client's own decisions are taken from the record (docs/trace-format.md, "Client
//! tapes").

use crate::client::{ClientConfig, ClientInput, ClientOutput, Snapshot};
use crate::history::ClientId;
use crate::machine::ClientMachine;
use crate::vocab::{AuthCtx, Kind};
use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// What a client's readers and a world's step enumeration could see of it after a step.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ClientView {
    /// Connected and past its handshake.
    pub ready: bool,
    /// Nothing in progress.
    pub idle: bool,
    /// Authorization context.
    pub auth: AuthCtx,
    /// The lists its readers see, per (kind, auth).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<(Kind, AuthCtx, Snapshot)>,
    /// Armed retry timers.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retries: Vec<(Kind, AuthCtx)>,
    /// Walks held by pacing, with the clock they are due at.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub held: Vec<(Kind, AuthCtx, u64)>,
    /// Walks in progress with the pages in hand.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub walks: Vec<(Kind, AuthCtx, u32)>,
    /// Kinds whose TTL refetch is due once the server is past the given version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ttl: Vec<(Kind, u64)>,
    /// (approvals) An approved tool shows another definition.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub approval_outdated: bool,
    /// (approvals) Calls waiting for the list to settle.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub paused_calls: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ClientView {
    /// What `m` shows now.
    pub fn of<C: ClientMachine>(m: &C) -> ClientView {
        let mut snapshots = Vec::new();
        let mut contexts = vec![m.auth()];
        contexts.extend(m.walks_in_progress().map(|(_, a, _)| a));
        contexts.sort();
        contexts.dedup();
        for kind in Kind::ALL {
            for auth in &contexts {
                if let Some(s) = m.snapshot_for(kind, *auth) {
                    snapshots.push((kind, *auth, s.clone()));
                }
            }
        }
        // A kind is due for a refetch past version v when it is due for u64::MAX and its list
        // is older than v (the TTL rule of docs/design.md: the list is behind the server).
        let ttl = m
            .ttl_due(u64::MAX)
            .into_iter()
            .map(|k| (k, m.snapshot(k).and_then(|s| s.version).unwrap_or(0)))
            .collect();
        ClientView {
            ready: m.is_ready(),
            idle: m.is_idle(),
            auth: m.auth(),
            snapshots,
            retries: m.armed_retries().collect(),
            held: m.held_walks().collect(),
            walks: m.walks_in_progress().collect(),
            ttl,
            approval_outdated: m.approval_outdated(),
            paused_calls: m.paused_calls(),
        }
    }
}

/// One input a client was given, its answer, and what it showed afterwards.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TapeStep {
    /// The input.
    pub input: ClientInput,
    /// The machine's outputs, in order.
    pub outputs: Vec<ClientOutput>,
    /// What it showed after the step.
    pub after: ClientView,
}

/// Everything one client did in a run.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClientTape {
    /// What it showed before its first input.
    pub start: ClientView,
    /// Its steps, in order.
    pub steps: Vec<TapeStep>,
}

/// A machine whose every step is recorded onto a tape (shared by the clones of one run, so a
/// trace writer reads it at the end).
#[derive(Clone, Debug)]
pub struct Taped<C> {
    inner: C,
    tape: Arc<Mutex<ClientTape>>,
}

impl<C: ClientMachine> Taped<C> {
    /// The tape recorded so far.
    pub fn tape(&self) -> ClientTape {
        self.tape.lock().expect("tape lock").clone()
    }
}

impl<C: PartialEq> PartialEq for Taped<C> {
    fn eq(&self, other: &Self) -> bool {
        self.inner == other.inner
    }
}
impl<C: Eq> Eq for Taped<C> {}
impl<C: std::hash::Hash> std::hash::Hash for Taped<C> {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.inner.hash(h)
    }
}

impl<C: ClientMachine> ClientMachine for Taped<C> {
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        let inner = C::new(id, cfg);
        let start = ClientView::of(&inner);
        Taped {
            inner,
            tape: Arc::new(Mutex::new(ClientTape {
                start,
                steps: Vec::new(),
            })),
        }
    }
    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        let from = out.len();
        self.inner.step(input.clone(), out);
        let step = TapeStep {
            input,
            outputs: out[from..].to_vec(),
            after: ClientView::of(&self.inner),
        };
        self.tape.lock().expect("tape lock").steps.push(step);
    }
    fn id(&self) -> ClientId {
        self.inner.id()
    }
    fn with_id(&self, id: ClientId) -> Self {
        Taped {
            inner: self.inner.with_id(id),
            tape: self.tape.clone(),
        }
    }
    fn config(&self) -> &ClientConfig {
        self.inner.config()
    }
    fn auth(&self) -> AuthCtx {
        self.inner.auth()
    }
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        self.inner.snapshot_for(kind, auth)
    }
    fn is_ready(&self) -> bool {
        self.inner.is_ready()
    }
    fn is_idle(&self) -> bool {
        self.inner.is_idle()
    }
    fn set_clock(&mut self, now_us: u64) {
        self.inner.set_clock(now_us)
    }
    fn activity(&self) -> crate::client::Activity {
        self.inner.activity()
    }
    fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        self.inner.expectations()
    }
    fn retry_armed(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.inner.retry_armed(kind, auth)
    }
    fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        self.inner.armed_retries()
    }
    fn walk_held(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.inner.walk_held(kind, auth)
    }
    fn held_walks(&self) -> impl Iterator<Item = (Kind, AuthCtx, u64)> + '_ {
        self.inner.held_walks()
    }
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        self.inner.walks_in_progress()
    }
    fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        self.inner.ttl_due(server_version)
    }
    fn ttl_is_due(&self, server_version: u64) -> bool {
        self.inner.ttl_is_due(server_version)
    }
    fn approval_outdated(&self) -> bool {
        self.inner.approval_outdated()
    }
    fn paused_calls(&self) -> usize {
        self.inner.paused_calls()
    }
}

/// A client that plays its tape back: each input must be the next one recorded; it answers with
/// the recorded outputs and shows the recorded view. An input the tape does not hold next is
/// kept as the tape's [`divergence`](TapedClient::divergence) (the machine answers nothing).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TapedClient {
    id: ClientId,
    cfg: Arc<ClientConfig>,
    tape: Arc<ClientTape>,
    /// Steps played.
    pos: usize,
    /// The first input that differed from the tape: (its index on the tape, what was given).
    diverged: Option<(usize, String)>,
}

/// Its place on the tape is its state (one run plays one tape).
impl std::hash::Hash for TapedClient {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.pos.hash(h);
        self.diverged.hash(h);
    }
}

impl TapedClient {
    /// Client `id` of configuration `cfg` playing `tape`.
    pub fn playing(id: ClientId, cfg: Arc<ClientConfig>, tape: Arc<ClientTape>) -> Self {
        TapedClient {
            id,
            cfg,
            tape,
            pos: 0,
            diverged: None,
        }
    }

    /// The first input the world gave that the tape does not hold at that point, said in a
    /// sentence.
    pub fn divergence(&self) -> Option<String> {
        self.diverged
            .as_ref()
            .map(|(i, given)| match self.tape.steps.get(*i) {
                Some(s) => format!(
                    "client c{} was given {given} where its tape's input {i} is {:?}",
                    self.id, s.input
                ),
                None => format!(
                    "client c{} was given {given} after the {} inputs its tape holds",
                    self.id,
                    self.tape.steps.len()
                ),
            })
    }

    /// Whether inputs the tape holds were never given (the run ended before the tape did),
    /// said in a sentence.
    pub fn unplayed(&self) -> Option<String> {
        (self.pos < self.tape.steps.len()).then(|| {
            format!(
                "client c{}'s tape holds {} inputs, the run gave it {}",
                self.id,
                self.tape.steps.len(),
                self.pos
            )
        })
    }

    fn view(&self) -> &ClientView {
        match self.pos {
            0 => &self.tape.start,
            n => &self.tape.steps[n - 1].after,
        }
    }
}

impl ClientMachine for TapedClient {
    /// A client with an empty tape (a world of taped clients is started with
    /// [`crate::world::World::start_with`], which hands each its tape).
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        TapedClient::playing(id, cfg, Arc::new(ClientTape::default()))
    }
    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        if self.diverged.is_some() {
            return;
        }
        match self.tape.steps.get(self.pos) {
            Some(s) if s.input == input => {
                out.extend(s.outputs.iter().cloned());
                self.pos += 1;
            }
            _ => self.diverged = Some((self.pos, format!("{input:?}"))),
        }
    }
    fn id(&self) -> ClientId {
        self.id
    }
    fn with_id(&self, id: ClientId) -> Self {
        TapedClient { id, ..self.clone() }
    }
    fn config(&self) -> &ClientConfig {
        &self.cfg
    }
    fn auth(&self) -> AuthCtx {
        self.view().auth
    }
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        self.view()
            .snapshots
            .iter()
            .find(|(k, a, _)| *k == kind && *a == auth)
            .map(|(_, _, s)| s)
    }
    fn is_ready(&self) -> bool {
        self.view().ready
    }
    fn is_idle(&self) -> bool {
        self.view().idle
    }
    fn retry_armed(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.view().retries.contains(&(kind, auth))
    }
    fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        self.view().retries.iter().copied()
    }
    fn walk_held(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.view()
            .held
            .iter()
            .any(|(k, a, _)| *k == kind && *a == auth)
    }
    fn held_walks(&self) -> impl Iterator<Item = (Kind, AuthCtx, u64)> + '_ {
        self.view().held.iter().copied()
    }
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        self.view().walks.iter().copied()
    }
    fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        self.view()
            .ttl
            .iter()
            .filter(|(_, v)| *v < server_version)
            .map(|(k, _)| *k)
            .collect()
    }
    fn approval_outdated(&self) -> bool {
        self.view().approval_outdated
    }
    fn paused_calls(&self) -> usize {
        self.view().paused_calls
    }
}
