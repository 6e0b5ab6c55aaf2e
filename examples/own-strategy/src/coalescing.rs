//! `Coalescing`: one walk at a time; a change announced during a walk marks the list dirty and
//! one more walk follows — or, when the server's cursors are not bound to a version, starts the
//! walk again at once, since its later pages would come from the new list; a walk whose pages
//! come from two versions starts again; a list older than the one published is discarded; a
//! failed walk is retried after a delay. listsync's model
//! finds every property holding in each of its list-refresh worlds.

use crate::connection::{Connection, Happened, Phase};
use listsync_core::client::{ClientConfig, ClientInput, ClientOutput, Snapshot};
use listsync_core::history::{Cause, ClientId, RefreshOutcome, Restart};
use listsync_core::machine::ClientMachine;
use listsync_core::vocab::{AuthCtx, Item, Kind};
use listsync_core::wire::ReqId;
use std::sync::Arc;

/// The walk in flight.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Walk {
    refresh: u32,
    /// The request whose answer continues it (an answer to any other is dropped).
    awaiting: ReqId,
    items: Vec<Item>,
    /// The version of its first page.
    version: Option<u64>,
    pages: u32,
    ttl_ms: Option<u32>,
    /// The first page said the server's cursors are bound to its version: a change cannot
    /// tear this walk (a cursor of an older version is refused).
    bound: bool,
}

/// Single flight, a dirty flag, torn walks restarted, older lists discarded.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Coalescing {
    conn: Connection,
    walk: Option<Walk>,
    /// A change was announced while the walk ran.
    dirty: bool,
    /// Failed walks in a row; a retry timer is armed while `armed`.
    failures: u8,
    armed: bool,
}

impl Coalescing {
    fn walk(&mut self, cause: Cause, out: &mut Vec<ClientOutput>) {
        self.dirty = false;
        let (refresh, awaiting) = self.conn.start_walk(cause, out);
        self.walk = Some(Walk {
            refresh,
            awaiting,
            items: Vec::new(),
            version: None,
            pages: 0,
            ttl_ms: None,
            bound: false,
        });
    }

    /// A change, or a reason to fetch: walk now, or once the walk in flight ends.
    fn wanted(&mut self, cause: Cause, out: &mut Vec<ClientOutput>) {
        if let Some(w) = &self.walk {
            if w.pages > 0 && !w.bound {
                // The pages in hand may not match the pages still to come.
                return self.restart(Restart::NotifiedMidWalk, out);
            }
            self.dirty = true;
        } else if !self.armed {
            self.walk(cause, out);
        }
    }

    fn restart(&mut self, reason: Restart, out: &mut Vec<ClientOutput>) {
        if let Some(w) = &mut self.walk {
            w.items.clear();
            w.pages = 0;
            w.version = None;
            w.bound = false;
            w.awaiting = self.conn.restart_walk(w.refresh, reason, out);
        }
    }

    fn ended(&mut self, w: Walk, out: &mut Vec<ClientOutput>) {
        self.failures = 0;
        let older = match (
            w.version,
            self.conn.snapshot.as_ref().and_then(|s| s.version),
        ) {
            (Some(new), Some(old)) => new < old,
            _ => false,
        };
        if older {
            self.conn
                .end_walk(w.refresh, RefreshOutcome::Discarded, out);
        } else {
            self.conn.publish(w.items, w.version, w.ttl_ms, out);
            self.conn
                .end_walk(w.refresh, RefreshOutcome::Published, out);
        }
        if self.dirty {
            self.walk(Cause::ListChanged, out);
        }
    }
}

impl ClientMachine for Coalescing {
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        Coalescing {
            conn: Connection::new(id, cfg),
            walk: None,
            dirty: false,
            failures: 0,
            armed: false,
        }
    }

    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        match self.conn.input(input, out) {
            Happened::Ready => self.wanted(Cause::Startup, out),
            Happened::Changed => self.wanted(Cause::ListChanged, out),
            Happened::Refetch => self.wanted(Cause::Requested, out),
            Happened::RetryDue if self.armed => {
                self.armed = false;
                self.walk(Cause::Requested, out);
            }
            Happened::Page { id, page, .. } => {
                let Some(w) = self.walk.as_mut().filter(|w| w.awaiting == id) else {
                    return;
                };
                if w.pages > 0 && page.version != w.version {
                    return self.restart(Restart::VersionChanged, out);
                }
                if w.pages == 0 {
                    w.bound = page.version_bound && page.version.is_some();
                }
                w.items.extend(page.items.iter().cloned());
                w.pages += 1;
                w.version = page.version;
                w.ttl_ms = match (w.ttl_ms, page.ttl_ms) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                match page.next {
                    Some(cursor) => w.awaiting = self.conn.page(w.refresh, Some(cursor), out),
                    None => {
                        let w = self.walk.take().expect("walk in flight");
                        self.ended(w, out);
                    }
                }
            }
            Happened::CursorRefused { id, .. } => {
                if self.walk.as_ref().is_some_and(|w| w.awaiting == id) {
                    self.restart(Restart::InvalidCursor, out);
                }
            }
            Happened::Failed { id, why } => {
                if let Some(w) = self.walk.take_if(|w| w.awaiting == id) {
                    out.push(ClientOutput::Failed {
                        kind: Kind::Tools,
                        error: why,
                    });
                    self.conn.end_walk(w.refresh, RefreshOutcome::Failed, out);
                    self.dirty = false;
                    self.failures = self.failures.saturating_add(1);
                    self.armed = true;
                    let delay_ms = 100u32 << self.failures.min(6);
                    let (kind, auth, attempt) = (Kind::Tools, self.conn.cfg.auth, self.failures);
                    out.push(ClientOutput::ScheduleRetry {
                        kind,
                        auth,
                        attempt,
                        delay_ms,
                    });
                }
            }
            Happened::Lost => {
                if let Some(w) = self.walk.take() {
                    self.conn.end_walk(w.refresh, RefreshOutcome::Failed, out);
                }
                self.dirty = false;
                self.armed = false;
            }
            Happened::Nothing | Happened::RetryDue => {}
        }
    }

    fn id(&self) -> ClientId {
        self.conn.id
    }
    fn with_id(&self, id: ClientId) -> Self {
        let mut c = self.clone();
        c.conn.id = id;
        c
    }
    fn config(&self) -> &ClientConfig {
        &self.conn.cfg
    }
    fn auth(&self) -> AuthCtx {
        self.conn.cfg.auth
    }
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        (kind == Kind::Tools && auth == self.conn.cfg.auth)
            .then_some(self.conn.snapshot.as_ref())?
    }
    fn is_ready(&self) -> bool {
        self.conn.phase == Phase::Ready
    }
    fn is_idle(&self) -> bool {
        self.conn.quiet() && self.walk.is_none() && !self.armed
    }
    fn retry_armed(&self, kind: Kind, _auth: AuthCtx) -> bool {
        kind == Kind::Tools && self.armed
    }
    fn armed_retries(&self) -> impl Iterator<Item = (Kind, AuthCtx)> + '_ {
        self.armed
            .then_some((Kind::Tools, self.conn.cfg.auth))
            .into_iter()
    }
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        let auth = self.conn.cfg.auth;
        self.walk.iter().map(move |w| (Kind::Tools, auth, w.pages))
    }
    /// The list has a `ttlMs`, is behind the server, and nothing is fetching it: its TTL is the
    /// only thing left that brings it up to date after a lost notification.
    fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        let behind =
            self.conn.snapshot.as_ref().is_some_and(|s| {
                s.ttl_ms.is_some() && s.version.is_some_and(|v| v < server_version)
            });
        let due = self.is_ready() && self.walk.is_none() && !self.armed && behind;
        due.then_some(Kind::Tools).into_iter().collect()
    }
}
