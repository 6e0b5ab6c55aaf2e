//! `listsync serve --script` and `listsync change` end to end. Each preset runs against the
//! reference client (`listsync watch`) and against the known-bad client strategy it names, both
//! recorded through `listsync record --http` and judged by `listsync audit`: the race the preset
//! names is found on the wire of the reference's session (not taken from any process's word),
//! the reference keeps the preset's property, and the known-bad strategy is caught by it.
//! `listsync change` sends batches through the admin socket and the HTTP admin endpoint; a
//! refused batch changes nothing (the reference client's list, and the next version, show it);
//! the admin endpoint is closed unless enabled and refuses a missing or wrong token; malformed
//! ops and scripts get one line naming the position and exit status 2. Every wait has a bound.

mod harness_support;

use harness_support::{audit, record_http as record};
use listsync_core::property::Property;
use listsync_observe::WalkFate;
use listsync_session::wire::{Wire, observe};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStdout};
use tokio::sync::mpsc;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

use listsync_testkit::within;

/// `listsync serve --http 127.0.0.1:0 ARGS...`: the child, its URL, and its stderr lines.
struct Serve {
    child: Child,
    url: String,
    stderr: mpsc::UnboundedReceiver<String>,
}

impl Serve {
    async fn start(args: &[&str]) -> Serve {
        let mut child = tokio::process::Command::new(EXE)
            .args(["serve", "--http", "127.0.0.1:0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn serve");
        let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
        let url = within("serve's URL", out.next_line())
            .await
            .expect("read")
            .expect("serve printed its URL");
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, stderr) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(l)) = err.next_line().await {
                eprintln!("{l}");
                let _ = tx.send(l);
            }
        });
        tokio::spawn(async move { while let Ok(Some(_)) = out.next_line().await {} });
        Serve { child, url, stderr }
    }

    /// Waits for a stderr line containing `what`.
    async fn said(&mut self, what: &str) -> String {
        within(what, async {
            loop {
                let l = self.stderr.recv().await.expect("serve ended");
                if l.contains(what) {
                    return l;
                }
            }
        })
        .await
    }
}

/// `listsync watch --url URL --kinds tools --strategy S`, and its stdout lines.
fn watch(url: &str, strategy: &str) -> (Child, Lines<BufReader<ChildStdout>>) {
    let mut child = tokio::process::Command::new(EXE)
        .args([
            "watch",
            "--kinds",
            "tools",
            "--strategy",
            strategy,
            "--url",
            url,
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn watch");
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    (child, lines)
}

/// Reads watch's lines until one contains `what`; returns it.
async fn until_line(lines: &mut Lines<BufReader<ChildStdout>>, what: &str) -> String {
    within(what, async {
        loop {
            let l = lines.next_line().await.expect("read").expect("watch ended");
            if l.contains(what) {
                return l;
            }
        }
    })
    .await
}

/// Waits until the log is settled: every walk ended, nothing unanswered, and nothing new for
/// half a second.
async fn settled(log: &Path) {
    let quiet = |w: &Wire| {
        w.walks.iter().all(|w| w.fate != WalkFate::Open) && w.unanswered.values().all(|n| *n == 0)
    };
    within("the session to settle", async {
        loop {
            if let Ok(l) = listsync_session::log::read(log)
                && quiet(&observe(&l.entries))
            {
                let n = l.entries.len();
                tokio::time::sleep(Duration::from_millis(500)).await;
                if let Ok(again) = listsync_session::log::read(log)
                    && again.entries.len() == n
                {
                    return;
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
}

fn status(doc: &Value, p: &str) -> String {
    doc[0]["verdicts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["property"] == p)
        .map(|v| v["status"].as_str().unwrap().to_owned())
        .unwrap_or_else(|| panic!("no verdict on {p}: {doc:#}"))
}

/// Serves `preset`, records `watch --strategy S` through the HTTP recorder until the script has
/// finished and the session settled; returns the log (and its directory).
async fn run_preset(preset: &str, strategy: &str) -> (PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let mut serve = Serve::start(&["--script", preset]).await;
    let (mut rec, rec_url) = record(&serve.url, &log).await;
    let (mut client, _lines) = watch(&rec_url, strategy);
    serve.said("script: finished").await;
    settled(&log).await;
    let _ = client.kill().await;
    let pid = rec.id().expect("record runs").to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .expect("run kill")
            .success()
    );
    let status = within("record exits", rec.wait()).await.unwrap();
    assert!(status.success(), "record: {status}");
    let _ = serve.child.kill().await;
    (log, dir)
}

/// Whether the race `situation` (core's name) shows on the log's wire: the notifications and
/// list requests of tools, in the order the client saw them.
fn reached(situation: &str, wire: &Wire) -> bool {
    let notices: Vec<u64> = wire
        .delivered
        .iter()
        .filter(|d| d.json["method"] == "notifications/tools/list_changed")
        .map(|d| d.seq)
        .collect();
    // Requests of a walk unanswered when a notification arrived: (walk, request index).
    let open_at = |seq: u64| -> Vec<(usize, usize)> {
        let mut open = Vec::new();
        for (j, w) in wire.walks.iter().enumerate() {
            for (i, r) in w.requests.iter().enumerate() {
                let answered = w.pages.get(i).map(|(s, _)| *s);
                if *r < seq && answered.is_none_or(|a| a > seq) {
                    open.push((j, i));
                }
            }
        }
        open
    };
    match situation {
        // A tools/list_changed reached the client while one of its tools/list was unanswered.
        "notify_during_refresh" => notices.iter().any(|n| !open_at(*n).is_empty()),
        // ... while the request for a page after the first was unanswered (a page in hand).
        "notify_mid_walk" => notices
            .iter()
            .any(|n| open_at(*n).iter().any(|(_, i)| *i >= 1)),
        // Two or more reached it while one request stayed unanswered.
        "burst_during_refresh" => wire.walks.iter().enumerate().any(|(j, w)| {
            (0..w.requests.len()).any(|i| {
                notices
                    .iter()
                    .filter(|n| open_at(**n).contains(&(j, i)))
                    .count()
                    >= 2
            })
        }),
        other => panic!("no wire check for situation {other}"),
    }
}

/// The preset's metadata: (property, known-bad strategy, situation).
fn preset(name: &str) -> (String, String, String) {
    let s = listsync_rt::script::Script::load(name).expect("preset");
    (
        s.property.expect("property"),
        s.wrong.expect("known-bad strategy"),
        s.situation.expect("situation"),
    )
}

/// The reference client meets the preset's race and keeps its property; the known-bad strategy
/// it names is caught by that property.
async fn preset_drives_the_race(name: &str) {
    let (property, wrong, situation) = preset(name);
    assert!(property.parse::<Property>().is_ok());

    let (log, _dir) = run_preset(name, "reference").await;
    let l = listsync_session::log::read(&log).unwrap();
    let wire = observe(&l.entries);
    assert!(
        reached(&situation, &wire),
        "{name}: the reference's session shows no {situation}: {wire:#?}"
    );
    let (code, doc) = audit(&log);
    assert_eq!(
        status(&doc, &property),
        "holds_as_observed",
        "{name}, reference: {doc:#}"
    );
    assert_eq!(code, 0, "{name}, reference: {doc:#}");

    let (log, _dir) = run_preset(name, &wrong).await;
    let (code, doc) = audit(&log);
    assert_eq!(
        status(&doc, &property),
        "violated",
        "{name}, {wrong}: {doc:#}"
    );
    assert_eq!(code, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_race_preset() {
    preset_drives_the_race("stale-race").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mid_walk_preset() {
    preset_drives_the_race("mid-walk").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn burst_preset() {
    preset_drives_the_race("burst").await;
}

/// `listsync change ARGS...`: exit code, stdout, stderr.
async fn change(args: &[&str]) -> (i32, String, String) {
    let out = tokio::process::Command::new(EXE)
        .arg("change")
        .args(args)
        .output()
        .await
        .expect("run change");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write_private(path: &Path, text: &str) {
    std::fs::write(path, text).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_commits_one_batch_by_socket_or_url_and_a_refused_one_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("admin.sock");
    let token = dir.path().join("admin.token");
    write_private(&token, "0123456789abcdef-admin\n");
    let mut serve = Serve::start(&[
        "--admin-socket",
        sock.to_str().unwrap(),
        "--admin-token-file",
        token.to_str().unwrap(),
    ])
    .await;
    serve.said("admin socket").await;
    let (_client, mut lines) = watch(&serve.url, "reference");
    until_line(&mut lines, "(3 items): echo, greet, time").await;
    let s = sock.to_str().unwrap();

    // One batch: one version, one notification (the client's next list shows both ops).
    let (code, out, err) =
        change(&[s, "add:tool:weather=Tells the weather", "remove:tool:greet"]).await;
    assert_eq!(
        (code, out.trim()),
        (0, "version 2 (1 notifications)"),
        "{err}"
    );
    let l = until_line(&mut lines, " v2 ").await;
    assert!(l.ends_with("(3 items): echo, time, weather"), "{l}");

    // Refused: the add would apply, the remove cannot; nothing of it is applied.
    let (code, out, err) = change(&[s, "add:tool:extra=Extra", "remove:tool:nosuch"]).await;
    assert_eq!(code, 1, "{out}{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("nothing changed") && err.contains("'nosuch' does not exist"),
        "{err}"
    );

    // Through the HTTP admin endpoint: the next version is 3 (the refused batch made none),
    // and the list has no `extra`.
    let (code, out, err) = change(&[
        &serve.url,
        "--token-file",
        token.to_str().unwrap(),
        "update:tool:echo=Echoes, louder",
    ])
    .await;
    assert_eq!(
        (code, out.trim()),
        (0, "version 3 (1 notifications)"),
        "{err}"
    );
    let l = until_line(&mut lines, " v3 ").await;
    assert!(l.ends_with("(3 items): echo, time, weather"), "{l}");

    // A wrong token: 403, nothing changed.
    let wrong = dir.path().join("wrong.token");
    write_private(&wrong, "fedcba9876543210-admin\n");
    let (code, _, err) = change(&[
        &serve.url,
        "--token-file",
        wrong.to_str().unwrap(),
        "remove:tool:echo",
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("403"), "{err}");

    // The endpoint itself: no token 401, a wrong one 403, not POST 405.
    let admin = serve.url.replace("/mcp", "/admin/change");
    let http = reqwest::Client::new();
    let body = r#"{"ops":[{"op":"remove","kind":"tools","name":"echo"}]}"#;
    let status = |r: reqwest::Response| r.status().as_u16();
    assert_eq!(
        status(http.post(&admin).body(body).send().await.unwrap()),
        401
    );
    assert_eq!(
        status(
            http.post(&admin)
                .bearer_auth("0123456789abcdef-admix")
                .body(body)
                .send()
                .await
                .unwrap()
        ),
        403
    );
    assert_eq!(
        status(
            http.get(&admin)
                .bearer_auth("0123456789abcdef-admin")
                .send()
                .await
                .unwrap()
        ),
        405
    );
    // Malformed ops: 400, and the CLI names the op.
    assert_eq!(
        status(
            http.post(&admin)
                .bearer_auth("0123456789abcdef-admin")
                .body(r#"{"ops":[{"op":"explode"}]}"#)
                .send()
                .await
                .unwrap()
        ),
        400
    );
    // Still version 3 with echo: none of the refused requests changed anything.
    let (code, out, err) = change(&[s, "add:tool:extra=Extra"]).await;
    assert_eq!(
        (code, out.trim()),
        (0, "version 4 (1 notifications)"),
        "{err}"
    );
    let l = until_line(&mut lines, " v4 ").await;
    assert!(l.ends_with("(4 items): echo, extra, time, weather"), "{l}");

    // A server without --admin-token-file has no admin endpoint: 404, token or not.
    let plain = Serve::start(&[]).await;
    let admin = plain.url.replace("/mcp", "/admin/change");
    let r = http
        .post(&admin)
        .bearer_auth("0123456789abcdef-admin")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(r.status().as_u16(), 404);
    let (code, _, err) = change(&[
        &plain.url,
        "--token-file",
        token.to_str().unwrap(),
        "remove:tool:echo",
    ])
    .await;
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("404"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_ops_and_scripts_get_one_line_naming_the_position_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let nowhere = dir.path().join("none.sock");
    let nowhere = nowhere.to_str().unwrap();
    for (ops, want) in [
        (
            vec!["remove:tool:a", "add:tool:b"],
            "op 2 (\"add:tool:b\"): add needs a description",
        ),
        (
            vec!["explode:tool:a=b"],
            "op 1 (\"explode:tool:a=b\"): unknown verb",
        ),
        (vec![r#"{"op":"add","kind":"gadgets"}"#], "op 1 ("),
    ] {
        let mut args = vec![nowhere];
        args.extend(ops.iter().copied());
        let (code, out, err) = change(&args).await;
        assert_eq!(code, 2, "{ops:?}: {out}{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{ops:?}: {err}");
    }
    // No server there: one line, exit 2.
    let (code, _, err) = change(&[nowhere, "remove:tool:a"]).await;
    assert_eq!(code, 2, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");

    let bad = dir.path().join("bad.toml");
    for (text, want) in [
        (
            "[[step]]\nat = \"1s\"\nops = [\"add:tool:a\"]\n",
            "bad.toml:3:8: step 1: ops op 1: add needs a description",
        ),
        (
            "[[step]]\nevery = \"often\"\nops = [\"remove:tool:a\"]\n",
            "bad.toml:2:9:",
        ),
        ("[[step]\n", "bad.toml:1:"),
    ] {
        std::fs::write(&bad, text).unwrap();
        let out = tokio::process::Command::new(EXE)
            .args(["serve", "--stdio", "--script"])
            .arg(&bad)
            .stdin(Stdio::null())
            .output()
            .await
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains(want), "{text:?}: {err}");
    }
    let out = tokio::process::Command::new(EXE)
        .args(["serve", "--stdio", "--script", "no-such-preset"])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no such preset (stale-race, mid-walk"),
        "{err}"
    );
}

/// A scripted MCP client on the stdio of `listsync record -- listsync serve --stdio ...`.
struct Stdio_ {
    child: Child,
    stdin: tokio::process::ChildStdin,
    out: Lines<BufReader<ChildStdout>>,
    stderr: mpsc::UnboundedReceiver<String>,
    next: u64,
    /// Server notifications seen while waiting for responses, in order.
    notices: Vec<String>,
}

impl Stdio_ {
    fn start(log: &Path, serve: &[&str]) -> Stdio_ {
        let mut child = tokio::process::Command::new(EXE)
            .args(["record", "--out"])
            .arg(log)
            .args(["--", EXE, "serve", "--stdio"])
            .args(serve)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("spawn record");
        let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, stderr) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(l)) = err.next_line().await {
                eprintln!("{l}");
                let _ = tx.send(l);
            }
        });
        let stdin = child.stdin.take().unwrap();
        let out = BufReader::new(child.stdout.take().unwrap()).lines();
        Stdio_ {
            child,
            stdin,
            out,
            stderr,
            next: 0,
            notices: Vec::new(),
        }
    }

    /// Waits for a line of the server's (passed-through) stderr containing `what`.
    async fn said(&mut self, what: &str) {
        within(what, async {
            loop {
                let l = self.stderr.recv().await.expect("server ended");
                if l.contains(what) {
                    return;
                }
            }
        })
        .await
    }

    async fn send(&mut self, v: Value) {
        use tokio::io::AsyncWriteExt;
        let mut line = v.to_string();
        line.push('\n');
        self.stdin.write_all(line.as_bytes()).await.unwrap();
    }

    /// A request's response; the notifications before it are kept in `notices`.
    async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        self.send(serde_json::json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}))
            .await;
        within(method, async {
            loop {
                let l = self.out.next_line().await.unwrap().expect("server ended");
                let v: Value = serde_json::from_str(&l).unwrap();
                if v["id"] == id {
                    return v;
                }
                if let Some(m) = v["method"].as_str() {
                    self.notices.push(m.to_owned());
                }
            }
        })
        .await
    }
}

/// `call-removal`: the client's call of `echo` is held in the tool while `echo` is removed; the
/// removal's notification reaches the client before the call's result, a list after it lacks
/// `echo`, and a later call of it is refused. The audit of that session finds no violation.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn call_removal_preset_removes_the_tool_under_a_running_call() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let mut c = Stdio_::start(&log, &["--script", "call-removal"]);
    let init = serde_json::json!({"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}});
    c.request("initialize", init).await;
    c.send(serde_json::json!({"jsonrpc":"2.0","method":"notifications/initialized"}))
        .await;
    let tools = c.request("tools/list", serde_json::json!({})).await;
    assert!(tools.to_string().contains("\"echo\""), "{tools}");
    c.said("waiting for the next call of echo").await;
    let call = c
        .request(
            "tools/call",
            serde_json::json!({"name":"echo","arguments":{}}),
        )
        .await;
    // The result of the call that ran while echo existed is a success, and the removal was
    // announced before it.
    assert!(call.get("result").is_some(), "{call}");
    assert_ne!(call["result"]["isError"], true, "{call}");
    assert_eq!(c.notices, ["notifications/tools/list_changed"]);
    let tools = c.request("tools/list", serde_json::json!({})).await;
    assert!(!tools.to_string().contains("\"echo\""), "{tools}");
    let again = c
        .request(
            "tools/call",
            serde_json::json!({"name":"echo","arguments":{}}),
        )
        .await;
    let refused = again.get("error").is_some() || again["result"]["isError"] == true;
    assert!(refused, "{again}");
    drop(c.stdin);
    within("record exits", c.child.wait()).await.unwrap();

    // On the wire: the list_changed came while the first call was unanswered.
    let l = listsync_session::log::read(&log).unwrap();
    let wire = observe(&l.entries);
    let first = &wire.calls[0];
    let (answered, ok) = first.answer.expect("answered");
    assert!(ok);
    assert!(
        wire.delivered
            .iter()
            .any(|d| d.json["method"] == "notifications/tools/list_changed"
                && d.seq > first.request
                && d.seq < answered),
        "{wire:#?}"
    );
    let (code, doc) = audit(&log);
    assert_ne!(status(&doc, "no_call_to_removed"), "violated", "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
}
