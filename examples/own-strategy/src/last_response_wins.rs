//! `LastResponseWins`: one walk per change notification, all at once, and whichever walk ends
//! last is published — the bug most MCP client libraries shipped. listsync's model finds that an
//! older list can replace a newer one (`no_stale_overwrite`).

use crate::connection::{Connection, Happened};
use listsync_core::client::{ClientConfig, ClientInput, ClientOutput, Snapshot};
use listsync_core::history::{Cause, ClientId, RefreshOutcome, Restart};
use listsync_core::machine::ClientMachine;
use listsync_core::vocab::{AuthCtx, Item, Kind};
use listsync_core::wire::ReqId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Walks in flight, by the request each waits for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Walk {
    refresh: u32,
    items: Vec<Item>,
    version: Option<u64>,
    pages: u32,
}

/// One walk per notification; the last to end wins.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct LastResponseWins {
    conn: Connection,
    walks: BTreeMap<ReqId, Walk>,
}

impl LastResponseWins {
    fn walk(&mut self, cause: Cause, out: &mut Vec<ClientOutput>) {
        let (refresh, id) = self.conn.start_walk(cause, out);
        let items = Vec::new();
        self.walks.insert(
            id,
            Walk {
                refresh,
                items,
                version: None,
                pages: 0,
            },
        );
    }
}

impl ClientMachine for LastResponseWins {
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        LastResponseWins {
            conn: Connection::new(id, cfg),
            walks: BTreeMap::new(),
        }
    }

    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        match self.conn.input(input, out) {
            Happened::Ready => self.walk(Cause::Startup, out),
            Happened::Changed => self.walk(Cause::ListChanged, out),
            Happened::Refetch => self.walk(Cause::Requested, out),
            Happened::Page { id, page, .. } => {
                let Some(mut w) = self.walks.remove(&id) else {
                    return;
                };
                w.items.extend(page.items.iter().cloned());
                w.version = page.version;
                w.pages += 1;
                match page.next {
                    Some(cursor) => {
                        let next = self.conn.page(w.refresh, Some(cursor), out);
                        self.walks.insert(next, w);
                    }
                    None => {
                        // Whatever ends last is what the application reads.
                        self.conn.publish(w.items, w.version, page.ttl_ms, out);
                        self.conn
                            .end_walk(w.refresh, RefreshOutcome::Published, out);
                    }
                }
            }
            Happened::CursorRefused { id, .. } => {
                if let Some(mut w) = self.walks.remove(&id) {
                    w.items.clear();
                    w.pages = 0;
                    let next = self
                        .conn
                        .restart_walk(w.refresh, Restart::InvalidCursor, out);
                    self.walks.insert(next, w);
                }
            }
            Happened::Failed { id, .. } => {
                if let Some(w) = self.walks.remove(&id) {
                    self.conn.end_walk(w.refresh, RefreshOutcome::Failed, out);
                }
            }
            Happened::Lost => {
                for (_, w) in std::mem::take(&mut self.walks) {
                    self.conn.end_walk(w.refresh, RefreshOutcome::Failed, out);
                }
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
        self.conn.phase == crate::connection::Phase::Ready
    }
    fn is_idle(&self) -> bool {
        self.conn.quiet() && self.walks.is_empty()
    }
    fn walks_in_progress(&self) -> impl Iterator<Item = (Kind, AuthCtx, u32)> + '_ {
        let auth = self.conn.cfg.auth;
        self.walks
            .values()
            .map(move |w| (Kind::Tools, auth, w.pages))
    }
}
