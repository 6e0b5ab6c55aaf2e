//! What one run produced: its status (completed, diverged, unsupported, failed), the verdicts
//! judged from its history (and, for a replay, the shadow world's and the trace's), the
//! violations with the log records that show them, and the observations the findings about
//! SDKs are built from (notifications per batch, concurrent list requests, call outcomes,
//! advertised capabilities, negotiated version, exact package versions).

use crate::adapters::{Role, Subject};
use crate::history::judge_run;
use crate::jsonrpc::{self, Frame};
use crate::proxy::listed_kind;
use crate::timeline::{Action, Body, Dir, Fact, LineFate, Record, Side};
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::scenario::Scenario;
use listsync_core::situation::Situation;
use listsync_core::vocab::{Era, KindSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Ran to the end (a replay: in lockstep with the trace).
    Completed,
    /// A replay the implementation left; the rest of the run was free and is still judged.
    Diverged,
    /// Cannot run here (cluster, HTTP-only features, an era the SDK does not speak).
    Unsupported,
    /// The harness could not run it (an adapter did not start, a command timed out).
    Failed,
}

impl RunStatus {
    /// `completed`, `diverged`...
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Completed => "completed",
            RunStatus::Diverged => "diverged",
            RunStatus::Unsupported => "unsupported",
            RunStatus::Failed => "failed",
        }
    }
}

/// Whether an adaptive replay posed its trace's race to the implementation: the situations
/// of the trace the wire can show, and those the run reached.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Race {
    /// The race was posed.
    pub posed: bool,
    /// The trace's situations that the wire can show.
    pub wanted: Vec<Situation>,
    /// Those the run reached.
    pub reached: Vec<Situation>,
    /// Why it was not posed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
}

/// What one replay comes to, for its user: the verdict `listsync replay` prints and exits by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The race was posed (or the trace has none the wire shows) and every property held.
    Holds,
    /// A property was violated.
    Violated,
    /// The implementation's path never gave the adversary its opening.
    RaceNotPosed,
    /// The harness or an adapter failed, or our runtime left a trace it should follow exactly.
    Error,
    /// The implementation cannot run the trace here.
    NotApplicable,
}

impl Outcome {
    /// `holds`, `violated`, `race not posed`, `error`, `not applicable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Holds => "holds",
            Outcome::Violated => "violated",
            Outcome::RaceNotPosed => "race not posed",
            Outcome::Error => "error",
            Outcome::NotApplicable => "not applicable",
        }
    }
}

/// What was run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[serde(deny_unknown_fields)]
pub enum Target {
    /// A trace of the corpus.
    Trace {
        /// File name.
        name: String,
        /// The property it is a counterexample of.
        shows: Option<Property>,
    },
    /// A generated exercise.
    Exercise {
        /// Exercise name.
        name: String,
    },
}

impl Target {
    /// The trace or scenario name.
    pub fn name(&self) -> &str {
        match self {
            Target::Trace { name, .. } | Target::Exercise { name } => name,
        }
    }
}

/// A violation found in a run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Found {
    /// Property.
    pub property: Property,
    /// Explanation (core's checker).
    pub detail: String,
    /// Timeline record where it showed.
    pub record: u64,
}

/// One tool call's outcome as the client adapter reported it.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CallOutcome {
    /// Tool.
    pub tool: String,
    /// Whether the call returned a result (not a JSON-RPC error).
    pub ok: bool,
    /// The result's `isError`.
    pub is_error: bool,
    /// JSON-RPC error code.
    pub code: Option<i64>,
    /// Result text or error message.
    pub text: String,
}

/// Facts about a run used by the findings.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Observations {
    /// Server SDK and exact version (from its `ready`).
    pub server_sdk: Option<String>,
    /// Client SDK and exact version.
    pub client_sdk: Option<String>,
    /// Protocol version the client reported as negotiated (or the initialize result's).
    pub negotiated: Option<String>,
    /// `capabilities.tools.listChanged` in the server's initialize / discover result.
    pub tools_list_changed_advertised: Option<bool>,
    /// `list_changed` notifications of kept kinds that reached the proxy after each mutation
    /// (before the next one).
    pub notifications_per_batch: Vec<usize>,
    /// First-page list requests of kept kinds the client sent after the first mutation.
    pub relists: usize,
    /// Most list requests of kept kinds in flight at once (sent, response not yet delivered).
    pub max_concurrent_lists: usize,
    /// Tool calls.
    pub calls: Vec<CallOutcome>,
    /// Snapshots the client published (kept kinds).
    pub published: usize,
    /// Whether any list response of a kept kind carried a `nextCursor`.
    pub paginated: bool,
    /// List requests of kept kinds with a cursor (pages after the first) the client sent
    /// after the first mutation (re-lists, not the initial walk).
    #[serde(default)]
    pub cursor_relists: usize,
    /// Malformed or oversized lines, adapter failures.
    pub bad: Vec<String>,
}

/// One run's report.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunReport {
    /// Unique id (file names under reports/).
    pub id: String,
    /// What was run.
    pub target: Target,
    /// Implementation under test (its manifest's name).
    pub imp: String,
    /// Role under test.
    pub role: Role,
    /// Variant (adapter variant or core strategy).
    pub variant: String,
    /// Era.
    pub era: Era,
    /// Server side, as started.
    pub server: String,
    /// Client side, as started.
    pub client: String,
    /// How it ended.
    pub status: RunStatus,
    /// Why (divergence, unsupported, failure).
    pub detail: Option<String>,
    /// Verdicts judged from the observed history (n/a where not applicable).
    pub judged: Verdicts,
    /// The shadow world's verdicts for the same schedule (replays).
    pub model: Option<Verdicts>,
    /// The trace's expected verdicts (replays).
    pub expected: Option<Verdicts>,
    /// Whether an adaptive replay posed the trace's race (None: not an adaptive replay).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race: Option<Race>,
    /// Violations found.
    pub violations: Vec<Found>,
    /// Caveats.
    pub notes: Vec<String>,
    /// Observations.
    pub observations: Observations,
    /// Message log, relative to the reports directory (written for runs worth reading).
    pub log: Option<String>,
    /// Wall time.
    pub duration_ms: u64,
    /// The timeline (written as the message log; not serialized).
    #[serde(skip)]
    pub records: Vec<Record>,
}

impl RunReport {
    /// An empty report.
    pub fn new(target: Target, subject: &Subject, role: Role, era: Era) -> RunReport {
        RunReport {
            id: String::new(),
            target,
            imp: subject.adapter.name.clone(),
            role,
            variant: subject
                .variant
                .clone()
                .unwrap_or_else(|| subject.adapter.default_variant(role)),
            era,
            server: String::new(),
            client: String::new(),
            status: RunStatus::Failed,
            detail: None,
            judged: Verdicts::new(),
            model: None,
            expected: None,
            race: None,
            violations: Vec::new(),
            notes: Vec::new(),
            observations: Observations::default(),
            log: None,
            duration_ms: 0,
            records: Vec::new(),
        }
    }

    /// The run's outcome for its user: violated as soon as a property is; else an error if it
    /// did not run to its end; else whether the race was posed.
    pub fn outcome(&self) -> Outcome {
        match self.status {
            RunStatus::Unsupported => Outcome::NotApplicable,
            _ if self.judged.values().any(|v| *v == Verdict::Violated) => Outcome::Violated,
            RunStatus::Failed | RunStatus::Diverged => Outcome::Error,
            RunStatus::Completed if self.race.as_ref().is_some_and(|r| !r.posed) => {
                Outcome::RaceNotPosed
            }
            RunStatus::Completed => Outcome::Holds,
        }
    }

    /// Marks the run failed.
    pub fn failed(mut self, why: String, started: std::time::Instant) -> RunReport {
        self.status = RunStatus::Failed;
        self.detail = Some(why);
        self.duration_ms = started.elapsed().as_millis() as u64;
        self
    }

    /// Judges the timeline and keeps it.
    pub fn attach(&mut self, records: Vec<Record>, kinds: KindSet) {
        let j = judge_run(&records, kinds);
        self.judged = j.verdicts;
        self.violations = j
            .violations
            .into_iter()
            .map(|(v, record)| Found {
                property: v.property,
                detail: v.detail,
                record,
            })
            .collect();
        self.notes.extend(j.history.notes);
        self.observations = observe(&records, kinds);
        self.records = records;
    }

    /// Sets inapplicable properties to n/a (in the judged verdicts and the violations).
    /// Sets the properties the harness does not judge on `scn` to n/a (see [`judges`]).
    pub fn mask(&mut self, scn: &Scenario) {
        self.mask_with(|p| judges(scn, p));
    }

    /// Sets properties for which `applies` is false to n/a.
    pub fn mask_with(&mut self, applies: impl Fn(Property) -> bool) {
        for (p, v) in self.judged.iter_mut() {
            if !applies(*p) {
                *v = Verdict::NotApplicable;
            }
        }
        self.violations.retain(|f| applies(f.property));
    }

    /// The judged verdict of a property.
    pub fn verdict(&self, p: Property) -> Verdict {
        self.judged
            .get(&p)
            .copied()
            .unwrap_or(Verdict::NotApplicable)
    }
}

/// Why the harness never judges `p` (in any run, trace or scenario), or `None` when it may:
/// `errors_not_changes`, `consumers_agree`, `approval_not_inherited`, `no_stale_arguments` and
/// `no_name_collision` are not on what it observes. Reports print "not judged" for them.
pub fn not_judged(p: Property) -> Option<&'static str> {
    match p {
        Property::ErrorsNotChanges => Some(
            "the harness does not pair a client's list requests with the failed call they answer",
        ),
        Property::ConsumersAgree => {
            Some("SDK clients call tools by name: their router does not consult their listing")
        }
        Property::ApprovalNotInherited => Some("a user's approvals are not on the wire"),
        Property::NoStaleArguments => {
            Some("the harness's calls carry no arguments built from a definition")
        }
        Property::NoNameCollision => Some("the harness runs one client against one server"),
        _ => None,
    }
}

/// Whether the harness judges `p` on `scn`: an applicable property the harness can see
/// ([`not_judged`] says why the others are not).
pub fn judges(scn: &Scenario, p: Property) -> bool {
    scn.applicable(p) && not_judged(p).is_none()
}

/// `verdicts` with the properties the harness does not judge on `scn` set to n/a: the shadow
/// model's verdicts, as the harness's are compared with them.
pub fn as_judged(scn: &Scenario, verdicts: &Verdicts) -> Verdicts {
    verdicts
        .iter()
        .map(|(p, v)| {
            (
                *p,
                if judges(scn, *p) {
                    *v
                } else {
                    Verdict::NotApplicable
                },
            )
        })
        .collect()
}

fn is_list_changed(method: &str) -> bool {
    crate::proxy::notified_kind(method).is_some()
}

/// Computes the observations of a timeline.
pub fn observe(records: &[Record], kinds: KindSet) -> Observations {
    let mut o = Observations::default();
    let sdk = |side: Side| -> Option<String> {
        records.iter().find_map(|r| match &r.body {
            Body::Event { from, event }
                if *from == side && event.get("event").and_then(Value::as_str) == Some("ready") =>
            {
                Some(format!(
                    "{} {}",
                    event.get("sdk").and_then(Value::as_str).unwrap_or("?"),
                    event
                        .get("sdk_version")
                        .and_then(Value::as_str)
                        .unwrap_or("?")
                ))
            }
            _ => None,
        })
    };
    o.server_sdk = sdk(Side::Server);
    o.client_sdk = sdk(Side::Client);
    // Requests by id (client side), for responses.
    let mut methods: HashMap<String, String> = HashMap::new();
    let mut in_flight: HashMap<u64, ()> = HashMap::new();
    let mut list_req_by_id: HashMap<String, u64> = HashMap::new();
    let mut response_of: HashMap<u64, u64> = HashMap::new(); // response msg seq -> request seq
    let mut mutated = false;
    for r in records {
        match &r.body {
            Body::Fact(Fact::MutateIssued { .. }) => {
                mutated = true;
                o.notifications_per_batch.push(0);
            }
            Body::Msg {
                dir,
                json: Some(v),
                fate,
                ..
            } => match (dir, jsonrpc::classify(v)) {
                (Dir::Up, Frame::Request { id, method }) => {
                    methods.insert(id.clone(), method.to_owned());
                    if listed_kind(method).is_some_and(|k| kinds.contains(k)) {
                        list_req_by_id.insert(id, r.seq);
                        in_flight.insert(r.seq, ());
                        o.max_concurrent_lists = o.max_concurrent_lists.max(in_flight.len());
                        if mutated && jsonrpc::has_cursor(v) {
                            o.cursor_relists += 1;
                        } else if mutated {
                            o.relists += 1;
                        }
                    }
                }
                (Dir::Down, Frame::Response { id, .. }) => {
                    let method = methods.get(&id).map(String::as_str);
                    if matches!(method, Some("initialize") | Some("server/discover")) {
                        let res = jsonrpc::result(v);
                        if let Some(b) =
                            res.get("capabilities")
                                .and_then(|c| c.get("tools"))
                                .map(|t| {
                                    t.get("listChanged")
                                        .and_then(Value::as_bool)
                                        .unwrap_or(false)
                                })
                        {
                            o.tools_list_changed_advertised = Some(b);
                        }
                        if let Some(pv) = res.get("protocolVersion").and_then(Value::as_str) {
                            o.negotiated.get_or_insert(pv.to_owned());
                        }
                    }
                    if let Some(req) = list_req_by_id.get(&id) {
                        if jsonrpc::result(v)
                            .get("nextCursor")
                            .is_some_and(|c| !c.is_null())
                        {
                            o.paginated = true;
                        }
                        response_of.insert(r.seq, *req);
                        if *fate == LineFate::Passed {
                            in_flight.remove(req);
                        }
                    }
                }
                (Dir::Down, Frame::Notification { method }) if is_list_changed(method) => {
                    let k = crate::proxy::notified_kind(method);
                    if k.is_some_and(|k| k.notification_group().iter().any(|g| kinds.contains(*g)))
                        && let Some(n) = o.notifications_per_batch.last_mut()
                    {
                        *n += 1;
                    }
                }
                _ => {}
            },
            Body::Release {
                of,
                action: Action::Deliver | Action::Drop,
                ..
            } => {
                if let Some(req) = response_of.get(of) {
                    in_flight.remove(req);
                }
            }
            Body::Event {
                from: Side::Client,
                event,
            } => {
                let name = event.get("event").and_then(Value::as_str);
                if name == Some("negotiated")
                    && let Some(pv) = event.get("protocol_version").and_then(Value::as_str)
                {
                    o.negotiated = Some(pv.to_owned());
                }
                if name == Some("published")
                    && event
                        .get("kind")
                        .and_then(Value::as_str)
                        .and_then(|k| k.parse().ok())
                        .is_some_and(|k| kinds.contains(k))
                {
                    o.published += 1;
                }
            }
            Body::Bad { from, what } => o.bad.push(format!("{from}: {what}")),
            _ => {}
        }
    }
    o.calls = calls(records);
    o
}

/// The outcomes of the client's `call` commands, in order.
fn calls(records: &[Record]) -> Vec<CallOutcome> {
    let mut sent: HashMap<u64, String> = HashMap::new();
    let mut out = Vec::new();
    for r in records {
        match &r.body {
            Body::Command {
                to: Side::Client,
                cmd,
            } if cmd.get("cmd").and_then(Value::as_str) == Some("call") => {
                if let Some(id) = cmd.get("id").and_then(Value::as_u64) {
                    sent.insert(
                        id,
                        cmd.get("tool")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_owned(),
                    );
                }
            }
            Body::Reply {
                from: Side::Client,
                reply,
            } => {
                let Some(tool) = reply
                    .get("id")
                    .and_then(Value::as_u64)
                    .and_then(|id| sent.remove(&id))
                else {
                    continue;
                };
                let ok = reply.get("ok").and_then(Value::as_bool) == Some(true);
                out.push(CallOutcome {
                    tool,
                    ok,
                    is_error: reply
                        .get("is_error")
                        .and_then(Value::as_bool)
                        .unwrap_or(!ok),
                    code: reply.get("code").and_then(Value::as_i64),
                    text: reply
                        .get(if ok { "text" } else { "error" })
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                });
            }
            _ => {}
        }
    }
    out
}

/// The client adapter's `ready` event, if any (for reports).
pub fn ready(records: &[Record], side: Side) -> Option<Value> {
    records.iter().find_map(|r| match &r.body {
        Body::Event { from, event }
            if *from == side && event.get("event").and_then(Value::as_str) == Some("ready") =>
        {
            Some(event.clone())
        }
        _ => None,
    })
}
