//! `listsync watch` of a server that offers tools only (its handshake declares no `prompts` and
//! no `resources` capability, as most servers built on an SDK that declares what is registered):
//! the client asks it for tools only, prints the tools line, and reports no failing list —
//! rather than asking for every list, having three refused with -32601, retrying them and
//! giving up. The server is a shell script that logs every line it reads.

use std::process::Stdio;
use std::time::Duration;
use tokio::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_offering_tools_only_is_asked_for_tools_only() {
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
sleep 2"#,
        log = log.display()
    );
    let run = Command::new(EXE)
        .args(["watch", "--retry", "0", "--", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("watch ends once the server does")
        .expect("run listsync watch");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let requests = std::fs::read_to_string(&log).unwrap_or_default();
    let shown = format!("stdout:\n{stdout}\nstderr:\n{stderr}\nthe server read:\n{requests}");
    eprintln!("{shown}");
    assert!(
        stdout.contains("tools auth0 v- (1 items): a"),
        "the tools line\n{shown}"
    );
    assert!(!stderr.contains("listing failed"), "{shown}");
    let methods: Vec<&str> = requests
        .lines()
        .filter_map(|l| l.split("\"method\":\"").nth(1)?.split('"').next())
        .collect();
    assert_eq!(
        methods,
        ["initialize", "notifications/initialized", "tools/list"],
        "{shown}"
    );
}
