//! What applications read: one [`SnapshotCell`] per list kind holding the current
//! authorization context's snapshot — a wait-free `load`, never blocked by a refresh — plus the
//! per-context cache behind it and a `watch` change stream.
//!
//! Only the client's actor task writes. The cell's version is the actor's publication sequence,
//! not the server's catalog version: the core machine already decided that a snapshot may be
//! published (and the known-bad strategies must be free to publish an older one, or the runtime
//! could not reproduce their bugs); the cell makes each publication atomic for readers.
//!
//! Which verified pieces the client uses, and why: the snapshot store's [`SnapshotCell`], the
//! very cell `store/tests/loom_store.rs` checks (`single_writer_with_readers_as_rt_uses_it` is
//! this use: one writer publishing and marking stale, readers on other threads). Its publish is
//! a compare-and-swap that, with the actor as the only writer, always lands on the first try;
//! what it gives the client is the atomic replacement readers rely on. The refresh gate is core's
//! `FlightState`, run inside `CatalogClient` by the same actor: notifications and completions
//! reach the actor as messages, one at a time, so concurrent refreshes never need arbitrating
//! between threads — the store's atomic gate for that case had no real path here and was
//! removed rather than wired in for show.

use listsync_core::vocab::{AuthCtx, ItemList, Kind};
use listsync_store::{SnapshotCell, Versioned};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// One published list, as applications read it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listing {
    /// Which list.
    pub kind: Kind,
    /// Authorization context it was fetched under.
    pub auth: AuthCtx,
    /// The items, in server order.
    pub items: ItemList,
    /// Server catalog version behind it, if the server said.
    pub version: Option<u64>,
    /// Connection epoch it was fetched in.
    pub epoch: u32,
    /// Publication sequence number (per client, increasing).
    pub seq: u64,
    /// False for the placeholder of a list never fetched under this context.
    pub fetched: bool,
}

impl Listing {
    /// The items' names, in server order.
    pub fn names(&self) -> Vec<String> {
        self.items.iter().map(|i| i.name.to_string()).collect()
    }
}

impl Versioned for Listing {
    type Version = u64;
    fn version(&self) -> u64 {
        self.seq
    }
}

/// A snapshot as read: the listing, and whether it is known to be out of date.
pub type View = listsync_store::CellSnapshot<Listing>;

/// One change of what applications read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    /// Publication sequence number (0: nothing yet).
    pub seq: u64,
    /// Which list.
    pub kind: Kind,
    /// Authorization context.
    pub auth: AuthCtx,
    /// Server catalog version behind the new snapshot.
    pub version: Option<u64>,
    /// Number of items.
    pub len: usize,
    /// Marked stale (rather than replaced).
    pub stale: bool,
}

/// Per (kind, context): the last snapshot and whether it is stale.
type Cache = BTreeMap<(Kind, AuthCtx), (Arc<Listing>, bool)>;

pub(crate) struct Views {
    cells: [SnapshotCell<Listing>; 4],
    cache: Mutex<Cache>,
    changes: watch::Sender<Change>,
}

fn index(kind: Kind) -> usize {
    Kind::ALL.iter().position(|k| *k == kind).unwrap_or(0)
}

fn placeholder(kind: Kind, auth: AuthCtx, seq: u64) -> Arc<Listing> {
    Arc::new(Listing {
        kind,
        auth,
        items: Arc::from([]),
        version: None,
        epoch: 0,
        seq,
        fetched: false,
    })
}

impl Views {
    pub(crate) fn new(auth: AuthCtx) -> Self {
        let (changes, _) = watch::channel(Change {
            seq: 0,
            kind: Kind::Tools,
            auth,
            version: None,
            len: 0,
            stale: false,
        });
        Views {
            cells: Kind::ALL.map(|k| SnapshotCell::new(placeholder(k, auth, 0))),
            cache: Mutex::new(BTreeMap::new()),
            changes,
        }
    }

    pub(crate) fn load(&self, kind: Kind) -> Arc<View> {
        self.cells[index(kind)].load()
    }

    pub(crate) fn cached(&self, kind: Kind, auth: AuthCtx) -> Option<(Arc<Listing>, bool)> {
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(kind, auth))
            .cloned()
    }

    pub(crate) fn subscribe(&self) -> watch::Receiver<Change> {
        self.changes.subscribe()
    }

    fn announce(&self, l: &Listing, stale: bool) {
        self.changes.send_replace(Change {
            seq: l.seq,
            kind: l.kind,
            auth: l.auth,
            version: l.version,
            len: l.items.len(),
            stale,
        });
    }

    /// A new snapshot for (kind, auth); shown to readers if `auth` is the current context.
    pub(crate) fn publish(&self, listing: Listing, current: AuthCtx) {
        let listing = Arc::new(listing);
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((listing.kind, listing.auth), (listing.clone(), false));
        if listing.auth == current {
            let _ = self.cells[index(listing.kind)].publish(listing.clone());
        }
        self.announce(&listing, false);
    }

    /// The machine confirmed (kind, auth)'s snapshot current again without replacing it (a walk
    /// after a reconnect listed the same version): if readers see it marked stale, re-publish it
    /// unmarked under the fresh sequence number `seq`. Returns whether it did.
    pub(crate) fn confirm(&self, kind: Kind, auth: AuthCtx, current: AuthCtx, seq: u64) -> bool {
        let listing = match self.cached(kind, auth) {
            Some((l, true)) => Listing {
                seq,
                ..(*l).clone()
            },
            _ => return false,
        };
        self.publish(listing, current);
        true
    }

    /// Marks (kind, auth)'s snapshot stale.
    pub(crate) fn mark_stale(&self, kind: Kind, auth: AuthCtx, current: AuthCtx) {
        let listing = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            match cache.get_mut(&(kind, auth)) {
                Some(entry) => {
                    entry.1 = true;
                    Some(entry.0.clone())
                }
                None => None,
            }
        };
        if auth == current {
            self.cells[index(kind)].mark_stale();
        }
        if let Some(l) = listing {
            self.announce(&l, true);
        }
    }

    /// The application switched to `auth`: readers now see that context's cached snapshots
    /// (or a not-fetched placeholder), re-published under fresh sequence numbers.
    pub(crate) fn switch(&self, auth: AuthCtx, mut next_seq: impl FnMut() -> u64) {
        for kind in Kind::ALL {
            let (listing, stale) = match self.cached(kind, auth) {
                Some((l, stale)) => (
                    Arc::new(Listing {
                        seq: next_seq(),
                        ..(*l).clone()
                    }),
                    stale,
                ),
                None => (placeholder(kind, auth, next_seq()), false),
            };
            let cell = &self.cells[index(kind)];
            let _ = cell.publish(listing.clone());
            if stale {
                cell.mark_stale();
            }
            self.announce(&listing, stale);
        }
    }

    /// Forget everything (the client now talks to a different server).
    pub(crate) fn reset(&self, auth: AuthCtx, mut next_seq: impl FnMut() -> u64) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
        for kind in Kind::ALL {
            let _ = self.cells[index(kind)].publish(placeholder(kind, auth, next_seq()));
        }
    }
}
