//! `listsync record` ends its log however a host ends its server: a host that sends the
//! recorder SIGTERM, SIGINT or SIGHUP (the signal is forwarded to the server), or one that just
//! closes the pipe. Each time the log's last entry closes the connection saying how, every
//! message before it is in the log, and `listsync audit` judges the whole session (no "has no
//! end in the log").

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

/// `listsync record --out LOG -- listsync serve --stdio`, with an initialize and a tools/list
/// sent and both answers read back: the session is under way.
fn session(log: &Path) -> (Child, std::process::ChildStdin) {
    let mut rec = Command::new(EXE)
        .args(["record", "--out"])
        .arg(log)
        .args(["--", EXE, "serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start listsync record");
    let mut stdin = rec.stdin.take().unwrap();
    let mut out = BufReader::new(rec.stdout.take().unwrap());
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"0"}}}"#;
    let inited = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#;
    for l in [init, inited, list] {
        writeln!(stdin, "{l}").unwrap();
    }
    stdin.flush().unwrap();
    let mut answers = 0;
    let mut line = String::new();
    while answers < 2 {
        line.clear();
        assert!(out.read_line(&mut line).unwrap() > 0, "the server answered");
        answers += usize::from(line.contains(r#""id":1"#) || line.contains(r#""id":2"#));
    }
    // Keep reading so that the server is never blocked on a full pipe.
    std::thread::spawn(move || for _ in out.lines() {});
    (rec, stdin)
}

/// Waits (at most 20 s) for `child` to exit.
fn exits(child: &mut Child) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "record did not exit"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The log's last entry and what `listsync audit` prints of it.
fn last_entry_and_audit(log: &Path) -> (serde_json::Value, String) {
    let text = std::fs::read_to_string(log).unwrap();
    let last: serde_json::Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    assert!(
        text.contains(r#""method":"tools/list""#),
        "the session's messages are logged"
    );
    let out = Command::new(EXE).arg("audit").arg(log).output().unwrap();
    let audit =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (last, audit)
}

#[test]
fn a_signal_ends_the_connection_in_the_log_and_reaches_the_server() {
    for (sig, name) in [
        (nix::sys::signal::Signal::SIGTERM, "SIGTERM"),
        (nix::sys::signal::Signal::SIGINT, "SIGINT"),
        (nix::sys::signal::Signal::SIGHUP, "SIGHUP"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("session.jsonl");
        let (mut rec, _stdin) = session(&log);
        let pid = nix::unistd::Pid::from_raw(rec.id() as i32);
        nix::sys::signal::kill(pid, sig).unwrap();
        exits(&mut rec);
        let (last, audit) = last_entry_and_audit(&log);
        let detail = last["detail"].as_str().unwrap_or("");
        assert_eq!(last["type"], "close", "{name}: {last}");
        assert!(
            detail.contains(&format!("got {name}, forwarded to the server"))
                && detail.contains("server exited"),
            "{name}: {detail}"
        );
        assert!(!audit.contains("no end in the log"), "{name}: {audit}");
    }
}

#[test]
fn a_closed_pipe_ends_the_connection_in_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let (mut rec, stdin) = session(&log);
    drop(stdin);
    exits(&mut rec);
    let (last, audit) = last_entry_and_audit(&log);
    assert_eq!(last["type"], "close", "{last}");
    assert!(
        last["detail"]
            .as_str()
            .unwrap_or("")
            .contains("server exited"),
        "{last}"
    );
    assert!(!audit.contains("no end in the log"), "{audit}");
}
