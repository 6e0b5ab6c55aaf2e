//! What the matrix says about each behaviour `docs/sdk-facts.md` lists as observed: confirmed,
//! refuted, or not tested, with the runs (and so the traces and message logs) behind it. Each
//! claim names the rows and scenario it rests on and the observation that decides it.

use crate::adapters::{Impl, Role};
use crate::outcome::{RunReport, RunStatus, Target};
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::Era;
use serde::Serialize;

/// A claim's status.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// The runs show it.
    Confirmed,
    /// The runs show otherwise.
    Refuted,
    /// Some rows show it, others do not.
    Partly,
    /// No run could decide it.
    NotTested,
}

impl Status {
    /// For reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Confirmed => "confirmed",
            Status::Refuted => "refuted",
            Status::Partly => "partly",
            Status::NotTested => "not tested",
        }
    }
}

/// One claim and what the runs say.
#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    /// Where in docs/sdk-facts.md.
    pub section: &'static str,
    /// The claim.
    pub claim: &'static str,
    /// Verdict.
    pub status: Status,
    /// What was observed, per row.
    pub evidence: Vec<String>,
    /// The run behind each line of `evidence` (same index; empty when no run completed).
    pub runs: Vec<String>,
}

fn find<'a>(
    runs: &'a [RunReport],
    imp: Impl,
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
            && matches!(&r.target, Target::Exercise { name } if name == scenario)
            && r.status == RunStatus::Completed
    })
}

fn label(r: &RunReport) -> String {
    format!("{} {} ({}) {}", r.imp, r.role, r.variant, r.era)
}

/// Per-row checks folded into one finding.
struct Claim {
    section: &'static str,
    claim: &'static str,
    rows: Vec<(Impl, Role, &'static str, Era, &'static str)>,
    /// (holds for this run?, evidence)
    check: fn(&RunReport) -> (bool, String),
}

fn fold(c: Claim, runs: &[RunReport]) -> Finding {
    let mut yes = 0;
    let mut no = 0;
    let mut evidence = Vec::new();
    let mut ids = Vec::new();
    for (imp, role, variant, era, scenario) in &c.rows {
        match find(runs, *imp, *role, variant, *era, scenario) {
            Some(r) => {
                let (ok, what) = (c.check)(r);
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
        (0, 0) => Status::NotTested,
        (_, 0) => Status::Confirmed,
        (0, _) => Status::Refuted,
        _ => Status::Partly,
    };
    Finding {
        section: c.section,
        claim: c.claim,
        status,
        evidence,
        runs: ids,
    }
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
const E26: Era = Era::V2026_07_28;

/// The findings about docs/sdk-facts.md's observed behaviours.
pub fn findings(runs: &[RunReport]) -> Vec<Finding> {
    use Impl::*;
    use Role::*;
    let claims = vec![
        Claim {
            section: "TypeScript",
            claim: "with debounceMs: 0, three notifications gave three concurrent tools/list and the last onChanged carried a stale list, on v1 and v2",
            rows: vec![
                (TsV1, Client, "listchanged-debounce0", E25, "stale-race"),
                (TsV2, Client, "listchanged-debounce0", E25, "stale-race"),
                (TsV2, Client, "listchanged-debounce0", E26, "stale-race"),
            ],
            check: |r| {
                let o = &r.observations;
                (
                    o.max_concurrent_lists >= 2 && violated(r, Property::NoStaleOverwrite),
                    format!(
                        "{} re-lists, at most {} in flight; no_stale_overwrite {}",
                        o.relists,
                        o.max_concurrent_lists,
                        r.verdict(Property::NoStaleOverwrite)
                    ),
                )
            },
        },
        Claim {
            section: "TypeScript",
            claim: "v1 refresh fetches only the first page",
            rows: vec![
                (TsV1, Client, "listchanged", E25, "mid-walk"),
                (TsV1, Client, "listchanged-debounce0", E25, "mid-walk"),
            ],
            check: |r| {
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
            },
        },
        Claim {
            section: "TypeScript",
            claim: "v2 walks all pages",
            rows: vec![
                (TsV2, Client, "listchanged", E25, "mid-walk"),
                (TsV2, Client, "listchanged", E26, "mid-walk"),
            ],
            check: |r| {
                let o = &r.observations;
                (
                    o.cursor_relists > 0,
                    format!(
                        "page size 1, {} later pages asked with a cursor after the change; no_torn_snapshot {}",
                        o.cursor_relists,
                        r.verdict(Property::NoTornSnapshot)
                    ),
                )
            },
        },
        Claim {
            section: "TypeScript",
            claim: "McpServer.registerTool and RegisteredTool.update/remove each send one notification (no merging unless debouncedNotificationMethods is set)",
            rows: vec![
                (TsV1, Server, "mcpserver", E25, "notify"),
                (TsV2, Server, "mcpserver", E25, "notify"),
                (TsV2, Server, "mcpserver", E26, "notify"),
            ],
            check: |r| {
                let n = &r.observations.notifications_per_batch;
                (
                    n.last().is_some_and(|x| *x >= 2),
                    format!("notifications per batch (add, remove, 2-op batch): {n:?}"),
                )
            },
        },
        Claim {
            section: "TypeScript",
            claim: "debouncedNotificationMethods merges the notifications of one batch",
            rows: vec![(TsV1, Server, "mcpserver-coalesced", E25, "notify")],
            check: |r| {
                let n = &r.observations.notifications_per_batch;
                (
                    n.iter().all(|x| *x == 1),
                    format!("notifications per batch: {n:?}"),
                )
            },
        },
        Claim {
            section: "TypeScript",
            claim: "tools/list of McpServer ignores the cursor (no pagination)",
            rows: vec![
                (TsV1, Server, "mcpserver", E25, "mid-walk-server"),
                (TsV2, Server, "mcpserver", E25, "mid-walk-server"),
            ],
            check: |r| {
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
            },
        },
        Claim {
            section: "TypeScript",
            claim: "calling a removed tool returns a tool result with isError: true, not a JSON-RPC error",
            rows: vec![
                (TsV1, Server, "mcpserver", E25, "call-removal"),
                (TsV2, Server, "mcpserver", E25, "call-removal"),
                (TsV2, Server, "mcpserver", E26, "call-removal"),
            ],
            check: |r| {
                let second = r.observations.calls.get(1);
                (
                    second.is_some_and(|c| c.ok && c.is_error),
                    format!("in flight, then after removal: {}", calls_text(r)),
                )
            },
        },
        Claim {
            section: "Python",
            claim: "MCPServer.add_tool / remove_tool send nothing",
            rows: vec![
                (Python, Server, "mcpserver", E25, "notify"),
                (Python, Server, "mcpserver", E26, "notify"),
            ],
            check: |r| {
                let n = &r.observations.notifications_per_batch;
                (
                    n.iter().all(|x| *x == 0),
                    format!(
                        "notifications per batch: {n:?}; converges {}",
                        r.verdict(Property::Converges)
                    ),
                )
            },
        },
        Claim {
            section: "Python",
            claim: "the legacy ServerSession.send_tool_list_changed() is silently dropped on 2026-07-28 connections",
            rows: vec![(Python, Server, "mcpserver", E26, "notify-explicit-session")],
            check: |r| {
                let n = &r.observations.notifications_per_batch;
                (
                    n.iter().all(|x| *x == 0),
                    format!(
                        "explicit session sends after each batch; list_changed on the wire per batch: {n:?}"
                    ),
                )
            },
        },
        Claim {
            section: "Python",
            claim: "mcp.Client on 2026-07-28 receives nothing from a server that only uses the legacy send",
            rows: vec![(
                Python,
                Server,
                "mcpserver",
                E26,
                "session-send-to-python-client",
            )],
            check: |r| {
                let o = &r.observations;
                (
                    o.notifications_per_batch.iter().all(|x| *x == 0)
                        && violated(r, Property::Converges),
                    format!(
                        "Python server (legacy session send after each batch) with Python's mcp.Client (pinned to 2026-07-28, negotiated {}): list_changed on the wire per batch {:?}; the client published {} snapshot(s); converges {}",
                        o.negotiated.as_deref().unwrap_or("?"),
                        o.notifications_per_batch,
                        o.published,
                        r.verdict(Property::Converges)
                    ),
                )
            },
        },
        Claim {
            section: "Python",
            claim: "MCPServer.run(\"stdio\") advertises tools.listChanged = false",
            rows: vec![
                (Python, Server, "mcpserver", E25, "notify"),
                (Python, Server, "mcpserver", E26, "notify"),
            ],
            check: |r| {
                let a = r.observations.tools_list_changed_advertised;
                (
                    a == Some(false),
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
            },
        },
        Claim {
            section: "Python",
            claim: "ClientSession(message_handler=..) runs each notification in its own task: concurrent refreshes, no ordering",
            rows: vec![
                (Python, Client, "session", E25, "stale-race"),
                (Python, Client, "session", E26, "stale-race"),
            ],
            check: |r| {
                let o = &r.observations;
                (
                    o.max_concurrent_lists >= 2,
                    format!(
                        "{} re-lists, at most {} in flight; bounded_refresh {}, no_stale_overwrite {}",
                        o.relists,
                        o.max_concurrent_lists,
                        r.verdict(Property::BoundedRefresh),
                        r.verdict(Property::NoStaleOverwrite)
                    ),
                )
            },
        },
        Claim {
            section: "rmcp",
            claim: "ToolRouter notifies only on enable_route/disable_route, not on add_route/remove_route",
            rows: vec![
                (Rmcp, Server, "router", E25, "notify"),
                (Rmcp, Server, "router", E26, "notify"),
            ],
            check: |r| {
                let n = &r.observations.notifications_per_batch;
                (
                    n.iter().all(|x| *x == 0),
                    format!("notifications per batch: {n:?}"),
                )
            },
        },
        Claim {
            section: "rmcp",
            claim: "ClientHandler::on_tool_list_changed runs each notification in its own spawned task, so handlers (and their refreshes) run concurrently",
            rows: vec![(Rmcp, Client, "list-all", E25, "stale-race")],
            check: |r| {
                let o = &r.observations;
                (
                    o.max_concurrent_lists >= 2,
                    format!(
                        "{} re-lists, at most {} in flight; no_stale_overwrite {}",
                        o.relists,
                        o.max_concurrent_lists,
                        r.verdict(Property::NoStaleOverwrite)
                    ),
                )
            },
        },
        Claim {
            section: "Observed in every SDK",
            claim: "a tools/call already running when its tool is removed completes normally; the next call fails",
            rows: vec![
                (Rmcp, Server, "router", E25, "call-removal"),
                (TsV1, Server, "mcpserver", E25, "call-removal"),
                (TsV1, Server, "lowlevel", E25, "call-removal"),
                (TsV2, Server, "mcpserver", E25, "call-removal"),
                (TsV2, Server, "lowlevel", E25, "call-removal"),
                (Python, Server, "mcpserver", E25, "call-removal"),
                (Python, Server, "lowlevel", E25, "call-removal"),
            ],
            check: |r| {
                let c = &r.observations.calls;
                let first_ok = c.first().is_some_and(|c| c.ok && !c.is_error);
                let second_fails = c.get(1).is_some_and(|c| !c.ok || c.is_error);
                (first_ok && second_fails, calls_text(r))
            },
        },
        Claim {
            section: "Observed in every SDK",
            claim: "no SDK prevents an older refresh from overwriting a newer one",
            rows: vec![
                (Rmcp, Client, "list-all", E25, "stale-race"),
                (TsV1, Client, "listchanged", E25, "stale-race"),
                (TsV1, Client, "listchanged-debounce0", E25, "stale-race"),
                (TsV2, Client, "listchanged", E25, "stale-race"),
                (TsV2, Client, "listchanged-debounce0", E25, "stale-race"),
                (Python, Client, "session", E25, "stale-race"),
                (Python, Client, "client", E25, "stale-race"),
                (Rmcp, Client, "list-all", E26, "stale-race"),
                (TsV2, Client, "listchanged", E26, "stale-race"),
                (TsV2, Client, "listchanged-debounce0", E26, "stale-race"),
                (Python, Client, "session", E26, "stale-race"),
                (Python, Client, "client", E26, "stale-race"),
            ],
            check: |r| {
                (
                    violated(r, Property::NoStaleOverwrite),
                    format!(
                        "no_stale_overwrite {} ({} re-lists, at most {} in flight)",
                        r.verdict(Property::NoStaleOverwrite),
                        r.observations.relists,
                        r.observations.max_concurrent_lists
                    ),
                )
            },
        },
    ];
    claims.into_iter().map(|c| fold(c, runs)).collect()
}

/// Behaviours the matrix observed that docs/sdk-facts.md does not state (or states otherwise).
pub fn extra(runs: &[RunReport]) -> Vec<String> {
    let mut out = Vec::new();
    for r in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        if let Target::Exercise { name } = &r.target {
            if name == "call-removal"
                && r.imp == Impl::TsV2
                && r.observations
                    .calls
                    .get(1)
                    .is_some_and(|c| !c.ok && c.code == Some(-32602))
            {
                out.push(format!(
                    "{}: calling a removed tool is a JSON-RPC error -32602 (docs/sdk-facts.md says TypeScript returns a result with isError: true; true of v1 only)",
                    label(r)
                ));
            }
            if name == "notify"
                && r.imp == Impl::Python
                && r.variant == "mcpserver"
                && r.era == E26
                && r.observations.tools_list_changed_advertised == Some(true)
            {
                out.push(format!(
                    "{}: server/discover advertises tools.listChanged = true although add_tool/remove_tool send nothing (docs/sdk-facts.md mentions only the 2025-11-25 initialize, which says false)",
                    label(r)
                ));
            }
        }
    }
    out.sort();
    out.dedup();
    out
}
