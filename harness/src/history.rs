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
//! | `RefreshStarted` / `RefreshEnded` | the client adapter's reports: its core `history` entries when it sends them (our runtime), else `refresh_started`, ended by the next `published` or `refresh_failed` of that kind (oldest first) |
//! | `Published` | the client adapter's `published` events |
//! | `Dispatched` | the server adapter's `dispatched` events (`present` as the adapter read its SDK's registry; an event without it is not judged, and the notes say so) |
//! | `Quiescent` | the harness released everything and the run settled |
//!
//! Items are compared across SDKs as (name, description): the catalog, probes and published
//! snapshots are all normalised to that before judging (our runtime's canonical JSON
//! definitions are reduced to their description).

use crate::proxy::control_items;
use crate::timeline::{Action, Body, Dir, Fact, LineFate, NamedItem, Record, Side};
use listsync_core::history::{ClientId, Event, RefreshOutcome};
use listsync_core::monitor::{Violation, judge};
use listsync_core::property::Verdicts;
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, ItemList, Kind, KindSet, Op};
use listsync_observe::{ConnObserver, Sighting, Toward, delivered_event};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
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

/// Refreshes the client reported: ours, by kind, oldest first; our runtime's ids mapped to ours.
#[derive(Default)]
struct Refreshes {
    open: HashMap<Kind, VecDeque<u32>>,
    next: u32,
    rt: HashMap<(Kind, u64), u32>,
}

impl Refreshes {
    fn start(&mut self) -> u32 {
        let id = self.next;
        self.next += 1;
        id
    }
}

/// The second pass over a run's timeline: the wire, the adapters' reports, the end.
struct Rebuild<'a> {
    records: &'a [Record],
    kinds: KindSet,
    truth: Truth,
    probes: HashMap<u64, &'a Option<Vec<NamedItem>>>,
    uses_history: bool,
    out: Dated,
    notes: Vec<String>,
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
    let uses_history = records.iter().any(|r| {
        matches!(&r.body, Body::Event { from: Side::Client, event }
            if event.get("event").and_then(Value::as_str) == Some("history"))
    });
    let mut b = Rebuild {
        records,
        kinds,
        truth,
        probes,
        uses_history,
        out,
        notes: Vec::new(),
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

    /// A message reaching the proxy, read by the observer: a page served, a `list_changed`
    /// sent; a notification the proxy passed on at once is delivered.
    fn message(&mut self, seq: u64, dir: Dir, v: &Value, fate: LineFate) {
        let toward = match dir {
            Dir::Up => Toward::Server,
            Dir::Down => Toward::Client,
        };
        match self.wire.see(seq, toward, v) {
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
                    "record {seq}: no probe result for this {k} list_changed; notify_after_commit not judged for it (counted as visible)"
                ));
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
        if let Some(r) = record(src)
            && r.seq == src
            && let Body::Msg {
                dir: Dir::Down,
                json: Some(v),
                ..
            } = &r.body
        {
            self.delivered(at, v);
        }
    }

    /// An adapter's report: a dispatch (server), a publication, a refresh's start and end
    /// (client; our runtime's own history entries when it sends them).
    fn report(&mut self, seq: u64, from: Side, event: &Value) {
        let name = event
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = event
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| k.parse::<Kind>().ok())
            .filter(|k| self.kinds.contains(*k));
        match (from, name) {
            (Side::Server, "dispatched") => self.dispatched(seq, event),
            (Side::Client, "published") => {
                if let Some(k) = kind {
                    self.published(seq, k, event);
                }
            }
            (Side::Client, "refresh_failed" | "refresh_discarded") if !self.uses_history => {
                let outcome = if name == "refresh_failed" {
                    RefreshOutcome::Failed
                } else {
                    RefreshOutcome::Discarded
                };
                if let Some(k) = kind {
                    self.end_oldest(seq, k, outcome);
                }
            }
            (Side::Client, "refresh_started") if !self.uses_history => {
                if let Some(k) = kind {
                    let id = self.refreshes.start();
                    self.refreshes.open.entry(k).or_default().push_back(id);
                    self.out.push(seq, 2, started(k, id));
                }
            }
            (Side::Client, "history") => {
                self.history_entry(seq, event.get("entry").unwrap_or(&Value::Null));
            }
            _ => {}
        }
    }

    fn dispatched(&mut self, seq: u64, event: &Value) {
        let tool = event
            .get("tool")
            .and_then(Value::as_str)
            .unwrap_or_default();
        // A report without `present` is not judged (never taken as present).
        let Some(present) = event.get("present").and_then(Value::as_bool) else {
            self.notes.push(format!(
                "record {seq}: the dispatch of {tool} says nothing of whether the tool was present; no_call_to_removed not judged for it"
            ));
            return;
        };
        let e = Event::Dispatched {
            client: CLIENT,
            tool: tool.into(),
            present,
        };
        self.out.push(seq, 2, e);
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
        if !self.uses_history {
            self.end_oldest(seq, k, RefreshOutcome::Published);
        }
    }

    /// Ends the oldest refresh of `k` still open (the adapter reports no ids).
    fn end_oldest(&mut self, seq: u64, k: Kind, outcome: RefreshOutcome) {
        if let Some(id) = self.refreshes.open.entry(k).or_default().pop_front() {
            self.out.push(seq, 3, ended(k, id, outcome));
        }
    }

    /// One of our runtime's own history entries: a refresh started or ended, by its id.
    fn history_entry(&mut self, seq: u64, entry: &Value) {
        let ev = entry
            .get("event")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let k = entry
            .get("kind")
            .and_then(Value::as_str)
            .and_then(|k| k.parse::<Kind>().ok())
            .filter(|k| self.kinds.contains(*k));
        let rid = entry.get("refresh").and_then(Value::as_u64);
        let (Some(k), Some(rid)) = (k, rid) else {
            return;
        };
        match ev {
            "refresh_started" => {
                let id = self.refreshes.start();
                self.refreshes.rt.insert((k, rid), id);
                self.out.push(seq, 2, started(k, id));
            }
            "refresh_ended" => {
                let outcome = match entry.get("outcome").and_then(Value::as_str) {
                    Some("published") => RefreshOutcome::Published,
                    Some("discarded") => RefreshOutcome::Discarded,
                    _ => RefreshOutcome::Failed,
                };
                if let Some(id) = self.refreshes.rt.get(&(k, rid)) {
                    self.out.push(seq, 3, ended(k, *id, outcome));
                }
            }
            _ => {}
        }
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
    let j = judge(history.events.iter().map(|(_, e)| e));
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
