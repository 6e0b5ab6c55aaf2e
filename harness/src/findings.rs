//! What the matrix says about each behaviour `docs/sdk-facts.md` lists as observed: confirmed,
//! refuted, or not tested, with the runs (and so the traces and message logs) behind it. Each
//! claim names the rows and the scenario or corpus trace it rests on (a `*.json` name is a trace
//! of `traces/`) and the observation that decides it. [`source_checks`] lists what was read in
//! the released source of the pinned versions, for the questions no run can answer.

use crate::adapters::Role::{self, Client, Server};
use crate::outcome::{RunReport, RunStatus};
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::Era;
use serde::{Deserialize, Serialize};

/// A claim's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClaimStatus {
    /// The runs show it.
    Confirmed,
    /// The runs show otherwise.
    Refuted,
    /// Some rows show it, others do not.
    Partly,
    /// No run could decide it.
    NotTested,
}

impl ClaimStatus {
    /// For reports.
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimStatus::Confirmed => "confirmed",
            ClaimStatus::Refuted => "refuted",
            ClaimStatus::Partly => "partly",
            ClaimStatus::NotTested => "not tested",
        }
    }
}

/// One claim and what the runs say.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Finding {
    /// Where in docs/sdk-facts.md.
    pub section: String,
    /// The claim.
    pub claim: String,
    /// Verdict.
    pub status: ClaimStatus,
    /// What was observed, per row.
    pub evidence: Vec<String>,
    /// The run behind each line of `evidence` (same index; empty when no run completed).
    pub runs: Vec<String>,
}

fn find<'a>(
    runs: &'a [RunReport],
    imp: &str,
    role: Role,
    variant: &str,
    era: Era,
    scenario: &str,
) -> Option<&'a RunReport> {
    runs.iter().find(|r| {
        r.imp == imp
            && r.role == role
            && r.variant == variant
            && r.era == era
            && r.target.name() == scenario
            && r.status == RunStatus::Completed
    })
}

fn label(r: &RunReport) -> String {
    format!("{} {} ({}) {}", r.imp, r.role, r.variant, r.era)
}

/// A row a claim rests on: implementation, role, variant, era, and the scenario or corpus trace
/// (a `*.json` name) run against it.
type Rows = &'static [(&'static str, Role, &'static str, Era, &'static str)];

/// One claim of docs/sdk-facts.md: its rows, and how each row's run decides it. The rows'
/// outcomes are folded into one finding ([`fold`]).
struct Claim {
    section: &'static str,
    claim: &'static str,
    rows: Rows,
    check: Check,
}

/// How one run decides a claim: each kind is judged by one function below, which says whether
/// the run shows the claim and what it observed (the finding's evidence).
#[derive(Clone, Copy)]
enum Check {
    /// The run violated the first property; evidence: both properties' verdicts ([`shows`]).
    Shows(Property, Property),
    /// Two lists or more were in flight at once; evidence: re-lists, lists in flight and
    /// no_stale_overwrite, with bounded_refresh first when `bounded_refresh` ([`overlap`]).
    Overlap { bounded_refresh: bool },
    /// Two lists or more in flight at once, and no_stale_overwrite violated ([`overlap_stale`]).
    OverlapStale,
    /// no_stale_overwrite violated; evidence as [`Check::Overlap`] ([`stale_wins`]).
    StaleWins,
    /// no_stale_overwrite violated; evidence: its verdict first ([`stale_wins_anywhere`]).
    StaleWinsAnywhere,
    /// Re-lists never overlapped, none overwrote a newer list, and there were two or more
    /// ([`one_at_a_time`]).
    OneAtATime,
    /// The server paginated and the client asked no later page ([`first_page_only`]).
    FirstPageOnly,
    /// The client asked later pages with a cursor ([`walks_all_pages`]).
    WalksAllPages,
    /// The server sent every list in one page ([`no_pagination`]).
    NoPagination,
    /// The server paginated and no walk was torn ([`stable_cursor`]).
    StableCursor,
    /// The last batch (of two operations) gave two notifications or more; the evidence adds
    /// bounded_refresh when `bounded_refresh` ([`per_mutation`]).
    PerMutation { bounded_refresh: bool },
    /// Every batch gave one notification, and there were three when `three` ([`per_batch`]).
    PerBatch { three: bool },
    /// Three batches, one notification each, none before its commit ([`merged_after_commit`]).
    MergedAfterCommit,
    /// No batch gave a notification; evidence: the notifications per batch ([`silent`]).
    Silent,
    /// No batch gave a notification; evidence adds converges ([`sends_nothing`]).
    SendsNothing,
    /// An explicit send after each batch reached the wire for none ([`explicit_send_dropped`]).
    ExplicitSendDropped,
    /// An explicit send after each batch reached the client, which converged
    /// ([`explicit_send_heard`]).
    ExplicitSendHeard,
    /// Python's client heard nothing of a server's legacy send, and never converged
    /// ([`legacy_send_unheard`]).
    LegacySendUnheard,
    /// tools.listChanged advertised false in initialize, true in server/discover
    /// ([`advertised_per_era`]).
    AdvertisedPerEra,
    /// The client never re-listed, and never converged ([`never_relists`]).
    NeverRelists,
    /// The call to the removed tool was answered as TypeScript's version answers it: v1 with a
    /// result carrying isError, v2 with -32602 ([`removed_call_by_version`]).
    RemovedCallByVersion,
    /// The call to the removed tool was a JSON-RPC error -32602 ([`removed_call_invalid`]).
    RemovedCallInvalid,
    /// The call in flight during the removal succeeded, the next one failed
    /// ([`running_call_completes`]).
    RunningCallCompletes,
}

impl Check {
    /// Whether `r` shows the claim, and what it observed.
    fn judge(self, r: &RunReport) -> (bool, String) {
        match self {
            Check::Shows(p, also) => shows(r, p, also),
            Check::Overlap { bounded_refresh } => overlap(r, bounded_refresh),
            Check::OverlapStale => overlap_stale(r),
            Check::StaleWins => stale_wins(r),
            Check::StaleWinsAnywhere => stale_wins_anywhere(r),
            Check::OneAtATime => one_at_a_time(r),
            Check::FirstPageOnly => first_page_only(r),
            Check::WalksAllPages => walks_all_pages(r),
            Check::NoPagination => no_pagination(r),
            Check::StableCursor => stable_cursor(r),
            Check::PerMutation { bounded_refresh } => per_mutation(r, bounded_refresh),
            Check::PerBatch { three } => per_batch(r, three),
            Check::MergedAfterCommit => merged_after_commit(r),
            Check::Silent => silent(r),
            Check::SendsNothing => sends_nothing(r),
            Check::ExplicitSendDropped => explicit_send_dropped(r),
            Check::ExplicitSendHeard => explicit_send_heard(r),
            Check::LegacySendUnheard => legacy_send_unheard(r),
            Check::AdvertisedPerEra => advertised_per_era(r),
            Check::NeverRelists => never_relists(r),
            Check::RemovedCallByVersion => removed_call_by_version(r),
            Check::RemovedCallInvalid => removed_call_invalid(r),
            Check::RunningCallCompletes => running_call_completes(r),
        }
    }
}

fn fold(c: &Claim, runs: &[RunReport]) -> Finding {
    let mut yes = 0;
    let mut no = 0;
    let mut evidence = Vec::new();
    let mut ids = Vec::new();
    for (imp, role, variant, era, scenario) in c.rows {
        match find(runs, imp, *role, variant, *era, scenario) {
            Some(r) => {
                let (ok, what) = c.check.judge(r);
                if ok {
                    yes += 1;
                } else {
                    no += 1;
                }
                evidence.push(format!("{} `{scenario}`: {what}", label(r)));
                ids.push(r.id.clone());
            }
            None => {
                evidence.push(format!(
                    "{imp} {role} ({variant}) {era} `{scenario}`: no completed run"
                ));
                // Keeps `runs[i]` the run behind `evidence[i]`.
                ids.push(String::new());
            }
        }
    }
    let status = match (yes, no) {
        (0, 0) => ClaimStatus::NotTested,
        (_, 0) => ClaimStatus::Confirmed,
        (0, _) => ClaimStatus::Refuted,
        _ => ClaimStatus::Partly,
    };
    Finding {
        section: c.section.into(),
        claim: c.claim.into(),
        status,
        evidence,
        runs: ids,
    }
}

/// A claim that `r` violates `p`, with `p`'s and `also`'s verdicts as its evidence.
fn shows(r: &RunReport, p: Property, also: Property) -> (bool, String) {
    (
        violated(r, p),
        format!("{p} {}, {also} {}", r.verdict(p), r.verdict(also)),
    )
}

/// Re-lists, lists in flight at most, and no_stale_overwrite's verdict.
fn lists_in_flight(r: &RunReport) -> String {
    let o = &r.observations;
    format!(
        "{} re-lists, at most {} in flight; no_stale_overwrite {}",
        o.relists,
        o.max_concurrent_lists,
        r.verdict(Property::NoStaleOverwrite)
    )
}

fn overlap(r: &RunReport, bounded_refresh: bool) -> (bool, String) {
    let o = &r.observations;
    let evidence = if bounded_refresh {
        format!(
            "{} re-lists, at most {} in flight; bounded_refresh {}, no_stale_overwrite {}",
            o.relists,
            o.max_concurrent_lists,
            r.verdict(Property::BoundedRefresh),
            r.verdict(Property::NoStaleOverwrite)
        )
    } else {
        lists_in_flight(r)
    };
    (o.max_concurrent_lists >= 2, evidence)
}

fn overlap_stale(r: &RunReport) -> (bool, String) {
    (
        r.observations.max_concurrent_lists >= 2 && violated(r, Property::NoStaleOverwrite),
        lists_in_flight(r),
    )
}

fn stale_wins(r: &RunReport) -> (bool, String) {
    (violated(r, Property::NoStaleOverwrite), lists_in_flight(r))
}

fn stale_wins_anywhere(r: &RunReport) -> (bool, String) {
    (
        violated(r, Property::NoStaleOverwrite),
        format!(
            "no_stale_overwrite {} ({} re-lists, at most {} in flight)",
            r.verdict(Property::NoStaleOverwrite),
            r.observations.relists,
            r.observations.max_concurrent_lists
        ),
    )
}

fn one_at_a_time(r: &RunReport) -> (bool, String) {
    let o = &r.observations;
    (
        o.max_concurrent_lists <= 1
            && r.verdict(Property::NoStaleOverwrite) == Verdict::Holds
            && o.relists >= 2,
        format!(
            "{} re-lists, at most {} in flight; no_stale_overwrite {}, bounded_refresh {}",
            o.relists,
            o.max_concurrent_lists,
            r.verdict(Property::NoStaleOverwrite),
            r.verdict(Property::BoundedRefresh)
        ),
    )
}

fn first_page_only(r: &RunReport) -> (bool, String) {
    let o = &r.observations;
    (
        o.paginated && o.cursor_relists == 0,
        format!(
            "page size 1, {} later pages asked with a cursor after the change ({}); no_torn_snapshot {}",
            o.cursor_relists,
            if o.paginated {
                "the server sent nextCursor"
            } else {
                "the server sent no nextCursor"
            },
            r.verdict(Property::NoTornSnapshot)
        ),
    )
}

fn walks_all_pages(r: &RunReport) -> (bool, String) {
    let o = &r.observations;
    (
        o.cursor_relists > 0,
        format!(
            "page size 1, {} later pages asked with a cursor after the change; no_torn_snapshot {}",
            o.cursor_relists,
            r.verdict(Property::NoTornSnapshot)
        ),
    )
}

fn no_pagination(r: &RunReport) -> (bool, String) {
    (
        !r.observations.paginated,
        format!(
            "page size 1 asked; {}",
            if r.observations.paginated {
                "a nextCursor was sent"
            } else {
                "every list came in one page"
            }
        ),
    )
}

fn stable_cursor(r: &RunReport) -> (bool, String) {
    (
        r.observations.paginated && r.verdict(Property::NoTornSnapshot) == Verdict::Holds,
        format!(
            "page size 1, {}; no_torn_snapshot {}",
            if r.observations.paginated {
                "the server sent nextCursor"
            } else {
                "no nextCursor"
            },
            r.verdict(Property::NoTornSnapshot)
        ),
    )
}

fn per_mutation(r: &RunReport, bounded_refresh: bool) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    let evidence = if bounded_refresh {
        format!(
            "notifications per batch (add, remove, 2-op batch): {n:?}; bounded_refresh {}",
            r.verdict(Property::BoundedRefresh)
        )
    } else {
        format!("notifications per batch (add, remove, 2-op batch): {n:?}")
    };
    (n.last().is_some_and(|x| *x >= 2), evidence)
}

fn per_batch(r: &RunReport, three: bool) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    (
        (!three || n.len() == 3) && n.iter().all(|x| *x == 1),
        format!("notifications per batch: {n:?}"),
    )
}

fn merged_after_commit(r: &RunReport) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    (
        n.len() == 3 && n.iter().all(|x| *x == 1) && !violated(r, Property::NotifyAfterCommit),
        format!(
            "notifications per batch (add, remove, 2-op batch): {n:?}; notify_after_commit {}",
            r.verdict(Property::NotifyAfterCommit)
        ),
    )
}

fn silent(r: &RunReport) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    (
        n.iter().all(|x| *x == 0),
        format!("notifications per batch: {n:?}"),
    )
}

/// A claim that the server sent no list_changed for any batch, with the notifications per batch
/// and whether the client converged as its evidence.
fn sends_nothing(r: &RunReport) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    (
        n.iter().all(|x| *x == 0),
        format!(
            "notifications per batch: {n:?}; converges {}",
            r.verdict(Property::Converges)
        ),
    )
}

fn explicit_send_dropped(r: &RunReport) -> (bool, String) {
    let n = &r.observations.notifications_per_batch;
    (
        n.iter().all(|x| *x == 0),
        format!(
            "explicit session sends after each batch; list_changed on the wire per batch: {n:?}"
        ),
    )
}

fn explicit_send_heard(r: &RunReport) -> (bool, String) {
    let (_, evidence) = sends_nothing(r);
    let n = &r.observations.notifications_per_batch;
    (
        n.iter().all(|x| *x >= 1) && r.verdict(Property::Converges) == Verdict::Holds,
        evidence,
    )
}

fn legacy_send_unheard(r: &RunReport) -> (bool, String) {
    let o = &r.observations;
    (
        o.notifications_per_batch.iter().all(|x| *x == 0) && violated(r, Property::Converges),
        format!(
            "Python server (legacy session send after each batch) with Python's mcp.Client (pinned to 2026-07-28, negotiated {}): list_changed on the wire per batch {:?}; the client published {} snapshot(s); converges {}",
            o.negotiated.as_deref().unwrap_or("?"),
            o.notifications_per_batch,
            o.published,
            r.verdict(Property::Converges)
        ),
    )
}

fn advertised_per_era(r: &RunReport) -> (bool, String) {
    let a = r.observations.tools_list_changed_advertised;
    (
        a == Some(r.era == E26),
        format!(
            "tools.listChanged in the {} result: {}",
            if r.era == E25 {
                "initialize"
            } else {
                "server/discover"
            },
            a.map(|b| b.to_string())
                .unwrap_or_else(|| "not seen".into())
        ),
    )
}

fn never_relists(r: &RunReport) -> (bool, String) {
    (
        r.observations.relists == 0 && violated(r, Property::Converges),
        format!(
            "{} re-lists; converges {}",
            r.observations.relists,
            r.verdict(Property::Converges)
        ),
    )
}

fn removed_call_by_version(r: &RunReport) -> (bool, String) {
    let second = r.observations.calls.get(1);
    let as_documented = if r.imp == TS_V1 {
        second.is_some_and(|c| c.ok && c.is_error)
    } else {
        second.is_some_and(|c| !c.ok && c.code == Some(-32602))
    };
    (
        as_documented,
        format!("in flight, then after removal: {}", calls_text(r)),
    )
}

fn removed_call_invalid(r: &RunReport) -> (bool, String) {
    let second = r.observations.calls.get(1);
    (
        second.is_some_and(|c| !c.ok && c.code == Some(-32602)),
        format!("in flight, then after removal: {}", calls_text(r)),
    )
}

fn running_call_completes(r: &RunReport) -> (bool, String) {
    let c = &r.observations.calls;
    let first_ok = c.first().is_some_and(|c| c.ok && !c.is_error);
    let second_fails = c.get(1).is_some_and(|c| !c.ok || c.is_error);
    (first_ok && second_fails, calls_text(r))
}

fn violated(r: &RunReport, p: Property) -> bool {
    r.verdict(p) == Verdict::Violated
}

fn calls_text(r: &RunReport) -> String {
    r.observations
        .calls
        .iter()
        .map(|c| {
            if !c.ok {
                format!(
                    "error {}",
                    c.code
                        .map(|c| c.to_string())
                        .unwrap_or_else(|| c.text.clone())
                )
            } else if c.is_error {
                format!("result isError ({})", c.text)
            } else {
                format!("result ok ({})", c.text)
            }
        })
        .collect::<Vec<_>>()
        .join(", then ")
}

const E25: Era = Era::V2025_11_25;
const RMCP: &str = "rmcp";
const TS_V1: &str = "ts-v1";
const TS_V2: &str = "ts-v2";
const PYTHON: &str = "python";
const GO_SDK: &str = "go-sdk";
const MCP_GO: &str = "mcp-go";
const JAVA: &str = "java";
const FASTMCP: &str = "fastmcp";
const E26: Era = Era::V2026_07_28;

/// The findings about docs/sdk-facts.md's observed behaviours, one per claim of the table
/// `CLAIMS`, in its order.
pub fn findings(runs: &[RunReport]) -> Vec<Finding> {
    CLAIMS.iter().map(|c| fold(c, runs)).collect()
}

/// The claims, in the order of docs/sdk-facts.md's sections.
static CLAIMS: &[Claim] = &[
    Claim {
        section: "TypeScript",
        claim: "with debounceMs: 0, three notifications gave three concurrent tools/list and the last onChanged carried a stale list, on v1 and v2",
        rows: &[
            (TS_V1, Client, "listchanged-debounce0", E25, "stale-race"),
            (TS_V2, Client, "listchanged-debounce0", E25, "stale-race"),
            (TS_V2, Client, "listchanged-debounce0", E26, "stale-race"),
        ],
        check: Check::OverlapStale,
    },
    Claim {
        section: "TypeScript",
        claim: "v1 refresh fetches only the first page",
        rows: &[
            (TS_V1, Client, "listchanged", E25, "mid-walk"),
            (TS_V1, Client, "listchanged-debounce0", E25, "mid-walk"),
        ],
        check: Check::FirstPageOnly,
    },
    Claim {
        section: "TypeScript",
        claim: "v2 walks all pages",
        rows: &[
            (TS_V2, Client, "listchanged", E25, "mid-walk"),
            (TS_V2, Client, "listchanged", E26, "mid-walk"),
        ],
        check: Check::WalksAllPages,
    },
    Claim {
        section: "TypeScript",
        claim: "McpServer.registerTool and RegisteredTool.update/remove each send one notification (no merging unless debouncedNotificationMethods is set)",
        rows: &[
            (TS_V1, Server, "mcpserver", E25, "notify"),
            (TS_V2, Server, "mcpserver", E25, "notify"),
            (TS_V2, Server, "mcpserver", E26, "notify"),
        ],
        check: Check::PerMutation {
            bounded_refresh: false,
        },
    },
    Claim {
        section: "TypeScript",
        claim: "debouncedNotificationMethods merges the notifications of one batch",
        rows: &[(TS_V1, Server, "mcpserver-coalesced", E25, "notify")],
        check: Check::PerBatch { three: false },
    },
    Claim {
        section: "TypeScript",
        claim: "tools/list of McpServer ignores the cursor (no pagination)",
        rows: &[
            (TS_V1, Server, "mcpserver", E25, "mid-walk-server"),
            (TS_V2, Server, "mcpserver", E25, "mid-walk-server"),
        ],
        check: Check::NoPagination,
    },
    Claim {
        section: "TypeScript",
        claim: "calling a removed tool: v1 answers with a tool result carrying isError: true, v2 with JSON-RPC error -32602",
        rows: &[
            (TS_V1, Server, "mcpserver", E25, "call-removal"),
            (TS_V2, Server, "mcpserver", E25, "call-removal"),
            (TS_V2, Server, "mcpserver", E26, "call-removal"),
        ],
        check: Check::RemovedCallByVersion,
    },
    Claim {
        section: "Python",
        claim: "MCPServer.add_tool / remove_tool send nothing",
        rows: &[
            (PYTHON, Server, "mcpserver", E25, "notify"),
            (PYTHON, Server, "mcpserver", E26, "notify"),
        ],
        check: Check::SendsNothing,
    },
    Claim {
        section: "Python",
        claim: "the legacy ServerSession.send_tool_list_changed() is silently dropped on 2026-07-28 connections",
        rows: &[(PYTHON, Server, "mcpserver", E26, "notify-explicit-session")],
        check: Check::ExplicitSendDropped,
    },
    Claim {
        section: "Python",
        claim: "mcp.Client on 2026-07-28 receives nothing from a server that only uses the legacy send",
        rows: &[(
            PYTHON,
            Server,
            "mcpserver",
            E26,
            "session-send-to-python-client",
        )],
        check: Check::LegacySendUnheard,
    },
    Claim {
        section: "Python",
        claim: "MCPServer.run(\"stdio\") advertises tools.listChanged = false in initialize, and the 2026-07-28 server/discover advertises true, although add/remove send nothing",
        rows: &[
            (PYTHON, Server, "mcpserver", E25, "notify"),
            (PYTHON, Server, "mcpserver", E26, "notify"),
        ],
        check: Check::AdvertisedPerEra,
    },
    Claim {
        section: "Python",
        claim: "ClientSession(message_handler=..) runs each notification in its own task: concurrent refreshes, no ordering",
        rows: &[
            (PYTHON, Client, "session", E25, "stale-race"),
            (PYTHON, Client, "session", E26, "stale-race"),
        ],
        check: Check::Overlap {
            bounded_refresh: true,
        },
    },
    Claim {
        section: "rmcp",
        claim: "ToolRouter notifies only on enable_route/disable_route, not on add_route/remove_route",
        rows: &[
            (RMCP, Server, "router", E25, "notify"),
            (RMCP, Server, "router", E26, "notify"),
        ],
        check: Check::Silent,
    },
    Claim {
        section: "rmcp",
        claim: "ClientHandler::on_tool_list_changed runs each notification in its own spawned task, so handlers (and their refreshes) run concurrently",
        rows: &[(RMCP, Client, "list-all", E25, "stale-race")],
        check: Check::Overlap {
            bounded_refresh: false,
        },
    },
    Claim {
        section: "Go SDK",
        claim: "Server.AddTool/RemoveTools send list_changed by themselves, after the change, merged over 10 ms: one notification per batch",
        rows: &[
            (GO_SDK, Server, "addtool", E25, "notify"),
            (GO_SDK, Server, "addtool", E26, "notify"),
        ],
        check: Check::MergedAfterCommit,
    },
    Claim {
        section: "Go SDK",
        claim: "the server's cursor names the last item sent, so a removal between two pages neither skips nor repeats an item",
        rows: &[
            (GO_SDK, Server, "addtool", E25, "mid-walk-server"),
            (GO_SDK, Server, "addtool", E26, "mid-walk-server"),
        ],
        check: Check::StableCursor,
    },
    Claim {
        section: "Go SDK",
        claim: "calling a removed tool is a JSON-RPC error -32602",
        rows: &[
            (GO_SDK, Server, "addtool", E25, "call-removal"),
            (GO_SDK, Server, "addtool", E26, "call-removal"),
        ],
        check: Check::RemovedCallInvalid,
    },
    Claim {
        section: "Go SDK",
        claim: "the client runs notification handlers one at a time: re-lists never overlap, so none overwrites a newer one, but each notification of a burst costs a full walk",
        rows: &[
            (GO_SDK, Client, "handler", E25, "stale-race"),
            (GO_SDK, Client, "channel", E25, "stale-race"),
            (GO_SDK, Client, "handler", E26, "stale-race"),
            (GO_SDK, Client, "channel", E26, "stale-race"),
        ],
        check: Check::OneAtATime,
    },
    Claim {
        section: "Go SDK",
        claim: "the one-at-a-time handlers do not cover the application's own first list: a list_changed during it starts a second walk, and the first list, answered last, overwrites the newer one",
        rows: &[
            (GO_SDK, Client, "handler", E25, "naive.json"),
            (GO_SDK, Client, "channel", E25, "naive.json"),
        ],
        check: Check::Shows(Property::NoStaleOverwrite, Property::Converges),
    },
    Claim {
        section: "Go SDK",
        claim: "on 2026-07-28 Client.Connect sends subscriptions/listen and returns without waiting for the acknowledgement: a list taken before it misses a change committed in between, for good",
        rows: &[
            (GO_SDK, Client, "handler", E26, "listen-race"),
            (GO_SDK, Client, "channel", E26, "listen-race"),
        ],
        check: Check::Shows(Property::ListenThenList, Property::Converges),
    },
    Claim {
        section: "Go SDK",
        claim: "ClientSession.Tools (the iterator) walks every page",
        rows: &[
            (GO_SDK, Client, "handler", E25, "mid-walk"),
            (GO_SDK, Client, "handler", E26, "mid-walk"),
        ],
        check: Check::WalksAllPages,
    },
    Claim {
        section: "mcp-go",
        claim: "AddTool and DeleteTools each send one list_changed at once: a two-op batch gives two",
        rows: &[
            (MCP_GO, Server, "addtool", E25, "notify"),
            (MCP_GO, Server, "addtool", E26, "notify"),
        ],
        check: Check::PerMutation {
            bounded_refresh: true,
        },
    },
    Claim {
        section: "mcp-go",
        claim: "SetTools with the whole new list sends one list_changed per batch",
        rows: &[
            (MCP_GO, Server, "settools", E25, "notify"),
            (MCP_GO, Server, "settools", E26, "notify"),
        ],
        check: Check::PerBatch { three: true },
    },
    Claim {
        section: "mcp-go",
        claim: "the server's cursor is the last name sent (lists are sorted by name): a removal between two pages neither skips nor repeats an item",
        rows: &[
            (MCP_GO, Server, "addtool", E25, "mid-walk-server"),
            (MCP_GO, Server, "settools", E26, "mid-walk-server"),
        ],
        check: Check::StableCursor,
    },
    Claim {
        section: "mcp-go",
        claim: "calling a removed tool is a JSON-RPC error -32602",
        rows: &[
            (MCP_GO, Server, "addtool", E25, "call-removal"),
            (MCP_GO, Server, "settools", E26, "call-removal"),
        ],
        check: Check::RemovedCallInvalid,
    },
    Claim {
        section: "mcp-go",
        claim: "OnNotification handlers run on the goroutine that reads stdin, so the application re-lists in a goroutine per notification: refreshes overlap and an older list can win",
        rows: &[
            (MCP_GO, Client, "onnotification", E25, "stale-race"),
            (MCP_GO, Client, "onnotification", E26, "stale-race"),
            (MCP_GO, Client, "onnotification", E25, "naive.json"),
        ],
        check: Check::StaleWins,
    },
    Claim {
        section: "mcp-go",
        claim: "on 2026-07-28 ListenAsync returns before the acknowledgement: a list taken before it misses a change committed in between, for good",
        rows: &[(MCP_GO, Client, "onnotification", E26, "listen-race")],
        check: Check::Shows(Property::ListenThenList, Property::Converges),
    },
    Claim {
        section: "Java",
        claim: "McpSyncServer.addTool/removeTool each send one list_changed at once: a two-op batch gives two",
        rows: &[(JAVA, Server, "sync", E25, "notify")],
        check: Check::PerMutation {
            bounded_refresh: true,
        },
    },
    Claim {
        section: "Java",
        claim: "tools/list of McpServer ignores the cursor (no pagination)",
        rows: &[(JAVA, Server, "sync", E25, "mid-walk-server")],
        check: Check::NoPagination,
    },
    Claim {
        section: "Java",
        claim: "calling a removed tool is a JSON-RPC error -32602",
        rows: &[(JAVA, Server, "sync", E25, "call-removal")],
        check: Check::RemovedCallInvalid,
    },
    Claim {
        section: "Java",
        claim: "the client re-lists by itself on every list_changed, each notification on its own (no ordering, no merging), and hands the list to the change consumer: an older list can win",
        rows: &[
            (JAVA, Client, "sync", E25, "stale-race"),
            (JAVA, Client, "async", E25, "stale-race"),
            (JAVA, Client, "sync", E25, "naive.json"),
        ],
        check: Check::StaleWins,
    },
    Claim {
        section: "FastMCP",
        claim: "FastMCP.add_tool and the local provider's remove_tool send nothing, in both eras",
        rows: &[
            (FASTMCP, Server, "fastmcp", E25, "notify"),
            (FASTMCP, Server, "fastmcp", E26, "notify"),
        ],
        check: Check::SendsNothing,
    },
    Claim {
        section: "FastMCP",
        claim: "a list_changed sent on the latest request's session (the one way to notify outside a request) reaches a 2025-11-25 client, which then converges",
        rows: &[(FASTMCP, Server, "fastmcp", E25, "notify-explicit")],
        check: Check::ExplicitSendHeard,
    },
    Claim {
        section: "FastMCP",
        claim: "the client's message handler runs each notification on its own: concurrent re-lists, and an older list can win",
        rows: &[(FASTMCP, Client, "messagehandler", E25, "stale-race")],
        check: Check::Shows(Property::NoStaleOverwrite, Property::BoundedRefresh),
    },
    Claim {
        section: "FastMCP",
        claim: "the client opens no subscriptions/listen stream on 2026-07-28, so it never hears of a change and never re-lists",
        rows: &[(FASTMCP, Client, "messagehandler", E26, "stale-race")],
        check: Check::NeverRelists,
    },
    Claim {
        section: "Observed in every SDK",
        claim: "a tools/call already running when its tool is removed completes normally; the next call fails",
        rows: &[
            (RMCP, Server, "router", E25, "call-removal"),
            (TS_V1, Server, "mcpserver", E25, "call-removal"),
            (TS_V1, Server, "lowlevel", E25, "call-removal"),
            (TS_V2, Server, "mcpserver", E25, "call-removal"),
            (TS_V2, Server, "lowlevel", E25, "call-removal"),
            (PYTHON, Server, "mcpserver", E25, "call-removal"),
            (PYTHON, Server, "lowlevel", E25, "call-removal"),
            (GO_SDK, Server, "addtool", E25, "call-removal"),
            (MCP_GO, Server, "addtool", E25, "call-removal"),
            (MCP_GO, Server, "settools", E25, "call-removal"),
            (JAVA, Server, "sync", E25, "call-removal"),
            (FASTMCP, Server, "fastmcp", E25, "call-removal"),
        ],
        check: Check::RunningCallCompletes,
    },
    Claim {
        section: "Observed in every SDK",
        claim: "no SDK prevents an older refresh from overwriting a newer one (the Go SDK's one-at-a-time dispatch keeps its refreshes from overlapping: see its own claim)",
        rows: &[
            (RMCP, Client, "list-all", E25, "stale-race"),
            (TS_V1, Client, "listchanged", E25, "stale-race"),
            (TS_V1, Client, "listchanged-debounce0", E25, "stale-race"),
            (TS_V2, Client, "listchanged", E25, "stale-race"),
            (TS_V2, Client, "listchanged-debounce0", E25, "stale-race"),
            (PYTHON, Client, "session", E25, "stale-race"),
            (PYTHON, Client, "client", E25, "stale-race"),
            (RMCP, Client, "list-all", E26, "stale-race"),
            (TS_V2, Client, "listchanged", E26, "stale-race"),
            (TS_V2, Client, "listchanged-debounce0", E26, "stale-race"),
            (PYTHON, Client, "session", E26, "stale-race"),
            (PYTHON, Client, "client", E26, "stale-race"),
            (MCP_GO, Client, "onnotification", E25, "stale-race"),
            (MCP_GO, Client, "onnotification", E26, "stale-race"),
            (JAVA, Client, "sync", E25, "stale-race"),
            (JAVA, Client, "async", E25, "stale-race"),
            (FASTMCP, Client, "messagehandler", E25, "stale-race"),
        ],
        check: Check::StaleWinsAnywhere,
    },
];

/// Behaviours the matrix observed that docs/sdk-facts.md does not state (or states otherwise).
/// (docs/sdk-facts.md states what this used to list: TypeScript v2's -32602 for a removed tool and
/// Python's `server/discover` advertising `listChanged: true`; the claims above judge both.) Left:
/// a server of an SDK the document does not describe as silent that advertises
/// `tools.listChanged` and then sends nothing after a change.
pub fn extra(runs: &[RunReport]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if r.target.name() == "notify"
            && ![PYTHON, RMCP].contains(&r.imp.as_str())
            && r.observations.tools_list_changed_advertised == Some(true)
            && r.observations
                .notifications_per_batch
                .iter()
                .all(|x| *x == 0)
        {
            out.push(format!(
                "{}: advertises tools.listChanged = true but sent no list_changed after add, remove or a 2-op batch (docs/sdk-facts.md does not say so)",
                label(r)
            ));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// A question about a pinned version that no run answers, answered from its released source.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SourceCheck {
    /// SDK and exact version.
    pub sdk: String,
    /// The question.
    pub question: String,
    /// What the released source says.
    pub answer: String,
    /// Where (file and function in the released artifact).
    pub place: String,
}

/// What was read in the released source of the pinned versions (the Go module zips from the Go
/// module proxy, the Java jar from Maven Central, decompiled: its sources jar is not served).
pub fn source_checks() -> Vec<SourceCheck> {
    vec![
        SourceCheck {
            sdk: "github.com/modelcontextprotocol/go-sdk v1.8.0".into(),
            question: "does the client's page walk guard against a repeated cursor, or bound the number of pages?".into(),
            answer: "no: the walk requests the next page as long as nextCursor is non-empty; a server that repeats a cursor makes ClientSession.Tools (and Prompts, Resources, ResourceTemplates) loop until the context ends. Neither a cursor-cycle guard nor a page bound is in this release.".into(),
            place: "mcp/client.go, paginate (used by ClientSession.Tools/Prompts/Resources/ResourceTemplates)".into(),
        },
        SourceCheck {
            sdk: "github.com/modelcontextprotocol/go-sdk v1.8.0".into(),
            question: "how are list results cached on 2026-07-28?".into(),
            answer: "per method and cursor, for the result's ttlMs (0: not at all); a list_changed notification clears that method's cache before the application's handler runs.".into(),
            place: "mcp/cache.go (methodCache), mcp/client.go (callToolChangedHandler)".into(),
        },
        SourceCheck {
            sdk: "github.com/mark3labs/mcp-go v1.2.1".into(),
            question: "does the client's page walk guard against a repeated cursor, or bound the number of pages?".into(),
            answer: "a repeated cursor, yes: Client.ListTools (and the other List* walkers) stop with ErrRepeatedListCursor when the server sends a cursor already requested; there is no bound on the number of distinct pages.".into(),
            place: "client/client.go, noteListCursor and ListTools/ListPrompts/ListResources/ListResourceTemplates".into(),
        },
        SourceCheck {
            sdk: "github.com/mark3labs/mcp-go v1.2.1".into(),
            question: "when does the server send nextCursor?".into(),
            answer: "whenever a page is full, so a list whose length is a multiple of the page size ends with one more request answered by an empty page.".into(),
            place: "server/server.go, listByPagination".into(),
        },
        SourceCheck {
            sdk: "fastmcp 4.2.3".into(),
            question: "which FastMCP features send a list_changed notification?".into(),
            answer: "only ones that run inside a request: Context.send_notification, and Context.enable_components / disable_components (one session's visibility rules, which notify that session); add_tool, add_prompt, add_resource, add_template, the local provider's remove_* and the server-wide enable/disable send nothing. FastMCP serves no subscriptions/listen, and a notification not related to a request is dropped on a 2026-07-28 connection.".into(),
            place: "fastmcp/server/context.py (send_notification, enable_components), fastmcp/server/transforms/visibility.py (save_visibility_rules), fastmcp/server/providers/local_provider/local_provider.py".into(),
        },
        SourceCheck {
            sdk: "fastmcp 4.2.3".into(),
            question: "how does the client handle list_changed?".into(),
            answer: "it evicts the method's entry from its response cache and calls the application's MessageHandler (on_tool_list_changed...); it re-lists nothing by itself and has no single flight. Client.list_tools() walks every page, refuses a repeated cursor and stops at 250 pages. The client has no subscriptions/listen API.".into(),
            place: "fastmcp/client/client.py (_evicting_message_handler), fastmcp/client/messages.py, fastmcp/client/mixins/tools.py (list_tools)".into(),
        },
        SourceCheck {
            sdk: "@modelcontextprotocol/server-everything 2026.8.31 (@modelcontextprotocol/sdk 1.32.2)".into(),
            question: "what changes its lists at run time?".into(),
            answer: "its catalog is fixed, with two exceptions: after notifications/initialized it registers the tools the client's capabilities allow (roots, elicitation, sampling, tasks), each registration sending its own tools/list_changed; its gzip-file-as-resource tool registers a session resource demo://resource/session/NAME (resources/list_changed; the same name again: removed and registered anew, two notifications). No command adds, removes or updates a tool or a prompt, so the matrix's tools traces and scenarios are not applicable to it.".into(),
            place: "dist/server/index.js (oninitialized, registerConditionalTools), dist/tools/index.js, dist/resources/session.js (registerSessionResource)".into(),
        },
        SourceCheck {
            sdk: "io.modelcontextprotocol.sdk:mcp 2.1.0 (mcp-core 2.1.0)".into(),
            question: "does the client keep a list cache with a generation counter (so an older re-list cannot overwrite a newer one)?".into(),
            answer: "no: McpAsyncClient keeps no list cache and no generation or sequence number; on each list_changed it calls listTools() and passes the result to the change consumers, whichever finishes last wins (the only cache is the tools' output schemas, for validating call results).".into(),
            place: "io/modelcontextprotocol/client/McpAsyncClient (asyncToolsChangeNotificationHandler, listTools, toolsOutputSchemaCache)".into(),
        },
        SourceCheck {
            sdk: "io.modelcontextprotocol.sdk:mcp 2.1.0 (mcp-core 2.1.0)".into(),
            question: "does the client's page walk guard against a repeated cursor, or bound the number of pages?".into(),
            answer: "no: listTools() expands while nextCursor is non-empty, with no guard and no bound.".into(),
            place: "io/modelcontextprotocol/client/McpAsyncClient.listTools (Mono.expand)".into(),
        },
        SourceCheck {
            sdk: "io.modelcontextprotocol.sdk:mcp 2.1.0 (mcp-core 2.1.0)".into(),
            question: "which protocol versions does it speak?".into(),
            answer: "2024-11-05, 2025-03-26, 2025-06-18 and 2025-11-25: no 2026-07-28, no server/discover, no subscriptions/listen.".into(),
            place: "io/modelcontextprotocol/spec/ProtocolVersions, McpTransport.protocolVersions".into(),
        },
    ]
}
