//! `listsync record` + `listsync audit` end to end on stdio: sessions of our runtime recorded
//! through the proxy (the CLI client `listsync watch` with a known-bad strategy or the
//! reference, against `listsync serve` driven through its control channel; or a scripted client
//! against `serve --strategy notify-before-commit`), audited, and compared with the verdicts
//! the model and the replay reach for those strategies: the known-bad one is caught by the
//! property it is known to break, the reference holds. Malformed and truncated logs are
//! refused with the line. Every wait has a bound; ordering comes from gates and events.

use listsync_core::property::Property;
use listsync_harness::control::{Control, events, listen};
use listsync_harness::timeline::{Hub, Side};
use listsync_session::wire::Fate;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

const LIMIT: Duration = Duration::from_secs(60);
const EXE: &str = env!("CARGO_BIN_EXE_listsync");

async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

/// `listsync serve --stdio` behind `listsync record`, as argv, with its control socket.
fn recorded_server(dir: &Path, serve: &[&str]) -> (Vec<String>, PathBuf) {
    let log = dir.join("session.jsonl");
    let sock = dir.join("control.sock");
    let initial = json!([
        {"op": "add", "kind": "tools", "name": "t0", "description": "t0 v1"},
        {"op": "add", "kind": "tools", "name": "t1", "description": "t1 v1"},
        {"op": "add", "kind": "tools", "name": "t2", "description": "t2 v1"},
    ]);
    let mut argv: Vec<String> = [EXE, "record", "--out"].map(String::from).to_vec();
    argv.push(log.display().to_string());
    argv.extend(
        [
            "--",
            EXE,
            "serve",
            "--stdio",
            "--page-size",
            "2",
            "--initial",
        ]
        .map(String::from),
    );
    argv.push(initial.to_string());
    argv.push("--control".into());
    argv.push(sock.display().to_string());
    argv.extend(serve.iter().map(|s| s.to_string()));
    (argv, log)
}

/// The server's control channel, events on a timeline.
struct Server {
    control: Arc<Control>,
    hub: Arc<Hub>,
}

impl Server {
    async fn accept(dir: &Path) -> Server {
        let hub = Hub::new();
        let listener = listen(&dir.join("control.sock")).expect("listen");
        let control = Control::accept(listener, Side::Server, hub.clone(), LIMIT)
            .await
            .expect("server connects");
        let s = Server { control, hub };
        s.event("ready", 1).await;
        s
    }

    async fn cmd(&self, cmd: &str, fields: Value) -> Value {
        self.control
            .cmd(cmd, fields, LIMIT)
            .await
            .unwrap_or_else(|e| panic!("{cmd}: {e}"))
    }

    /// Waits for the `n`th event `name`.
    async fn event(&self, name: &str, n: usize) {
        self.hub
            .wait_until(LIMIT, |st| {
                events(st, Side::Server, name).nth(n - 1).map(|_| ())
            })
            .await
            .unwrap_or_else(|| panic!("no event {name} #{n}"));
    }
}

/// Spawns `listsync watch --strategy S -- <recorded server>` (binding the control socket
/// first), and the server's control channel.
async fn watch(
    dir: &Path,
    strategy: &str,
) -> (Child, Lines<BufReader<ChildStdout>>, Server, PathBuf) {
    let (argv, log) = recorded_server(dir, &[]);
    let hub_dir = dir.to_path_buf();
    let accept = tokio::spawn(async move { Server::accept(&hub_dir).await });
    // Let the listener bind before the server looks for it (accept binds at once).
    tokio::task::yield_now().await;
    while !dir.join("control.sock").exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut child = tokio::process::Command::new(EXE)
        .args(["watch", "--kinds", "tools", "--strategy", strategy, "--"])
        .args(&argv)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn watch");
    let server = within("the server's control channel", accept)
        .await
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines, server, log)
}

/// Reads watch's lines until one contains `what`.
async fn until_line(lines: &mut Lines<BufReader<ChildStdout>>, what: &str) {
    within(what, async {
        loop {
            let l = lines.next_line().await.expect("read").expect("watch ended");
            if l.contains(what) {
                return;
            }
        }
    })
    .await
}

/// Waits until the log records the end of its connection (the proxy saw the server exit).
async fn closed(log: &Path) {
    within("the log's close entry", async {
        loop {
            let text = std::fs::read_to_string(log).unwrap_or_default();
            if text.lines().any(|l| l.contains("\"type\":\"close\"")) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// Waits until every walk in the log so far went to its last page or failed (the client is
/// between refreshes, not between two pages).
async fn walks_ended(log: &Path) {
    within("every walk to end", async {
        loop {
            if let Ok(l) = listsync_session::log::read(log) {
                let w = listsync_session::wire::observe(&l.entries);
                if w.walks
                    .iter()
                    .all(|w| matches!(w.fate, Fate::Complete | Fate::Failed(_)))
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// `listsync audit --json LOG`: exit code and the document.
fn audit(log: &Path) -> (i32, Value) {
    let out = std::process::Command::new(EXE)
        .args(["audit", "--json"])
        .arg(log)
        .output()
        .expect("run audit");
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "audit printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

fn status(doc: &Value, p: Property) -> String {
    doc[0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["property"] == p.as_str())
        .map(|v| v["status"].as_str().unwrap().to_owned())
        .unwrap()
}

/// A burst of three list_changed while the client's first re-list is parked at the server.
async fn burst(strategy: &str) -> (i32, Value, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut lines, server, log) = watch(dir.path(), strategy).await;
    until_line(&mut lines, "(3 items)").await;
    let gate = server
        .cmd(
            "gate_reply",
            json!({"method": "tools/list", "phase": "before"}),
        )
        .await["gate"]
        .clone();
    let add = |n: &str| json!({"ops": [{"op": "add", "kind": "tools", "name": n, "description": format!("{n} v1")}]});
    server.cmd("mutate", add("t9")).await;
    server.event("reply_parked", 1).await;
    server.cmd("mutate", add("t8")).await;
    server.cmd("mutate", add("t7")).await;
    server.cmd("release", json!({"gate": gate})).await;
    until_line(&mut lines, "(6 items)").await;
    walks_ended(&log).await;
    let _ = child.kill().await;
    closed(&log).await;
    let (code, doc) = audit(&log);
    (code, doc, log, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_client_breaks_bounded_refresh() {
    let (code, doc, log, _dir) = burst("naive").await;
    assert_eq!(
        status(&doc, Property::BoundedRefresh),
        "violated",
        "{doc:#}"
    );
    assert_eq!(code, 1);
    // The evidence is drawn next to the log.
    let svg = log.with_file_name("session.jsonl.bounded_refresh.svg");
    let text = std::fs::read_to_string(&svg).expect("diagram written");
    assert!(
        text.starts_with("<svg") && text.contains("bounded_refresh"),
        "{svg:?}"
    );
    // `--junit`: one testcase per property of the log; the violated one fails naming the diagram.
    let junit = log.with_file_name("audit.xml");
    let out = std::process::Command::new(EXE)
        .args(["audit", "--junit"])
        .arg(&junit)
        .arg(&log)
        .output()
        .expect("run audit");
    assert_eq!(out.status.code(), Some(1));
    let xml = std::fs::read_to_string(&junit).expect("junit written");
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("not XML: {e}\n{xml}"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), Property::ALL.len(), "{xml}");
    let bounded = cases
        .iter()
        .find(|c| c.attribute("name") == Some("bounded_refresh"))
        .expect("a bounded_refresh testcase");
    let failure = bounded
        .children()
        .find(|n| n.has_tag_name("failure"))
        .unwrap_or_else(|| panic!("bounded_refresh did not fail: {xml}"));
    assert!(
        failure
            .attribute("message")
            .is_some_and(|m| m.contains("session.jsonl.bounded_refresh.svg")),
        "{xml}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_keeps_bounded_refresh() {
    let (code, doc, _log, _dir) = burst("reference").await;
    assert_eq!(
        status(&doc, Property::BoundedRefresh),
        "holds_as_observed",
        "{doc:#}"
    );
    assert_eq!(
        status(&doc, Property::NoTornSnapshot),
        "holds_as_observed",
        "{doc:#}"
    );
    assert_eq!(code, 0, "{doc:#}");
}

/// The client stops at the first page: a walk abandoned before its last page.
async fn first_list(strategy: &str, shows: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let (mut child, mut lines, _server, log) = watch(dir.path(), strategy).await;
    until_line(&mut lines, shows).await;
    let _ = child.kill().await;
    closed(&log).await;
    audit(&log).1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_page_only_client_is_torn() {
    let doc = first_list("first-page-only", "(2 items)").await;
    assert_eq!(
        status(&doc, Property::NoTornSnapshot),
        "violated",
        "{doc:#}"
    );
    let reference = first_list("reference", "(3 items)").await;
    assert_eq!(
        status(&reference, Property::NoTornSnapshot),
        "holds_as_observed",
        "{reference:#}"
    );
    assert_eq!(
        status(&reference, Property::NoLostWakeup),
        "not_observed",
        "{reference:#}"
    );
}

/// A scripted MCP client on the recording proxy's stdio.
struct Script {
    stdin: tokio::process::ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next: u64,
}

impl Script {
    async fn send(&mut self, v: Value) {
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.expect("write");
    }

    async fn read(&mut self) -> Value {
        let l = within("a message", self.stdout.next_line())
            .await
            .expect("read")
            .expect("a line");
        serde_json::from_str(&l).expect("JSON")
    }

    /// A request; returns its response (notifications before it are returned too).
    async fn request(&mut self, method: &str, params: Value) -> (Value, Vec<Value>) {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut other = Vec::new();
        loop {
            let v = self.read().await;
            if v["id"] == id {
                return (v, other);
            }
            other.push(v);
        }
    }

    /// Every page of tools/list: the names.
    async fn list(&mut self) -> Vec<String> {
        let mut names = Vec::new();
        let mut params = json!({});
        loop {
            let (r, _) = self.request("tools/list", params).await;
            names.extend(
                r["result"]["tools"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|t| t["name"].as_str().unwrap().to_owned()),
            );
            match r["result"].get("nextCursor").filter(|c| !c.is_null()) {
                Some(c) => params = json!({"cursor": c}),
                None => return names,
            }
        }
    }
}

/// A client that lists, is notified of a removal, lists again at once and once more later.
async fn relist_after_notice(serve: &[&str]) -> (i32, Value, Vec<Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let (argv, log) = recorded_server(dir.path(), serve);
    let d = dir.path().to_path_buf();
    let accept = tokio::spawn(async move { Server::accept(&d).await });
    while !dir.path().join("control.sock").exists() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let mut child = tokio::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn record");
    let server = within("control", accept).await.unwrap();
    let mut s = Script {
        stdin: child.stdin.take().unwrap(),
        stdout: BufReader::new(child.stdout.take().unwrap()).lines(),
        next: 0,
    };
    s.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}),
    )
    .await;
    s.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    let mut seen = vec![s.list().await];
    let late = serve.contains(&"notify-before-commit");
    let gate = if late {
        Some(server.cmd("gate_commit", json!({})).await["gate"].clone())
    } else {
        None
    };
    let mutate = server
        .control
        .send(
            "mutate",
            json!({"ops": [{"op": "remove", "kind": "tools", "name": "t1"}]}),
        )
        .await
        .expect("mutate");
    let notice = s.read().await;
    assert_eq!(notice["method"], "notifications/tools/list_changed");
    seen.push(s.list().await);
    if let Some(gate) = gate {
        server.event("commit_parked", 1).await;
        server.cmd("release", json!({"gate": gate})).await;
    }
    // The mutation's reply comes once its batch is committed.
    within("mutate's reply", mutate).await.expect("reply");
    seen.push(s.list().await);
    drop(s);
    within("record exits", child.wait()).await.expect("status");
    let (code, doc) = audit(&log);
    (code, doc, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_before_commit_server_is_caught() {
    let (code, doc, seen) = relist_after_notice(&["--strategy", "notify-before-commit"]).await;
    assert_eq!(
        seen[1], seen[0],
        "the list after the notice shows the old tools"
    );
    assert_ne!(seen[2], seen[0]);
    assert_eq!(
        status(&doc, Property::NotifyAfterCommit),
        "violated",
        "{doc:#}"
    );
    assert_eq!(code, 1);
    let (code, doc, seen) = relist_after_notice(&[]).await;
    assert_ne!(seen[1], seen[0]);
    assert_eq!(
        status(&doc, Property::NotifyAfterCommit),
        "holds_as_observed",
        "{doc:#}"
    );
    assert_eq!(
        status(&doc, Property::NoLostWakeup),
        "holds_as_observed",
        "{doc:#}"
    );
    assert_eq!(
        status(&doc, Property::ListenThenList),
        "not_applicable",
        "{doc:#}"
    );
    assert_eq!(code, 0, "{doc:#}");
}

#[test]
fn malformed_and_truncated_logs_are_refused_with_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let header = r#"{"format":"listsync-session-log","version":1,"transport":"stdio","server":["x"],"started_unix_ms":0}"#;
    let entry = r#"{"seq":0,"t_us":1,"conn":0,"type":"msg","dir":"c2s","json":{"jsonrpc":"2.0","id":1,"method":"tools/list"}}"#;
    let cases = [
        (
            "truncated",
            format!("{header}\n{}", &entry[..40]),
            "truncated.jsonl:2: truncated entry",
        ),
        (
            "malformed",
            format!("{header}\n{entry}\nhello\n"),
            "malformed.jsonl:3: malformed entry",
        ),
        (
            "not-a-log",
            "{\"jsonrpc\":\"2.0\"}\n".to_owned(),
            "not-a-log.jsonl:1: not a session log header",
        ),
    ];
    for (name, text, want) in cases {
        let path = dir.path().join(format!("{name}.jsonl"));
        std::fs::write(&path, text).unwrap();
        let out = std::process::Command::new(EXE)
            .arg("audit")
            .arg(&path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.lines().count(), 1, "{name}: one line: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
}

/// What the proxy forwards is byte for byte what it read, whatever it is; the log says which
/// lines were not messages.
#[test]
fn record_forwards_every_byte_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("cat.jsonl");
    let input = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\nnot json at all\r\n{\"half\":\n\xff\xfe binary\nno newline at the end";
    let mut child = std::process::Command::new(EXE)
        .args(["record", "--out"])
        .arg(&log)
        .args(["--", "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(input).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(out.stdout, input);
    let text = std::fs::read_to_string(&log).unwrap();
    let kinds: Vec<(String, String)> = text
        .lines()
        .skip(1)
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            (
                v["type"].as_str().unwrap().to_owned(),
                v["dir"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    // open, then each of the five lines in both directions (cat echoes), then close.
    assert_eq!(kinds.first().unwrap().0, "open");
    assert_eq!(kinds.last().unwrap().0, "close");
    let msgs = kinds.iter().filter(|(t, _)| t == "msg").count();
    let invalid = kinds.iter().filter(|(t, _)| t == "invalid").count();
    assert_eq!((msgs, invalid), (2, 8), "{text}");
    // And the audit reads it, noting what was not a message.
    let (code, doc) = audit(&log);
    assert_eq!(code, 0, "{doc:#}");
    assert!(doc[0]["notes"].as_array().unwrap().len() >= 8, "{doc:#}");
}
