//! A harness run as a session log: what a recorder between the two adapters would have logged.
//! Each message is entered when its recipient got it — at once for a line the proxy passed, at
//! its release for a held one (a duplicate's copy at its own release) — so the log is the
//! session as both ends lived it, and the audit judges it like any recorded session. Lines the
//! recipient never got (dropped, discarded, the answers to the harness's own probes) and the
//! probes themselves are left out: they were not part of the session. `listsync replay
//! --session-logs` writes one beside each message log; the audit of a replay is then compared
//! with the replay's own verdicts (tests/audit_replays.rs).

use crate::log::{
    FORMAT, Header, LogDir, LogEntry, MAX_PREVIEW, RecordTransport, SessionLog, VERSION, What,
};
use listsync_harness::outcome::RunReport;
use listsync_harness::proxy::PROBE_PREFIX;
use listsync_harness::timeline::{self, Action, Body, LineFate};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

fn dir_of(d: timeline::Dir) -> LogDir {
    match d {
        timeline::Dir::Up => LogDir::ClientToServer,
        timeline::Dir::Down => LogDir::ServerToClient,
    }
}

/// Whether a line is the harness's own (a probe or its answer), not the session's.
fn is_probe(json: &Value) -> bool {
    json.get("id")
        .and_then(Value::as_str)
        .is_some_and(|id| id.starts_with(PROBE_PREFIX))
}

/// The session `report`'s run carried, as a log (one connection, stdio).
pub fn session_log(report: &RunReport) -> SessionLog {
    let header = Header {
        format: FORMAT.into(),
        version: VERSION,
        transport: RecordTransport::Stdio,
        server: vec![report.server.clone()],
        // A replayed run has no wall clock worth keeping: its entries carry the run's own.
        started_unix_ms: 0,
        started_unix_us: None,
    };
    let mut entries = Vec::new();
    let mut push = |t_us: u64, what: What| {
        let seq = entries.len() as u64;
        entries.push(LogEntry {
            seq,
            t_us,
            conn: 0,
            what,
        });
    };
    push(
        0,
        What::Open {
            detail: format!("replay of {} (client: {})", report.id, report.client),
        },
    );
    // Held lines by the record that holds them (a duplicate's copy by its Release record).
    let mut held: HashMap<u64, What> = HashMap::new();
    let mut end = 0;
    for r in &report.records {
        end = r.micros;
        match &r.body {
            Body::Msg {
                dir,
                len,
                json,
                text,
                fate,
            } => {
                let what = match json {
                    Some(v) if is_probe(v) => continue,
                    Some(v) => What::Msg {
                        dir: dir_of(*dir),
                        json: v.clone(),
                    },
                    None => {
                        let preview: String = text
                            .as_deref()
                            .unwrap_or_default()
                            .chars()
                            .take(MAX_PREVIEW)
                            .collect();
                        What::Invalid {
                            dir: dir_of(*dir),
                            len: *len,
                            why: "not JSON, or too long to keep".into(),
                            preview,
                        }
                    }
                };
                match fate {
                    LineFate::Passed => push(r.micros, what),
                    LineFate::Held => {
                        held.insert(r.seq, what);
                    }
                    LineFate::Intercepted | LineFate::Discarded => {}
                }
            }
            Body::Release { of, action, .. } => match action {
                Action::Deliver => {
                    if let Some(what) = held.remove(of) {
                        push(r.micros, what);
                    }
                }
                Action::Duplicate => {
                    if let Some(what) = held.get(of).cloned() {
                        held.insert(r.seq, what);
                    }
                }
                Action::Drop => {
                    held.remove(of);
                }
            },
            _ => {}
        }
    }
    push(
        end,
        What::Close {
            detail: format!("run {}", report.status.as_str()),
        },
    );
    SessionLog { header, entries }
}

/// Writes `log` to `path` in the session-log format (docs/session-log.md).
pub fn write(path: &Path, log: &SessionLog) -> std::io::Result<()> {
    if let Some(d) = path.parent() {
        std::fs::create_dir_all(d)?;
    }
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    serde_json::to_writer(&mut out, &log.header)?;
    out.write_all(b"\n")?;
    for e in &log.entries {
        serde_json::to_writer(&mut out, e)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
