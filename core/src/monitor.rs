//! The property checkers: an online monitor that folds a history's events one at a time and
//! decides every property of docs/design.md. The model keeps a `Monitor` inside each state (it is
//! small, `Hash + Eq`), the simulator folds its runs through one, and the harness judges the
//! histories it reconstructs from real implementations with [`judge`] — the same code everywhere.
//!
//! Lists are compared by [`Digest`] (order-independent), so a client that reorders items is not
//! torn, while a missing, extra or differently defined item is.

use crate::history::{Cause, ClientId, Event, RefreshOutcome, Unsettled};
use crate::property::{Property, Verdict, Verdicts};
use crate::server::visible_entries;
use crate::shared::Shared;
use crate::vocab::{
    AuthCtx, Catalog, Digest, Entry, Fnv, Item, Kind, KindSet, Name, Scope, declares_read_only,
    fingerprint,
};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hash, Hasher};
use std::sync::Arc;

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
    /// Digest of the last published snapshot, and the range of catalog versions it matches.
    last: Option<(Digest, Option<(u64, u64)>)>,
    /// Catalog versions the last untorn snapshot matched.
    last_good: Option<(u64, u64)>,
    /// Latest committed version when the client last started a refresh of this list.
    refresh_started_at: Option<u64>,
}

/// A bounded_refresh observation window: opened when a refresh starts, closed by the first
/// wake-up after that refresh ends. Counts refreshes started inside it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
struct Window {
    refresh: u32,
    ended: bool,
    further: u8,
}

/// The online property checker.
#[derive(Clone, Debug, Default)]
pub struct Monitor {
    /// Committed versions and their catalogs (each catalog's hash computed once).
    commits: Shared<Vec<(u64, Shared<Catalog>)>>,
    keys: Shared<BTreeMap<(ClientId, Kind, AuthCtx), KeyState>>,
    announced: Shared<BTreeMap<(ClientId, Kind), u64>>,
    acked_unlisted: Shared<BTreeMap<ClientId, KindSet>>,
    windows: Shared<BTreeMap<(ClientId, Kind, AuthCtx), Vec<Window>>>,
    /// Per (client, kind, authorization context): the version the session's last list page of
    /// that kind under that context was served at (dated by the observer). The contexts a session
    /// listed under, and what it last knew of each list.
    listed: Shared<BTreeMap<(ClientId, Kind, AuthCtx), u64>>,
    /// The user's approvals: client, tool, and the fingerprint of the definition the client's
    /// published list showed when the user approved it.
    approvals: Shared<BTreeSet<(ClientId, Name, u64)>>,
    /// Clients (whose application asks for approvals) whose tool list is unsettled.
    unsettled: Shared<BTreeMap<ClientId, Unsettled>>,
    /// (several servers) Each combined name the application called, with the connection and
    /// tool its first call reached on the wire.
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

/// Digests of the committed versions' visible lists of one (kind, auth), folded so far.
#[derive(Clone, Debug, Default)]
struct Matches {
    /// Commits folded.
    folded: usize,
    /// Digest → (first, last) committed version with that visible list.
    ranges: FastMap<Digest, (u64, u64)>,
    /// The digest of the last commit folded.
    last: Option<Digest>,
}

/// The monitor's derived indexes are only looked up, never iterated, and are rebuilt from the
/// commits: a fast hasher with fixed keys (ahash) instead of the default SipHash.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<ahash::AHasher>>;

/// The digest of the list a request of `kind` under `auth` sees in `c`: what
/// `Digest::of(&c.visible(kind, auth))` gives, hashed in place (the visible list is in name order,
/// the order `Digest::of` sorts items into, and names are unique within a kind).
pub(crate) fn visible_digest(c: &Catalog, kind: Kind, auth: AuthCtx) -> Digest {
    let mut h = Fnv::default();
    visible_entries(c, kind, auth).count().hash(&mut h);
    for (name, e) in visible_entries(c, kind, auth) {
        // An `Item`'s hash: its fields in order.
        name.hash(&mut h);
        e.def.hash(&mut h);
        e.scope.hash(&mut h);
    }
    Digest(h.finish())
}

/// The authorization contexts committed versions have shown one item to.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    public: bool,
    only: [u64; 4],
}

impl Seen {
    fn add(&mut self, scope: Scope) {
        match scope {
            Scope::Public => self.public = true,
            Scope::Only(a) => self.only[usize::from(a.0 / 64)] |= 1 << (a.0 % 64),
        }
    }

    fn visible_to(&self, auth: AuthCtx) -> bool {
        self.public || self.only[usize::from(auth.0 / 64)] & (1 << (auth.0 % 64)) != 0
    }
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

    /// The range of committed versions whose visible list (for `kind` under `auth`) has digest
    /// `digest`.
    fn matching(&mut self, kind: Kind, auth: AuthCtx, digest: Digest) -> Option<(u64, u64)> {
        // Shared with the monitor's copies until a new commit is folded in.
        let folded = self.memo.get(&(kind, auth)).map_or(0, |m| m.folded);
        if folded < self.commits.len() {
            let m = Arc::make_mut(&mut self.memo)
                .entry((kind, auth))
                .or_default();
            while m.folded < self.commits.len() {
                let (v, c) = &self.commits[m.folded];
                let d = visible_digest(c, kind, auth);
                m.ranges.entry(d).or_insert((*v, *v)).1 = *v;
                m.last = Some(d);
                m.folded += 1;
            }
        }
        self.memo
            .get(&(kind, auth))
            .and_then(|m| m.ranges.get(&digest).copied())
    }

    /// The latest committed version whose visible list of `kind` under `auth` is `items` (in
    /// any order), if any.
    pub fn latest_version_of(&mut self, kind: Kind, auth: AuthCtx, items: &[Item]) -> Option<u64> {
        let d = Digest::of(items);
        self.matching(kind, auth, d).map(|(_, hi)| hi)
    }

    /// Whether any committed version holds `kind` item `name`, and whether any shows it to
    /// `auth`.
    fn seen(&mut self, kind: Kind, name: &Name, auth: AuthCtx) -> (bool, bool) {
        while self.scopes_folded < self.commits.len() {
            let c = &self.commits[self.scopes_folded].1;
            let scopes = Arc::make_mut(&mut self.scopes);
            for ((k, n), e) in &c.items {
                scopes.entry((*k, n.clone())).or_default().add(e.scope);
            }
            self.scopes_folded += 1;
        }
        match self.scopes.get(&(kind, name.clone())) {
            Some(s) => (true, s.visible_to(auth)),
            None => (false, false),
        }
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

    /// approval_not_inherited: why client `c`'s call of `tool` under `auth`, which went out,
    /// breaks the rule, or None. A tool whose published definition declares itself read-only
    /// needs nothing; any other call needs the tool list settled and, where the published
    /// definition is known, the user's approval of exactly it.
    fn approval_breach(&self, c: ClientId, tool: &Name, auth: AuthCtx) -> Option<String> {
        let entry = self.published_entry(c, tool, auth);
        if let Some(Some(e)) = entry
            && declares_read_only(&e.def)
        {
            return None;
        }
        if self.unsettled.contains_key(&c) {
            return Some(format!(
                "c{c} sent a call of {tool}, which may have side effects, while told its tool list changed and before listing it again"
            ));
        }
        let Some(Some(e)) = entry else {
            return None;
        };
        let fp = fingerprint(&e.def);
        (!self.approvals.contains(&(c, tool.clone(), fp))).then(|| {
            format!(
                "c{c} sent a call of {tool} (definition {}) under no approval of that definition",
                e.def
            )
        })
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

    /// Folds one event; returns the violations it shows.
    pub fn observe(&mut self, e: &Event) -> Vec<Violation> {
        let mut out = Vec::new();
        if let Event::RefreshStarted { client, .. }
        | Event::WalkRestarted { client, .. }
        | Event::RefreshEnded { client, .. } = e
            && let Some(u) = self.unsettled.get(client).copied()
        {
            match Unsettled::after(Some(u), e) {
                Some(u) => Shared::make_mut(&mut self.unsettled).insert(*client, u),
                None => Shared::make_mut(&mut self.unsettled).remove(client),
            };
        }
        match e {
            Event::Committed { version, catalog } => {
                if let Some((last, _)) = self.commits.last()
                    && *version <= *last
                {
                    // A history that commits versions out of order is malformed input to the
                    // checker, not a property violation; record it without panicking.
                    self.flag(
                        &mut out,
                        Property::NoStaleOverwrite,
                        format!("history commits v{version} after v{last}: versions must increase"),
                    );
                } else {
                    Shared::make_mut(&mut self.commits)
                        .push((*version, Shared::from_arc(catalog.clone())));
                }
            }
            Event::Notified {
                client,
                kind,
                announces,
                visible,
            } => {
                if announces > visible {
                    self.flag(
                        &mut out,
                        Property::NotifyAfterCommit,
                        format!(
                            "{kind} list_changed to c{client} announces v{announces} while list requests still see v{visible}"
                        ),
                    );
                }
                let prev = self.announced.get(&(*client, *kind)).copied();
                if prev != Some(*announces) {
                    Shared::make_mut(&mut self.announced).insert((*client, *kind), *announces);
                }
                // A second announcement of the same version is bounded_refresh's to judge.
                if prev != Some(*announces)
                    && let Some(detail) = self.spurious(*client, *kind, prev, *announces)
                {
                    self.flag(&mut out, Property::NoSpuriousNotify, detail);
                }
                if prev == Some(*announces) {
                    self.flag(
                        &mut out,
                        Property::BoundedRefresh,
                        format!(
                            "server sent c{client} a second {kind} list_changed for the same committed batch v{announces}"
                        ),
                    );
                }
            }
            Event::Served {
                client,
                kind,
                auth,
                version,
                ..
            } => {
                if self.listed.get(&(*client, *kind, *auth)) != Some(version) {
                    Shared::make_mut(&mut self.listed).insert((*client, *kind, *auth), *version);
                }
            }
            Event::CallRejected { .. } | Event::MarkedStale { .. } => {}
            Event::Connected { client } => {
                // A new session: its notifications are counted afresh, and it has listed nothing.
                if self.announced.keys().any(|(c, _)| c == client) {
                    Shared::make_mut(&mut self.announced).retain(|(c, _), _| c != client);
                }
                if self.listed.keys().any(|(c, _, _)| c == client) {
                    Shared::make_mut(&mut self.listed).retain(|(c, _, _), _| c != client);
                }
            }
            Event::RanStaleArguments { client, tool } => self.flag(
                &mut out,
                Property::NoStaleArguments,
                format!(
                    "server ran {tool} for c{client} with arguments built for an input schema it no longer has"
                ),
            ),
            Event::Dispatched {
                client,
                tool,
                present,
            } => {
                if !present {
                    self.flag(
                        &mut out,
                        Property::NoCallToRemoved,
                        format!(
                            "server ran {tool} for c{client} although it is not in its registry"
                        ),
                    );
                }
            }
            Event::CallFailed {
                client,
                tool,
                auth,
                gone,
                relisted,
            } => {
                let why = if let Some(k) = relisted.iter().find(|k| *k != Kind::Tools) {
                    Some(format!(
                        "c{client} listed {k} again because its call of {tool} failed"
                    ))
                } else if relisted.is_empty() {
                    None
                } else if !gone {
                    Some(format!(
                        "c{client} listed tools again because its call of {tool} failed with an error that is not a list change"
                    ))
                } else if self.published_lists(*client, tool, *auth) == Some(false) {
                    Some(format!(
                        "c{client} listed tools again for its call of {tool}, which its snapshot already lacked"
                    ))
                } else {
                    None
                };
                if let Some(why) = why {
                    self.flag(&mut out, Property::ErrorsNotChanges, why);
                }
            }
            Event::Approved { client, tool, auth } => {
                if let Some(Some(entry)) = self.published_entry(*client, tool, *auth) {
                    let fp = fingerprint(&entry.def);
                    let approval = (*client, tool.clone(), fp);
                    if !self.approvals.contains(&approval) {
                        Shared::make_mut(&mut self.approvals).insert(approval);
                    }
                }
            }
            Event::CombinedListing {
                client,
                shown,
                listed,
            } => {
                if shown != listed {
                    self.flag(
                        &mut out,
                        Property::NoNameCollision,
                        format!(
                            "after c{client} published its tools, the application's combined \
                             listing shows {shown} of the {listed} tools its servers' published \
                             lists hold: one name stands for tools of several servers"
                        ),
                    );
                }
            }
            Event::CalledCombined { name, client, tool } => {
                let reached = (*client, tool.clone());
                let other_name = self
                    .combined
                    .iter()
                    .find(|(n, r)| *n != name && **r == reached)
                    .map(|(n, _)| n.clone());
                match self.combined.get(name) {
                    Some(first) if *first != reached => {
                        let why = format!(
                            "the application's call of {name} reached c{client}'s server as \
                             {tool}, where an earlier call of the same name reached c{}'s server \
                             as {}",
                            first.0, first.1
                        );
                        self.flag(&mut out, Property::NoNameCollision, why);
                    }
                    Some(_) => {}
                    None => {
                        Shared::make_mut(&mut self.combined).insert(name.clone(), reached);
                    }
                }
                if let Some(other) = other_name {
                    let why = format!(
                        "c{client}'s server's {tool} was called as {name} after being called as \
                         {other}: its name in the combined listing changed"
                    );
                    self.flag(&mut out, Property::NoNameCollision, why);
                }
            }
            Event::NoticeReceived { client, kind } => {
                if kind.notification_group().contains(&Kind::Tools) {
                    Shared::make_mut(&mut self.unsettled).insert(*client, Unsettled::Told);
                }
            }
            Event::Routed {
                client,
                tool,
                auth,
                sent,
                approval,
            } => {
                if *sent
                    && *approval
                    && let Some(why) = self.approval_breach(*client, tool, *auth)
                {
                    self.flag(&mut out, Property::ApprovalNotInherited, why);
                }
                let listed = self.published_lists(*client, tool, *auth);
                if let Some(listed) = listed
                    && listed != *sent
                {
                    self.flag(
                        &mut out,
                        Property::ConsumersAgree,
                        format!(
                            "c{client}'s router {} a call of {tool}, which its published tools list {}",
                            if *sent { "sent" } else { "refused" },
                            if listed { "shows" } else { "does not show" }
                        ),
                    );
                }
                let removed = !self
                    .latest_catalog()
                    .and_then(|c| c.get(Kind::Tools, tool))
                    .is_some_and(|e| e.scope.visible_to(*auth));
                if *sent && listed == Some(false) && removed {
                    self.flag(
                        &mut out,
                        Property::NoCallToRemoved,
                        format!(
                            "c{client} sent a call of {tool}, which the server does not have and its published list does not show"
                        ),
                    );
                }
            }
            Event::Woken { client, kinds, .. } => {
                let from = (*client, Kind::ALL[0], AuthCtx(0));
                let ended = |((c, k, _), ws): (&(ClientId, Kind, AuthCtx), &Vec<Window>)| {
                    c == client && kinds.contains(*k) && ws.iter().any(|w| w.ended)
                };
                if self.windows.range(from..).any(ended) {
                    for ((_, k, _), ws) in Shared::make_mut(&mut self.windows)
                        .range_mut(from..)
                        .take_while(|((c, _, _), _)| c == client)
                    {
                        if kinds.contains(*k) {
                            ws.retain(|w| !w.ended);
                        }
                    }
                }
            }
            Event::RefreshStarted {
                client,
                kind,
                auth,
                refresh,
            } => {
                let at = self.latest_version();
                Shared::make_mut(&mut self.keys)
                    .entry((*client, *kind, *auth))
                    .or_default()
                    .refresh_started_at = at;
                if self.acked_unlisted.get(client).is_some_and(|a| a.contains(*kind))
                    && let Some(acked) = Shared::make_mut(&mut self.acked_unlisted).get_mut(client)
                {
                    *acked = acked.iter().filter(|k| k != kind).collect();
                }
                let ws = Shared::make_mut(&mut self.windows)
                    .entry((*client, *kind, *auth))
                    .or_default();
                let mut over = None;
                for w in ws.iter_mut() {
                    w.further = w.further.saturating_add(1);
                    if w.further > 1 {
                        over = Some(w.refresh);
                    }
                }
                ws.push(Window {
                    refresh: *refresh,
                    ended: false,
                    further: 0,
                });
                if let Some(r) = over {
                    self.flag(
                        &mut out,
                        Property::BoundedRefresh,
                        format!(
                            "c{client} started a second further refresh of {kind} (r{refresh}) for the notifications that arrived during r{r}"
                        ),
                    );
                }
            }
            Event::WalkRestarted {
                client,
                kind,
                refresh,
                ..
            } => {
                // A walk begun again lists afresh from the first page: the list is fetched as of
                // now, as when a refresh starts (the walk's context is its refresh's).
                let from = (*client, *kind, AuthCtx(0));
                let auth = self
                    .windows
                    .range(from..)
                    .take_while(|((c, k, _), _)| c == client && k == kind)
                    .find(|(_, ws)| ws.iter().any(|w| w.refresh == *refresh && !w.ended))
                    .map(|((_, _, a), _)| *a);
                if let Some(auth) = auth {
                    let at = self.latest_version();
                    let key = (*client, *kind, auth);
                    if self.keys.get(&key).is_none_or(|k| k.refresh_started_at != at) {
                        Shared::make_mut(&mut self.keys)
                            .entry(key)
                            .or_default()
                            .refresh_started_at = at;
                    }
                }
                if self.acked_unlisted.get(client).is_some_and(|a| a.contains(*kind))
                    && let Some(acked) = Shared::make_mut(&mut self.acked_unlisted).get_mut(client)
                {
                    *acked = acked.iter().filter(|k| k != kind).collect();
                }
            }
            Event::RefreshEnded {
                client,
                kind,
                auth,
                refresh,
                ..
            } => {
                if self.windows.contains_key(&(*client, *kind, *auth))
                    && let Some(ws) = Shared::make_mut(&mut self.windows).get_mut(&(*client, *kind, *auth))
                {
                    for w in ws.iter_mut().filter(|w| w.refresh == *refresh) {
                        w.ended = true;
                    }
                }
            }
            Event::Published {
                client,
                kind,
                auth,
                items,
                ..
            } => {
                let digest = Digest::of(items);
                let matched = self.matching(*kind, *auth, digest);
                if matched.is_none() {
                    let names: Vec<_> = items
                        .iter()
                        .map(|i| format!("{}={}", i.name, i.def))
                        .collect();
                    self.flag(
                        &mut out,
                        Property::NoTornSnapshot,
                        format!(
                            "c{client} published {kind} [{}], which is the server's {kind} list at no committed version",
                            names.join(",")
                        ),
                    );
                }
                // auth_isolation: an item that every committed version scopes to another context.
                for item in items.iter() {
                    let (seen, visible) = self.seen(*kind, &item.name, *auth);
                    if seen && !visible {
                        self.flag(
                            &mut out,
                            Property::AuthIsolation,
                            format!(
                                "c{client} cached {kind} item {} for {auth}, but it is visible only to another context",
                                item.name
                            ),
                        );
                    }
                    if item.scope != Scope::Public && !item.scope.visible_to(*auth) && !seen {
                        self.flag(
                            &mut out,
                            Property::AuthIsolation,
                            format!(
                                "c{client} cached {kind} item {} scoped to another context under {auth}",
                                item.name
                            ),
                        );
                    }
                }
                let key = Shared::make_mut(&mut self.keys)
                    .entry((*client, *kind, *auth))
                    .or_default();
                let prev_good = key.last_good;
                key.last = Some((digest, matched));
                if let Some((_, hi)) = matched {
                    if let Some((plo, _)) = prev_good
                        && hi < plo
                    {
                        self.flag(
                            &mut out,
                            Property::NoStaleOverwrite,
                            format!(
                                "c{client} replaced its {kind} snapshot of v{plo} with an older one (at most v{hi})"
                            ),
                        );
                    }
                    let key = Shared::make_mut(&mut self.keys)
                        .entry((*client, *kind, *auth))
                        .or_default();
                    key.last_good = matched;
                }
            }
            Event::ListenAcked { client, kinds } => {
                let e = Shared::make_mut(&mut self.acked_unlisted)
                    .entry(*client)
                    .or_default();
                *e = kinds.iter().chain(e.iter()).collect();
            }
            Event::Quiescent { expect } => {
                for v in self.check_quiescent(expect) {
                    self.flag(&mut out, v.0, v.1);
                }
            }
        }
        self.observed += 1;
        out
    }

    /// The catalog committed at `version`, if the history committed it.
    pub fn catalog_at(&self, version: u64) -> Option<&Arc<Catalog>> {
        self.commits
            .binary_search_by_key(&version, |(v, _)| *v)
            .ok()
            .map(|i| self.commits[i].1.arc())
    }

    /// no_spurious_notify: why a `list_changed` of notification group `group` to `client` that
    /// announces `announces` (not what its previous one announced: a repeat is bounded_refresh's
    /// to judge) is spurious, or `None` if some list it covers changed since the
    /// session last knew it. The session knew each list it was last served before that version
    /// (at the version the observer dated the page) and what its previous notification of the
    /// group (`prev`) announced, whichever is newer; a session that has listed nothing yet knew the whole group
    /// as of its previous notification. Where the history says too little (no earlier version
    /// to compare with, a version it never committed, more contexts than a server keeps per
    /// session) the notification is given the benefit of the doubt.
    fn spurious(
        &self,
        client: ClientId,
        group: Kind,
        prev: Option<u64>,
        announces: u64,
    ) -> Option<String> {
        let kinds = group.notification_group();
        let now = self.catalog_at(announces)?;
        let contexts: std::collections::BTreeSet<AuthCtx> = self
            .listed
            .range((client, Kind::ALL[0], AuthCtx(0))..)
            .take_while(|((c, _, _), _)| *c == client)
            .map(|((_, _, a), _)| *a)
            .collect();
        if contexts.len() > crate::server::MAX_SESSION_CONTEXTS {
            return None;
        }
        if contexts.is_empty() {
            let then = self.catalog_at(prev?)?;
            return (!crate::server::changed_kinds(then, now).contains(group)).then(|| {
                format!(
                    "c{client} was sent a {group} list_changed announcing v{announces}, but no {group} item changed since v{} (its previous one)",
                    prev.unwrap_or_default()
                )
            });
        }
        for auth in &contexts {
            for k in kinds {
                // A page served at the announced version itself says nothing: the notification
                // may have been produced at the commit and handed over after the page (rt hands
                // notifications to transports asynchronously).
                let listed = self
                    .listed
                    .get(&(client, *k, *auth))
                    .filter(|v| **v < announces);
                let base = match (listed, prev) {
                    (Some(l), Some(p)) => (*l).max(p),
                    (Some(l), None) => *l,
                    (None, Some(p)) => p,
                    (None, None) => return None,
                };
                let then = self.catalog_at(base)?;
                if !visible_entries(then, *k, *auth).eq(visible_entries(now, *k, *auth)) {
                    return None;
                }
            }
        }
        let names: Vec<String> = contexts.iter().map(ToString::to_string).collect();
        Some(format!(
            "c{client} was sent a {group} list_changed announcing v{announces}, but its {group} list under {} is what it last knew",
            names.join(", ")
        ))
    }

    /// The properties judged at quiescence (converges, no_lost_wakeup, listen_then_list), for
    /// the given (client, kind, auth) snapshots. Does not record anything: callers decide.
    pub fn check_quiescent(&self, expect: &[(ClientId, Kind, AuthCtx)]) -> Vec<(Property, String)> {
        let mut out = Vec::new();
        let Some((latest, catalog)) = self.commits.last() else {
            return out;
        };
        for &(client, kind, auth) in expect {
            // Folded already when a snapshot of it was matched since the last commit.
            let want = self
                .memo
                .get(&(kind, auth))
                .filter(|m| m.folded == self.commits.len())
                .and_then(|m| m.last)
                .unwrap_or_else(|| visible_digest(catalog, kind, auth));
            let key = self.keys.get(&(client, kind, auth));
            let have = key.and_then(|k| k.last).map(|(d, _)| d);
            if have != Some(want) {
                out.push((
                    Property::Converges,
                    format!("at quiescence c{client}'s {kind} snapshot differs from the server's v{latest}"),
                ));
                let started = key.and_then(|k| k.refresh_started_at);
                if started.is_none_or(|s| s < *latest) {
                    out.push((
                        Property::NoLostWakeup,
                        format!(
                            "v{latest} was committed after c{client}'s last {kind} refresh started{}, and was never fetched",
                            started.map(|s| format!(" (at v{s})")).unwrap_or_default()
                        ),
                    ));
                }
            }
            if self
                .acked_unlisted
                .get(&client)
                .is_some_and(|k| k.contains(kind))
            {
                out.push((
                    Property::ListenThenList,
                    format!("c{client} never listed {kind} after its listen was acknowledged"),
                ));
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

/// Whether a wake-up cause counts as a list change signal (used by the simulator's statistics).
pub fn is_change_signal(c: Cause) -> bool {
    matches!(c, Cause::ListChanged | Cause::TtlExpired)
}

/// Whether a refresh outcome means the snapshot changed.
pub fn is_publish(o: RefreshOutcome) -> bool {
    o == RefreshOutcome::Published
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocab::{Item, ItemList, Op};

    fn commit(version: u64, ops: &[Op]) -> Event {
        Event::Committed {
            version,
            catalog: Arc::new(Catalog::from_ops(ops)),
        }
    }

    fn publish(client: ClientId, names: &[(&str, &str)]) -> Event {
        let items: ItemList = names.iter().map(|(n, d)| Item::new(n, d)).collect();
        Event::Published {
            client,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            items,
            version: None,
        }
    }

    fn started(client: ClientId, refresh: u32) -> Event {
        Event::RefreshStarted {
            client,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            refresh,
        }
    }

    fn ended(client: ClientId, refresh: u32) -> Event {
        Event::RefreshEnded {
            client,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            refresh,
            outcome: RefreshOutcome::Published,
        }
    }

    fn woken(client: ClientId) -> Event {
        Event::Woken {
            client,
            kinds: KindSet::only(Kind::Tools),
            cause: Cause::ListChanged,
        }
    }

    fn quiescent(client: ClientId) -> Event {
        Event::Quiescent {
            expect: vec![(client, Kind::Tools, AuthCtx(0))],
        }
    }

    fn v1() -> Event {
        commit(
            1,
            &[
                Op::add(Kind::Tools, "a", "a1"),
                Op::add(Kind::Tools, "b", "b1"),
            ],
        )
    }

    fn v2() -> Event {
        commit(
            2,
            &[
                Op::add(Kind::Tools, "a", "a1"),
                Op::add(Kind::Tools, "b", "b1"),
                Op::add(Kind::Tools, "c", "c1"),
            ],
        )
    }

    fn violated(events: &[Event]) -> Vec<Property> {
        let j = judge(events);
        Property::ALL
            .into_iter()
            .filter(|p| j.verdicts[p] == Verdict::Violated)
            .collect()
    }

    #[test]
    fn a_clean_history_holds_everything() {
        let h = [
            v1(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            ended(0, 0),
            v2(),
            woken(0),
            started(0, 1),
            publish(0, &[("b", "b1"), ("c", "c1"), ("a", "a1")]),
            ended(0, 1),
            quiescent(0),
        ];
        assert_eq!(violated(&h), []);
    }

    #[test]
    fn torn_and_empty_flash_are_caught() {
        let torn = [v1(), v2(), publish(0, &[("a", "a1"), ("c", "c1")])];
        assert_eq!(violated(&torn), [Property::NoTornSnapshot]);
        let flash = [v1(), publish(0, &[])];
        assert_eq!(violated(&flash), [Property::NoTornSnapshot]);
    }

    #[test]
    fn stale_overwrite_is_caught() {
        let h = [
            v1(),
            v2(),
            publish(0, &[("a", "a1"), ("b", "b1"), ("c", "c1")]),
            publish(0, &[("a", "a1"), ("b", "b1")]),
        ];
        assert_eq!(violated(&h), [Property::NoStaleOverwrite]);
    }

    #[test]
    fn lost_wakeup_and_divergence_at_quiescence() {
        let h = [
            v1(),
            started(0, 0),
            v2(),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            ended(0, 0),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::Converges, Property::NoLostWakeup]);
        // Diverged, but the refresh started after the last commit: not a lost wakeup.
        let h = [
            v1(),
            v2(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::Converges]);
    }

    #[test]
    fn notify_before_commit_and_double_notify() {
        let early = Event::Notified {
            client: 0,
            kind: Kind::Tools,
            announces: 2,
            visible: 1,
        };
        assert_eq!(violated(&[v1(), early]), [Property::NotifyAfterCommit]);
        let ok = Event::Notified {
            client: 0,
            kind: Kind::Tools,
            announces: 2,
            visible: 2,
        };
        assert_eq!(violated(&[v1(), v2(), ok.clone()]), []);
        assert_eq!(
            violated(&[v1(), v2(), ok.clone(), ok]),
            [Property::BoundedRefresh]
        );
    }

    #[test]
    fn bounded_refresh_counts_further_refreshes_per_burst() {
        // Single flight: a burst during r0 leads to exactly one more refresh.
        let good = [
            v1(),
            started(0, 0),
            woken(0),
            woken(0),
            woken(0),
            ended(0, 0),
            started(0, 1),
            ended(0, 1),
        ];
        assert_eq!(violated(&good), []);
        // One refresh per notification, concurrently.
        let naive = [
            v1(),
            woken(0),
            started(0, 0),
            woken(0),
            started(0, 1),
            woken(0),
            started(0, 2),
        ];
        assert_eq!(violated(&naive), [Property::BoundedRefresh]);
    }

    #[test]
    fn calls_to_removed_tools_and_listen_then_list() {
        let call = Event::Dispatched {
            client: 0,
            tool: "a".into(),
            present: false,
        };
        assert_eq!(violated(&[v1(), call]), [Property::NoCallToRemoved]);
        let ack = Event::ListenAcked {
            client: 0,
            kinds: KindSet::only(Kind::Tools),
        };
        let h = [
            v1(),
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            ack.clone(),
            quiescent(0),
        ];
        assert_eq!(violated(&h), [Property::ListenThenList]);
        let h = [
            v1(),
            ack,
            started(0, 0),
            publish(0, &[("a", "a1"), ("b", "b1")]),
            quiescent(0),
        ];
        assert_eq!(violated(&h), []);
    }

    #[test]
    fn auth_isolation_rejects_foreign_items() {
        let c = commit(
            1,
            &[
                Op::add(Kind::Tools, "a", "a1"),
                Op::Add {
                    kind: Kind::Tools,
                    name: "s".into(),
                    def: "s1".into(),
                    scope: Scope::Only(AuthCtx(1)),
                },
            ],
        );
        let leak = Event::Published {
            client: 0,
            kind: Kind::Tools,
            auth: AuthCtx(0),
            items: vec![Item::new("a", "a1"), Item::new("s", "s1")].into(),
            version: None,
        };
        let v = violated(&[c, leak]);
        assert!(v.contains(&Property::AuthIsolation), "{v:?}");
    }

    fn served(client: ClientId, auth: u8, version: u64) -> Event {
        Event::Served {
            client,
            kind: Kind::Tools,
            auth: AuthCtx(auth),
            version,
            items: 0,
            more: false,
        }
    }

    fn notified(client: ClientId, announces: u64) -> Event {
        Event::Notified {
            client,
            kind: Kind::Tools,
            announces,
            visible: announces,
        }
    }

    fn scoped(name: &str, def: &str, auth: u8) -> Op {
        Op::Add {
            kind: Kind::Tools,
            name: name.into(),
            def: def.into(),
            scope: Scope::Only(AuthCtx(auth)),
        }
    }

    #[test]
    fn a_notification_that_changes_nothing_the_session_listed_is_spurious() {
        let a = Op::add(Kind::Tools, "a", "a1");
        // v2 adds s for auth1 only; v3 adds public b.
        let h = |events: &[Event]| {
            let mut all = vec![
                commit(1, std::slice::from_ref(&a)),
                commit(2, &[a.clone(), scoped("s", "s1", 1)]),
                commit(
                    3,
                    &[
                        a.clone(),
                        scoped("s", "s1", 1),
                        Op::add(Kind::Tools, "b", "b1"),
                    ],
                ),
            ];
            all.extend_from_slice(events);
            violated(&all)
        };
        // Listed under auth0 at v1: v2 changes nothing it sees, v3 does.
        assert_eq!(
            h(&[served(0, 0, 1), notified(0, 2)]),
            [Property::NoSpuriousNotify]
        );
        assert_eq!(h(&[served(0, 0, 1), notified(0, 3)]), []);
        // Also listed under auth1: v2 is news.
        assert_eq!(h(&[served(0, 0, 1), served(0, 1, 1), notified(0, 2)]), []);
        // A notification of the version the session was last served at cannot be told from
        // one produced at that commit and handed over after the page: not judged.
        assert_eq!(h(&[served(0, 0, 3), notified(0, 3)]), []);
        // Listed nothing: compared over every context with its previous notification; the
        // first one has nothing to compare with.
        assert_eq!(h(&[notified(0, 1), notified(0, 2)]), []);
        // A repeat of the same version is bounded_refresh's, not this property's.
        assert_eq!(
            h(&[served(0, 0, 2), notified(0, 3), notified(0, 3)]),
            [Property::BoundedRefresh]
        );
        // A new session has listed nothing yet.
        assert_eq!(
            h(&[
                served(0, 0, 1),
                Event::Connected { client: 0 },
                notified(0, 2)
            ]),
            []
        );
    }

    /// What a session knew of a list under a context is the newer of its last page of it and its
    /// last notification: a change that came and went while the session did not list under that
    /// context is news once it has.
    #[test]
    fn a_context_listed_later_is_judged_from_when_it_was_listed() {
        let a = Op::add(Kind::Tools, "a", "a1");
        let h = [
            commit(1, &[a.clone(), scoped("s", "s1", 1)]),
            served(0, 0, 1),
            commit(2, std::slice::from_ref(&a)),
            served(0, 1, 2),
            commit(3, &[a.clone(), scoped("s", "s1", 1)]),
            notified(0, 3),
        ];
        assert_eq!(violated(&h), []);
    }

    /// The digest of a visible list hashed in place is the digest of the list `Catalog::visible`
    /// copies out, for every kind and context, scoped items and templates included.
    #[test]
    fn a_visible_list_digests_in_place_as_copied() {
        let ops = [
            Op::add(Kind::Tools, "b", "b1"),
            Op::add(Kind::Tools, "a", "a1"),
            scoped("s", "s1", 1),
            scoped("t", "t2", 2),
            Op::add(Kind::Prompts, "p", "p1"),
            Op::add(Kind::ResourceTemplates, "r/{x}", "r1"),
            Op::add(Kind::Resources, "file:///a", "f1"),
        ];
        for n in 0..=ops.len() {
            let c = Catalog::from_ops(&ops[..n]);
            for kind in Kind::ALL {
                for auth in [AuthCtx(0), AuthCtx(1), AuthCtx(2)] {
                    assert_eq!(
                        visible_digest(&c, kind, auth),
                        Digest::of(&c.visible(kind, auth)),
                        "{n} ops, {kind} under {auth}"
                    );
                }
            }
        }
        // Not a constant: another list, another digest.
        let c = Catalog::from_ops(&ops);
        assert_ne!(
            visible_digest(&c, Kind::Tools, AuthCtx(1)),
            visible_digest(&c, Kind::Tools, AuthCtx(2))
        );
    }
}
