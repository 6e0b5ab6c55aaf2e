//! The server role of the control protocol: `mutate`, `notify`, `catalog`, `gate_call`,
//! `release`, `shutdown`, and this adapter's additions `gate_reply` (park the nth next request of
//! a method, before it is served or after its reply was computed), `gate_notify` (park the nth
//! next outgoing notification of a method) and `gate_commit` (park the late commit of the
//! `notify-before-commit` variant); events `dispatched`, `call_parked`, `reply_parked`,
//! `notify_parked`, `commit_parked`, `call_done`, `notified`, `committed`, and `history` (each core history event of the server, as
//! `{"entry": <event>}`, starting with the current commit: a harness rebuilds the server's side
//! of the history from them).

use super::{Channel, CommandHandler, CommandReply, Failure, Outbox, ReadyInfo, str_field};
use crate::admin;
use crate::gate::{GateTarget, Phase};
use crate::server::{Server, ServerNotice};
use listsync_core::history::Event;
use serde_json::{Value, json};
use std::path::Path;
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn forward_notices(server: &Server, out: Outbox) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    server.observe(tx);
    tokio::spawn(async move {
        while let Some(n) = rx.recv().await {
            match n {
                ServerNotice::Event(e) => {
                    match &e {
                        Event::Dispatched { tool, present, .. } => {
                            out.event("dispatched", json!({"tool": &**tool, "present": present}));
                        }
                        Event::Committed { version, .. } => {
                            out.event("committed", json!({ "version": version }));
                        }
                        _ => {}
                    }
                    out.event("history", json!({ "entry": e }));
                }
                // What the registry says about itself: reported, never judged.
                ServerNotice::Claim(e) => out.event("claim", json!({ "entry": e })),
                ServerNotice::Parked(p) => match p.target {
                    GateTarget::Call { tool } => {
                        out.event("call_parked", json!({"tool": tool, "gate": p.gate}));
                    }
                    GateTarget::Request { method, phase } => {
                        out.event(
                            "reply_parked",
                            json!({"method": method, "phase": phase, "gate": p.gate}),
                        );
                    }
                    GateTarget::Notification { method } => {
                        out.event("notify_parked", json!({"method": method, "gate": p.gate}));
                    }
                    GateTarget::Commit => out.event("commit_parked", json!({ "gate": p.gate })),
                },
                ServerNotice::CallDone { tool } => out.event("call_done", json!({ "tool": tool })),
                ServerNotice::Sent {
                    session,
                    method,
                    uri,
                } => {
                    let params = uri.map_or(json!({}), |u| json!({ "uri": u }));
                    out.event(
                        "notified",
                        json!({"method": method, "params": params, "session": session}),
                    );
                }
            }
        }
    });
}

/// Runs one server-role command of the harness's channel (also served on the admin socket): the
/// gates here, everything else as [`admin::command`].
pub fn server_command(server: Server, cmd: String, v: Value) -> CommandReply {
    Box::pin(async move {
        match cmd.as_str() {
            "gate_call" => {
                let tool = str_field(&v, "tool")?.to_owned();
                let gate = server.gates().arm(GateTarget::Call { tool }, 1);
                Ok(json!({ "gate": gate }))
            }
            "gate_reply" => {
                let method = str_field(&v, "method")?.to_owned();
                let nth = v.get("nth").and_then(Value::as_u64).unwrap_or(1);
                let phase = match v.get("phase").and_then(Value::as_str).unwrap_or("after") {
                    "after" => Phase::After,
                    "before" => Phase::Before,
                    other => return Err(Failure::new(format!("unknown phase '{other}'"))),
                };
                let nth = u32::try_from(nth.max(1)).unwrap_or(u32::MAX);
                let gate = server
                    .gates()
                    .arm(GateTarget::Request { method, phase }, nth);
                Ok(json!({ "gate": gate }))
            }
            "gate_notify" => {
                let method = str_field(&v, "method")?.to_owned();
                let nth = v.get("nth").and_then(Value::as_u64).unwrap_or(1);
                let nth = u32::try_from(nth.max(1)).unwrap_or(u32::MAX);
                let gate = server.gates().arm(GateTarget::Notification { method }, nth);
                Ok(json!({ "gate": gate }))
            }
            "gate_commit" => Ok(json!({ "gate": server.gates().arm(GateTarget::Commit, 1) })),
            "release" => {
                let gate = v
                    .get("gate")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| Failure::new("missing gate"))?;
                if server.gates().release(gate) {
                    Ok(json!({}))
                } else {
                    Err(Failure::new(format!("no gate {gate}")))
                }
            }
            _ => admin::command(server, cmd, v).await,
        }
    })
}

/// Connects to the control socket at `path` and reports `ready`; the returned task serves the
/// server role until the socket closes or `shutdown` (both cancel `stop`). Its outbox can be
/// flushed before the process exits. A node of a multi-instance server adds its name, catalog id
/// and version to `ready`, and reports its health as a `health` event now and on every change.
pub async fn run_server(
    server: Server,
    path: &Path,
    mut info: ReadyInfo,
    stop: CancellationToken,
) -> std::io::Result<Outbox> {
    let channel = Channel::connect(path).await?;
    let out = channel.outbox();
    // The history so far (the current commit) first, then every event as it happens.
    out.event("history", json!({ "entry": server.current_commit() }));
    forward_notices(&server, out.clone());
    let health = server.health();
    if let Some(n) = &health.node {
        info.extra["node"] = Value::from(n.as_str());
        info.extra["catalog_id"] = Value::from(health.catalog_id);
        info.extra["version"] = Value::from(health.version);
    }
    out.event("ready", info.fields());
    if health.node.is_some() {
        report_health(&server, out.clone());
    }
    let handler: CommandHandler = Arc::new(move |cmd, v| server_command(server.clone(), cmd, v));
    tokio::spawn(channel.serve(handler, stop));
    Ok(out)
}

/// Sends the node's health now and on every change.
fn report_health(server: &Server, out: Outbox) {
    let server = server.clone();
    let mut changes = server.staleness();
    tokio::spawn(async move {
        loop {
            out.event("health", server.health().to_json());
            if changes.changed().await.is_err() {
                break;
            }
        }
    });
}
