//! The audit of a log with several connections (an HTTP recording's MCP sessions): each is judged
//! on its own — the same request ids and cursors on two sessions are not mixed — and a violation
//! names every connection it was found on, with evidence from those connections only. A
//! property judged at a connection's quiescent end that was not observed says what the
//! connections that ended so lacked.

use listsync_core::property::Property;
use listsync_session::audit::{Status, audit};
use listsync_session::log::{LogDir, RecordTransport, What, Writer, line_of, read};
use serde_json::{Value, json};

fn list(id: u64, cursor: Option<&str>) -> Value {
    match cursor {
        Some(c) => {
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {"cursor": c}})
        }
        None => json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}),
    }
}

fn page(id: u64, names: &[&str], next: Option<&str>) -> Value {
    let tools: Vec<Value> = names
        .iter()
        .map(|n| json!({"name": n, "description": n, "inputSchema": {"type": "object"}}))
        .collect();
    let mut result = json!({ "tools": tools });
    if let Some(c) = next {
        result["nextCursor"] = json!(c);
    }
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

#[test]
fn each_connection_is_judged_on_its_own_and_violations_name_theirs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("three.jsonl");
    let w = Writer::create(
        &path,
        RecordTransport::Http,
        vec!["http://127.0.0.1:1/mcp".into()],
    )
    .unwrap();
    let c2s = |conn, v| {
        w.append(
            conn,
            What::Msg {
                dir: LogDir::ClientToServer,
                json: v,
            },
        )
    };
    let s2c = |conn, v| {
        w.append(
            conn,
            What::Msg {
                dir: LogDir::ServerToClient,
                json: v,
            },
        )
    };
    for conn in 0..3 {
        w.append(
            conn,
            What::Open {
                detail: String::new(),
            },
        );
    }
    // Three sessions list at once, with the same ids and the same cursor.
    for conn in 0..3 {
        c2s(conn, list(1, None));
    }
    for conn in 0..3 {
        s2c(conn, page(1, &["a", "b"], Some("c1")));
    }
    // Only session 1 asks for the second page: sessions 0 and 2 stop at the first.
    c2s(1, list(2, Some("c1")));
    s2c(1, page(2, &["c"], None));
    for conn in 0..3 {
        w.append(
            conn,
            What::Close {
                detail: String::new(),
            },
        );
    }
    drop(w);
    let log = read(&path).unwrap();
    let a = audit(&log);
    assert_eq!((a.connections, a.walks), (3, 3));
    let torn = a
        .verdicts
        .iter()
        .find(|v| v.property == Property::NoTornSnapshot)
        .unwrap();
    assert_eq!(torn.status, Status::Violated, "{torn:?}");
    assert_eq!(torn.conns, [0, 2]);
    assert!(
        torn.detail.starts_with("connection 0: the tools walk"),
        "{}",
        torn.detail
    );
    assert!(
        torn.detail.ends_with("(violated on connection(s) 2 too)"),
        "{}",
        torn.detail
    );
    // The evidence is on the torn sessions' lines, none on session 1's.
    let conn_at = |line: u64| {
        log.entries
            .iter()
            .find(|e| line_of(e.seq) == line)
            .unwrap()
            .conn
    };
    assert!(!torn.evidence.is_empty());
    assert!(
        torn.evidence.iter().all(|l| conn_at(*l) != 1),
        "{:?}",
        torn.evidence
    );
    // Sessions 0 and 2 ended quiescent without a whole list: they did not converge; session 1,
    // whose walk went to its end, did.
    let converges = a
        .verdicts
        .iter()
        .find(|v| v.property == Property::Converges)
        .unwrap();
    assert_eq!(converges.status, Status::Violated, "{converges:?}");
    assert_eq!(converges.conns, [0, 2]);
}

/// Audits a stdio log of one connection that opens, carries `msgs` and closes.
fn audit_one_connection(msgs: Vec<(LogDir, Value)>) -> listsync_session::audit::Audit {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("one.jsonl");
    let w = Writer::create(&path, RecordTransport::Stdio, vec!["srv".into()]).unwrap();
    let detail = String::new();
    w.append(
        0,
        What::Open {
            detail: detail.clone(),
        },
    );
    for (dir, json) in msgs {
        w.append(0, What::Msg { dir, json });
    }
    w.append(0, What::Close { detail });
    drop(w);
    audit(&read(&path).unwrap())
}

#[test]
fn one_connection_on_stdio_is_not_named() {
    let a = audit_one_connection(vec![
        (LogDir::ClientToServer, list(1, None)),
        (LogDir::ServerToClient, page(1, &["a"], Some("c1"))),
    ]);
    let torn = a
        .verdicts
        .iter()
        .find(|v| v.property == Property::NoTornSnapshot)
        .unwrap();
    assert_eq!(torn.status, Status::Violated);
    assert!(torn.detail.starts_with("the tools walk"), "{}", torn.detail);
    assert_eq!(torn.conns, [0]);
}

#[test]
fn a_quiescent_end_without_list_changed_says_that_none_came() {
    let a = audit_one_connection(vec![
        (LogDir::ClientToServer, list(1, None)),
        (LogDir::ServerToClient, page(1, &["a"], None)),
    ]);
    let verdict = |p| a.verdicts.iter().find(|v| v.property == p).unwrap();
    assert_eq!(verdict(Property::Converges).status, Status::HoldsAsObserved);
    let wakeup = verdict(Property::NoLostWakeup);
    assert_eq!(wakeup.status, Status::NotObserved);
    assert_eq!(
        wakeup.detail,
        "no list_changed reached the client on a connection that ended with every request answered"
    );
}
