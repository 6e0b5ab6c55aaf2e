//! `listsync serve` as a process against hostile local peers, with memory and CPU measured from
//! /proc/PID: the memory one 2025-11-25 session costs and the 503 past the session cap; the
//! accept loop with its file descriptors exhausted (it backs off instead of spinning); the
//! control channel fed a line that is not UTF-8 and a 200 MB line without a newline (an error
//! reply each, bounded memory, and serving goes on); a stdio client flooding requests without
//! reading the answers (it waits for them, nothing lost). Also what a new user sees: the demo catalog
//! without `--initial`, an empty one with `--empty`, and a strategy that comes only from the
//! `--strategy` flag, never from the environment.

use serde_json::{Value, json};
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpStream, UnixListener};
use tokio::process::{Child, Command};

const EXE: &str = env!("CARGO_BIN_EXE_listsync");
use listsync_testkit::{LIMIT, within};

/// A field of /proc/PID/status in bytes (`VmRSS`, `VmHWM`).
fn mem_of(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// CPU time used by a process so far (user + system, all threads), from /proc/PID/stat; the
/// kernel counts in clock ticks of 1/100 s on Linux.
fn cpu_of(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the parenthesised command name: state is field 3, utime 14, stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    Duration::from_millis((f[11] + f[12]) * 10)
}

/// `listsync serve --http 127.0.0.1:0 ARGS` (through `sh -c PREFIX exec ...` when `prefix` is
/// given); returns the child and its address.
async fn serve_http(prefix: Option<&str>, args: &[&str]) -> (Child, SocketAddr) {
    let mut cmd = match prefix {
        Some(p) => {
            let mut c = Command::new("sh");
            let mut line = format!("{p}; exec {EXE} serve --http 127.0.0.1:0");
            for a in args {
                line.push(' ');
                line.push_str(a);
            }
            c.args(["-c", &line]);
            c
        }
        None => {
            let mut c = Command::new(EXE);
            c.args(["serve", "--http", "127.0.0.1:0"]).args(args);
            c
        }
    };
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync serve");
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let url = within("the URL", out.next_line())
        .await
        .unwrap()
        .expect("a URL line");
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches("/mcp")
        .parse()
        .expect("an address");
    (child, addr)
}

/// One raw HTTP exchange (`Connection: close`); returns the status code.
async fn post_initialize(addr: SocketAddr) -> u16 {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
    let req = format!(
        "POST /mcp HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut tcp = TcpStream::connect(addr).await.unwrap();
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    within("a response", tcp.read_to_end(&mut raw))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    text.split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The memory of one session, measured: 300 sessions opened after a warm-up, the server's
/// resident set before and after. The cap answers 503 beyond.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_cost_little_and_are_capped() {
    let (child, addr) = serve_http(None, &["--empty", "--max-sessions", "340"]).await;
    let pid = child.id().unwrap();
    for _ in 0..20 {
        assert_eq!(post_initialize(addr).await, 200);
    }
    let before = mem_of(pid, "VmRSS");
    const N: u64 = 300;
    for _ in 0..N {
        assert_eq!(post_initialize(addr).await, 200);
    }
    let after = mem_of(pid, "VmRSS");
    let per = after.saturating_sub(before) / N;
    eprintln!(
        "sessions: resident set {} KiB before, {} KiB after {N} more sessions: {} bytes per session",
        before >> 10,
        after >> 10,
        per
    );
    assert!(per < 256 << 10, "{per} bytes per session");
    for _ in 0..20 {
        assert_eq!(post_initialize(addr).await, 200);
    }
    assert_eq!(post_initialize(addr).await, 503, "past --max-sessions 340");
}

/// With its file descriptors exhausted the server cannot accept the connections waiting for
/// it: it says so, backs off (instead of retrying at once, which spins a core), and serves again
/// once descriptors are free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accept_backs_off_when_out_of_descriptors() {
    let (mut child, addr) = serve_http(Some("ulimit -n 40"), &["--empty"]).await;
    let pid = child.id().unwrap();
    let mut conns = Vec::new();
    for _ in 0..80 {
        // The kernel completes connections into the backlog whether or not they are accepted.
        conns.push(TcpStream::connect(addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu0 = cpu_of(pid);
    let window = Duration::from_secs(3);
    tokio::time::sleep(window).await;
    let used = cpu_of(pid) - cpu0;
    eprintln!("out of descriptors: {used:?} of CPU in {window:?}");
    assert!(
        used < window / 3,
        "the accept loop used {used:?} of CPU in {window:?}"
    );
    drop(conns);
    // Serving again once descriptors are free (the held ones time out or are closed).
    let health = within("health after the storm", async {
        loop {
            if let Ok(mut tcp) = TcpStream::connect(addr).await {
                let _ = tcp
                    .write_all(
                        b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
                    )
                    .await;
                let mut raw = Vec::new();
                let _ =
                    tokio::time::timeout(Duration::from_secs(2), tcp.read_to_end(&mut raw)).await;
                if raw.starts_with(b"HTTP/1.1 200") {
                    return String::from_utf8_lossy(&raw).into_owned();
                }
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    assert!(health.contains("current"), "{health}");
    let _ = child.start_kill();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err).await;
    assert!(
        err.contains("accept failed"),
        "the exhaustion is reported:\n{err}"
    );
    let lines = err.lines().filter(|l| l.contains("accept failed")).count();
    assert!(
        lines < 100,
        "{lines} lines: reported with back-off, not per spin"
    );
}

/// The harness's end of a control channel.
struct Control {
    write: tokio::net::unix::OwnedWriteHalf,
    lines: tokio::io::Lines<BufReader<tokio::net::unix::OwnedReadHalf>>,
}

impl Control {
    async fn accept(listener: &UnixListener) -> Control {
        let (stream, _) = within("the control connection", listener.accept())
            .await
            .unwrap();
        let (read, write) = stream.into_split();
        Control {
            write,
            lines: BufReader::new(read).lines(),
        }
    }

    /// The next message that is a reply.
    async fn reply(&mut self) -> Value {
        within("a reply", async {
            loop {
                let line = self.lines.next_line().await.unwrap().expect("channel open");
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["type"] == "reply" {
                    return v;
                }
            }
        })
        .await
    }

    async fn event(&mut self, name: &str) -> Value {
        within(name, async {
            loop {
                let line = self.lines.next_line().await.unwrap().expect("channel open");
                let v: Value = serde_json::from_str(&line).unwrap();
                if v["event"] == name {
                    return v;
                }
            }
        })
        .await
    }

    async fn send(&mut self, bytes: &[u8]) {
        self.write.write_all(bytes).await.unwrap();
    }

    async fn catalog_works(&mut self, id: u64) {
        let cmd = json!({"type": "cmd", "id": id, "cmd": "catalog", "kind": "tools"});
        self.send(format!("{cmd}\n").as_bytes()).await;
        let r = self.reply().await;
        assert_eq!(
            (r["id"].as_u64(), r["ok"].as_bool()),
            (Some(id), Some(true)),
            "{r}"
        );
    }
}

fn control_socket(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("listsync-test-")
        .tempdir()
        .unwrap();
    let sock = dir.path().join(format!("{name}.sock"));
    (dir, sock)
}

/// `serve --stdio --control SOCK` with `extra` flags and environment; returns the child (stdin
/// held open) and its control channel after `ready`.
async fn serve_with_control(
    name: &str,
    extra: &[&str],
    env: &[(&str, &str)],
) -> (Child, Control, Value, tempfile::TempDir) {
    let (dir, sock) = control_socket(name);
    let listener = UnixListener::bind(&sock).unwrap();
    let child = Command::new(EXE)
        .args(["serve", "--stdio"])
        .args(extra)
        .arg("--control")
        .arg(&sock)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn listsync serve");
    let mut control = Control::accept(&listener).await;
    let ready = control.event("ready").await;
    (child, control, ready, dir)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_control_channel_survives_bad_bytes_and_huge_lines() {
    let (mut child, mut control, _, _dir) = serve_with_control("bytes", &["--empty"], &[]).await;
    let pid = child.id().unwrap();

    control.send(b"\xff\xfe not text\n").await;
    let r = control.reply().await;
    assert_eq!(r["ok"], false);
    assert!(r["error"].as_str().unwrap().contains("not UTF-8"), "{r}");
    control.catalog_works(1).await;

    // 200 MB without a newline, then the newline.
    let before = mem_of(pid, "VmRSS");
    let chunk = vec![b'x'; 1 << 20];
    let mut peak = before;
    for _ in 0..200 {
        control.send(&chunk).await;
        peak = peak.max(mem_of(pid, "VmRSS"));
    }
    control.send(b"\n").await;
    let r = control.reply().await;
    peak = peak.max(mem_of(pid, "VmRSS"));
    assert_eq!(r["ok"], false);
    assert!(
        r["error"].as_str().unwrap().contains("line too long"),
        "{r}"
    );
    let grew = peak.saturating_sub(before);
    eprintln!(
        "control channel: a 200 MB line grew the server's resident set by {} KiB",
        grew >> 10
    );
    assert!(grew < 32 << 20, "grew by {} MiB", grew >> 20);
    control.catalog_works(2).await;
    assert!(child.try_wait().unwrap().is_none(), "still serving");
    let _ = child.start_kill();
}

/// A stdio client that writes requests without reading the answers waits for them: `serve
/// --stdio` reads no further while 256 of its requests are unanswered, so its memory stays
/// bounded (rmcp alone starts a task per request read: 1.8 GB in 8 s of pings), and every
/// request is answered exactly once when the client reads again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stdio_client_flooding_requests_waits_for_the_answers() {
    const N: u64 = 100_000;
    let mut child = Command::new(EXE)
        .args(["serve", "--stdio", "--empty"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let pid = child.id().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "flood", "version": "0"}}});
    stdin
        .write_all(format!("{init}\n").as_bytes())
        .await
        .unwrap();
    within("the initialize answer", out.next_line())
        .await
        .unwrap();
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    let before = mem_of(pid, "VmRSS");
    let writer = tokio::spawn(async move {
        for from in (1..=N).step_by(1000) {
            let chunk: String = (from..(from + 1000).min(N + 1))
                .map(|id| format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"ping\"}}\n"))
                .collect();
            stdin.write_all(chunk.as_bytes()).await.unwrap();
        }
        stdin
    });
    // Nothing is read for two seconds while the client writes.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut answered = vec![0u8; N as usize + 1];
    within("every ping answered", async {
        for _ in 0..N {
            let line = out.next_line().await.unwrap().expect("an answer");
            let answer: Value = serde_json::from_str(&line).unwrap();
            answered[answer["id"].as_u64().expect("an id") as usize] += 1;
        }
    })
    .await;
    let _stdin = within("the writer", writer).await.unwrap();
    let peak = mem_of(pid, "VmHWM");
    let grew = peak.saturating_sub(before);
    eprintln!(
        "stdio request flood: {N} pings answered; resident set {} KiB after the handshake, peak \
         {} KiB",
        before >> 10,
        peak >> 10
    );
    assert!(
        answered[1..].iter().all(|&n| n == 1),
        "every ping answered exactly once"
    );
    assert!(grew < 32 << 20, "grew by {} MiB", grew >> 20);
    let _ = child.start_kill();
}

/// A new user's first run: `serve` alone serves the demo catalog and says so; `--empty` serves
/// nothing; the strategy comes from the flag only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_alone_serves_the_demo_catalog_and_says_so() {
    let (mut child, mut control, ready, _dir) =
        serve_with_control("demo", &[], &[("LISTSYNC_VARIANT", "offset-cursor")]).await;
    assert_eq!(
        ready["variant"], "reference",
        "the environment picks no strategy"
    );
    let cmd = json!({"type": "cmd", "id": 1, "cmd": "catalog", "kind": "tools"});
    control.send(format!("{cmd}\n").as_bytes()).await;
    let r = control.reply().await;
    let names: Vec<&str> = r["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["echo", "greet", "time"]);
    let _ = child.start_kill();
    let mut err = String::new();
    let _ = child.stderr.take().unwrap().read_to_string(&mut err).await;
    assert!(err.contains("serving the demo catalog"), "{err}");

    let (mut child, mut control, ready, _dir) =
        serve_with_control("empty", &["--empty", "--strategy", "offset-cursor"], &[]).await;
    assert_eq!(ready["variant"], "offset-cursor");
    control.send(format!("{cmd}\n").as_bytes()).await;
    let r = control.reply().await;
    assert_eq!(r["items"].as_array().unwrap().len(), 0, "{r}");
    let _ = child.start_kill();
}

/// `watch` against `serve` with no other flag shows something.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_against_serve_alone_shows_the_demo_tools() {
    let started = Instant::now();
    let mut watch = Command::new(EXE)
        .args(["watch", "--kinds", "tools", "--", EXE, "serve"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut out = BufReader::new(watch.stdout.take().unwrap()).lines();
    let line = within("a change line", out.next_line())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(line, "tools auth0 v1 (3 items): echo, greet, time");
    assert!(started.elapsed() < LIMIT);
    let _ = watch.kill().await;
}
