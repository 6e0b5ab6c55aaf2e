//! `listsync audit`: judges a session log per property, as far as the wire allows. The wire
//! ([`crate::wire`]) becomes a history of core events per connection, judged by core's
//! [`judge`] — the checkers of the model, the simulator and the replay — plus the two
//! `no_torn_snapshot` rules only the wire can state (a walk abandoned before its last page,
//! a name twice across the pages of one walk).
//!
//! What the wire cannot say is inferred, conservatively (docs/session-log.md, "What the audit
//! infers"): catalog versions are the distinct lists complete walks returned; a `list_changed`
//! announces a new version, made visible by the first list that differs, and if the first
//! list after it still shows the old content while a later one (before the next
//! `list_changed`) differs, it was sent before its change was visible; a list whose walk was
//! under way when a `list_changed` of its kind arrived is no change of its own; the end of a
//! connection with nothing unanswered is quiescence; a complete walk is what the client
//! published.

use crate::log::{RecordTransport, SessionLog, line_of};
use crate::wire::{Wire, observe};
use listsync_core::history::{ClientId, Event, RefreshOutcome, Restart};
use listsync_core::monitor::judge;
use listsync_core::property::Property;
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, ItemList, Kind, KindSet, Op};
use listsync_observe::items::notified_kind;
use listsync_observe::{ListWalk, NamedItem, WalkFate, delivered_event};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashSet};

const CLIENT: ClientId = 0;
const AUTH: AuthCtx = AuthCtx(0);

/// The verdict on one property of a session.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The wire shows a violation.
    Violated,
    /// What the property is about happened and the wire shows no violation.
    HoldsAsObserved,
    /// What the property is about never happened in this session.
    NotObserved,
    /// The wire cannot show it.
    NotApplicable,
}

impl Status {
    /// `violated`, `holds as observed`, `not observed`, `not applicable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Violated => "violated",
            Status::HoldsAsObserved => "holds as observed",
            Status::NotObserved => "not observed",
            Status::NotApplicable => "not applicable",
        }
    }
}

/// One property's verdict, with its evidence.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct AuditVerdict {
    /// The property (core's name).
    pub property: Property,
    /// The verdict.
    pub status: Status,
    /// Why (the first violation's explanation, or what was or was not observed).
    pub detail: String,
    /// Log lines (1-based, the header is line 1) that show it.
    pub evidence: Vec<u64>,
    /// The connections (MCP sessions) it was violated on, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conns: Vec<u32>,
}

/// A judged session log.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Audit {
    /// One verdict per property, in core's order.
    pub verdicts: Vec<AuditVerdict>,
    /// Entries read.
    pub entries: usize,
    /// Connections seen.
    pub connections: usize,
    /// Walks seen.
    pub walks: usize,
    /// The reconstructed history: log line, event.
    pub history: Vec<(u64, String)>,
    /// Caveats.
    pub notes: Vec<String>,
}

impl Audit {
    /// Whether some property is violated.
    pub fn violated(&self) -> bool {
        self.verdicts.iter().any(|v| v.status == Status::Violated)
    }

    /// The verdict on `p`.
    pub fn status(&self, p: Property) -> Status {
        self.verdicts
            .iter()
            .find(|v| v.property == p)
            .map_or(Status::NotObserved, |v| v.status)
    }
}

fn items_of(list: &[NamedItem]) -> ItemList {
    list.iter()
        .map(|i| Item::new(&i.name, &i.description))
        .collect()
}

/// A violation: the first explanation, the evidence lines, the connections it was seen on.
type Flagged = (String, BTreeSet<u64>, Vec<u32>);

/// What was observed for a property across the connections, beyond its violations.
#[derive(Default)]
struct Seen {
    violations: BTreeMap<Property, Flagged>,
    observed: BTreeSet<Property>,
    history: Vec<(u64, String)>,
    notes: Vec<String>,
    /// The connection being judged.
    conn: u32,
    /// Whether explanations name their connection (an HTTP log, or several connections).
    name_conns: bool,
    /// Whether some connection ended with every request answered (quiescence).
    quiescent: bool,
}

impl Seen {
    fn flag(&mut self, p: Property, detail: String, lines: impl IntoIterator<Item = u64>) {
        let conn = self.conn;
        let named = self.name_conns;
        let e = self.violations.entry(p).or_insert_with(|| {
            let detail = if named {
                format!("connection {conn}: {detail}")
            } else {
                detail
            };
            (detail, BTreeSet::new(), Vec::new())
        });
        e.1.extend(lines);
        if !e.2.contains(&conn) {
            e.2.push(conn);
        }
    }
}

/// Judges a log.
pub fn audit(log: &SessionLog) -> Audit {
    let wire = observe(&log.entries);
    let mut seen = Seen {
        name_conns: log.header.transport == RecordTransport::Http || wire.conns.len() > 1,
        ..Seen::default()
    };
    // Each connection (an MCP session) is judged on its own: its own walks, notifications,
    // versions and end; a property is violated if it is on some connection.
    for conn in &wire.conns {
        seen.conn = *conn;
        judge_connection(&wire, *conn, &mut seen);
    }
    let mut notes = wire.notes.clone();
    notes.append(&mut seen.notes);
    let verdicts = Property::ALL
        .into_iter()
        .map(|p| verdict(p, &seen, &wire))
        .collect();
    Audit {
        verdicts,
        entries: log.entries.len(),
        connections: wire.conns.len(),
        walks: wire.walks.len(),
        history: seen.history,
        notes,
    }
}

/// Why an audit never judges `p` from a session log (its verdict is always "not applicable"),
/// or `None` when it may: what these properties are about is not on the wire. Reports print it.
pub fn not_judged(p: Property) -> Option<&'static str> {
    Some(match p {
        Property::AuthIsolation => {
            "one authorization context per connection; what a client caches is not on the wire"
        }
        Property::NoSpuriousNotify => {
            "the server's catalog is not on the wire: a list_changed followed by the same list may announce a change to another context, or one undone since"
        }
        Property::ConsumersAgree => {
            "what the application's listing shows is not on the wire, and a client may call a tool by a name it knows from elsewhere"
        }
        Property::ApprovalNotInherited => {
            "a user's approvals, and what a client's listing shows, are not on the wire"
        }
        Property::NoStaleArguments => {
            "which definition a call's arguments were built for is not on the wire (only our clients say so, in _meta)"
        }
        Property::NoNameCollision => {
            "a recorded session is one connection to one server; the names an application shows for several servers are not on its wire"
        }
        Property::ErrorsNotChanges => {
            "why a client lists again is not on the wire: a list request after a failed call may be the application's or a timer's"
        }
        _ => return None,
    })
}

fn verdict(p: Property, seen: &Seen, wire: &Wire) -> AuditVerdict {
    if let Some((detail, lines, conns)) = seen.violations.get(&p) {
        let mut detail = detail.clone();
        if conns.len() > 1 {
            let others: Vec<String> = conns.iter().skip(1).map(u32::to_string).collect();
            detail.push_str(&format!(
                " (violated on connection(s) {} too)",
                others.join(", ")
            ));
        }
        return AuditVerdict {
            property: p,
            status: Status::Violated,
            detail,
            evidence: lines.iter().copied().collect(),
            conns: conns.clone(),
        };
    }
    let (status, detail) = match p {
        _ if not_judged(p).is_some() => (
            Status::NotApplicable,
            not_judged(p).unwrap_or_default().into(),
        ),
        Property::NoStaleOverwrite if !seen.observed.contains(&p) => (
            Status::NotApplicable,
            "no list was under way when a list_changed of its kind arrived; otherwise what a client publishes is not on the wire (responses on one link arrive in the order served)".into(),
        ),
        Property::ListenThenList if wire.listened.is_empty() => (
            Status::NotApplicable,
            "no subscriptions/listen (2025-11-25 or a client that does not listen)".into(),
        ),
        _ if seen.observed.contains(&p) => (Status::HoldsAsObserved, observed_text(p).into()),
        _ => (Status::NotObserved, unobserved_text(p, seen).into()),
    };
    AuditVerdict {
        property: p,
        status,
        detail,
        evidence: Vec::new(),
        conns: Vec::new(),
    }
}

fn observed_text(p: Property) -> &'static str {
    match p {
        Property::NoTornSnapshot => "every walk went to its last page, without a name twice",
        Property::Converges => {
            "at the end of each connection the client's last list equals the latest observed"
        }
        Property::NoLostWakeup => "every list_changed was followed by a list",
        Property::NotifyAfterCommit => "no list after a list_changed showed the old content",
        Property::NoCallToRemoved => {
            "no call of a tool announced removed and no longer listed was answered as success"
        }
        Property::NoStaleOverwrite => {
            "no list under way when a list_changed of its kind arrived was the client's last over a newer one"
        }
        Property::BoundedRefresh => "no burst of list_changed caused more than 2 walks",
        Property::ListenThenList => "the client listed after the listen acknowledgement",
        _ => "",
    }
}

/// Why `p` was not observed: for the properties judged at a quiescent end, what the
/// connections that ended so lacked, if any did.
fn unobserved_text(p: Property, seen: &Seen) -> &'static str {
    let quiescent = seen.quiescent;
    match p {
        Property::NoTornSnapshot => "no walk ended",
        Property::Converges if quiescent => {
            "no list was walked on a connection that ended with every request answered"
        }
        Property::NoLostWakeup if quiescent => {
            "no list_changed reached the client on a connection that ended with every request answered"
        }
        Property::ListenThenList if quiescent => {
            "no connection that listened ended with every request answered"
        }
        Property::Converges | Property::NoLostWakeup | Property::ListenThenList => {
            "no connection ended with every request answered (quiescence)"
        }
        Property::NotifyAfterCommit => "no list_changed was followed by a complete list",
        Property::NoCallToRemoved => "no call of a tool announced removed and no longer listed",
        Property::BoundedRefresh => "no list_changed reached the client",
        _ => "",
    }
}

/// Dated events of one connection: (entry seq, order within the seq, event).
type Dated = Vec<(u64, u8, Event)>;

/// One connection being judged: its walks (with their index in the wire), the kinds it
/// listed, the `list_changed`s it received, and the events inferred so far.
struct Conn<'a> {
    wire: &'a Wire,
    conn: u32,
    walks: Vec<(usize, &'a ListWalk)>,
    tracked: KindSet,
    notices: Vec<(u64, Kind)>,
    out: Dated,
}

/// What the wire shows of the versions so far, as the walks and notices of a connection are
/// met in order.
struct Versions {
    /// The latest version's lists.
    content: BTreeMap<Kind, Vec<NamedItem>>,
    version: u64,
    /// Tools announced removed and no longer listed.
    removed: BTreeSet<String>,
    notified_tools_since_list: bool,
    /// From an entry seq on: the tools removed then.
    call_state: Vec<(u64, BTreeSet<String>)>,
}

fn clean(w: &ListWalk) -> bool {
    w.fate == WalkFate::Complete && w.duplicate().is_none()
}

fn same(a: &[NamedItem], b: &[NamedItem]) -> bool {
    Digest::of(&items_of(a)) == Digest::of(&items_of(b))
}

fn catalog(c: &BTreeMap<Kind, Vec<NamedItem>>) -> std::sync::Arc<Catalog> {
    let ops: Vec<Op> = c
        .iter()
        .flat_map(|(k, items)| items.iter().map(|i| Op::add(*k, &i.name, &i.description)))
        .collect();
    std::sync::Arc::new(Catalog::from_ops(&ops))
}

fn judge_connection(wire: &Wire, conn: u32, seen: &mut Seen) {
    let walks: Vec<(usize, &ListWalk)> = wire
        .walks
        .iter()
        .enumerate()
        .filter(|(_, w)| w.conn == conn)
        .collect();
    let notices = wire
        .delivered
        .iter()
        .filter(|d| d.conn == conn)
        .filter_map(|d| {
            let m = d.json.get("method")?.as_str()?;
            Some((d.seq, notified_kind(m)?))
        })
        .collect();
    let mut c = Conn {
        wire,
        conn,
        tracked: walks.iter().map(|(_, w)| w.kind).collect(),
        walks,
        notices,
        out: Vec::new(),
    };
    c.refreshes(seen);
    let call_state = c.versions(seen);
    c.calls(&call_state, seen);
    c.delivered(seen);
    c.end(seen);
    c.judged(seen);
}

impl Conn<'_> {
    /// Walks: which start a refresh and which restart one (the older walk stopped for good),
    /// and how each ended.
    fn refreshes(&mut self, seen: &mut Seen) {
        let walks = &self.walks;
        let mut refresh_of: BTreeMap<usize, u32> = BTreeMap::new();
        let mut restarted: HashSet<usize> = HashSet::new();
        let mut next_refresh = 0u32;
        for (pos, (j, wj)) in walks.iter().enumerate() {
            let prior = walks[..pos].iter().rev().find(|(i, wi)| {
                wi.kind == wj.kind
                    && !restarted.contains(i)
                    && restarts(wi, wj, &self.notices, &walks[..pos])
            });
            let e = match prior {
                Some((i, wi)) => {
                    let r = refresh_of[i];
                    restarted.insert(*i);
                    refresh_of.insert(*j, r);
                    let reason = if wi.fate == WalkFate::Failed(Some(-32602)) {
                        Restart::InvalidCursor
                    } else {
                        Restart::NotifiedMidWalk
                    };
                    Event::WalkRestarted {
                        client: CLIENT,
                        kind: wj.kind,
                        refresh: r,
                        reason,
                    }
                }
                None => {
                    refresh_of.insert(*j, next_refresh);
                    next_refresh += 1;
                    Event::RefreshStarted {
                        client: CLIENT,
                        kind: wj.kind,
                        auth: AUTH,
                        refresh: next_refresh - 1,
                    }
                }
            };
            self.out.push((wj.start(), 2, e));
        }
        for (j, w) in walks {
            walk_end(w, refresh_of[j], restarted.contains(j), seen, &mut self.out);
        }
    }
}

/// How walk `w` of refresh `r` ended: published, or discarded (torn), or failed.
fn walk_end(w: &ListWalk, r: u32, restarted: bool, seen: &mut Seen, out: &mut Dated) {
    let end = |outcome| Event::RefreshEnded {
        client: CLIENT,
        kind: w.kind,
        auth: AUTH,
        refresh: r,
        outcome,
    };
    let lines = || {
        w.requests
            .iter()
            .chain(w.pages.iter().map(|(s, _)| s))
            .map(|s| line_of(*s))
            .collect::<Vec<_>>()
    };
    let Some(at) = w.ended_at else { return };
    seen.observed.insert(Property::NoTornSnapshot);
    match &w.fate {
        WalkFate::Complete => {
            if let Some(name) = w.duplicate() {
                seen.flag(
                    Property::NoTornSnapshot,
                    format!(
                        "the {} walk starting at line {} lists {name} twice across its pages",
                        w.kind,
                        line_of(w.start())
                    ),
                    lines(),
                );
                out.push((at, 3, end(RefreshOutcome::Discarded)));
            } else {
                out.push((
                    at,
                    3,
                    Event::Published {
                        client: CLIENT,
                        kind: w.kind,
                        auth: AUTH,
                        items: items_of(&w.items()),
                        version: None,
                    },
                ));
                out.push((at, 4, end(RefreshOutcome::Published)));
            }
        }
        WalkFate::Abandoned if !restarted => {
            seen.flag(
                Property::NoTornSnapshot,
                format!(
                    "the {} walk starting at line {} stopped after {} page(s): the client never asked for the page after line {}",
                    w.kind,
                    line_of(w.start()),
                    w.pages.len(),
                    line_of(at)
                ),
                lines(),
            );
            out.push((at, 4, end(RefreshOutcome::Discarded)));
        }
        WalkFate::Failed(_) if !restarted => out.push((at, 4, end(RefreshOutcome::Failed))),
        _ => {}
    }
}

impl<'a> Conn<'a> {
    /// Versions, as far as the wire shows them: the first clean list of each kind before any
    /// `list_changed` is version 1; then each notice and each clean list, in order.
    /// Returns, from each tools list on, the tools announced removed and no longer listed.
    fn versions(&mut self, seen: &mut Seen) -> Vec<(u64, BTreeSet<String>)> {
        let mut content: BTreeMap<Kind, Vec<NamedItem>> = BTreeMap::new();
        for k in self.tracked.iter() {
            let before = self
                .notices
                .iter()
                .find(|(_, n)| n.notification_group().contains(&k))
                .map_or(u64::MAX, |(s, _)| *s);
            let initial = self
                .walks
                .iter()
                .find(|(_, w)| w.kind == k && clean(w) && w.start() < before)
                .map(|(_, w)| w.items())
                .unwrap_or_default();
            content.insert(k, initial);
        }
        let first = self
            .wire
            .delivered
            .iter()
            .filter(|d| d.conn == self.conn)
            .map(|d| d.seq)
            .chain(self.walks.iter().map(|(_, w)| w.start()))
            .min()
            .unwrap_or(0);
        let mut v = Versions {
            content,
            version: 1,
            removed: BTreeSet::new(),
            notified_tools_since_list: false,
            call_state: vec![(0, BTreeSet::new())],
        };
        let committed = Event::Committed {
            version: v.version,
            catalog: catalog(&v.content),
        };
        self.out.push((first, 0, committed));
        self.out
            .push((first, 1, Event::Connected { client: CLIENT }));
        // Silent changes: a complete list that differs from the latest version, with no
        // list_changed to announce it, becomes a version at that list.
        let mut points: Vec<(u64, Option<usize>)> =
            self.notices.iter().map(|(s, _)| (*s, None)).collect();
        points.extend(
            self.walks
                .iter()
                .filter(|(_, w)| clean(w))
                .map(|(j, w)| (w.ended_at.unwrap_or(0), Some(*j))),
        );
        points.sort();
        for (at, walk) in points {
            match walk {
                None => self.notice(at, &mut v, seen),
                Some(j) => {
                    let wire: &'a Wire = self.wire;
                    self.listed(at, &wire.walks[j], &mut v, seen);
                }
            }
        }
        v.call_state
    }

    /// A `list_changed` at `at`: a new version, visible in the first clean list of each kind it
    /// announces after it; or, if that list still shows the old content while a later one
    /// (before the next notice of its kind) differs, a notice sent before its change was
    /// visible.
    fn notice(&mut self, at: u64, v: &mut Versions, seen: &mut Seen) {
        let Some(&(_, nk)) = self.notices.iter().find(|(s, _)| *s == at) else {
            return;
        };
        if nk == Kind::Tools {
            v.notified_tools_since_list = true;
        }
        let group: Vec<Kind> = nk
            .notification_group()
            .iter()
            .copied()
            .filter(|k| self.tracked.contains(*k))
            .collect();
        if group.is_empty() {
            return;
        }
        let next_notice = self
            .notices
            .iter()
            .find(|(s, n)| *s > at && *n == nk)
            .map_or(u64::MAX, |(s, _)| *s);
        let mut changed = v.content.clone();
        let mut late: Option<(u64, Kind)> = None;
        let mut relisted = false;
        for &k in &group {
            let after: Vec<&ListWalk> = self
                .walks
                .iter()
                .map(|(_, w)| *w)
                .filter(|w| w.kind == k && clean(w) && w.start() > at)
                .collect();
            let Some(w) = after.first() else {
                let mut c = v.content[&k].clone();
                c.push(NamedItem {
                    name: format!("(change announced at line {}, never listed)", line_of(at)),
                    description: String::new(),
                });
                changed.insert(k, c);
                continue;
            };
            relisted = true;
            if !same(&w.items(), &v.content[&k]) {
                changed.insert(k, w.items());
            } else if after[1..]
                .iter()
                .any(|d| d.start() < next_notice && !same(&d.items(), &v.content[&k]))
            {
                late = Some((w.ended_at.unwrap_or(at), k));
            }
        }
        if relisted {
            seen.observed.insert(Property::NotifyAfterCommit);
        }
        match late {
            Some((shown, k)) => self.late_notice(at, nk, shown, k, v.version, seen),
            None => {
                v.version += 1;
                v.content = changed;
                let committed = Event::Committed {
                    version: v.version,
                    catalog: catalog(&v.content),
                };
                self.out.push((at, 0, committed));
                self.out.push((
                    at,
                    1,
                    Event::Notified {
                        client: CLIENT,
                        kind: nk,
                        announces: v.version,
                        visible: v.version,
                    },
                ));
            }
        }
    }

    /// The `nk` list_changed at `at` was sent before its change was visible: the `k` list
    /// ending at `shown` still shows the old content.
    fn late_notice(
        &mut self,
        at: u64,
        nk: Kind,
        shown: u64,
        k: Kind,
        version: u64,
        seen: &mut Seen,
    ) {
        self.out.push((
            at,
            1,
            Event::Notified {
                client: CLIENT,
                kind: nk,
                announces: version + 1,
                visible: version,
            },
        ));
        seen.notes.push(format!(
            "line {}: the {k} list after this list_changed (ending at line {}) still shows the old content; a later one differs",
            line_of(at),
            line_of(shown)
        ));
        seen.flag(
            Property::NotifyAfterCommit,
            format!(
                "the {nk} list_changed at line {} was sent before its change was visible: the list ending at line {} still shows the old {k}, a later list (before any other list_changed) differs",
                line_of(at),
                line_of(shown)
            ),
            [line_of(at), line_of(shown)],
        );
    }

    /// A clean walk `w` ending at `at`: the tools it no longer lists after a notice are removed;
    /// a list that differs from the latest version is a silent change, unless a `list_changed`
    /// of its kind arrived while it was under way (it may show what was there before).
    fn listed(&mut self, at: u64, w: &ListWalk, v: &mut Versions, seen: &mut Seen) {
        let items = w.items();
        if w.kind == Kind::Tools {
            let before: BTreeSet<String> = v.content[&Kind::Tools]
                .iter()
                .map(|i| i.name.clone())
                .collect();
            let now: BTreeSet<String> = items.iter().map(|i| i.name.clone()).collect();
            if v.notified_tools_since_list {
                v.removed.extend(before.difference(&now).cloned());
            }
            v.removed.retain(|n| !now.contains(n));
            v.notified_tools_since_list = false;
            v.call_state.push((at, v.removed.clone()));
        }
        // A walk that was under way when a list_changed of its kind arrived may show what was
        // there before that change (an answer held, or sent late): it is no change of its own,
        // and a client must list again after it.
        let overtaken = self
            .notices
            .iter()
            .any(|(s, nk)| *s > w.start() && *s < at && nk.notification_group().contains(&w.kind));
        if overtaken {
            seen.observed.insert(Property::NoStaleOverwrite);
        }
        if !overtaken && !same(&items, &v.content[&w.kind]) {
            v.version += 1;
            v.content.insert(w.kind, items);
            let committed = Event::Committed {
                version: v.version,
                catalog: catalog(&v.content),
            };
            self.out.push((at, 0, committed));
        }
    }

    /// Calls: answered as success for a tool announced removed and no longer listed.
    fn calls(&mut self, call_state: &[(u64, BTreeSet<String>)], seen: &mut Seen) {
        for c in self.wire.calls.iter().filter(|c| c.conn == self.conn) {
            let Some((at, ok)) = c.answer else { continue };
            let gone = call_state
                .iter()
                .rev()
                .find(|(s, _)| *s < c.request)
                .is_some_and(|(_, r)| r.contains(&c.tool));
            if gone {
                seen.observed.insert(Property::NoCallToRemoved);
            }
            let tool = c.tool.as_str().into();
            let e = if ok {
                Event::Dispatched {
                    client: CLIENT,
                    tool,
                    present: !gone,
                }
            } else {
                Event::CallRejected {
                    client: CLIENT,
                    tool,
                }
            };
            self.out.push((at, 2, e));
        }
    }

    /// What the client received.
    fn delivered(&mut self, seen: &mut Seen) {
        for d in self.wire.delivered.iter().filter(|d| d.conn == self.conn) {
            if let Some(e) = delivered_event(&d.json, self.tracked, CLIENT) {
                if matches!(e, Event::Woken { .. }) {
                    seen.observed.insert(Property::BoundedRefresh);
                }
                self.out.push((d.seq, 2, e));
            }
        }
    }

    /// The end of the connection with nothing unanswered is quiescence.
    fn end(&mut self, seen: &mut Seen) {
        let conn = self.conn;
        let open = self.walks.iter().any(|(_, w)| w.fate == WalkFate::Open);
        let unanswered = self.wire.unanswered.get(&conn).copied().unwrap_or(0);
        match self.wire.closed.get(&conn) {
            Some(&at) if !open && unanswered == 0 => {
                seen.quiescent = true;
                let expect = self.tracked.iter().map(|k| (CLIENT, k, AUTH)).collect();
                self.out.push((at, 5, Event::Quiescent { expect }));
                if !self.tracked.is_empty() {
                    seen.observed.insert(Property::Converges);
                    if !self.notices.is_empty() {
                        seen.observed.insert(Property::NoLostWakeup);
                    }
                    if self.wire.listened.contains(&conn) {
                        seen.observed.insert(Property::ListenThenList);
                    }
                }
            }
            Some(_) => seen.notes.push(format!(
                "connection {conn} ended with {unanswered} request(s) unanswered: converges, no_lost_wakeup and listen_then_list are not judged on it"
            )),
            None => seen.notes.push(format!(
                "connection {conn} has no end in the log (cut short?): converges, no_lost_wakeup and listen_then_list are not judged on it"
            )),
        }
    }

    /// Core's checkers over the connection's history; each violation flagged with the lines of
    /// the event that shows it and of the connection's events just before it.
    fn judged(mut self, seen: &mut Seen) {
        let out = &mut self.out;
        out.sort_by_key(|(s, p, _)| (*s, *p));
        let j = judge(out.iter().map(|(_, _, e)| e));
        // The versions here are inferred from the lists the client saw, not the server's
        // catalog: a list_changed followed by the same list is no evidence of a spurious one
        // (see `verdict`).
        for v in j
            .violations
            .into_iter()
            .filter(|v| v.property != Property::NoSpuriousNotify)
        {
            let at = out.get(v.at).map_or(0, |(s, _, _)| *s);
            let mut lines = vec![line_of(at)];
            lines.extend(
                out[..v.at.min(out.len())]
                    .iter()
                    .rev()
                    .filter(|(_, _, e)| {
                        !matches!(e, Event::Committed { .. } | Event::Connected { .. })
                    })
                    .take(6)
                    .map(|(s, _, _)| line_of(*s)),
            );
            seen.flag(v.property, v.detail, lines);
        }
        let conn = self.conn;
        seen.history.extend(
            out.iter()
                .map(|(s, _, e)| (line_of(*s), format!("conn {conn}: {e}"))),
        );
    }
}

/// Whether walk `new` restarts walk `old` (same connection and kind, `old` started first):
/// `old` never completed and sent no request after `new` started, and either `old` was in
/// progress when `new` started (a request of it unanswered, or a `list_changed` of its kind
/// arrived after its last page with no other walk started since), or `old` ended with an
/// invalid cursor (-32602) just before.
fn restarts(
    old: &ListWalk,
    new: &ListWalk,
    notices: &[(u64, Kind)],
    earlier: &[(usize, &ListWalk)],
) -> bool {
    if old.fate == WalkFate::Complete || old.requests.iter().any(|r| *r > new.start()) {
        return false;
    }
    let last_page = old.pages.last().map_or(old.start(), |(s, _)| *s);
    let others_since = earlier
        .iter()
        .any(|(_, w)| w.kind == old.kind && w.start() > old.start());
    if others_since {
        return false;
    }
    match old.fate {
        WalkFate::Failed(Some(-32602)) => true,
        WalkFate::Failed(_) => false,
        _ => {
            let t = new.start();
            let asked = old.requests.iter().filter(|r| **r < t).count();
            let answered = old.pages.iter().filter(|(s, _)| *s < t).count();
            let outstanding = old.ended_at.is_none_or(|e| e > t) && asked > answered;
            let notified = notices.iter().any(|(s, k)| {
                *s > last_page && *s < new.start() && k.notification_group().contains(&old.kind)
            });
            outstanding || notified
        }
    }
}
