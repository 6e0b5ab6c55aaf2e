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
use crate::wire::{Fate, Walk, Wire, observe};
use listsync_core::history::{ClientId, Event, RefreshOutcome, Restart};
use listsync_core::monitor::judge;
use listsync_core::property::Property;
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, ItemList, Kind, KindSet, Op};
use listsync_harness::history::delivered_event;
use listsync_harness::proxy::notified_kind;
use listsync_harness::timeline::NamedItem;
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

fn judge_connection(wire: &Wire, conn: u32, seen: &mut Seen) {
    let walks: Vec<(usize, &Walk)> = wire
        .walks
        .iter()
        .enumerate()
        .filter(|(_, w)| w.conn == conn)
        .collect();
    let tracked: KindSet = walks.iter().map(|(_, w)| w.kind).collect();
    let notices: Vec<(u64, Kind)> = wire
        .delivered
        .iter()
        .filter(|d| d.conn == conn)
        .filter_map(|d| {
            let m = d.json.get("method")?.as_str()?;
            Some((d.seq, notified_kind(m)?))
        })
        .collect();
    let clean = |w: &Walk| w.fate == Fate::Complete && w.duplicate().is_none();
    let mut out: Dated = Vec::new();
    let first = wire
        .delivered
        .iter()
        .filter(|d| d.conn == conn)
        .map(|d| d.seq)
        .chain(walks.iter().map(|(_, w)| w.start()))
        .min()
        .unwrap_or(0);

    // Walks: which start a refresh and which restart one (the older walk stopped for good).
    let mut refresh_of: BTreeMap<usize, u32> = BTreeMap::new();
    let mut restarted: HashSet<usize> = HashSet::new();
    let mut next_refresh = 0u32;
    for (pos, (j, wj)) in walks.iter().enumerate() {
        let prior = walks[..pos].iter().rev().find(|(i, wi)| {
            wi.kind == wj.kind
                && !restarted.contains(i)
                && restarts(wi, wj, &notices, &walks[..pos])
        });
        match prior {
            Some((i, _)) => {
                let r = refresh_of[i];
                restarted.insert(*i);
                refresh_of.insert(*j, r);
                let reason = if matches!(walks.iter().find(|(k, _)| k == i), Some((_, w)) if w.fate == Fate::Failed(Some(-32602)))
                {
                    Restart::InvalidCursor
                } else {
                    Restart::NotifiedMidWalk
                };
                out.push((
                    wj.start(),
                    2,
                    Event::WalkRestarted {
                        client: CLIENT,
                        kind: wj.kind,
                        refresh: r,
                        reason,
                    },
                ));
            }
            None => {
                refresh_of.insert(*j, next_refresh);
                out.push((
                    wj.start(),
                    2,
                    Event::RefreshStarted {
                        client: CLIENT,
                        kind: wj.kind,
                        auth: AUTH,
                        refresh: next_refresh,
                    },
                ));
                next_refresh += 1;
            }
        }
    }
    for (j, w) in &walks {
        let r = refresh_of[j];
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
        let Some(at) = w.ended_at else { continue };
        seen.observed.insert(Property::NoTornSnapshot);
        match &w.fate {
            Fate::Complete => {
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
            Fate::Abandoned if !restarted.contains(j) => {
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
            Fate::Failed(_) if !restarted.contains(j) => {
                out.push((at, 4, end(RefreshOutcome::Failed)))
            }
            _ => {}
        }
    }

    // Versions, as far as the wire shows them.
    let mut content: BTreeMap<Kind, Vec<NamedItem>> = BTreeMap::new();
    for k in tracked.iter() {
        let before = notices
            .iter()
            .find(|(_, n)| n.notification_group().contains(&k))
            .map_or(u64::MAX, |(s, _)| *s);
        let initial = walks
            .iter()
            .find(|(_, w)| w.kind == k && clean(w) && w.start() < before)
            .map(|(_, w)| w.items())
            .unwrap_or_default();
        content.insert(k, initial);
    }
    let catalog = |c: &BTreeMap<Kind, Vec<NamedItem>>| {
        let ops: Vec<Op> = c
            .iter()
            .flat_map(|(k, items)| items.iter().map(|i| Op::add(*k, &i.name, &i.description)))
            .collect();
        std::sync::Arc::new(Catalog::from_ops(&ops))
    };
    let mut version = 1u64;
    out.push((
        first,
        0,
        Event::Committed {
            version,
            catalog: catalog(&content),
        },
    ));
    out.push((first, 1, Event::Connected { client: CLIENT }));
    // Silent changes: a complete list that differs from the latest version, with no
    // list_changed to announce it, becomes a version at that list.
    let mut points: Vec<(u64, Option<usize>)> = notices.iter().map(|(s, _)| (*s, None)).collect();
    points.extend(
        walks
            .iter()
            .filter(|(_, w)| clean(w))
            .map(|(j, w)| (w.ended_at.unwrap_or(0), Some(*j))),
    );
    points.sort();
    let same =
        |a: &[NamedItem], b: &[NamedItem]| Digest::of(&items_of(a)) == Digest::of(&items_of(b));
    let mut removed: BTreeSet<String> = BTreeSet::new();
    let mut notified_tools_since_list = false;
    let mut call_state: Vec<(u64, BTreeSet<String>)> = vec![(0, BTreeSet::new())];
    for (at, walk) in points {
        match walk {
            None => {
                let Some(&(_, nk)) = notices.iter().find(|(s, _)| *s == at) else {
                    continue;
                };
                if nk == Kind::Tools {
                    notified_tools_since_list = true;
                }
                let group: Vec<Kind> = nk
                    .notification_group()
                    .iter()
                    .copied()
                    .filter(|k| tracked.contains(*k))
                    .collect();
                if group.is_empty() {
                    continue;
                }
                let next_notice = notices
                    .iter()
                    .find(|(s, n)| *s > at && *n == nk)
                    .map_or(u64::MAX, |(s, _)| *s);
                let mut changed = content.clone();
                let mut late: Option<(u64, Kind)> = None;
                let mut relisted = false;
                for &k in &group {
                    let after: Vec<&Walk> = walks
                        .iter()
                        .map(|(_, w)| *w)
                        .filter(|w| w.kind == k && clean(w) && w.start() > at)
                        .collect();
                    let Some(w) = after.first() else {
                        let mut c = content[&k].clone();
                        c.push(NamedItem {
                            name: format!(
                                "(change announced at line {}, never listed)",
                                line_of(at)
                            ),
                            description: String::new(),
                        });
                        changed.insert(k, c);
                        continue;
                    };
                    relisted = true;
                    if !same(&w.items(), &content[&k]) {
                        changed.insert(k, w.items());
                    } else if after[1..]
                        .iter()
                        .any(|d| d.start() < next_notice && !same(&d.items(), &content[&k]))
                    {
                        late = Some((w.ended_at.unwrap_or(at), k));
                    }
                }
                if relisted {
                    seen.observed.insert(Property::NotifyAfterCommit);
                }
                match late {
                    Some((shown, k)) => {
                        out.push((
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
                    None => {
                        version += 1;
                        content = changed;
                        out.push((
                            at,
                            0,
                            Event::Committed {
                                version,
                                catalog: catalog(&content),
                            },
                        ));
                        out.push((
                            at,
                            1,
                            Event::Notified {
                                client: CLIENT,
                                kind: nk,
                                announces: version,
                                visible: version,
                            },
                        ));
                    }
                }
            }
            Some(j) => {
                let w = &wire.walks[j];
                let items = w.items();
                if w.kind == Kind::Tools {
                    let before: BTreeSet<String> = content[&Kind::Tools]
                        .iter()
                        .map(|i| i.name.clone())
                        .collect();
                    let now: BTreeSet<String> = items.iter().map(|i| i.name.clone()).collect();
                    if notified_tools_since_list {
                        removed.extend(before.difference(&now).cloned());
                    }
                    removed.retain(|n| !now.contains(n));
                    notified_tools_since_list = false;
                    call_state.push((at, removed.clone()));
                }
                // A walk that was under way when a list_changed of its kind arrived may show
                // what was there before that change (an answer held, or sent late): it is no
                // change of its own, and a client must list again after it.
                let overtaken = notices.iter().any(|(s, nk)| {
                    *s > w.start() && *s < at && nk.notification_group().contains(&w.kind)
                });
                if overtaken {
                    seen.observed.insert(Property::NoStaleOverwrite);
                }
                if !overtaken && !same(&items, &content[&w.kind]) {
                    version += 1;
                    content.insert(w.kind, items);
                    out.push((
                        at,
                        0,
                        Event::Committed {
                            version,
                            catalog: catalog(&content),
                        },
                    ));
                }
            }
        }
    }

    // Calls: answered as success for a tool announced removed and no longer listed.
    for c in wire.calls.iter().filter(|c| c.conn == conn) {
        let Some((at, ok)) = c.answer else { continue };
        let gone = call_state
            .iter()
            .rev()
            .find(|(s, _)| *s < c.request)
            .is_some_and(|(_, r)| r.contains(&c.tool));
        if gone {
            seen.observed.insert(Property::NoCallToRemoved);
        }
        out.push((
            at,
            2,
            if ok {
                Event::Dispatched {
                    client: CLIENT,
                    tool: c.tool.as_str().into(),
                    present: !gone,
                }
            } else {
                Event::CallRejected {
                    client: CLIENT,
                    tool: c.tool.as_str().into(),
                }
            },
        ));
    }

    // What the client received.
    for d in wire.delivered.iter().filter(|d| d.conn == conn) {
        if let Some(e) = delivered_event(&d.json, tracked, CLIENT) {
            if matches!(e, Event::Woken { .. }) {
                seen.observed.insert(Property::BoundedRefresh);
            }
            out.push((d.seq, 2, e));
        }
    }

    // The end of the connection with nothing unanswered is quiescence.
    let open = walks.iter().any(|(_, w)| w.fate == Fate::Open);
    let unanswered = wire.unanswered.get(&conn).copied().unwrap_or(0);
    match wire.closed.get(&conn) {
        Some(&at) if !open && unanswered == 0 => {
            seen.quiescent = true;
            out.push((
                at,
                5,
                Event::Quiescent {
                    expect: tracked.iter().map(|k| (CLIENT, k, AUTH)).collect(),
                },
            ));
            if !tracked.is_empty() {
                seen.observed.insert(Property::Converges);
                if !notices.is_empty() {
                    seen.observed.insert(Property::NoLostWakeup);
                }
                if wire.listened.contains(&conn) {
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

    out.sort_by_key(|(s, p, _)| (*s, *p));
    let j = judge(out.iter().map(|(_, _, e)| e));
    // The versions here are inferred from the lists the client saw, not the server's catalog:
    // a list_changed followed by the same list is no evidence of a spurious one (see `verdict`).
    for v in j
        .violations
        .into_iter()
        .filter(|v| v.property != Property::NoSpuriousNotify)
    {
        let at = out.get(v.at).map_or(0, |(s, _, _)| *s);
        // Evidence: the event that shows it and the connection's events of the same kind
        // just before it.
        let mut lines = vec![line_of(at)];
        lines.extend(
            out[..v.at.min(out.len())]
                .iter()
                .rev()
                .filter(|(_, _, e)| !matches!(e, Event::Committed { .. } | Event::Connected { .. }))
                .take(6)
                .map(|(s, _, _)| line_of(*s)),
        );
        seen.flag(v.property, v.detail, lines);
    }
    seen.history.extend(
        out.iter()
            .map(|(s, _, e)| (line_of(*s), format!("conn {conn}: {e}"))),
    );
}

/// Whether walk `new` restarts walk `old` (same connection and kind, `old` started first):
/// `old` never completed and sent no request after `new` started, and either `old` was in
/// progress when `new` started (a request of it unanswered, or a `list_changed` of its kind
/// arrived after its last page with no other walk started since), or `old` ended with an
/// invalid cursor (-32602) just before.
fn restarts(old: &Walk, new: &Walk, notices: &[(u64, Kind)], earlier: &[(usize, &Walk)]) -> bool {
    if old.fate == Fate::Complete || old.requests.iter().any(|r| *r > new.start()) {
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
        Fate::Failed(Some(-32602)) => true,
        Fate::Failed(_) => false,
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
