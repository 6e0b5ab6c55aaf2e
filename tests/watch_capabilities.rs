//! `listsync watch` of a server that offers tools only (its handshake declares no `prompts` and
//! no `resources` capability, as most servers built on an SDK that declares what is registered):
//! the client asks it for tools only, prints the tools line, says once which watched lists the
//! server does not offer, and reports no failing list — rather than asking for every list,
//! having three refused with -32601, retrying them and giving up. Watching only lists the server
//! does not offer gives up at once with a line that says so, instead of watching nothing in
//! silence. The server is a shell script that logs every line it reads.

use std::process::{Output, Stdio};
use std::time::Duration;
use tokio::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

/// Runs `watch ARGS` against the tools-only server (which answers `initialize` and the first
/// `tools/list`, then logs what it reads for `stay` seconds); returns the run and the methods
/// the server read, and a text showing both.
async fn watch_tools_only(args: &[&str], stay: u32) -> (Output, Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.log");
    // rmcp numbers the client's requests from 0: `initialize`, then the first list.
    let script = format!(
        r#"read l; echo "$l" >> '{log}'
echo '{{"jsonrpc":"2.0","id":0,"result":{{"protocolVersion":"2025-11-25","capabilities":{{"tools":{{"listChanged":true}}}},"serverInfo":{{"name":"tools-only","version":"1"}}}}}}'
read l; echo "$l" >> '{log}'
read l; echo "$l" >> '{log}'
echo '{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"a","inputSchema":{{"type":"object"}}}}]}}}}'
cat >> '{log}' &
sleep {stay}"#,
        log = log.display()
    );
    let run = Command::new(EXE)
        .arg("watch")
        .args(args)
        .args(["--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("watch ends before the bound")
        .expect("run listsync watch");
    let requests = std::fs::read_to_string(&log).unwrap_or_default();
    let shown = format!(
        "exit: {:?}\nstdout:\n{}\nstderr:\n{}\nthe server read:\n{requests}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{shown}");
    let methods = requests
        .lines()
        .filter_map(|l| l.split("\"method\":\"").nth(1)?.split('"').next())
        .map(str::to_owned)
        .collect();
    (out, methods, shown)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_offering_tools_only_is_asked_for_tools_only() {
    let (out, methods, shown) = watch_tools_only(&["--retry", "0"], 2).await;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("tools auth0 v- (1 items): a"),
        "the tools line\n{shown}"
    );
    assert!(!stderr.contains("listing failed"), "{shown}");
    assert_eq!(
        stderr
            .lines()
            .filter_map(|l| l.strip_prefix("listsync watch: "))
            .filter(|l| l.contains("not offered by the server"))
            .collect::<Vec<_>>(),
        [
            "prompts,resources,resource_templates: not offered by the server (its handshake declares no capability for them); not watched"
        ],
        "said once, naming the watched lists the server does not offer\n{shown}"
    );
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list"],
        "{shown}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watching_only_lists_the_server_does_not_offer_gives_up_saying_so() {
    // The server would stay 20 s; watch ends as soon as the handshake shows nothing to watch.
    let (out, methods, shown) = watch_tools_only(&["--kinds", "prompts"], 20).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{shown}");
    assert!(
        stderr.contains(
            "giving up: the server offers none of the lists watched (prompts): its handshake declares no capability for them"
        ),
        "{shown}"
    );
    // The server may be stopped before it logs `notifications/initialized`; no list is asked.
    assert_eq!(
        methods.first().map(String::as_str),
        Some("initialize"),
        "{shown}"
    );
    assert!(
        methods.iter().all(|m| !m.ends_with("/list")),
        "nothing is listed\n{shown}"
    );
}
