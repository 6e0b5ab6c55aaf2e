//! The runtime as real processes: `listsync serve --stdio` as a child process driven through the
//! harness control channel (history rebuilt from its `history` events and judged with core's
//! checkers), `listsync watch -- <server>` printing changes, and `listsync watch --stdio` as the
//! harness's client adapter. Every wait has a timeout; ordering comes from gates and events.

use listsync_core::history::Event;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_rt::client::{BoxRead, BoxWrite, ClientHandle, ClientSettings, Endpoint};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};
use rmcp::ServiceExt;
use serde_json::{Value, json};

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixListener;
use tokio::sync::mpsc;

use listsync_testkit::control::ControlPeer;
use listsync_testkit::{LIMIT, within};

fn socket_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("listsync-rt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir.join("control.sock")
}

/// The harness's end of one adapter's control channel. `history` events are recorded into
/// `history` as they arrive (in the adapter's order); the others are queued for [`Control::event`].
struct Control {
    peer: ControlPeer,
    events: mpsc::UnboundedReceiver<Value>,
    notified: Arc<Mutex<u64>>,
}

impl Control {
    async fn accept(listener: &UnixListener, history: Option<SharedHistory>) -> Control {
        let (stream, _) = within("adapter connects", listener.accept())
            .await
            .expect("accept");
        let notified = Arc::new(Mutex::new(0u64));
        let (etx, events) = mpsc::unbounded_channel();
        let n = notified.clone();
        let peer = ControlPeer::new(stream, "adapter", move |v: Value| {
            if v["event"] == "history" {
                let entry: Event =
                    serde_json::from_value(v["entry"].clone()).expect("history entry");
                if matches!(entry, Event::Notified { .. }) {
                    *n.lock().unwrap() += 1;
                }
                if let Some(h) = &history {
                    h.record(&entry);
                }
            }
            let _ = etx.send(v);
        });
        Control {
            peer,
            events,
            notified,
        }
    }

    async fn cmd(&mut self, cmd: Value) -> Value {
        self.peer.cmd(cmd).await
    }

    async fn event(&mut self, name: &str) -> Value {
        within(name, async {
            loop {
                let e = self.events.recv().await.expect("adapter alive");
                if e["event"] == name {
                    return e;
                }
            }
        })
        .await
    }

    fn notified(&self) -> u64 {
        *self.notified.lock().unwrap()
    }
}

fn initial_ops(n: usize) -> Value {
    let ops: Vec<Value> = (0..n)
        .map(|i| json!({"op": "add", "kind": "tools", "name": format!("t{i}"), "description": format!("t{i} v1")}))
        .collect();
    Value::Array(ops)
}

/// Waits until the client is past its handshake, idle, and has received `notified`
/// notifications (the server's count from its history).
async fn settle(catalog: &ClientHandle, notified: u64) {
    let mut status = catalog.status();
    within(
        "quiescence",
        status.wait_for(|s| s.ready && s.idle && s.notifications >= notified),
    )
    .await
    .expect("client alive");
}

/// `listsync serve --stdio` as a child process, the reference client on its pipes. The server's
/// history comes from its `history` events; a commit is recorded before the client can list it,
/// because the client's next `tools/list` is held by a gate until the `mutate` reply (which
/// follows the commit's events) has arrived.
async fn child_server_converges(era: Era) {
    let sock = socket_path(&format!("serve-{era}"));
    let listener = UnixListener::bind(&sock).expect("bind control socket");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args([
            "serve",
            "--stdio",
            "--page-size",
            "2",
            "--era",
            era.as_str(),
        ])
        .arg("--initial")
        .arg(initial_ops(5).to_string())
        .arg("--control")
        .arg(&sock)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync serve");
    let history = SharedHistory::new();
    let mut control = Control::accept(&listener, Some(history.clone())).await;
    let ready = control.event("ready").await;
    assert_eq!(
        (ready["role"].as_str(), ready["sdk_version"].as_str()),
        (Some("server"), Some("3.11.0"))
    );

    // The client connects on the child's pipes, once the server's initial commit is recorded.
    let pipes = Mutex::new(Some((
        child.stdout.take().unwrap(),
        child.stdin.take().unwrap(),
    )));
    let endpoint = Endpoint::io(move |_auth| {
        let pipes = pipes.lock().unwrap().take();
        async move {
            let (r, w) =
                pipes.ok_or_else(|| std::io::Error::other("the child's pipes are used"))?;
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    });
    let tools = KindSet::only(Kind::Tools);
    let mut settings = ClientSettings::new(era, tools);
    settings.history = Some(history.clone());
    settings.max_reconnects = Some(0);
    let catalog = ClientHandle::spawn(settings, endpoint);
    settle(&catalog, 0).await;

    let batches = [
        json!([{"op": "add", "kind": "tools", "name": "t9", "description": "t9 v1"}]),
        json!([{"op": "remove", "kind": "tools", "name": "t0"}]),
        json!([{"op": "update", "kind": "tools", "name": "t2", "description": "t2 v2"},
               {"op": "add", "kind": "tools", "name": "t7", "description": "t7 v1"},
               {"op": "remove", "kind": "tools", "name": "t3"}]),
    ];
    for ops in batches {
        let gate = control
            .cmd(json!({"cmd": "gate_reply", "method": "tools/list", "phase": "before"}))
            .await["gate"]
            .clone();
        let reply = control.cmd(json!({"cmd": "mutate", "ops": ops})).await;
        assert_eq!(reply["ok"], true, "{reply}");
        control.cmd(json!({"cmd": "release", "gate": gate})).await;
        settle(&catalog, control.notified()).await;
        history.quiescent(vec![(0, Kind::Tools, AuthCtx(0))]);
    }
    // A batch the server refuses applies nothing.
    let bad = control
        .cmd(json!({"cmd": "mutate", "ops": [
            {"op": "add", "kind": "tools", "name": "t8", "description": "x"},
            {"op": "remove", "kind": "tools", "name": "nope"}]}))
        .await;
    assert_eq!(bad["ok"], false);

    let judgement = history.judge();
    assert!(
        judgement.violations.is_empty(),
        "{:?}\n{}",
        judgement.violations,
        history.render()
    );
    let truth = control
        .cmd(json!({"cmd": "catalog", "kind": "tools"}))
        .await;
    let names: Vec<String> = catalog.tools().names();
    let want: Vec<String> = truth["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(names, want);
    let r = control.cmd(json!({"cmd": "shutdown"})).await;
    assert_eq!(r["ok"], true);
    let status = within("server exits", child.wait())
        .await
        .expect("exit status");
    assert!(status.success(), "{status}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_child_process_2025() {
    child_server_converges(Era::V2025_11_25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_child_process_2026() {
    child_server_converges(Era::V2026_07_28).await;
}

/// `listsync watch WATCH_FLAGS -- listsync serve --stdio SERVE_FLAGS` over a catalog of `tools`
/// tools, the server's control channel accepted and ready: the watch process, the control
/// channel, and the watch's stdout lines.
async fn watch_serve(
    name: &str,
    watch_flags: &[&str],
    serve_flags: &[&str],
    tools: usize,
) -> (
    tokio::process::Child,
    Control,
    tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
) {
    let sock = socket_path(name);
    let listener = UnixListener::bind(&sock).expect("bind");
    let exe = env!("CARGO_BIN_EXE_listsync");
    let mut watch = tokio::process::Command::new(exe)
        .arg("watch")
        .args(watch_flags)
        .args(["--kinds", "tools", "--", exe, "serve", "--stdio"])
        .args(serve_flags)
        .arg("--initial")
        .arg(initial_ops(tools).to_string())
        .arg("--control")
        .arg(&sock)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut control = Control::accept(&listener, None).await;
    control.event("ready").await;
    let lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    (watch, control, lines)
}

async fn next_line(lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>) -> String {
    within("a line", lines.next_line())
        .await
        .expect("read")
        .expect("line")
}

/// `listsync watch -- listsync serve --stdio ...`: the CLI client spawns the server, prints each
/// published change with its version, and follows a mutation made through the server's control
/// channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_prints_each_change() {
    let (mut watch, mut control, mut lines) =
        watch_serve("watch", &[], &["--page-size", "2"], 3).await;
    assert_eq!(
        next_line(&mut lines).await,
        "tools auth0 v1 (3 items): t0, t1, t2"
    );
    control
        .cmd(json!({"cmd": "mutate", "ops": [{"op": "remove", "kind": "tools", "name": "t1"}]}))
        .await;
    assert_eq!(
        next_line(&mut lines).await,
        "tools auth0 v2 (2 items): t0, t2"
    );
    let _ = watch.kill().await;
}

/// `listsync watch --approvals`: the tools line marks each tool with side effects a user would
/// have to approve, and marks a tool again when its definition changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_marks_tools_to_approve() {
    let (mut watch, mut control, mut lines) =
        watch_serve("watch-approvals", &["--approvals"], &[], 2).await;
    assert_eq!(
        next_line(&mut lines).await,
        "tools auth0 v1 (2 items): t0 [approve], t1 [approve]"
    );
    let reply = control
        .cmd(json!({"cmd": "mutate", "ops": [
            {"op": "update", "kind": "tools", "name": "t1", "description": "t1 rewritten"},
            {"op": "add", "kind": "tools", "name": "t2", "description": "t2 v1"}
        ]}))
        .await;
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert_eq!(
        next_line(&mut lines).await,
        "tools auth0 v2 (3 items): t0, t1 [re-approve], t2 [approve]"
    );
    let _ = watch.kill().await;
}

/// `listsync watch --stdio --control PATH`, the harness's reference client adapter: MCP on its
/// own stdin/stdout (here connected to an in-process server), commands and events on the
/// control channel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_stdio_is_the_client_adapter() {
    let sock = socket_path("client-adapter");
    let listener = UnixListener::bind(&sock).expect("bind");
    let history = SharedHistory::new();
    let initial: Vec<_> = (0..3)
        .map(|i| listsync_core::vocab::Op::add(Kind::Tools, &format!("t{i}"), &format!("t{i} v1")))
        .collect();
    let server = Server::new(
        ServerSettings::new(Era::V2025_11_25, 2),
        &initial,
        Some(history.clone()),
    );
    let mut adapter = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["watch", "--stdio", "--kinds", "tools"])
        .env("LISTSYNC_CONTROL", &sock)
        .env("LISTSYNC_ERA", "2025-11-25")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch --stdio");
    let mut control = Control::accept(&listener, Some(history.clone())).await;
    let io = (
        adapter.stdout.take().unwrap(),
        adapter.stdin.take().unwrap(),
    );
    let service = server.service();
    tokio::spawn(async move {
        if let Ok(running) = service.serve(io).await {
            let _ = running.waiting().await;
        }
    });
    let ready = control.event("ready").await;
    assert_eq!(ready["role"], "client");
    assert_eq!(ready["protocol_version"], "2025-11-25");

    let refreshed = control
        .cmd(json!({"cmd": "refresh", "kind": "tools"}))
        .await;
    assert_eq!(
        refreshed["items"].as_array().unwrap().len(),
        3,
        "{refreshed}"
    );
    within(
        "remove",
        server.apply(&[listsync_core::vocab::Op::remove(Kind::Tools, "t0")]),
    )
    .await;
    let published = control.event("published").await;
    // The startup list was published first; wait for the one after the removal.
    let published = if published["items"].as_array().unwrap().len() == 3 {
        control.event("published").await
    } else {
        published
    };
    assert_eq!(published["version"], 2, "{published}");
    let snap = control
        .cmd(json!({"cmd": "snapshot", "kind": "tools"}))
        .await;
    assert_eq!(snap["items"].as_array().unwrap().len(), 2);
    let call = control.cmd(json!({"cmd": "call", "tool": "t1"})).await;
    assert_eq!(
        (call["ok"].as_bool(), call["text"].as_str()),
        (Some(true), Some("t1:t1 v1")),
        "{call}"
    );
    let gone = control.cmd(json!({"cmd": "call", "tool": "t0"})).await;
    assert_eq!(
        gone["ok"], false,
        "the reference client does not call a tool it no longer lists"
    );
    let bad = control.cmd(json!({"cmd": "frobnicate"})).await;
    assert_eq!(bad["ok"], false);
    // The history rebuilt from the adapter's events, with the in-process server's, holds.
    history.quiescent(vec![(0, Kind::Tools, AuthCtx(0))]);
    let j = history.judge();
    assert!(
        j.violations.is_empty(),
        "{:?}\n{}",
        j.violations,
        history.render()
    );
    let r = control.cmd(json!({"cmd": "shutdown"})).await;
    assert_eq!(r["ok"], true);
    let exit = within("adapter exits", adapter.wait())
        .await
        .expect("status");
    assert!(exit.success());
}

/// A `listsync serve --stdio` command line for `watch --server NAME=COMMAND` (split on
/// whitespace: the catalog's JSON is compact and its descriptions have no spaces).
fn serve_line(tools: &[(&str, &str)], control: Option<&std::path::Path>) -> String {
    let exe = env!("CARGO_BIN_EXE_listsync");
    assert!(!exe.contains(char::is_whitespace), "{exe}");
    let ops: Vec<Value> = tools
        .iter()
        .map(
            |(name, desc)| json!({"op": "add", "kind": "tools", "name": name, "description": desc}),
        )
        .collect();
    let mut line = format!("{exe} serve --stdio --initial {}", Value::Array(ops));
    if let Some(path) = control {
        line.push_str(&format!(" --control {}", path.display()));
    }
    line
}

/// Reads stdout lines until one equals `want`.
async fn line_equal(
    lines: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    want: &str,
) {
    let mut seen = Vec::new();
    let found = tokio::time::timeout(LIMIT, async {
        loop {
            let line = lines.next_line().await.expect("read").expect("line");
            if line == want {
                return;
            }
            seen.push(line);
        }
    })
    .await;
    assert!(found.is_ok(), "no line {want:?}; saw {seen:?}");
}

/// `listsync watch --server alpha=... --server beta=...` against two `listsync serve` children
/// that report the same `serverInfo.name` and both have a tool `read`: the tools line is the
/// combined listing under the configured names, and follows a change of one server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_combines_several_servers() {
    let (sock_a, sock_b) = (socket_path("many-a"), socket_path("many-b"));
    let (listen_a, listen_b) = (
        UnixListener::bind(&sock_a).expect("bind"),
        UnixListener::bind(&sock_b).expect("bind"),
    );
    let alpha = serve_line(&[("read", "A-read"), ("a_only", "a")], Some(&sock_a));
    let beta = serve_line(&[("read", "B-read"), ("b_only", "b")], Some(&sock_b));
    let mut watch = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["watch", "--kinds", "tools"])
        .arg("--server")
        .arg(format!("alpha={alpha}"))
        .arg("--server")
        .arg(format!("beta={beta}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut control_a = Control::accept(&listen_a, None).await;
    let mut control_b = Control::accept(&listen_b, None).await;
    control_a.event("ready").await;
    control_b.event("ready").await;
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    line_equal(
        &mut lines,
        "tools auth0 alpha=v1 beta=v1 (4 items): alpha__a_only, alpha__read, beta__b_only, beta__read",
    )
    .await;
    let reply = control_b
        .cmd(json!({"cmd": "mutate", "ops": [
            {"op": "add", "kind": "tools", "name": "b_new", "description": "b2"},
            {"op": "remove", "kind": "tools", "name": "b_only"}
        ]}))
        .await;
    assert_eq!(reply["ok"], json!(true), "{reply}");
    assert_eq!(
        next_line(&mut lines).await,
        "tools auth0 alpha=v1 beta=v2 (4 items): alpha__a_only, alpha__read, beta__b_new, beta__read"
    );
    let _ = watch.kill().await;
}

/// `--strategy prefix-from-server-info`: both servers report `listsync-rt`, so their `read`s
/// collide under one name and the combined line lists one tool fewer than the servers do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_server_info_prefixes_collide() {
    let alpha = serve_line(&[("read", "A-read"), ("a_only", "a")], None);
    let beta = serve_line(&[("read", "B-read"), ("b_only", "b")], None);
    let mut watch = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args([
            "watch",
            "--kinds",
            "tools",
            "--strategy",
            "prefix-from-server-info",
        ])
        .arg("--server")
        .arg(format!("alpha={alpha}"))
        .arg("--server")
        .arg(format!("beta={beta}"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    line_equal(
        &mut lines,
        "tools auth0 alpha=v1 beta=v1 (3 items): listsync-rt__a_only, listsync-rt__b_only, listsync-rt__read",
    )
    .await;
    let _ = watch.kill().await;
}

/// Bad named-server arguments are usage errors at once: exit status 2, one line on stderr.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_refuses_bad_server_arguments() {
    let cases: &[(&[&str], &str)] = &[
        (&["--server", "Alpha=x"], "'Alpha'"),
        (&["--server", "a_b=x"], "'a_b'"),
        (
            &[
                "--server",
                "alpha=x",
                "--url",
                "alpha=http://127.0.0.1:1/mcp",
            ],
            "twice",
        ),
        (&["--server", "alpha="], "no command"),
        (&["--server", "alpha=   "], "no command"),
        (&["--url", "alpha="], "no URL"),
        (&["--url", "alpha=ftp://x"], "not an http:// URL"),
        (&["--server", "alpha"], "NAME=COMMAND"),
        (&["--server", "alpha=x", "--stdio"], "--stdio"),
        (
            &["--url", "alpha=http://127.0.0.1:1/mcp", "--stdio"],
            "--stdio",
        ),
        (&["--server", "alpha=x", "--", "y"], "name every one"),
        (
            &["--server", "alpha=x", "--url", "http://127.0.0.1:1/mcp"],
            "name every one",
        ),
        (
            &["--server", "alpha=x", "--control", "/nonexistent"],
            "control channel",
        ),
    ];
    for (args, says) in cases {
        let started = std::time::Instant::now();
        let out = within(
            "watch exits",
            tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
                .arg("watch")
                .args(*args)
                .env_remove("LISTSYNC_CONTROL")
                .stdin(Stdio::null())
                .output(),
        )
        .await
        .expect("run listsync watch");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{args:?}: not at once"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("listsync: ") && err.contains(says),
            "{args:?}: {err}"
        );
    }
}

/// The next stderr line of a child that is a warning.
async fn next_warning(
    err: &mut tokio::io::Lines<BufReader<tokio::process::ChildStderr>>,
) -> String {
    within("a warning", async {
        loop {
            let l = err.next_line().await.unwrap().expect("stderr open");
            if l.contains("warning") {
                return l;
            }
        }
    })
    .await
}

/// The next line a child prints on stdout, as JSON.
async fn next_answer(
    out: &mut tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    what: &str,
) -> Value {
    let line = within(what, out.next_line())
        .await
        .unwrap()
        .expect("an answer");
    serde_json::from_str(&line).unwrap()
}

/// `listsync serve --stdio` says what its client sends that is not JSON-RPC (rmcp skips it
/// silently), a line that never ends once 64 KiB of it have arrived, and a request longer than
/// rmcp reads (dropped), and goes on serving: the `initialize` after the garbage is answered,
/// and a ping after the long one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_stdio_says_what_is_not_json_rpc_and_goes_on() {
    let mut serve = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = serve.stdin.take().unwrap();
    let mut out = BufReader::new(serve.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(serve.stderr.take().unwrap()).lines();
    stdin.write_all(b"hello garbage\n").await.unwrap();
    let w = next_warning(&mut err).await;
    assert!(
        w.contains("the client sent a line that is not JSON-RPC on stdin: \"hello garbage\""),
        "{w}"
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    let answer = next_answer(&mut out, "the initialize answer").await;
    assert_eq!(answer["id"], 1, "{answer}");
    assert!(answer["result"]["serverInfo"].is_object(), "{answer}");
    // Binary output without a newline is told before it ends.
    stdin.write_all(&vec![0u8; 100 << 10]).await.unwrap();
    let w = next_warning(&mut err).await;
    assert!(w.contains("(64 KiB without a newline so far)"), "{w}");
    // A request longer than rmcp reads (which rmcp drops) is told; serving goes on.
    let long = format!(
        "\n{{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"params\":{{\"pad\":\"{}\"}}}}\n",
        "x".repeat(17 << 20)
    );
    stdin.write_all(long.as_bytes()).await.unwrap();
    let w = next_warning(&mut err).await;
    assert!(
        w.contains("the client sent a line longer than 16 MiB on stdin (dropped, unread)"),
        "{w}"
    );
    stdin
        .write_all(
            b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n\
              {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}\n",
        )
        .await
        .unwrap();
    let answer = next_answer(&mut out, "the ping answer").await;
    assert_eq!(
        answer["id"], 3,
        "the dropped request is not answered: {answer}"
    );
}
