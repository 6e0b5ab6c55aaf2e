//! The property checkers: an online monitor that folds a history's events one at a time and
//! decides every property of docs/design.md. The model keeps a `Monitor` inside each state (it is
//! small, `Hash + Eq`), the simulator folds its runs through one, and the harness judges the
//! histories it reconstructs from real implementations with [`judge`] — the same code everywhere.
//!
//! Lists are compared by [`Digest`] (order-independent), so a client that reorders items is not
//! torn, while a missing, extra or differently defined item is.
//!
//! This module holds the [`Monitor`] itself: what it remembers, what every checker reads (the
//! committed versions, in `commits.rs`; each client's last published snapshot), and
//! [`Monitor::observe`], which hands each event to the checkers that judge it. Each property
//! has its own checker, in the module of its name (`no_torn_snapshot.rs`, ...), which says what
//! the property means, which observations it is judged from, and tests it.

mod approval_not_inherited;
mod auth_isolation;
mod bounded_refresh;
mod commits;
mod consumers_agree;
mod converges;
mod errors_not_changes;
mod listen_then_list;
mod no_call_to_removed;
mod no_lost_wakeup;
mod no_name_collision;
mod no_spurious_notify;
mod no_stale_arguments;
mod no_stale_overwrite;
mod no_torn_snapshot;
mod notify_after_commit;
#[cfg(test)]
mod testing;

use crate::history::{ClientId, Event, Unsettled};
use crate::property::{Property, Verdict, Verdicts};
use crate::shared::Shared;
use crate::vocab::{AuthCtx, Catalog, Digest, Entry, Item, Kind, KindSet, Name};
use auth_isolation::Seen;
use bounded_refresh::Window;
use commits::{FastMap, Matches};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

pub(crate) use commits::visible_digest;

/// One violation: which property, at which event of the history, and why.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Violation {
    /// The property.
    pub property: Property,
    /// Index of the event (in observation order) that showed it.
    pub at: usize,
    /// A human explanation.
    pub detail: String,
}

/// What the monitor remembers about one (client, kind, authorization context) snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
struct KeyState {
    /// Digest of the last published snapshot, and the range of catalog versions it matches
    /// (no_torn_snapshot, converges, and the checkers that read the published list).
    last: Option<(Digest, Option<(u64, u64)>)>,
    /// Catalog versions the last untorn snapshot matched (no_stale_overwrite).
    last_good: Option<(u64, u64)>,
    /// Latest committed version when the client last started a refresh of this list
    /// (no_lost_wakeup).
    refresh_started_at: Option<u64>,
}

/// The online property checker.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    /// Committed versions and their catalogs (each catalog's hash computed once).
    commits: Shared<Vec<(u64, Shared<Catalog>)>>,
    keys: Shared<BTreeMap<(ClientId, Kind, AuthCtx), KeyState>>,
    /// Per (client, notification group): the version the session's last `list_changed` of it
    /// announced (no_spurious_notify, bounded_refresh).
    announced: Shared<BTreeMap<(ClientId, Kind), u64>>,
    /// listen_then_list: the kinds each client's acknowledged listen covers that it has not
    /// listed since.
    acked_unlisted: Shared<BTreeMap<ClientId, KindSet>>,
    /// bounded_refresh: the observation windows of each list.
    windows: Shared<BTreeMap<(ClientId, Kind, AuthCtx), Vec<Window>>>,
    /// Per (client, kind, authorization context): the version the session's last list page of
    /// that kind under that context was served at (dated by the observer). The contexts a session
    /// listed under, and what it last knew of each list (no_spurious_notify).
    listed: Shared<BTreeMap<(ClientId, Kind, AuthCtx), u64>>,
    /// The user's approvals: client, tool, and the fingerprint of the definition the client's
    /// published list showed when the user approved it (approval_not_inherited).
    approvals: Shared<BTreeSet<(ClientId, Name, u64)>>,
    /// Clients (whose application asks for approvals) whose tool list is unsettled
    /// (approval_not_inherited).
    unsettled: Shared<BTreeMap<ClientId, Unsettled>>,
    /// (several servers) Each combined name the application called, with the connection and
    /// tool its first call reached on the wire (no_name_collision).
    combined: Shared<BTreeMap<Name, (ClientId, Name)>>,
    /// Per property, the explanation of its first violation. Only whether there is one takes
    /// part in equality and hashing: the text names clients, and states that differ only in how
    /// a violation was worded are the same state to every property (a later step never reads
    /// the text). Keeping the text out makes the state space symmetric under renumbering the
    /// clients, which symmetry reduction needs (docs/design.md, "Symmetry reduction").
    first: [Option<Arc<str>>; Property::ALL.len()],
    observed: usize,
    /// Per (kind, auth): the range of committed versions whose visible list has each digest;
    /// derived from `commits`, so left out of equality and hashing; shared between copies.
    memo: Arc<FastMap<(Kind, AuthCtx), Matches>>,
    /// Per (kind, name): which authorization contexts any committed version shows the item to;
    /// derived from `commits` (folded up to `scopes_folded`), left out of equality and hashing;
    /// shared between copies.
    scopes: Arc<FastMap<(Kind, Name), Seen>>,
    scopes_folded: usize,
}

impl PartialEq for Monitor {
    fn eq(&self, o: &Self) -> bool {
        self.commits == o.commits
            && self.keys == o.keys
            && self.announced == o.announced
            && self.acked_unlisted == o.acked_unlisted
            && self.windows == o.windows
            && self.listed == o.listed
            && self.approvals == o.approvals
            && self.unsettled == o.unsettled
            && self.combined == o.combined
            && self.violations() == o.violations()
    }
}

impl Eq for Monitor {}

impl Hash for Monitor {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.commits.hash(h);
        self.keys.hash(h);
        self.announced.hash(h);
        self.acked_unlisted.hash(h);
        self.windows.hash(h);
        self.listed.hash(h);
        self.approvals.hash(h);
        self.unsettled.hash(h);
        self.combined.hash(h);
        self.violations().hash(h);
    }
}

impl Monitor {
    /// An empty monitor.
    pub fn new() -> Self {
        Self::default()
    }

    /// Which properties have been violated so far (what equality and hashing see of them).
    fn violations(&self) -> [bool; Property::ALL.len()] {
        self.first.each_ref().map(Option::is_some)
    }

    /// Whether `p` has been violated so far.
    pub fn violated(&self, p: Property) -> bool {
        self.first[p.index()].is_some()
    }

    /// The explanation of the first violation of `p`, if any.
    pub fn first_violation(&self, p: Property) -> Option<&str> {
        self.first[p.index()].as_deref()
    }

    /// The latest committed catalog version, if any commit was observed.
    pub fn latest_version(&self) -> Option<u64> {
        self.commits.last().map(|(v, _)| *v)
    }

    /// The latest committed catalog, if any.
    pub fn latest_catalog(&self) -> Option<&Arc<Catalog>> {
        self.commits.last().map(|(_, c)| c.arc())
    }

    /// Number of events observed.
    pub fn observed(&self) -> usize {
        self.observed
    }

    /// Verdicts so far: violated, or holds.
    pub fn verdicts(&self) -> Verdicts {
        Property::ALL
            .into_iter()
            .map(|p| {
                let v = if self.violated(p) {
                    Verdict::Violated
                } else {
                    Verdict::Holds
                };
                (p, v)
            })
            .collect()
    }

    /// Records a violation of `property` shown by the event being observed.
    fn flag(&mut self, out: &mut Vec<Violation>, property: Property, detail: String) {
        let slot = &mut self.first[property.index()];
        if slot.is_none() {
            *slot = Some(detail.as_str().into());
        }
        out.push(Violation {
            property,
            at: self.observed,
            detail,
        });
    }

    /// The latest committed version whose visible list of `kind` under `auth` is `items` (in
    /// any order), if any.
    pub fn latest_version_of(&mut self, kind: Kind, auth: AuthCtx, items: &[Item]) -> Option<u64> {
        let d = Digest::of(items);
        self.matching(kind, auth, d).map(|(_, hi)| hi)
    }

    /// The catalog committed at `version`, if the history committed it.
    pub fn catalog_at(&self, version: u64) -> Option<&Arc<Catalog>> {
        self.commits
            .binary_search_by_key(&version, |(v, _)| *v)
            .ok()
            .map(|i| self.commits[i].1.arc())
    }

    /// Whether client `c`'s last published tool list under `auth` lists `tool`, read off the
    /// committed versions it matched. None when unknown: nothing published, or a torn snapshot.
    fn published_lists(&self, c: ClientId, tool: &Name, auth: AuthCtx) -> Option<bool> {
        self.published_entry(c, tool, auth).map(|e| e.is_some())
    }

    /// The entry client `c`'s last published tool list under `auth` shows for `tool` (None
    /// inside: it does not list it), read off the committed versions it matched. None when
    /// unknown: nothing published, or a torn snapshot.
    fn published_entry(&self, c: ClientId, tool: &Name, auth: AuthCtx) -> Option<Option<&Entry>> {
        let (_, Some((_, hi))) = self.keys.get(&(c, Kind::Tools, auth))?.last? else {
            return None;
        };
        let cat = self.catalog_at(hi)?;
        Some(
            cat.get(Kind::Tools, tool)
                .filter(|e| e.scope.visible_to(auth)),
        )
    }

    /// Renames clients: `map[old] = new` (for symmetry reduction over interchangeable clients).
    pub fn relabel(&self, map: &[ClientId]) -> Monitor {
        let m = |c: &ClientId| map.get(*c as usize).copied().unwrap_or(*c);
        Monitor {
            commits: self.commits.clone(),
            keys: self
                .keys
                .iter()
                .map(|((c, k, a), v)| ((m(c), *k, *a), v.clone()))
                .collect(),
            announced: self
                .announced
                .iter()
                .map(|((c, k), v)| ((m(c), *k), *v))
                .collect(),
            acked_unlisted: self
                .acked_unlisted
                .iter()
                .map(|(c, v)| (m(c), *v))
                .collect(),
            windows: self
                .windows
                .iter()
                .map(|((c, k, a), v)| ((m(c), *k, *a), v.clone()))
                .collect(),
            listed: self
                .listed
                .iter()
                .map(|((c, k, a), v)| ((m(c), *k, *a), *v))
                .collect(),
            approvals: self
                .approvals
                .iter()
                .map(|(c, n, f)| (m(c), n.clone(), *f))
                .collect(),
            unsettled: self.unsettled.iter().map(|(c, u)| (m(c), *u)).collect(),
            combined: self
                .combined
                .iter()
                .map(|(n, (c, t))| (n.clone(), (m(c), t.clone())))
                .collect(),
            first: self.first.clone(),
            observed: self.observed,
            memo: self.memo.clone(),
            scopes: self.scopes.clone(),
            scopes_folded: self.scopes_folded,
        }
    }

    /// Hashes what the monitor remembers about client `c`, independent of its id.
    pub fn hash_client<H: Hasher>(&self, c: ClientId, h: &mut H) {
        for ((cc, k, a), v) in &self.keys {
            if *cc == c {
                (k, a, v).hash(h);
            }
        }
        for ((cc, k), v) in &self.announced {
            if *cc == c {
                (k, v).hash(h);
            }
        }
        self.acked_unlisted.get(&c).hash(h);
        for ((cc, k, a), v) in &self.windows {
            if *cc == c {
                (k, a, v).hash(h);
            }
        }
        for ((cc, k, a), v) in &self.listed {
            if *cc == c {
                (k, a, v).hash(h);
            }
        }
        for (cc, n, f) in &self.approvals {
            if *cc == c {
                (n, f).hash(h);
            }
        }
        self.unsettled.get(&c).hash(h);
    }

    /// Folds one event; returns the violations it shows. The event goes to each checker that
    /// judges it, in a fixed order: the order of the violations one event shows.
    pub fn observe(&mut self, e: &Event) -> Vec<Violation> {
        let mut found = Vec::new();
        let out = &mut found;
        approval_not_inherited::settle(self, e);
        match e {
            Event::Committed { version, catalog } => self.commit(out, *version, catalog),
            Event::Notified {
                client,
                kind,
                announces,
                visible,
            } => {
                let (c, k, v) = (*client, *kind, *announces);
                notify_after_commit::notified(self, out, c, k, v, *visible);
                // A second announcement of the same version is bounded_refresh's to judge.
                match self.announce(c, k, v) {
                    Some(prev) if prev == v => bounded_refresh::notified_again(self, out, c, k, v),
                    prev => no_spurious_notify::notified(self, out, c, k, prev, v),
                }
            }
            Event::Served {
                client,
                kind,
                auth,
                version,
                ..
            } => no_spurious_notify::served(self, *client, *kind, *auth, *version),
            Event::CallRejected { .. } | Event::MarkedStale { .. } => {}
            Event::Connected { client } => {
                // A new session: its notifications are counted afresh, and it has listed nothing.
                self.forget_announced(*client);
                no_spurious_notify::connected(self, *client);
            }
            Event::RanStaleArguments { client, tool } => {
                no_stale_arguments::ran(self, out, *client, tool)
            }
            Event::Dispatched {
                client,
                tool,
                present,
            } => no_call_to_removed::dispatched(self, out, *client, tool, *present),
            Event::CallFailed {
                client,
                tool,
                auth,
                gone,
                relisted,
            } => {
                errors_not_changes::call_failed(self, out, (*client, tool, *auth), *gone, *relisted)
            }
            Event::Approved { client, tool, auth } => {
                approval_not_inherited::approved(self, *client, tool, *auth)
            }
            Event::CombinedListing {
                client,
                shown,
                listed,
            } => no_name_collision::combined_listing(self, out, *client, *shown, *listed),
            Event::CalledCombined { name, client, tool } => {
                no_name_collision::called_combined(self, out, name, *client, tool)
            }
            Event::NoticeReceived { client, kind } => {
                approval_not_inherited::notice_received(self, *client, *kind)
            }
            Event::Routed {
                client,
                tool,
                auth,
                sent,
                approval,
            } => {
                let call = (*client, tool, *auth);
                if *sent && *approval {
                    approval_not_inherited::routed(self, out, call);
                }
                let listed = self.published_lists(*client, tool, *auth);
                consumers_agree::routed(self, out, call, *sent, listed);
                no_call_to_removed::routed(self, out, call, *sent, listed);
            }
            Event::Woken { client, kinds, .. } => bounded_refresh::woken(self, *client, *kinds),
            Event::RefreshStarted {
                client,
                kind,
                auth,
                refresh,
            } => {
                no_lost_wakeup::refresh_started(self, *client, *kind, *auth);
                listen_then_list::listing(self, *client, *kind);
                bounded_refresh::refresh_started(self, out, (*client, *kind, *auth), *refresh);
            }
            Event::WalkRestarted {
                client,
                kind,
                refresh,
                ..
            } => {
                no_lost_wakeup::walk_restarted(self, *client, *kind, *refresh);
                listen_then_list::listing(self, *client, *kind);
            }
            Event::RefreshEnded {
                client,
                kind,
                auth,
                refresh,
                ..
            } => bounded_refresh::refresh_ended(self, (*client, *kind, *auth), *refresh),
            Event::Published {
                client,
                kind,
                auth,
                items,
                ..
            } => {
                let digest = Digest::of(items);
                let matched = self.matching(*kind, *auth, digest);
                no_torn_snapshot::published(self, out, *client, *kind, items, matched);
                auth_isolation::published(self, out, (*client, *kind, *auth), items);
                let key = (*client, *kind, *auth);
                Shared::make_mut(&mut self.keys)
                    .entry(key)
                    .or_default()
                    .last = Some((digest, matched));
                no_stale_overwrite::published(self, out, key, matched);
            }
            Event::ListenAcked { client, kinds } => listen_then_list::acked(self, *client, *kinds),
            Event::Quiescent { expect } => {
                for (property, detail) in self.check_quiescent(expect) {
                    self.flag(out, property, detail);
                }
            }
        }
        self.observed += 1;
        found
    }

    /// Records the version a `list_changed` of `group` to `client` announces; returns what the
    /// session's previous one announced.
    fn announce(&mut self, client: ClientId, group: Kind, announces: u64) -> Option<u64> {
        let prev = self.announced.get(&(client, group)).copied();
        if prev != Some(announces) {
            Shared::make_mut(&mut self.announced).insert((client, group), announces);
        }
        prev
    }

    /// Forgets the notifications of `client`'s previous session.
    fn forget_announced(&mut self, client: ClientId) {
        if self.announced.keys().any(|(c, _)| *c == client) {
            Shared::make_mut(&mut self.announced).retain(|(c, _), _| *c != client);
        }
    }

    /// The properties judged at quiescence (converges, no_lost_wakeup, listen_then_list), for
    /// the given (client, kind, auth) snapshots. Does not record anything: callers decide.
    pub fn check_quiescent(&self, expect: &[(ClientId, Kind, AuthCtx)]) -> Vec<(Property, String)> {
        let mut out = Vec::new();
        let Some((latest, catalog)) = self.commits.last() else {
            return out;
        };
        for &(client, kind, auth) in expect {
            let key = (client, kind, auth);
            if let Some(why) = converges::at_rest(self, key, *latest, catalog) {
                out.push((Property::Converges, why));
                // A lost wakeup is a divergence with a particular cause.
                if let Some(why) = no_lost_wakeup::at_rest(self, key, *latest) {
                    out.push((Property::NoLostWakeup, why));
                }
            }
            if let Some(why) = listen_then_list::at_rest(self, client, kind) {
                out.push((Property::ListenThenList, why));
            }
        }
        out
    }
}

/// The result of judging a whole history.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// Verdict per property (holds or violated).
    pub verdicts: Verdicts,
    /// Every violation, in history order.
    pub violations: Vec<Violation>,
}

/// Judges a recorded history with the same checkers the model and the simulator use.
pub fn judge<'a>(events: impl IntoIterator<Item = &'a Event>) -> Judgement {
    let mut m = Monitor::new();
    let mut violations = Vec::new();
    for e in events {
        violations.extend(m.observe(e));
    }
    Judgement {
        verdicts: m.verdicts(),
        violations,
    }
}

#[cfg(test)]
mod tests;
