//! `listsync record` + `listsync audit` end to end, on stdio and on Streamable HTTP: sessions of
//! our runtime recorded through the proxy (the CLI client `listsync watch` with a known-bad
//! strategy or the reference, against `listsync serve` driven through its control channel; or a
//! scripted client against `serve --strategy notify-before-commit`), audited, and compared with
//! the verdicts the model and the replay reach for those strategies: each known-bad one is
//! caught by the property its strategy is known to break (`breaks()`: naive's stale overwrite,
//! a walk overtaken by a change that it publishes last; first-page-only's torn snapshot;
//! notify-before-commit's early notification), the reference holds it — the same verdicts
//! through either transport (each scenario runs through one helper, the transport a
//! parameter). The naive client also re-lists once per notification, which a burst shows as
//! bounded_refresh violated: that is a second property the wire shows it breaking, judged as
//! such. Malformed and truncated logs are refused with the line. Every wait has a bound;
//! ordering comes from gates and events.

mod harness_support;

use harness_support::audit;
use listsync_core::property::Property;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_harness::control::{Control, events, listen};
use listsync_harness::timeline::{Hub, Side};
use listsync_observe::WalkFate;
use listsync_testkit::{LIMIT, within};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

/// The catalog every scenario starts with: three tools, listed two per page.
fn initial() -> String {
    json!([
        {"op": "add", "kind": "tools", "name": "t0", "description": "t0 v1"},
        {"op": "add", "kind": "tools", "name": "t1", "description": "t1 v1"},
        {"op": "add", "kind": "tools", "name": "t2", "description": "t2 v1"},
    ])
    .to_string()
}

/// `listsync serve --stdio` behind `listsync record`, as argv, with its control socket.
fn recorded_server(dir: &Path, serve: &[&str]) -> (Vec<String>, PathBuf) {
    let log = dir.join("session.jsonl");
    let sock = dir.join("control.sock");
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
    argv.push(initial());
    argv.push("--control".into());
    argv.push(sock.display().to_string());
    argv.extend(serve.iter().map(|s| s.to_string()));
    (argv, log)
}

/// How the session is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Via {
    /// `listsync record --out LOG -- listsync serve --stdio ...`, the client on its stdio.
    Stdio,
    /// `listsync serve --http 127.0.0.1:0 ...` behind `listsync record --http 127.0.0.1:0
    /// --upstream URL`, the client on the recorder's URL.
    Http,
}

/// The HTTP side of a recorded session: the server and the recorder, with the recorder's URL.
struct HttpStack {
    serve: Child,
    _serve_out: Lines<BufReader<ChildStdout>>,
    record: Child,
    url: String,
}

impl HttpStack {
    /// Starts `listsync serve --http 127.0.0.1:0` (its control channel on DIR/control.sock,
    /// accepted by `accept`) and `listsync record --http 127.0.0.1:0` in front of it, logging to
    /// DIR/session.jsonl.
    async fn start(
        dir: &Path,
        serve: &[&str],
        accept: tokio::task::JoinHandle<Server>,
    ) -> (HttpStack, Server, PathBuf) {
        let log = dir.join("session.jsonl");
        let mut serve_child = tokio::process::Command::new(EXE)
            .args([
                "serve",
                "--http",
                "127.0.0.1:0",
                "--page-size",
                "2",
                "--initial",
            ])
            .arg(initial())
            .arg("--control")
            .arg(dir.join("control.sock"))
            .args(serve)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn serve");
        let mut serve_out = BufReader::new(serve_child.stdout.take().unwrap()).lines();
        let upstream = within("serve's URL", serve_out.next_line())
            .await
            .expect("read")
            .expect("serve printed its URL");
        let server = within("the server's control channel", accept)
            .await
            .unwrap();
        let (record, url) = harness_support::record_http(&upstream, &log).await;
        let stack = HttpStack {
            serve: serve_child,
            _serve_out: serve_out,
            record,
            url,
        };
        (stack, server, log)
    }

    /// Stops the recorder as a user does (SIGINT): it closes the connections still open in the
    /// log and exits with status 0.
    async fn stop(mut self) {
        let pid = self.record.id().expect("record runs").to_string();
        let sent = std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .expect("run kill");
        assert!(sent.success());
        let status = within("record exits", self.record.wait()).await.unwrap();
        assert!(status.success(), "record: {status}");
        let _ = self.serve.kill().await;
    }
}

/// Listens on DIR/control.sock for the server's control channel (bound before this returns).
async fn control_channel(dir: &Path) -> tokio::task::JoinHandle<Server> {
    let d = dir.to_path_buf();
    let accept = tokio::spawn(async move { Server::accept(&d).await });
    within("the control socket", async {
        while !dir.join("control.sock").exists() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await;
    accept
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

/// A recorded session with `listsync watch` as its client.
struct Watched {
    child: Child,
    lines: Lines<BufReader<ChildStdout>>,
    server: Server,
    log: PathBuf,
    http: Option<HttpStack>,
}

impl Watched {
    /// Kills the client and waits until the log is whole: on stdio the server exits with the
    /// client and the recorder logs its end; on HTTP the recorder is stopped.
    async fn end(mut self) -> PathBuf {
        let _ = self.child.kill().await;
        match self.http {
            None => closed(&self.log).await,
            Some(stack) => stack.stop().await,
        }
        self.log
    }
}

/// Spawns `listsync watch --strategy S` on a recorded server (binding the control socket
/// first), and the server's control channel.
async fn watch(dir: &Path, via: Via, strategy: &str) -> Watched {
    let mut accept = Some(control_channel(dir).await);
    let mut cmd = tokio::process::Command::new(EXE);
    cmd.args(["watch", "--kinds", "tools", "--strategy", strategy]);
    let (server, log, http) = match via {
        Via::Stdio => {
            let (argv, log) = recorded_server(dir, &[]);
            cmd.arg("--").args(&argv);
            (None, log, None)
        }
        Via::Http => {
            let (stack, server, log) = HttpStack::start(dir, &[], accept.take().unwrap()).await;
            cmd.args(["--url", &stack.url]);
            (Some(server), log, Some(stack))
        }
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn watch");
    let server = match server {
        Some(s) => s,
        None => within("the server's control channel", accept.take().unwrap())
            .await
            .unwrap(),
    };
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    Watched {
        child,
        lines,
        server,
        log,
        http,
    }
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

/// Waits until the client has settled: every walk in the log went to its last page or failed,
/// and one started after the last list_changed (the refresh that answers it). Every walk ended
/// is not enough: a client that coalesces starts its one more walk a moment after the walk in
/// progress ends, and a client killed in that moment leaves a torn walk in the log.
async fn walks_ended(log: &Path) {
    within("the client to settle", async {
        loop {
            if let Ok(l) = listsync_session::log::read(log) {
                let w = listsync_session::wire::observe(&l.entries);
                let last_notice = w
                    .delivered
                    .iter()
                    .filter(|d| {
                        d.json["method"]
                            .as_str()
                            .is_some_and(|m| m.ends_with("/list_changed"))
                    })
                    .map(|d| d.seq)
                    .max();
                let answered = last_notice.is_none_or(|n| w.walks.iter().any(|x| x.start() > n));
                if answered
                    && w.walks
                        .iter()
                        .all(|w| matches!(w.fate, WalkFate::Complete | WalkFate::Failed(_)))
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
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

/// The verdict on `p` (its `status`, `detail`, `evidence`, `conns`).
fn verdict(doc: &Value, p: Property) -> Value {
    doc[0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["property"] == p.as_str())
        .cloned()
        .unwrap()
}

/// A burst of three list_changed while the client's first re-list is parked at the server.
async fn burst(via: Via, strategy: &str) -> (i32, Value, PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = watch(dir.path(), via, strategy).await;
    until_line(&mut w.lines, "(3 items)").await;
    let server = &w.server;
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
    until_line(&mut w.lines, "(6 items)").await;
    walks_ended(&w.log).await;
    let log = w.end().await;
    let (code, doc) = audit(&log);
    (code, doc, log, dir)
}

/// The naive client re-lists once per notification: bounded_refresh is violated, on the
/// session's connection, with its diagram next to the log. (Not the property naive's strategy
/// names, no_stale_overwrite: the burst's walks are all served after the last change, so none
/// is stale; `naive_client_overwrites_a_newer_list` shows that one.)
async fn naive_breaks_bounded_refresh(via: Via) -> (PathBuf, tempfile::TempDir) {
    let (code, doc, log, dir) = burst(via, "naive").await;
    let v = verdict(&doc, Property::BoundedRefresh);
    assert_eq!(v["status"], "violated", "{doc:#}");
    assert_eq!(code, 1);
    assert_eq!(v["conns"], json!([0]), "{v:#}");
    if via == Via::Http {
        assert!(
            v["detail"].as_str().unwrap().starts_with("connection 0: "),
            "{v:#}"
        );
    }
    // The evidence is drawn next to the log.
    let svg = log.with_file_name("session.jsonl.bounded_refresh.svg");
    let text = std::fs::read_to_string(&svg).expect("diagram written");
    assert!(
        text.starts_with("<svg") && text.contains("bounded_refresh"),
        "{svg:?}"
    );
    (log, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_client_breaks_bounded_refresh() {
    let (log, _dir) = naive_breaks_bounded_refresh(Via::Stdio).await;
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
async fn http_naive_client_breaks_bounded_refresh() {
    let (log, _dir) = naive_breaks_bounded_refresh(Via::Http).await;
    let l = listsync_session::log::read(&log).unwrap();
    assert_eq!(
        l.header.transport,
        listsync_session::log::RecordTransport::Http
    );
    // One MCP session, one connection, opened by the initialize's response and closed when the
    // recording stopped.
    let opens: Vec<u32> = l
        .entries
        .iter()
        .filter(|e| matches!(e.what, listsync_session::log::What::Open { .. }))
        .map(|e| e.conn)
        .collect();
    assert_eq!(opens, [0]);
    assert!(
        matches!(&l.entries.last().unwrap().what, listsync_session::log::What::Close { detail } if detail == "recording stopped")
    );
}

/// The reference client coalesces the burst into one more walk, and no walk is torn.
async fn reference_keeps_bounded_refresh(via: Via) {
    let (code, doc, _log, _dir) = burst(via, "reference").await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reference_client_keeps_bounded_refresh() {
    reference_keeps_bounded_refresh(Via::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_reference_client_keeps_bounded_refresh() {
    reference_keeps_bounded_refresh(Via::Http).await;
}

/// Every property's status, in core's order.
fn statuses(doc: &Value) -> Vec<(String, String)> {
    doc[0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["property"].as_str().unwrap().to_owned(),
                v["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The same burst recorded on stdio and on HTTP is judged the same, property by property.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verdicts_agree_across_transports() {
    for strategy in ["naive", "reference"] {
        let (stdio_code, stdio, _l, _d) = burst(Via::Stdio, strategy).await;
        let (http_code, http, _l, _d) = burst(Via::Http, strategy).await;
        assert_eq!(
            statuses(&http),
            statuses(&stdio),
            "{strategy}: {http:#}\n{stdio:#}"
        );
        assert_eq!(http_code, stdio_code, "{strategy}");
    }
}

/// The client's first list, then the end of the session.
async fn first_list(via: Via, strategy: &str, shows: &str) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let mut w = watch(dir.path(), via, strategy).await;
    until_line(&mut w.lines, shows).await;
    let log = w.end().await;
    audit(&log).1
}

/// The client stops at the first page: a walk abandoned before its last page. The reference
/// walks to the end.
async fn first_page_only_is_torn(via: Via) {
    let strategy = ClientStrategy::FirstPageOnly;
    let breaks = strategy.breaks().expect("a known-bad strategy");
    let doc = first_list(via, strategy.as_str(), "(2 items)").await;
    assert_eq!(status(&doc, breaks), "violated", "{breaks}: {doc:#}");
    let reference = first_list(via, "reference", "(3 items)").await;
    assert_eq!(
        status(&reference, breaks),
        "holds_as_observed",
        "{breaks}: {reference:#}"
    );
    assert_eq!(
        status(&reference, Property::NoLostWakeup),
        "not_observed",
        "{reference:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn first_page_only_client_is_torn() {
    first_page_only_is_torn(Via::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_first_page_only_client_is_torn() {
    first_page_only_is_torn(Via::Http).await;
}

/// Waits until the log shows `n` tools list_changed delivered to the client.
async fn delivered_list_changed(log: &Path, n: usize) {
    within("the list_changed to reach the client", async {
        loop {
            if let Ok(l) = listsync_session::log::read(log) {
                let w = listsync_session::wire::observe(&l.entries);
                let got = w
                    .delivered
                    .iter()
                    .filter(|d| d.json["method"] == "notifications/tools/list_changed")
                    .count();
                if got >= n {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}

/// A walk overtaken by a change: after the first list, t9 is added and the walk the client
/// starts for it is held at its last page, computed before t8 is added; the list_changed for t8
/// reaches the client; a client that walks at once (not single-flight) finishes a walk of the
/// newer list meanwhile (5 items), a single-flight one waits; then the held page goes out.
async fn overtaken_walk(via: Via, strategy: ClientStrategy) -> (i32, Value) {
    let dir = tempfile::tempdir().unwrap();
    let mut w = watch(dir.path(), via, strategy.as_str()).await;
    until_line(&mut w.lines, "(3 items)").await;
    let server = &w.server;
    // From now on, the second tools/list reply: the last of the two pages of the walk for t9.
    let gate = server
        .cmd(
            "gate_reply",
            json!({"method": "tools/list", "phase": "after", "nth": 2}),
        )
        .await["gate"]
        .clone();
    let add = |n: &str| json!({"ops": [{"op": "add", "kind": "tools", "name": n, "description": format!("{n} v1")}]});
    server.cmd("mutate", add("t9")).await;
    server.event("reply_parked", 1).await;
    server.cmd("mutate", add("t8")).await;
    delivered_list_changed(&w.log, 2).await;
    if !strategy.single_flight() {
        until_line(&mut w.lines, "(5 items)").await;
    }
    server.cmd("release", json!({"gate": gate})).await;
    walks_ended(&w.log).await;
    let log = w.end().await;
    audit(&log)
}

/// Naive publishes every walk it finishes, the overtaken one last: the property its strategy
/// is known to break, no_stale_overwrite, is violated on the wire. The reference, single-flight,
/// lists again after the overtaken walk and ends with the newer list.
async fn naive_overwrites_a_newer_list(via: Via) {
    let strategy = ClientStrategy::Naive;
    let breaks = strategy.breaks().expect("a known-bad strategy");
    let (code, doc) = overtaken_walk(via, strategy).await;
    assert_eq!(status(&doc, breaks), "violated", "{breaks}: {doc:#}");
    assert_eq!(code, 1, "{doc:#}");
    let (code, doc) = overtaken_walk(via, ClientStrategy::Reference).await;
    assert_eq!(
        status(&doc, breaks),
        "holds_as_observed",
        "{breaks}: {doc:#}"
    );
    assert_eq!(code, 0, "{doc:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn naive_client_overwrites_a_newer_list() {
    naive_overwrites_a_newer_list(Via::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_naive_client_overwrites_a_newer_list() {
    naive_overwrites_a_newer_list(Via::Http).await;
}

/// A scripted MCP client: requests, notifications, and the server's notifications as they come.
trait Scripted {
    /// A request; returns its response.
    async fn request(&mut self, method: &str, params: Value) -> Value;
    /// A notification to the server.
    async fn notify(&mut self, method: &str);
    /// The next notification from the server.
    async fn notice(&mut self) -> Value;
}

/// Every page of tools/list: the names.
async fn list(s: &mut impl Scripted) -> Vec<String> {
    let mut names = Vec::new();
    let mut params = json!({});
    loop {
        let r = s.request("tools/list", params).await;
        names.extend(
            r["result"]["tools"]
                .as_array()
                .unwrap_or_else(|| panic!("not a list: {r}"))
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        match r["result"].get("nextCursor").filter(|c| !c.is_null()) {
            Some(c) => params = json!({"cursor": c}),
            None => return names,
        }
    }
}

/// A scripted MCP client on the recording proxy's stdio.
struct Script {
    stdin: tokio::process::ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next: u64,
    /// Notifications read while waiting for a response.
    notices: std::collections::VecDeque<Value>,
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
}

impl Scripted for Script {
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let v = self.read().await;
            if v["id"] == id {
                return v;
            }
            self.notices.push_back(v);
        }
    }

    async fn notify(&mut self, method: &str) {
        self.send(json!({"jsonrpc": "2.0", "method": method})).await;
    }

    async fn notice(&mut self) -> Value {
        match self.notices.pop_front() {
            Some(v) => v,
            None => self.read().await,
        }
    }
}

/// A scripted Streamable HTTP client: each request a POST whose response (JSON or an SSE
/// stream) carries its answer; the server's notifications from the GET stream it opens after
/// `initialize`; a DELETE ends the session.
struct HttpScript {
    http: reqwest::Client,
    url: String,
    session: Option<String>,
    next: u64,
    notices: tokio::sync::mpsc::UnboundedReceiver<Value>,
    notices_tx: tokio::sync::mpsc::UnboundedSender<Value>,
}

/// Reads a response body as server-sent events (or one JSON body), passing each message to
/// `each` until it returns true; false if the body ended first.
async fn messages(mut resp: reqwest::Response, mut each: impl FnMut(Value) -> bool) -> bool {
    let sse = resp
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| t.starts_with("text/event-stream"));
    if !sse {
        let bytes = resp.bytes().await.expect("body");
        return !bytes.is_empty() && each(serde_json::from_slice(&bytes).expect("JSON body"));
    }
    let mut reader = listsync_session::http::sse::SseReader::default();
    while let Some(chunk) = resp.chunk().await.expect("stream") {
        let mut done = false;
        reader.feed(&chunk, |e| {
            if !done {
                done = each(serde_json::from_slice(e.data).expect("JSON event"));
            }
        });
        if done {
            return true;
        }
    }
    false
}

impl HttpScript {
    fn new(url: &str) -> HttpScript {
        let (notices_tx, notices) = tokio::sync::mpsc::unbounded_channel();
        HttpScript {
            http: reqwest::Client::new(),
            url: url.to_owned(),
            session: None,
            next: 0,
            notices,
            notices_tx,
        }
    }

    fn with_headers(&self, mut rb: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        rb = rb
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25");
        if let Some(s) = &self.session {
            rb = rb.header("mcp-session-id", s);
        }
        rb
    }

    async fn post(&self, v: Value) -> reqwest::Response {
        let rb = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .body(v.to_string());
        let resp = within("a response", self.with_headers(rb).send())
            .await
            .expect("POST");
        assert!(resp.status().is_success(), "{v}: {}", resp.status());
        resp
    }

    /// Initializes the session and opens its GET stream (its head back means the server
    /// holds it: notifications from then on reach it).
    async fn initialize(&mut self) {
        self.next += 1;
        let resp = self
            .post(json!({"jsonrpc": "2.0", "id": self.next, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}}))
            .await;
        self.session = resp
            .headers()
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        assert!(self.session.is_some(), "the server assigned no session");
        within(
            "initialize's result",
            messages(resp, |v| v.get("result").is_some()),
        )
        .await;
        self.notify("notifications/initialized").await;
        let get = within(
            "the GET stream",
            self.with_headers(self.http.get(&self.url)).send(),
        )
        .await
        .expect("GET");
        assert!(get.status().is_success(), "GET: {}", get.status());
        let tx = self.notices_tx.clone();
        tokio::spawn(messages(get, move |v| tx.send(v).is_err()));
    }

    /// Ends the session.
    async fn delete(&self) {
        let resp = within(
            "DELETE",
            self.with_headers(self.http.delete(&self.url)).send(),
        )
        .await
        .expect("DELETE");
        assert!(resp.status().is_success(), "DELETE: {}", resp.status());
    }
}

impl Scripted for HttpScript {
    async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next += 1;
        let id = self.next;
        let resp = self
            .post(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let mut answer = None;
        let tx = self.notices_tx.clone();
        let got = within(
            "a response",
            messages(resp, |v| {
                if v["id"] == id {
                    answer = Some(v);
                    true
                } else {
                    let _ = tx.send(v);
                    false
                }
            }),
        )
        .await;
        assert!(got, "{method}: no response");
        answer.unwrap()
    }

    async fn notify(&mut self, method: &str) {
        self.post(json!({"jsonrpc": "2.0", "method": method})).await;
    }

    async fn notice(&mut self) -> Value {
        within("a notification", self.notices.recv())
            .await
            .expect("the GET stream is open")
    }
}

/// Lists, is notified of a removal, lists again at once and once more after the mutation is
/// committed; returns the three lists.
async fn relist(s: &mut impl Scripted, server: &Server, late: bool) -> Vec<Vec<String>> {
    let mut seen = vec![list(s).await];
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
    let notice = s.notice().await;
    assert_eq!(notice["method"], "notifications/tools/list_changed");
    seen.push(list(s).await);
    if let Some(gate) = gate {
        server.event("commit_parked", 1).await;
        server.cmd("release", json!({"gate": gate})).await;
    }
    // The mutation's reply comes once its batch is committed.
    within("mutate's reply", mutate).await.expect("reply");
    seen.push(list(s).await);
    seen
}

/// A client that lists, is notified of a removal, lists again at once and once more later.
async fn relist_after_notice(via: Via, serve: &[&str]) -> (i32, Value, Vec<Vec<String>>) {
    let dir = tempfile::tempdir().unwrap();
    let late = serve.contains(&"notify-before-commit");
    let accept = control_channel(dir.path()).await;
    let (seen, log) = match via {
        Via::Stdio => {
            let (argv, log) = recorded_server(dir.path(), serve);
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
                notices: Default::default(),
            };
            s.request(
                "initialize",
                json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}),
            )
            .await;
            s.notify("notifications/initialized").await;
            let seen = relist(&mut s, &server, late).await;
            drop(s);
            within("record exits", child.wait()).await.expect("status");
            (seen, log)
        }
        Via::Http => {
            let (stack, server, log) = HttpStack::start(dir.path(), serve, accept).await;
            let mut s = HttpScript::new(&stack.url);
            s.initialize().await;
            let seen = relist(&mut s, &server, late).await;
            s.delete().await;
            // The DELETE's answer closed the session's connection: the log is whole.
            closed(&log).await;
            stack.stop().await;
            (seen, log)
        }
    };
    let (code, doc) = audit(&log);
    (code, doc, seen)
}

/// A server that notifies before its change is visible is caught by the property its strategy
/// breaks (notify_after_commit); the reference server is not, and the session ends quiescent.
async fn notify_before_commit_is_caught(via: Via) {
    let strategy = ServerStrategy::NotifyBeforeCommit;
    let breaks = strategy.breaks().expect("a known-bad strategy");
    let (code, doc, seen) = relist_after_notice(via, &["--strategy", strategy.as_str()]).await;
    assert_eq!(
        seen[1], seen[0],
        "the list after the notice shows the old tools"
    );
    assert_ne!(seen[2], seen[0]);
    assert_eq!(status(&doc, breaks), "violated", "{breaks}: {doc:#}");
    assert_eq!(code, 1);
    let (code, doc, seen) = relist_after_notice(via, &[]).await;
    assert_ne!(seen[1], seen[0]);
    assert_eq!(
        status(&doc, breaks),
        "holds_as_observed",
        "{breaks}: {doc:#}"
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn notify_before_commit_server_is_caught() {
    notify_before_commit_is_caught(Via::Stdio).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_notify_before_commit_server_is_caught() {
    notify_before_commit_is_caught(Via::Http).await;
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

/// `record --http` refuses a non-loopback address (unless asked) and a TLS upstream, in one
/// line, before creating the log.
#[test]
fn record_http_refuses_a_non_loopback_address_and_tls() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("never.jsonl");
    let cases = [
        (
            ["0.0.0.0:0", "http://127.0.0.1:1/mcp"],
            "not a loopback address",
        ),
        (["127.0.0.1:0", "https://127.0.0.1:1/mcp"], "no TLS"),
    ];
    for ([listen, upstream], want) in cases {
        let out = std::process::Command::new(EXE)
            .args(["record", "--out"])
            .arg(&log)
            .args(["--http", listen, "--upstream", upstream])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(err.contains(want), "{err}");
        assert!(!log.exists(), "{listen} {upstream}: a log was created");
    }
}
