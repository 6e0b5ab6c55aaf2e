//! From a run's timeline to a history of core [`Event`]s, judged by
//! [`listsync_core::monitor::judge`] — the checkers the model and the simulator use.
//!
//! How each event is obtained (one client, id 0, authorization context 0):
//!
//! | event | source |
//! |---|---|
//! | `Committed` | the server adapter's `catalog` (ground truth) read after each mutation; a new version when it differs from the last. Dated at the administrator's action that made it (the first `mutate` command not yet seen in a catalog, even when the server parks the commit, as the model's ground truth does; else the release of a parked commit); the initial catalog is version 1, before anything |
//! | `Connected` | start of the run |
//! | `Notified` | a `list_changed` of a tracked kind reaching the proxy from the server. `announces` = the version the latest mutation issued before it produced; `visible` = the version whose list equals what the harness's own probe (`tools/list` injected on the link right after the notification arrived, every page) returned. 2026-07-28: only the client's first listen stream counts (further streams are the client's own choice) |
//! | `Served` | a list result passing the proxy to the client, answering a list request that passed up (same JSON-RPC id); dated at the ground-truth version of that moment |
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

use crate::proxy::{control_items, notified_kind};
use crate::timeline::{Action, Body, Dir, Fact, LineFate, NamedItem, Record, Side};
use listsync_core::history::{Cause, ClientId, Event, RefreshOutcome};
use listsync_core::monitor::{Violation, judge};
use listsync_core::property::Verdicts;
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, ItemList, Kind, KindSet, Op};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

const CLIENT: ClientId = 0;

/// An event with its timeline record, its order among events of one record, and its place
/// among the events pushed so far.
type Dated = (u64, u8, u64, Event);

/// Appends an event dated at a record, with its order within that record.
type Push<'a> = dyn FnMut(&mut Vec<Dated>, u64, u8, Event) + 'a;
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

/// Reconstructs the history of a run that tracks `kinds`.
pub fn reconstruct(records: &[Record], kinds: KindSet) -> Reconstruction {
    let mut notes = Vec::new();
    // (sort key, tie-break, event)
    let mut out: Vec<Dated> = Vec::new();
    let mut order = 0u64;
    let mut push = |out: &mut Vec<Dated>, at: u64, prio: u8, e: Event| {
        order += 1;
        out.push((at, prio, order, e));
    };

    // Versions: every ground-truth catalog that differs from the last one is a new version. A
    // mutation gets the version of the first change seen after it (a parked commit lands later
    // than its mutation), or the current one if its ops change nothing.
    let mut commits: Vec<(u64, Arc<Catalog>)> = Vec::new();
    let mut pending: Vec<u64> = Vec::new();
    let mut mutation_version: BTreeMap<u64, u64> = BTreeMap::new();
    let mut expected: Option<Catalog> = None;
    for r in records {
        match &r.body {
            Body::Fact(Fact::Catalog {
                since, kinds: k, ..
            }) => {
                let cat = Arc::new(catalog_of(k));
                let changed = commits.last().is_none_or(|(_, c)| **c != *cat);
                if changed {
                    let v = commits.len() as u64 + 1;
                    commits.push((v, cat.clone()));
                    // Dated at the administrator's action: the first mutation not yet seen
                    // (the model's truth commits there too, even when the server parks it).
                    let at = if v == 1 {
                        0
                    } else {
                        pending.first().copied().or(*since).unwrap_or(r.seq)
                    };
                    push(
                        &mut out,
                        at,
                        0,
                        Event::Committed {
                            version: v,
                            catalog: cat.clone(),
                        },
                    );
                    if v == 1 {
                        push(&mut out, 0, 1, Event::Connected { client: CLIENT });
                    }
                    for m in pending.drain(..) {
                        mutation_version.insert(m, v);
                    }
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
                    mutation_version.insert(r.seq, commits.last().map_or(1, |(v, _)| *v));
                } else {
                    pending.push(r.seq);
                }
                expected = Some(next);
            }
            _ => {}
        }
    }
    let latest_version = commits.last().map_or(1, |(v, _)| *v);
    // Mutations whose change never became visible announce a version that never came.
    for m in pending {
        mutation_version.insert(m, latest_version + 1);
    }
    let version_at = |seq: u64| -> u64 {
        mutation_version
            .range(..=seq)
            .next_back()
            .map(|(_, v)| *v)
            .unwrap_or(1)
    };
    let matching = |kind: Kind, items: &[NamedItem]| -> Option<u64> {
        let d = Digest::of(&items_of(items));
        commits
            .iter()
            .rev()
            .find(|(_, c)| Digest::of(&c.visible(kind, AUTH)) == d)
            .map(|(v, _)| *v)
    };

    let probes: HashMap<u64, &Option<Vec<NamedItem>>> = records
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
    let msg_of = |seq: u64| -> Option<&Value> {
        records
            .get(usize::try_from(seq).ok()?)
            .and_then(|r| match &r.body {
                Body::Msg { json: Some(v), .. } if r.seq == seq => Some(v),
                _ => None,
            })
    };
    let uses_history = records.iter().any(|r| {
        matches!(&r.body, Body::Event { from: Side::Client, event }
            if event.get("event").and_then(Value::as_str) == Some("history"))
    });

    let tracked_group = |k: Kind| k.notification_group().iter().any(|g| kinds.contains(*g));
    let mut first_sub: Option<Value> = None;
    let mut open: HashMap<Kind, VecDeque<u32>> = HashMap::new();
    let mut next_refresh = 0u32;
    // Client-reported refresh ids (our runtime) → ours.
    let mut rt_refresh: HashMap<(Kind, u64), u32> = HashMap::new();

    // A notification or ack delivered to the client, at record `at`.
    let delivered = |out: &mut Vec<Dated>, push: &mut Push, at: u64, v: &Value| {
        if let Some(e) = delivered_event(v, kinds, CLIENT) {
            push(out, at, 2, e);
        }
    };

    // List requests on their way up, by JSON-RPC id: the page that answers one was served.
    let mut listing: HashMap<String, Kind> = HashMap::new();
    for r in records {
        match &r.body {
            Body::Msg {
                dir: Dir::Up,
                json: Some(v),
                ..
            } => {
                let method = v.get("method").and_then(Value::as_str);
                if let (Some(m), Some(id)) = (method, v.get("id"))
                    && let Some(k) = Kind::ALL.into_iter().find(|k| k.list_method() == m)
                {
                    listing.insert(id.to_string(), k);
                }
            }
            Body::Msg {
                dir: Dir::Down,
                json: Some(v),
                fate,
                ..
            } => {
                let method = v.get("method").and_then(Value::as_str);
                let is_notification = method.is_some() && v.get("id").is_none_or(Value::is_null);
                if !is_notification {
                    let page = v.get("result").filter(|_| method.is_none());
                    if let (Some(page), Some(id)) = (page, v.get("id"))
                        && let Some(kind) = listing.remove(&id.to_string())
                    {
                        let items = ["tools", "prompts", "resources", "resourceTemplates"]
                            .into_iter()
                            .find_map(|f| page.get(f).and_then(Value::as_array))
                            .map_or(0, Vec::len);
                        push(
                            &mut out,
                            r.seq,
                            1,
                            Event::Served {
                                client: CLIENT,
                                kind,
                                auth: AUTH,
                                version: version_at(r.seq),
                                items: u32::try_from(items).unwrap_or(u32::MAX),
                                more: page.get("nextCursor").is_some_and(|c| !c.is_null()),
                            },
                        );
                    }
                    continue;
                }
                let method = method.unwrap_or_default();
                if let Some(k) = notified_kind(method)
                    && tracked_group(k)
                {
                    let sub = v
                        .get("params")
                        .and_then(|p| p.get("_meta"))
                        .and_then(|m| m.get("io.modelcontextprotocol/subscriptionId"))
                        .cloned();
                    let counts = match (&sub, &first_sub) {
                        (None, _) => true,
                        (Some(s), None) => {
                            first_sub = Some(s.clone());
                            true
                        }
                        (Some(s), Some(f)) => s == f,
                    };
                    if counts {
                        let announces = version_at(r.seq);
                        let visible = match probes.get(&r.seq) {
                            Some(Some(items)) => match matching(k, items) {
                                Some(v) => v,
                                None => {
                                    notes.push(format!(
                                        "record {}: the probe after this {k} list_changed saw a list of no committed version; counted as not yet visible",
                                        r.seq
                                    ));
                                    announces.saturating_sub(1).max(1)
                                }
                            },
                            Some(None) | None => {
                                notes.push(format!(
                                    "record {}: no probe result for this {k} list_changed; notify_after_commit not judged for it (counted as visible)",
                                    r.seq
                                ));
                                announces
                            }
                        };
                        push(
                            &mut out,
                            r.seq,
                            1,
                            Event::Notified {
                                client: CLIENT,
                                kind: k,
                                announces,
                                visible,
                            },
                        );
                    }
                }
                if *fate == LineFate::Passed {
                    delivered(&mut out, &mut push, r.seq, v);
                }
            }
            Body::Release {
                of,
                action: Action::Deliver,
                ..
            } => {
                // The original's payload (a duplicate's copy names the original in `of` of its
                // own Release record).
                let mut src = *of;
                while let Some(Body::Release {
                    of,
                    action: Action::Duplicate,
                    ..
                }) = records
                    .get(usize::try_from(src).unwrap_or(usize::MAX))
                    .map(|x| &x.body)
                {
                    src = *of;
                }
                if let Some(v) = msg_of(src)
                    && records
                        .get(usize::try_from(src).unwrap_or(usize::MAX))
                        .is_some_and(|x| matches!(x.body, Body::Msg { dir: Dir::Down, .. }))
                {
                    delivered(&mut out, &mut push, r.seq, v);
                }
            }
            Body::Event { from, event } => {
                let name = event
                    .get("event")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let kind = event
                    .get("kind")
                    .and_then(Value::as_str)
                    .and_then(|k| k.parse::<Kind>().ok());
                match (from, name) {
                    (Side::Server, "dispatched") => {
                        let tool = event
                            .get("tool")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        // A report without `present` is not judged (never taken as present).
                        let Some(present) = event.get("present").and_then(Value::as_bool) else {
                            notes.push(format!(
                                "record {}: the dispatch of {tool} says nothing of whether the tool was present; no_call_to_removed not judged for it",
                                r.seq
                            ));
                            continue;
                        };
                        push(
                            &mut out,
                            r.seq,
                            2,
                            Event::Dispatched {
                                client: CLIENT,
                                tool: tool.into(),
                                present,
                            },
                        );
                    }
                    (Side::Client, "published") => {
                        let Some(k) = kind.filter(|k| kinds.contains(*k)) else {
                            continue;
                        };
                        let items = event
                            .get("items")
                            .and_then(control_items)
                            .unwrap_or_default();
                        push(
                            &mut out,
                            r.seq,
                            2,
                            Event::Published {
                                client: CLIENT,
                                kind: k,
                                auth: AUTH,
                                items: items_of(&items),
                                version: None,
                            },
                        );
                        if !uses_history && let Some(id) = open.entry(k).or_default().pop_front() {
                            push(&mut out, r.seq, 3, ended(k, id, RefreshOutcome::Published));
                        }
                    }
                    (Side::Client, name @ ("refresh_failed" | "refresh_discarded"))
                        if !uses_history =>
                    {
                        let outcome = if name == "refresh_failed" {
                            RefreshOutcome::Failed
                        } else {
                            RefreshOutcome::Discarded
                        };
                        if let Some(k) = kind.filter(|k| kinds.contains(*k))
                            && let Some(id) = open.entry(k).or_default().pop_front()
                        {
                            push(&mut out, r.seq, 3, ended(k, id, outcome));
                        }
                    }
                    (Side::Client, "refresh_started") if !uses_history => {
                        if let Some(k) = kind.filter(|k| kinds.contains(*k)) {
                            let id = next_refresh;
                            next_refresh += 1;
                            open.entry(k).or_default().push_back(id);
                            push(
                                &mut out,
                                r.seq,
                                2,
                                Event::RefreshStarted {
                                    client: CLIENT,
                                    kind: k,
                                    auth: AUTH,
                                    refresh: id,
                                },
                            );
                        }
                    }
                    (Side::Client, "history") => {
                        let entry = event.get("entry").unwrap_or(&Value::Null);
                        let ev = entry
                            .get("event")
                            .and_then(Value::as_str)
                            .unwrap_or_default();
                        let k = entry
                            .get("kind")
                            .and_then(Value::as_str)
                            .and_then(|k| k.parse::<Kind>().ok())
                            .filter(|k| kinds.contains(*k));
                        let rid = entry.get("refresh").and_then(Value::as_u64);
                        let (Some(k), Some(rid)) = (k, rid) else {
                            continue;
                        };
                        match ev {
                            "refresh_started" => {
                                let id = next_refresh;
                                next_refresh += 1;
                                rt_refresh.insert((k, rid), id);
                                push(
                                    &mut out,
                                    r.seq,
                                    2,
                                    Event::RefreshStarted {
                                        client: CLIENT,
                                        kind: k,
                                        auth: AUTH,
                                        refresh: id,
                                    },
                                );
                            }
                            "refresh_ended" => {
                                let outcome = match entry.get("outcome").and_then(Value::as_str) {
                                    Some("published") => RefreshOutcome::Published,
                                    Some("discarded") => RefreshOutcome::Discarded,
                                    _ => RefreshOutcome::Failed,
                                };
                                if let Some(id) = rt_refresh.get(&(k, rid)) {
                                    push(&mut out, r.seq, 3, ended(k, *id, outcome));
                                }
                            }
                            _ => {}
                        }
                    }
                    _ => {}
                }
            }
            Body::Fact(Fact::Quiescent { kinds: ks }) => {
                push(
                    &mut out,
                    r.seq,
                    4,
                    Event::Quiescent {
                        expect: ks
                            .iter()
                            .filter(|k| kinds.contains(**k))
                            .map(|k| (CLIENT, *k, AUTH))
                            .collect(),
                    },
                );
            }
            _ => {}
        }
    }
    if commits.is_empty() {
        notes.push(
            "no ground-truth catalog was read: nothing can be judged against the server".into(),
        );
    }
    out.sort_by_key(|(at, prio, order, _)| (*at, *prio, *order));
    Reconstruction {
        events: out.into_iter().map(|(at, _, _, e)| (at, e)).collect(),
        notes,
    }
}

/// The event a server-to-client message delivered to client `client` is on the client's side,
/// for a client that keeps `kinds`: a `list_changed` of a kept kind wakes it
/// ([`Event::Woken`]), a 2026-07-28 `notifications/subscriptions/acknowledged` is
/// [`Event::ListenAcked`] with the kept kinds the server honours. Shared by the replay's
/// reconstruction and the session-log audit (`listsync audit`).
pub fn delivered_event(v: &Value, kinds: KindSet, client: ClientId) -> Option<Event> {
    let method = v.get("method").and_then(Value::as_str).unwrap_or_default();
    if let Some(k) = notified_kind(method) {
        let woken: KindSet = k
            .notification_group()
            .iter()
            .copied()
            .filter(|g| kinds.contains(*g))
            .collect();
        (!woken.is_empty()).then_some(Event::Woken {
            client,
            kinds: woken,
            cause: Cause::ListChanged,
        })
    } else if method == "notifications/subscriptions/acknowledged" {
        let n = v.get("params").and_then(|p| p.get("notifications"));
        let flag = |f: &str| n.and_then(|n| n.get(f)).and_then(Value::as_bool) == Some(true);
        let mut honoured = KindSet::EMPTY;
        if flag("toolsListChanged") {
            honoured = honoured.with(Kind::Tools);
        }
        if flag("promptsListChanged") {
            honoured = honoured.with(Kind::Prompts);
        }
        if flag("resourcesListChanged") {
            honoured = honoured.with(Kind::Resources).with(Kind::ResourceTemplates);
        }
        Some(Event::ListenAcked {
            client,
            kinds: honoured.iter().filter(|k| kinds.contains(*k)).collect(),
        })
    } else {
        None
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
