//! `listsync watch` against servers that fail or lie, as a user runs it: every failure and every
//! retry is one line on stderr within a second of it, the client gives up after a bounded number
//! of failed attempts with exit status 1, an invalid URL is a usage error at once, a server that
//! floods notifications instead of answering the handshake (a child, or over HTTP) is given up
//! on at once rather than at the handshake's timeout, responses that answer no request in
//! flight (which rmcp drops) are said as they arrive, and a server that answers every
//! `tools/list` with `tools/list_changed` (a refresh storm) does not make `watch` print the same
//! snapshot again. Bounds are generous (the machine may be loaded); the figures are printed.

use listsync_testkit::peers::{FakeServer, Lister, page, tool};
use rmcp::model::ListToolsResult;
use rmcp::service::{Peer, RoleServer};
use rmcp::{ErrorData as McpError, ServiceExt};
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");
/// "Within a second", with a margin for a loaded machine.
const PROMPT: Duration = Duration::from_secs(3);
/// Longest a failing `watch` may take to give up.
const GIVE_UP: Duration = Duration::from_secs(40);

/// Runs `listsync watch ARGS` and collects its stderr lines with the time each arrived.
async fn watch_lines(args: &[&str]) -> (Option<i32>, Vec<(Duration, String)>) {
    let started = Instant::now();
    let mut child = Command::new(EXE)
        .arg("watch")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut got = Vec::new();
    let read = async {
        while let Ok(Some(l)) = lines.next_line().await {
            got.push((started.elapsed(), l));
        }
    };
    if tokio::time::timeout(GIVE_UP, read).await.is_err() {
        let _ = child.kill().await;
        panic!("watch {args:?} did not end within {GIVE_UP:?}: {got:?}");
    }
    let status = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("exits")
        .expect("status");
    (status.code(), got)
}

/// Runs `listsync watch ARGS` until a stderr line satisfies `until` (or stderr ends, or
/// [`GIVE_UP`] passes), then kills it; returns the lines read with the time each arrived.
async fn watch_until(args: &[&str], until: impl Fn(&str) -> bool) -> Vec<(Duration, String)> {
    let started = Instant::now();
    let mut child = Command::new(EXE)
        .arg("watch")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut got = Vec::new();
    let read = async {
        while let Ok(Some(l)) = lines.next_line().await {
            let done = until(&l);
            got.push((started.elapsed(), l));
            if done {
                return;
            }
        }
    };
    let _ = tokio::time::timeout(GIVE_UP, read).await;
    let _ = child.kill().await;
    got
}

fn show(lines: &[(Duration, String)]) -> String {
    lines
        .iter()
        .map(|(t, l)| format!("{:>6} ms  {l}", t.as_millis()))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Failure lines and retry lines alternate, the first one comes promptly, and the end is a
/// "giving up" line with exit status 1.
fn assert_loud_then_gives_up(what: &str, code: Option<i32>, lines: &[(Duration, String)]) {
    eprintln!("watch {what}:\n{}", show(lines));
    assert_eq!(code, Some(1), "{what}: exit status\n{}", show(lines));
    let (first, _) = lines
        .first()
        .unwrap_or_else(|| panic!("{what}: nothing printed"));
    assert!(*first < PROMPT, "{what}: first line after {first:?}");
    assert!(
        lines.iter().all(|(_, l)| l.starts_with("listsync watch: ")),
        "{what}: one-line diagnostics\n{}",
        show(lines)
    );
    let failures = lines
        .iter()
        .filter(|(_, l)| l.contains("cannot connect"))
        .count();
    let retries = lines
        .iter()
        .filter(|(_, l)| l.contains("reconnecting in"))
        .count();
    assert!(
        failures >= 2 && retries + 1 == failures,
        "{what}\n{}",
        show(lines)
    );
    // Each retry is announced right after the failure that caused it.
    for w in lines.windows(2) {
        if w[1].1.contains("reconnecting in") {
            assert!(w[0].1.contains("cannot connect"), "{what}\n{}", show(lines));
            assert!(w[1].0 - w[0].0 < PROMPT);
        }
    }
    assert!(
        lines.last().unwrap().1.contains("giving up"),
        "{what}\n{}",
        show(lines)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_reported_and_given_up_on() {
    let (code, lines) = watch_lines(&["--", "/nonexistent/server"]).await;
    assert_loud_then_gives_up("-- /nonexistent", code, &lines);
    assert!(lines[0].1.contains("No such file"), "{}", show(&lines));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_at_once_is_reported_with_its_status() {
    let (code, lines) = watch_lines(&["--retry", "2", "--", "false"]).await;
    assert_loud_then_gives_up("-- false", code, &lines);
    assert!(lines[0].1.contains("exit status: 1"), "{}", show(&lines));
    assert_eq!(
        lines
            .iter()
            .filter(|(_, l)| l.contains("cannot connect"))
            .count(),
        3,
        "--retry 2: the first attempt and two retries"
    );
}

/// `listsync watch` of a server child that runs `script`: its first line, promptly, is a
/// warning that the server printed something that is not JSON-RPC, containing `want`. The
/// handshake's timeout (30 s) is ten times the bound the warning is held to, so a warning said
/// only when the attempt times out fails here; `watch` is stopped once the warning is read
/// (what follows, a handshake that times out and is given up on, is the silent server's test
/// below). The server child keeps its stdout open and reads its stdin to the end, so it ends
/// when `watch` is killed.
async fn bad_output_is_reported_at_once(what: &str, script: &str, want: &str) {
    let lines = watch_until(
        &["--timeout", "30", "--retry", "0", "--", "sh", "-c", script],
        |l| l.contains("not JSON-RPC"),
    )
    .await;
    eprintln!("{what}:\n{}", show(&lines));
    let Some((t, first)) = lines.first() else {
        panic!("{what}: nothing printed within {GIVE_UP:?}")
    };
    assert!(*t < PROMPT, "{what}: after {t:?}\n{}", show(&lines));
    assert!(
        first.contains("not JSON-RPC") && first.contains(want),
        "{what}: {first}\n{}",
        show(&lines)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_printing_garbage_is_reported_at_once() {
    bad_output_is_reported_at_once(
        "garbage",
        "echo this is not MCP; cat >/dev/null",
        "this is not MCP",
    )
    .await;
}

/// A server whose stdout never ends a line (binary output) is told once 64 KiB of it have
/// arrived, not at a newline that never comes or at the handshake's timeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_printing_without_newlines_is_reported_at_once() {
    bad_output_is_reported_at_once(
        "no newlines",
        "head -c 200000 /dev/zero; cat >/dev/null",
        "(64 KiB without a newline so far)",
    )
    .await;
}

/// A server child that never answers the handshake, and prints nothing, is said to be slow
/// within a second of each attempt, not first at the handshake's timeout; then the attempt
/// times out, is retried once and given up on, loudly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_answer_is_said_to_be_slow_at_once() {
    let (code, lines) = watch_lines(&["--timeout", "4", "--retry", "1", "--", "sleep", "60"]).await;
    let waiting = "warning: no answer to the handshake after 1s; still waiting (gives up after 4s)";
    let (t, first) = &lines[0];
    assert!(
        *t < PROMPT && first.ends_with(waiting),
        "first line after {t:?}\n{}",
        show(&lines)
    );
    assert_eq!(
        lines.iter().filter(|(_, l)| l.ends_with(waiting)).count(),
        2,
        "once per attempt\n{}",
        show(&lines)
    );
    // Then each attempt times out (at 4 s, so not promptly: the lines are checked here rather
    // than by assert_loud_then_gives_up).
    assert_eq!(code, Some(1), "{}", show(&lines));
    let timed_out = lines
        .iter()
        .filter(|(_, l)| l.contains("cannot connect: connecting timed out after 4s"))
        .count();
    assert_eq!(timed_out, 2, "{}", show(&lines));
    assert!(
        lines.last().unwrap().1.contains("giving up"),
        "{}",
        show(&lines)
    );
}

const FLOOD_LINE: &str = r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#;

/// `listsync watch ARGS` of a server that floods notifications instead of answering the
/// handshake: given up on once it has sent 10,000 of them (milliseconds), not at the handshake's
/// timeout (10 s by default), and the line says what it sent.
async fn a_flood_before_the_handshake_is_given_up_on_at_once(what: &str, args: &[&str]) {
    let mut all = vec!["--retry", "1"];
    all.extend_from_slice(args);
    let (code, lines) = watch_lines(&all).await;
    assert_loud_then_gives_up(what, code, &lines);
    assert!(
        lines[0].1.contains(
            "the server sent 10000 messages without answering the handshake \
             (the last: notifications/tools/list_changed)"
        ),
        "{what}\n{}",
        show(&lines)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_child_talking_without_answering_is_given_up_on_at_once() {
    let flood = format!("yes '{FLOOD_LINE}'");
    for era in ["2025-11-25", "2026-07-28"] {
        a_flood_before_the_handshake_is_given_up_on_at_once(
            &format!("a server child's flood, {era}"),
            &["--era", era, "--", "sh", "-c", &flood],
        )
        .await;
    }
}

/// A Streamable HTTP server on loopback whose every response is an endless event stream:
/// `first` (if any), then the flood. Returns its URL and its task.
async fn flooding_http_server(first: Option<&str>) -> (String, tokio::task::JoinHandle<()>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let event = format!("data: {FLOOD_LINE}\n\n").repeat(100);
    let chunk = format!("{:x}\r\n{event}\r\n", event.len());
    let first = first
        .map(|m| {
            let e = format!("data: {m}\n\n");
            format!("{:x}\r\n{e}\r\n", e.len())
        })
        .unwrap_or_default();
    let server = tokio::spawn(async move {
        loop {
            let Ok((mut conn, _)) = listener.accept().await else {
                return;
            };
            let (first, chunk) = (first.clone(), chunk.clone());
            tokio::spawn(async move {
                // Any request gets the flood (the head is read, the body is not needed).
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let start = format!(
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\
                     Transfer-Encoding: chunked\r\n\r\n{first}"
                );
                if conn.write_all(start.as_bytes()).await.is_err() {
                    return;
                }
                while conn.write_all(chunk.as_bytes()).await.is_ok() {}
            });
        }
    });
    (url, server)
}

/// Over Streamable HTTP the flood comes in the event stream that answers the handshake's POST
/// (rmcp's HTTP worker reads that stream itself).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_talking_without_answering_is_given_up_on_at_once() {
    let (url, server) = flooding_http_server(None).await;
    for era in ["2025-11-25", "2026-07-28"] {
        a_flood_before_the_handshake_is_given_up_on_at_once(
            &format!("an HTTP server's flood, {era}"),
            &["--era", era, "--url", &url],
        )
        .await;
    }
    server.abort();
}

/// A response to another request (a made-up id) first in the handshake's event stream, then
/// the flood: rmcp's HTTP worker takes the first response as the handshake's answer and refuses
/// it for its id, so the attempt fails at once, saying the id — the flood after it is never
/// read (and the guard, which counts until the first response, has no flood to count).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_handshake_answered_with_another_id_is_given_up_on_at_once() {
    let stray = r#"{"jsonrpc":"2.0","id":999,"result":{}}"#;
    let (url, server) = flooding_http_server(Some(stray)).await;
    let (code, lines) = watch_lines(&["--retry", "1", "--url", &url]).await;
    assert_loud_then_gives_up("stray response, then flood", code, &lines);
    assert!(
        lines
            .iter()
            .any(|(_, l)| l.contains("cannot connect") && l.contains("999")),
        "{}",
        show(&lines)
    );
    server.abort();
}

/// A server child that answers the handshake, then answers the client's `tools/list` (request
/// 1: rmcp numbers requests from 0, and only tools are listed) with what answers no request —
/// a made-up id, an error without an id, an id that is not an integer or a string — before the
/// real answer. rmcp drops each with nothing said, so the request they were meant for would wait
/// for its timeout; each is said as it arrives. Then the server exits, and `watch` (no retry)
/// gives up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn responses_that_answer_no_request_are_said_at_once() {
    let tools = r#"{"tools":[{"name":"a","inputSchema":{"type":"object"}}]}"#;
    let script = format!(
        r#"read l; echo '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{"listChanged":true}}}},"serverInfo":{{"name":"liar","version":"1"}}}}}}'
read l; read l
echo '{{"jsonrpc":"2.0","id":1001,"result":{tools}}}'
echo '{{"jsonrpc":"2.0","error":{{"code":-32603,"message":"boom"}}}}'
echo '{{"jsonrpc":"2.0","id":1.5,"result":{tools}}}'
echo '{{"jsonrpc":"2.0","id":1,"result":{tools}}}'
echo '{{"jsonrpc":"2.0","id":1,"result":{tools}}}'
sleep 1"#
    );
    let (code, lines) = watch_lines(&[
        "--kinds", "tools", "--retry", "0", "--", "sh", "-c", &script,
    ])
    .await;
    eprintln!("a server answering what was not asked:\n{}", show(&lines));
    assert_eq!(code, Some(1), "{}", show(&lines));
    let at = |want: &str| {
        lines
            .iter()
            .find(|(_, l)| l.contains(want))
            .map(|(t, _)| *t)
            .unwrap_or_else(|| panic!("no line with {want:?}\n{}", show(&lines)))
    };
    for want in [
        "warning: the server sent a response to request 1001, which is not in flight \
         (never sent, or answered already); dropped",
        "warning: the server sent an error without a request id (it could not tell which \
         request it answers): -32603 boom; dropped",
        "warning: the server printed a JSON line on stdout that is not a JSON-RPC message \
         (dropped): \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"id\\\":1.5,",
        // The second answer to request 1.
        "warning: the server sent a response to request 1, which is not in flight",
    ] {
        let t = at(want);
        assert!(t < PROMPT, "{want:?} after {t:?}\n{}", show(&lines));
    }
    // The real answer was taken: no listing failed or timed out.
    assert!(
        !lines.iter().any(|(_, l)| l.contains("listing failed")),
        "{}",
        show(&lines)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_url_is_reported_and_given_up_on() {
    let (code, lines) = watch_lines(&["--url", "http://127.0.0.1:1/mcp"]).await;
    assert_loud_then_gives_up("--url http://127.0.0.1:1/mcp", code, &lines);
    assert!(lines[0].1.contains("refused"), "{}", show(&lines));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_invalid_url_is_a_usage_error_at_once() {
    let started = Instant::now();
    let out = std::process::Command::new(EXE)
        .args(["watch", "--url", "not-a-url"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(started.elapsed() < PROMPT);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not an http:// URL"), "{err}");
}

/// A hostile server: lists one tool, and either announces a change after every list (a storm)
/// or paginates forever through one repeated cursor.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hostility {
    Storm,
    CursorCycle,
}

struct Hostile {
    how: Hostility,
    lists: Arc<AtomicU64>,
}

impl Lister for Hostile {
    async fn list(
        &self,
        _cursor: Option<String>,
        peer: &Peer<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        self.lists.fetch_add(1, Ordering::SeqCst);
        let mut r = page(vec![tool("only", "the one tool")], None);
        match self.how {
            Hostility::Storm => {
                // The easy mistake: announce a change in reply to every list.
                let peer = peer.clone();
                tokio::spawn(async move {
                    let _ = peer.notify_tool_list_changed().await;
                });
            }
            Hostility::CursorCycle => r.next_cursor = Some("again".into()),
        }
        Ok(r)
    }
}

/// `listsync watch --stdio` with the hostile server on its pipes; returns the stderr lines seen
/// within `window` (or until the process ends), its exit status if it ended, and the lists
/// served.
async fn against(how: Hostility, window: Duration) -> (Vec<(Duration, String)>, Option<i32>, u64) {
    let started = Instant::now();
    let mut child = Command::new(EXE)
        .args(["watch", "--stdio", "--kinds", "tools"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch --stdio");
    let io = (child.stdout.take().unwrap(), child.stdin.take().unwrap());
    let lists = Arc::new(AtomicU64::new(0));
    let hostile = Hostile {
        how,
        lists: lists.clone(),
    };
    let server = FakeServer::new("hostile", Arc::new(hostile), Arc::default());
    tokio::spawn(async move {
        if let Ok(running) = server.serve(io).await {
            let _ = running.waiting().await;
        }
    });
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut got = Vec::new();
    let ended = tokio::time::timeout(window, async {
        while let Ok(Some(l)) = lines.next_line().await {
            got.push((started.elapsed(), l));
        }
    })
    .await
    .is_ok();
    let code = if ended {
        // Its stderr closed: the process is exiting.
        let status = tokio::time::timeout(Duration::from_secs(5), child.wait()).await;
        status.expect("exits").ok().and_then(|s| s.code())
    } else {
        let _ = child.kill().await;
        None
    };
    (got, code, lists.load(Ordering::SeqCst))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_storm_prints_the_snapshot_once() {
    let (lines, code, lists) = against(Hostility::Storm, Duration::from_secs(3)).await;
    let changes: Vec<_> = lines
        .iter()
        .filter(|(_, l)| l.starts_with("tools "))
        .collect();
    eprintln!(
        "storm: {lists} tools/list served in 3 s; {} change line(s):\n{}",
        changes.len(),
        show(&lines)
    );
    assert_eq!(code, None, "still watching");
    assert!(lists >= 2, "the storm made the client list again ({lists})");
    assert_eq!(
        changes.len(),
        1,
        "one snapshot, printed once\n{}",
        show(&lines)
    );
    assert!(changes[0].1.contains("(1 items): only"), "{}", changes[0].1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cursor_cycle_is_reported_retried_and_given_up_on() {
    let (lines, code, lists) = against(Hostility::CursorCycle, GIVE_UP).await;
    eprintln!("cursor cycle: {lists} tools/list served:\n{}", show(&lines));
    assert_eq!(code, Some(1), "gives up\n{}", show(&lines));
    let failed: Vec<_> = lines
        .iter()
        .filter(|(_, l)| l.contains("tools: listing failed: server returned cursor 'again' twice"))
        .collect();
    assert_eq!(
        failed.len(),
        6,
        "the first attempt and five retries\n{}",
        show(&lines)
    );
    assert!(
        failed[0].0 < PROMPT,
        "first failure reported after {:?}",
        failed[0].0
    );
    let retries = lines
        .iter()
        .filter(|(_, l)| l.contains("tools: retry "))
        .count();
    assert_eq!(retries, 5, "{}", show(&lines));
    assert!(
        lines
            .last()
            .unwrap()
            .1
            .contains("tools: giving up after 6 failed attempts"),
        "{}",
        show(&lines)
    );
    assert!(lists <= 2 * 6, "bounded work: {lists} lists");
}

/// A stdio server (python3, stdlib only) that serves its tools list in one page, announces a
/// change after that first walk, and exits while answering page 2 of the walk after the change
/// (which it serves in pages of one). Each start is counted in the file it is given: the first
/// start lists `a, b`, the second `a, b, c`, every later one exits with status 3 before the
/// handshake.
const DIES_MID_WALK: &str = r#"
import json, os, sys
state = sys.argv[1]
n = int(open(state).read()) if os.path.exists(state) else 0
open(state, "w").write(str(n + 1))
if n >= 2:
    sys.stderr.write("not today\n")
    sys.exit(3)
names = [["a", "b"], ["a", "b", "c"]][n]
walks = 0
def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()
def tool(name):
    return {"name": name, "inputSchema": {"type": "object"}}
for line in sys.stdin:
    m = json.loads(line)
    method, rid = m.get("method"), m.get("id")
    if method == "initialize":
        send({"jsonrpc": "2.0", "id": rid, "result": {
            "protocolVersion": m["params"]["protocolVersion"],
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": {"name": "dies-mid-walk", "version": "1"}}})
    elif method == "tools/list":
        if (m.get("params") or {}).get("cursor") is not None:
            sys.exit(0)
        walks += 1
        if walks == 1:
            send({"jsonrpc": "2.0", "id": rid,
                  "result": {"tools": [tool(x) for x in names]}})
            send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        else:
            send({"jsonrpc": "2.0", "id": rid,
                  "result": {"tools": [tool(names[0])], "nextCursor": "2"}})
    elif rid is not None:
        send({"jsonrpc": "2.0", "id": rid, "result": {}})
"#;

/// A server child that exits mid-walk is restarted: the snapshot is said to be stale (with
/// the exit status), the child is started again after a back-off, the list it serves is
/// printed, and after `--retry 2` failed reconnects in a row (the child now exits at once) the
/// run gives up naming 2 and the last error. Every count said matches the starts the server
/// counted itself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_mid_walk_is_restarted_then_given_up_on() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("dies_mid_walk.py");
    std::fs::write(&script, DIES_MID_WALK).unwrap();
    let starts = dir.path().join("starts");
    let mut child = Command::new(EXE)
        .args(["watch", "--kinds", "tools", "--retry", "2", "--", "python3"])
        .arg(&script)
        .arg(&starts)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync watch");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut err = BufReader::new(child.stderr.take().unwrap()).lines();
    let (mut shown, mut said) = (Vec::new(), Vec::new());
    let read = async {
        let (mut out_open, mut err_open) = (true, true);
        while out_open || err_open {
            tokio::select! {
                l = out.next_line(), if out_open => match l {
                    Ok(Some(l)) => shown.push(l),
                    _ => out_open = false,
                },
                l = err.next_line(), if err_open => match l {
                    Ok(Some(l)) => said.push(l),
                    _ => err_open = false,
                },
            }
        }
    };
    if tokio::time::timeout(GIVE_UP, read).await.is_err() {
        let _ = child.kill().await;
        panic!("watch did not end within {GIVE_UP:?}:\n{shown:#?}\n{said:#?}");
    }
    let code = tokio::time::timeout(Duration::from_secs(5), child.wait())
        .await
        .expect("exits")
        .expect("status")
        .code();
    let both = format!(
        "stdout:\n{}\nstderr:\n{}",
        shown.join("\n"),
        said.join("\n")
    );
    eprintln!("{both}");
    assert_eq!(code, Some(1), "{both}");

    // stdout: the first list, the same list stale, the restarted server's list, stale again.
    let at = |want: &dyn Fn(&str) -> bool| shown.iter().position(|l| want(l));
    let first = at(&|l| l.ends_with("(2 items): a, b")).expect(&both);
    let stale = at(&|l| l.ends_with("(2 items) stale: a, b")).expect(&both);
    let next = at(&|l| l.ends_with("(3 items): a, b, c")).expect(&both);
    assert!(first < stale && stale < next, "{both}");
    assert!(
        shown[next..].iter().any(|l| l.contains(" stale: a, b, c")),
        "{both}"
    );

    // stderr: each loss says the child's exit status and that the lists are stale.
    let lost: Vec<_> = said.iter().filter(|l| l.contains("disconnected")).collect();
    assert_eq!(lost.len(), 2, "{both}");
    assert!(
        lost.iter()
            .all(|l| l.contains("exit status: 0") && l.contains("stale")),
        "{both}"
    );
    // One reconnect after the first loss (it served a list: the count starts again), two
    // after the second, each failing with the child's status.
    let reconnects: Vec<_> = said
        .iter()
        .filter(|l| l.contains("reconnecting in"))
        .collect();
    assert_eq!(reconnects.len(), 3, "{both}");
    assert!(reconnects[0].ends_with("(attempt 1 of 2)"), "{both}");
    assert!(reconnects[1].ends_with("(attempt 1 of 2)"), "{both}");
    assert!(reconnects[2].ends_with("(attempt 2 of 2)"), "{both}");
    let failed: Vec<_> = said
        .iter()
        .filter(|l| l.contains("cannot connect"))
        .collect();
    assert_eq!(failed.len(), 2, "{both}");
    assert!(
        failed.iter().all(|l| l.contains("exit status: 3")),
        "{both}"
    );
    let last = said.last().expect(&both);
    assert!(
        last.contains("giving up after 2 failed reconnects in a row; last error: ")
            && last.contains("exit status: 3"),
        "{both}"
    );
    assert!(!said.iter().any(|l| l.contains(" 0 failed")), "{both}");
    // The server counted its own starts: the first, its restart, and the two failed attempts.
    assert_eq!(std::fs::read_to_string(&starts).unwrap(), "4", "{both}");
}
