//! From a run's timeline to a history of core [`Event`]s, judged by
//! [`listsync_core::monitor::judge`] — the checkers the model and the simulator use.
//!
//! How each event is obtained (one client, id 0, authorization context 0):
//!
//! | event | source |
//! |---|---|
//! | `Committed` | the server adapter's `catalog` (ground truth) read after each mutation; a new version when it differs from the last. Dated at the administrator's action that made it (the first `mutate` command not yet seen in a catalog, even when the server parks the commit, as the model's ground truth does; else the release of a parked commit); the initial catalog is version 1, before anything |
//! | `Connected` | start of the run |
//! | `Notified` | a `list_changed` of a tracked kind reaching the proxy from the server (the wire as [`listsync_observe::ConnObserver`] reads it, like the audit's and the host judge's). `announces` = the version the latest mutation issued before it produced; `visible` = the version whose list equals what the harness's own probe (`tools/list` injected on the link right after the notification arrived, every page) returned. 2026-07-28: only the client's first listen stream counts (further streams are the client's own choice) |
//! | `Served` | a list result reaching the proxy from the server, answering a list request that passed up (same JSON-RPC id; the observer's `ListPage`); dated at the ground-truth version of that moment |
//! | `Woken` | a `list_changed` delivered to the client by the proxy |
//! | `ListenAcked` | a `notifications/subscriptions/acknowledged` delivered to the client |
//! | `RefreshStarted` / `WalkRestarted` / `RefreshEnded` | the client's list requests and their answers on the wire, by the rule of core's `world::Watch`: a first-page request starts a refresh, or begins again the walk of one with an answer in hand; the answer that ends its current walk (last page, error) ends it when the proxy delivers it, a cancellation at once. The adapter's `refresh_*` reports and our runtime's `history` entries are its word and are not read |
//! | `Published` | the client adapter's `published` events |
//! | `Dispatched` | a `tools/call` of the client's answered with a result (not an error, not `isError`) on the wire: the server ran the tool; `present` = the ground truth had it in the tool list at some moment while the call was in flight (any version in force from the request to the answer, dated like `Committed`). The server adapter's `dispatched` reports are its SDK's word and are not read; on a run that keeps no tool list, no_call_to_removed is not judged |
//! | `Quiescent` | the harness released everything and the run settled |
//!
//! Items are compared across SDKs as (name, description): the catalog, probes and published
//! snapshots are all normalised to that before judging (our runtime's canonical JSON
//! definitions are reduced to their description).

use crate::proxy::control_items;
use crate::timeline::{Action, Body, Dir, Fact, LineFate, NamedItem, Record, Side};
use listsync_core::history::{ClientId, Event, RefreshOutcome, Restart};
use listsync_core::monitor::{Violation, judge};
use listsync_core::property::Property;
use listsync_core::property::{Verdict, Verdicts};
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, ItemList, Kind, KindSet, Op};
use listsync_observe::{ConnObserver, Sighting, Toward, WalkFate, delivered_event};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

const CLIENT: ClientId = 0;
const AUTH: AuthCtx = AuthCtx(0);

/// A reconstructed history.
#[derive(Clone, Debug)]
pub struct Reconstruction {
    /// The events, in order, each with the timeline record it comes from.
    pub events: Vec<(u64, Event)>,
    /// Caveats met while reconstructing (failed probes, unmatched lists...).
    pub notes: Vec<String>,
    /// Properties this history cannot show to hold (a `list_changed` the probe could not list
    /// after, a tool call on a run that keeps no tool list): judged "not judged" (n/a) unless
    /// violated elsewhere in the run; `notes` say why.
    pub unjudged: BTreeSet<Property>,
}

/// A judged history.
#[derive(Clone, Debug)]
pub struct Judged {
    /// Verdict per property (holds or violated; not yet masked).
    pub verdicts: Verdicts,
    /// Violations with the timeline record each was found at.
    pub violations: Vec<(Violation, u64)>,
    /// The history.
    pub history: Reconstruction,
}

fn items_of(list: &[NamedItem]) -> ItemList {
    list.iter()
        .map(|i| Item::new(&i.name, &i.description))
        .collect()
}

fn catalog_of(kinds: &BTreeMap<Kind, Vec<NamedItem>>) -> Catalog {
    let ops: Vec<Op> = kinds
        .iter()
        .flat_map(|(k, items)| items.iter().map(|i| Op::add(*k, &i.name, &i.description)))
        .collect();
    Catalog::from_ops(&ops)
}

/// Events, each dated at a timeline record with its order within that record, kept in the
/// order pushed (the last tie-break).
#[derive(Default)]
struct Dated {
    events: Vec<(u64, u8, u64, Event)>,
}

impl Dated {
    fn push(&mut self, at: u64, prio: u8, e: Event) {
        let order = self.events.len() as u64;
        self.events.push((at, prio, order, e));
    }

    fn sorted(mut self) -> Vec<(u64, Event)> {
        self.events
            .sort_by_key(|(at, prio, order, _)| (*at, *prio, *order));
        self.events
            .into_iter()
            .map(|(at, _, _, e)| (at, e))
            .collect()
    }
}

/// The server's versions as the harness read its catalog: every ground-truth catalog that
/// differs from the last one is a new version. A mutation gets the version of the first change
/// seen after it (a parked commit lands later than its mutation), or the current one if its ops
/// change nothing.
struct Truth {
    commits: Vec<(u64, Arc<Catalog>)>,
    mutation_version: BTreeMap<u64, u64>,
}

impl Truth {
    /// Reads the versions, pushing each `Committed` (and the client's `Connected` with the
    /// first).
    fn read(records: &[Record], kinds: KindSet, out: &mut Dated) -> Truth {
        let mut t = Truth {
            commits: Vec::new(),
            mutation_version: BTreeMap::new(),
        };
        let mut pending: Vec<u64> = Vec::new();
        let mut expected: Option<Catalog> = None;
        for r in records {
            match &r.body {
                Body::Fact(Fact::Catalog {
                    since, kinds: k, ..
                }) => {
                    let cat = Arc::new(catalog_of(k));
                    if t.commits.last().is_none_or(|(_, c)| **c != *cat) {
                        t.commit(cat.clone(), &mut pending, since.unwrap_or(r.seq), out);
                    }
                    expected = Some((*cat).clone());
                }
                Body::Fact(Fact::MutateIssued { ops, .. }) => {
                    let mut next = expected.clone().unwrap_or_default();
                    let before = next.clone();
                    for op in ops {
                        // Ground truth is compared by (name, description): only kept kinds count.
                        if op.kind().is_some_and(|k| kinds.contains(k)) {
                            next.apply(op);
                        }
                    }
                    if next == before {
                        let v = t.commits.last().map_or(1, |(v, _)| *v);
                        t.mutation_version.insert(r.seq, v);
                    } else {
                        pending.push(r.seq);
                    }
                    expected = Some(next);
                }
                _ => {}
            }
        }
        // Mutations whose change never became visible announce a version that never came.
        let latest = t.commits.last().map_or(1, |(v, _)| *v);
        for m in pending {
            t.mutation_version.insert(m, latest + 1);
        }
        t
    }

    /// A new version, dated at the administrator's action: the first mutation not yet seen
    /// (the model's truth commits there too, even when the server parks it), else `fallback`.
    fn commit(
        &mut self,
        cat: Arc<Catalog>,
        pending: &mut Vec<u64>,
        fallback: u64,
        out: &mut Dated,
    ) {
        let v = self.commits.len() as u64 + 1;
        self.commits.push((v, cat.clone()));
        let at = if v == 1 {
            0
        } else {
            pending.first().copied().unwrap_or(fallback)
        };
        out.push(
            at,
            0,
            Event::Committed {
                version: v,
                catalog: cat,
            },
        );
        if v == 1 {
            out.push(0, 1, Event::Connected { client: CLIENT });
        }
        for m in pending.drain(..) {
            self.mutation_version.insert(m, v);
        }
    }

    /// The version the latest mutation issued at or before `seq` produced.
    fn version_at(&self, seq: u64) -> u64 {
        self.mutation_version
            .range(..=seq)
            .next_back()
            .map(|(_, v)| *v)
            .unwrap_or(1)
    }

    /// Whether `tool` was in the server's tool list at some moment between records `from` and
    /// `to`, by the ground truth's dating (a version is in force from the administrator's
    /// action that made it, as in the model: a parked commit counts from its mutation): in any
    /// version from the one in force at `from` to the one in force at `to`. A mutation whose
    /// change never showed in a catalog read leaves the latest version read in force.
    fn had_tool(&self, tool: &str, from: u64, to: u64) -> bool {
        let latest = self.commits.len() as u64;
        let in_force = |seq: u64| self.version_at(seq).min(latest);
        let versions = in_force(from)..=in_force(to);
        self.commits
            .iter()
            .filter(|(v, _)| versions.contains(v))
            .any(|(_, c)| {
                c.get(Kind::Tools, tool)
                    .is_some_and(|e| e.scope.visible_to(AUTH))
            })
    }

    /// The latest version whose `kind` list is `items`.
    fn matching(&self, kind: Kind, items: &[NamedItem]) -> Option<u64> {
        let d = Digest::of(&items_of(items));
        self.commits
            .iter()
            .rev()
            .find(|(_, c)| Digest::of(&c.visible(kind, AUTH)) == d)
            .map(|(v, _)| *v)
    }
}

/// The client's refreshes as the wire shows them (the rule of core's `world::Watch`, which the
/// model and the runtime observe with): a first-page list request begins the walk of a refresh
/// whose current walk has an answer in hand (it begins again), or else starts a refresh of its
/// own; the answer that ends a walk (its last page, an error) ends its refresh when it reaches
/// the client, unless the refresh began again since (that answer is stale). What the client's
/// adapter says of its refreshes is not read.
#[derive(Default)]
struct Refreshes {
    /// Refreshes begun and not ended.
    open: Vec<OpenRefresh>,
    /// The answers that reached the proxy for a walk, by the record that holds them: the walk
    /// (its index in the observer's walks) and whether the answer ends it.
    answers: HashMap<u64, (usize, bool)>,
    next: u32,
}

/// A refresh seen to begin and not yet to end.
struct OpenRefresh {
    kind: Kind,
    refresh: u32,
    /// The observer's walk of its current attempt.
    walk: usize,
    /// Whether an answer of that walk reached the client.
    answered: bool,
}

/// The second pass over a run's timeline: the wire, the adapters' reports, the end.
struct Rebuild<'a> {
    records: &'a [Record],
    kinds: KindSet,
    truth: Truth,
    probes: HashMap<u64, &'a Option<Vec<NamedItem>>>,
    out: Dated,
    notes: Vec<String>,
    unjudged: BTreeSet<Property>,
    /// When each client-to-server line reached the server: its record if the proxy passed it
    /// at once, else the release that delivered it.
    sent: HashMap<u64, u64>,
    wire: ConnObserver,
    /// 2026-07-28: the client's first listen stream (only its notifications count).
    first_sub: Option<Value>,
    refreshes: Refreshes,
}

/// Reconstructs the history of a run that tracks `kinds`.
pub fn reconstruct(records: &[Record], kinds: KindSet) -> Reconstruction {
    let mut out = Dated::default();
    let truth = Truth::read(records, kinds, &mut out);
    let probes = records
        .iter()
        .filter_map(|r| match &r.body {
            Body::Fact(Fact::Probe {
                notification,
                items,
                ..
            }) => Some((*notification, items)),
            _ => None,
        })
        .collect();
    let mut b = Rebuild {
        records,
        kinds,
        truth,
        probes,
        out,
        notes: Vec::new(),
        unjudged: BTreeSet::new(),
        sent: HashMap::new(),
        wire: ConnObserver::new(0),
        first_sub: None,
        refreshes: Refreshes::default(),
    };
    for r in records {
        b.record(r);
    }
    if b.truth.commits.is_empty() {
        b.notes.push(
            "no ground-truth catalog was read: nothing can be judged against the server".into(),
        );
    }
    Reconstruction {
        events: b.out.sorted(),
        notes: b.notes,
        unjudged: b.unjudged,
    }
}

impl Rebuild<'_> {
    fn record(&mut self, r: &Record) {
        match &r.body {
            Body::Msg {
                dir,
                json: Some(v),
                fate,
                ..
            } => self.message(r.seq, *dir, v, *fate),
            Body::Release {
                of,
                action: Action::Deliver,
                ..
            } => self.released(r.seq, *of),
            Body::Event { from, event } => self.report(r.seq, *from, event),
            Body::Fact(Fact::Quiescent { kinds: ks }) => {
                let expect = ks
                    .iter()
                    .filter(|k| self.kinds.contains(**k))
                    .map(|k| (CLIENT, *k, AUTH))
                    .collect();
                self.out.push(r.seq, 4, Event::Quiescent { expect });
            }
            _ => {}
        }
    }

    /// A message reaching the proxy, read by the observer: a list request (a refresh begins,
    /// or its walk begins again), a page served, a `list_changed` sent; a notification or an
    /// answer to a walk the proxy passed on at once is delivered.
    fn message(&mut self, seq: u64, dir: Dir, v: &Value, fate: LineFate) {
        let toward = match dir {
            Dir::Up => Toward::Server,
            Dir::Down => Toward::Client,
        };
        let walks = self.wire.observed().walks.len();
        let sighting = self.wire.see(seq, toward, v);
        if let Sighting::ListRequest {
            kind,
            walk: Some(w),
        } = sighting
            && w >= walks
            && self.kinds.contains(kind)
        {
            self.walk_begins(seq, kind, w);
        }
        self.walk_answered(seq, dir, fate);
        match (dir, fate) {
            (Dir::Up, LineFate::Passed) => {
                self.sent.insert(seq, seq);
            }
            (Dir::Down, _) => self.call_answered(seq),
            _ => {}
        }
        match sighting {
            Sighting::ListPage {
                kind, items, more, ..
            } => {
                let n = items.as_ref().map_or(0, Vec::len);
                let served = Event::Served {
                    client: CLIENT,
                    kind,
                    auth: AUTH,
                    version: self.truth.version_at(seq),
                    items: u32::try_from(n).unwrap_or(u32::MAX),
                    more,
                };
                self.out.push(seq, 1, served);
            }
            Sighting::ListChanged { kind, subscription } => {
                self.notified(seq, kind, subscription);
            }
            Sighting::ListRequest { .. } | Sighting::Other => {}
        }
        let notification = v.get("method").is_some() && v.get("id").is_none_or(Value::is_null);
        if dir == Dir::Down && notification && fate == LineFate::Passed {
            self.delivered(seq, v);
        }
    }

    /// A `list_changed` sent by the server: `Notified` if its kind is tracked and it belongs
    /// to the client's first listen stream (or to none).
    fn notified(&mut self, seq: u64, k: Kind, sub: Option<Value>) {
        let tracked = k
            .notification_group()
            .iter()
            .any(|g| self.kinds.contains(*g));
        if !tracked {
            return;
        }
        let counts = match (&sub, &self.first_sub) {
            (None, _) => true,
            (Some(s), None) => {
                self.first_sub = Some(s.clone());
                true
            }
            (Some(s), Some(f)) => s == f,
        };
        if !counts {
            return;
        }
        let announces = self.truth.version_at(seq);
        let visible = match self.probes.get(&seq) {
            Some(Some(items)) => match self.truth.matching(k, items) {
                Some(v) => v,
                None => {
                    self.notes.push(format!(
                        "record {seq}: the probe after this {k} list_changed saw a list of no committed version; counted as not yet visible"
                    ));
                    announces.saturating_sub(1).max(1)
                }
            },
            Some(None) | None => {
                self.notes.push(format!(
                    "record {seq}: no probe result for this {k} list_changed; notify_after_commit not judged in this run"
                ));
                self.unjudged.insert(Property::NotifyAfterCommit);
                announces
            }
        };
        let e = Event::Notified {
            client: CLIENT,
            kind: k,
            announces,
            visible,
        };
        self.out.push(seq, 1, e);
    }

    /// A notification or acknowledgement delivered to the client, at record `at`.
    fn delivered(&mut self, at: u64, v: &Value) {
        if let Some(e) = delivered_event(v, self.kinds, CLIENT) {
            self.out.push(at, 2, e);
        }
    }

    /// Record `seq` answered a `tools/call` of the client's: if with a result (not an error,
    /// not `isError`), the server ran the tool, which it may only if its tool list had it while
    /// the call was in flight, from the moment the proxy delivered it to the server to its
    /// answer (the ground truth the harness reads, never the adapter's word).
    fn call_answered(&mut self, seq: u64) {
        let Some(call) = self
            .wire
            .observed()
            .calls
            .iter()
            .find(|c| c.answer.is_some_and(|(at, _)| at == seq))
        else {
            return;
        };
        if call.answer != Some((seq, true)) {
            return;
        }
        if !self.kinds.contains(Kind::Tools) {
            self.notes.push(format!(
                "record {seq}: a result of {} on a run that keeps no tool list; no_call_to_removed not judged in this run",
                call.tool
            ));
            self.unjudged.insert(Property::NoCallToRemoved);
            return;
        }
        let reached = self
            .sent
            .get(&call.request)
            .copied()
            .unwrap_or(call.request);
        let present = self.truth.had_tool(&call.tool, reached, seq);
        let e = Event::Dispatched {
            client: CLIENT,
            tool: call.tool.as_str().into(),
            present,
        };
        self.out.push(seq, 2, e);
    }

    /// The first-page request at record `seq` began walk `w` of `kind`: the walk of the latest
    /// open refresh of `kind` with an answer in hand begins again, or else a refresh starts.
    fn walk_begins(&mut self, seq: u64, kind: Kind, w: usize) {
        let open = &mut self.refreshes.open;
        if let Some(r) = open.iter_mut().rev().find(|r| r.kind == kind && r.answered) {
            r.walk = w;
            r.answered = false;
            let e = Event::WalkRestarted {
                client: CLIENT,
                kind,
                refresh: r.refresh,
                reason: Restart::NotifiedMidWalk,
            };
            self.out.push(seq, 2, e);
            return;
        }
        let refresh = self.refreshes.next;
        self.refreshes.next += 1;
        open.push(OpenRefresh {
            kind,
            refresh,
            walk: w,
            answered: false,
        });
        self.out.push(seq, 2, started(kind, refresh));
    }

    /// Record `seq` answered (a page, an error) or cancelled a walk of an open refresh: kept
    /// until it reaches the client (a cancellation ends the walk at once).
    fn walk_answered(&mut self, seq: u64, dir: Dir, fate: LineFate) {
        let walks = &self.wire.observed().walks;
        let answered = self.refreshes.open.iter().find_map(|r| {
            let walk = walks.get(r.walk)?;
            let page = walk.pages.last().is_some_and(|(at, _)| *at == seq);
            let ends = walk.ended_at == Some(seq);
            (page || ends).then_some((r.walk, ends))
        });
        let Some(answer) = answered else {
            return;
        };
        match (dir, fate) {
            (Dir::Up, _) | (Dir::Down, LineFate::Passed) => self.walk_reached(seq, answer),
            _ => {
                self.refreshes.answers.insert(seq, answer);
            }
        }
    }

    /// An answer of walk `w` reached the client at record `at`: the walk has an answer in hand,
    /// and the refresh whose current walk it is ends if the answer ends it.
    fn walk_reached(&mut self, at: u64, (w, ends): (usize, bool)) {
        let open = &mut self.refreshes.open;
        let Some(i) = open.iter().position(|r| r.walk == w) else {
            return; // a stale answer: its refresh began again since, or ended
        };
        if !ends {
            open[i].answered = true;
            return;
        }
        let r = open.remove(i);
        let complete = self
            .wire
            .observed()
            .walks
            .get(w)
            .is_some_and(|x| x.fate == WalkFate::Complete);
        // A label: the outcome is read by no verdict, and the wire cannot tell a published list
        // from a discarded one (the client's `published` report says what its readers read).
        let outcome = if complete {
            RefreshOutcome::Published
        } else {
            RefreshOutcome::Failed
        };
        self.out.push(at, 3, ended(r.kind, r.refresh, outcome));
    }

    /// A held line released to its recipient: delivered if it went down. A duplicate's copy
    /// names the original in `of` of its own Release record.
    fn released(&mut self, at: u64, of: u64) {
        let record = |seq: u64| self.records.get(usize::try_from(seq).unwrap_or(usize::MAX));
        let mut src = of;
        while let Some(Body::Release {
            of,
            action: Action::Duplicate,
            ..
        }) = record(src).map(|x| &x.body)
        {
            src = *of;
        }
        if let Some(answer) = self.refreshes.answers.remove(&src) {
            self.walk_reached(at, answer);
        }
        match record(src).filter(|r| r.seq == src).map(|r| &r.body) {
            Some(Body::Msg {
                dir: Dir::Down,
                json: Some(v),
                ..
            }) => self.delivered(at, v),
            Some(Body::Msg { dir: Dir::Up, .. }) => {
                self.sent.entry(src).or_insert(at);
            }
            _ => {}
        }
    }

    /// An adapter's report: the client's `published` list (what its readers read, as the
    /// adapter reads the SDK's list). Its other reports (refreshes, dispatches) are its word and
    /// are not read: the wire shows them.
    fn report(&mut self, seq: u64, from: Side, event: &Value) {
        if from != Side::Client || event.get("event").and_then(Value::as_str) != Some("published") {
            return;
        }
        let kind = event
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| k.parse::<Kind>().ok())
            .filter(|k| self.kinds.contains(*k));
        if let Some(k) = kind {
            self.published(seq, k, event);
        }
    }

    fn published(&mut self, seq: u64, k: Kind, event: &Value) {
        let items = event
            .get("items")
            .and_then(control_items)
            .unwrap_or_default();
        let e = Event::Published {
            client: CLIENT,
            kind: k,
            auth: AUTH,
            items: items_of(&items),
            version: None,
        };
        self.out.push(seq, 2, e);
    }
}

fn started(kind: Kind, refresh: u32) -> Event {
    Event::RefreshStarted {
        client: CLIENT,
        kind,
        auth: AUTH,
        refresh,
    }
}

fn ended(kind: Kind, refresh: u32, outcome: RefreshOutcome) -> Event {
    Event::RefreshEnded {
        client: CLIENT,
        kind,
        auth: AUTH,
        refresh,
        outcome,
    }
}

/// Reconstructs and judges a run's history.
pub fn judge_run(records: &[Record], kinds: KindSet) -> Judged {
    let history = reconstruct(records, kinds);
    let mut j = judge(history.events.iter().map(|(_, e)| e));
    // What this history cannot show to hold is not judged, never "holds".
    for p in &history.unjudged {
        if j.verdicts.get(p) == Some(&Verdict::Holds) {
            j.verdicts.insert(*p, Verdict::NotApplicable);
        }
    }
    let violations = j
        .violations
        .into_iter()
        .map(|v| {
            let at = history.events.get(v.at).map_or(0, |(s, _)| *s);
            (v, at)
        })
        .collect();
    Judged {
        verdicts: j.verdicts,
        violations,
        history,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A timeline under construction: each record numbered in order.
    #[derive(Default)]
    struct Tape(Vec<Record>);

    impl Tape {
        fn push(&mut self, body: Body) -> u64 {
            let seq = self.0.len() as u64;
            self.0.push(Record {
                seq,
                micros: seq,
                body,
            });
            seq
        }
        fn catalog(&mut self, tools: &[&str]) -> u64 {
            let items = tools
                .iter()
                .map(|n| NamedItem {
                    name: (*n).into(),
                    description: format!("{n}1"),
                })
                .collect();
            self.push(Body::Fact(Fact::Catalog {
                after: "test".into(),
                since: None,
                kinds: BTreeMap::from([(Kind::Tools, items)]),
            }))
        }
        fn up(&mut self, v: Value) -> u64 {
            self.msg(Dir::Up, v, LineFate::Passed)
        }
        fn down(&mut self, v: Value) -> u64 {
            self.msg(Dir::Down, v, LineFate::Passed)
        }
        fn msg(&mut self, dir: Dir, v: Value, fate: LineFate) -> u64 {
            self.push(Body::Msg {
                dir,
                len: 0,
                json: Some(v),
                text: None,
                fate,
            })
        }
        fn client_says(&mut self, event: Value) {
            self.push(Body::Event {
                from: Side::Client,
                event,
            });
        }
        fn list(&mut self, id: u64) {
            self.up(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"}));
        }
        fn page(&mut self, id: u64, tools: &[&str]) {
            let tools: Vec<Value> = tools
                .iter()
                .map(|n| json!({"name": n, "description": format!("{n}1")}))
                .collect();
            self.down(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": tools}}));
        }
        fn judge(&self) -> Judged {
            judge_run(&self.0, KindSet::only(Kind::Tools))
        }
    }

    /// How many events of the judged history `is` picks.
    fn count(j: &Judged, is: impl Fn(&Event) -> bool) -> usize {
        j.history.events.iter().filter(|(_, e)| is(e)).count()
    }

    fn refreshes_started(j: &Judged) -> usize {
        count(j, |e| matches!(e, Event::RefreshStarted { .. }))
    }

    /// Walks are read from the list requests on the wire: a client that lists three times
    /// for one notification, reporting none of it, breaks bounded_refresh all the same; its
    /// adapter's `refresh_started` reports add no refresh.
    #[test]
    fn walks_are_the_requests_on_the_wire_not_the_adapter_s_reports() {
        let mut t = Tape::default();
        t.catalog(&["a"]);
        t.list(1);
        t.page(1, &["a"]);
        t.down(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        for id in 2..5 {
            t.list(id);
        }
        for id in 2..5 {
            t.page(id, &["a"]);
        }
        let j = t.judge();
        assert_eq!(refreshes_started(&j), 4);
        assert_eq!(
            j.verdicts.get(&Property::BoundedRefresh),
            Some(&Verdict::Violated)
        );
        // The same wire, with an adapter that reports a walk on every line: still four.
        let mut noisy = Tape::default();
        for r in &t.0 {
            noisy.push(r.body.clone());
            noisy.client_says(json!({"event": "refresh_started", "kind": "tools"}));
        }
        assert_eq!(refreshes_started(&noisy.judge()), 4);
    }

    /// A first-page request while a walk has a page in hand begins that walk again: a client
    /// that restarts its walk for each notification mid-walk refreshes once.
    #[test]
    fn a_first_page_request_after_a_page_in_hand_begins_the_walk_again() {
        let mut t = Tape::default();
        t.catalog(&["a", "b"]);
        t.list(1);
        t.down(json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "a", "description": "a1"}], "nextCursor": "p2"}}));
        t.list(2);
        t.page(2, &["a", "b"]);
        let j = t.judge();
        assert_eq!(refreshes_started(&j), 1);
        let restarted = count(&j, |e| matches!(e, Event::WalkRestarted { refresh: 0, .. }));
        assert_eq!(restarted, 1);
        let ended = count(&j, |e| matches!(e, Event::RefreshEnded { refresh: 0, .. }));
        assert_eq!(ended, 1);
    }

    /// Whether the server ran a removed tool is judged from the call's result at the proxy
    /// against the ground truth, whatever the server adapter says of it.
    #[test]
    fn a_result_for_a_tool_the_ground_truth_removed_is_a_call_to_a_removed_tool() {
        let call = |t: &mut Tape, id: u64| {
            t.up(json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "a"}}));
        };
        let mut t = Tape::default();
        t.catalog(&["a", "b"]);
        t.push(Body::Fact(Fact::MutateIssued {
            batch: 0,
            ops: vec![Op::remove(Kind::Tools, "a")],
        }));
        t.catalog(&["b"]);
        call(&mut t, 7);
        t.push(Body::Event {
            from: Side::Server,
            event: json!({"event": "dispatched", "tool": "a", "present": true}),
        });
        t.down(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}));
        assert_eq!(
            t.judge().verdicts.get(&Property::NoCallToRemoved),
            Some(&Verdict::Violated)
        );
        // Refused, it holds; a result while the tool was still listed holds too.
        let mut refused = Tape(t.0[..t.0.len() - 1].to_vec());
        refused.down(json!({"jsonrpc": "2.0", "id": 7, "error": {"code": -32602, "message": "unknown tool"}}));
        assert_eq!(
            refused.judge().verdicts.get(&Property::NoCallToRemoved),
            Some(&Verdict::Holds)
        );
        // A call that reached the proxy before the removal but the server after it: the server
        // ran a tool it no longer had.
        let mut held = Tape::default();
        held.catalog(&["a", "b"]);
        let request = held.msg(
            Dir::Up,
            json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "a"}}),
            LineFate::Held,
        );
        held.push(Body::Fact(Fact::MutateIssued {
            batch: 0,
            ops: vec![Op::remove(Kind::Tools, "a")],
        }));
        held.catalog(&["b"]);
        held.push(Body::Release {
            of: request,
            action: Action::Deliver,
            note: None,
        });
        held.down(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}));
        assert_eq!(
            held.judge().verdicts.get(&Property::NoCallToRemoved),
            Some(&Verdict::Violated)
        );
        let mut listed = Tape::default();
        listed.catalog(&["a", "b"]);
        call(&mut listed, 7);
        listed.down(json!({"jsonrpc": "2.0", "id": 7, "result": {"content": []}}));
        assert_eq!(
            listed.judge().verdicts.get(&Property::NoCallToRemoved),
            Some(&Verdict::Holds)
        );
    }

    /// A notification the probe could not list after leaves notify_after_commit not judged
    /// (n/a with a note), never "holds".
    #[test]
    fn a_notification_without_a_probe_result_is_not_judged() {
        let mut t = Tape::default();
        t.catalog(&["a"]);
        t.list(1);
        t.page(1, &["a"]);
        t.down(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}));
        let j = t.judge();
        assert_eq!(
            j.verdicts.get(&Property::NotifyAfterCommit),
            Some(&Verdict::NotApplicable)
        );
        assert!(
            j.history
                .notes
                .iter()
                .any(|n| n.contains("notify_after_commit not judged"))
        );
    }
}
