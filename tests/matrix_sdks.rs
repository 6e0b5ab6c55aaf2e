//! The whole conformance matrix in the test suite: `listsync matrix` replays the `traces/`
//! corpus and the generated scenarios against every implementation (our runtime, rmcp, the
//! TypeScript SDK v1 and v2, the Python SDK, the Go SDK, mcp-go, the Java SDK), each adapter
//! installed on first use by the project's own provisioning, and the test checks what the
//! published matrix promises:
//!
//! - the command succeeds: our reference runtime violates nothing in any row, and every
//!   known-bad strategy of core, run as a variant of our runtime, is caught by its own trace;
//! - every row names the exact package version it ran (or says why it did not run), and the
//!   rows of the Go and Java SDKs name the pinned versions (go-sdk v1.8.0, mcp-go v1.2.1,
//!   io.modelcontextprotocol.sdk:mcp 2.1.0); no third-party row is left out because its
//!   toolchain is missing (that fails, naming what to install);
//! - each behaviour listed under "Observed" in docs/sdk-facts.md that the matrix can test was judged
//!   with evidence, and the ones the project's findings rest on are confirmed (stale overwrite
//!   in the TypeScript and rmcp client patterns, first-page-only refresh in TypeScript v1,
//!   Python's server never notifying on add/remove, Python's `Client` on 2026-07-28 missing
//!   legacy notifications, in-flight calls to a removed tool completing; the Go SDK's serial
//!   handlers and its listen-before-acknowledgement gap, mcp-go's and Java's stale overwrite,
//!   notifications per call in mcp-go and Java; FastMCP's server never notifying on add/remove, its
//!   client's concurrent re-lists and its missing listen stream on 2026-07-28);
//! - the everything server's row names its version and reports every tools trace and scenario
//!   not applicable (its catalog is fixed), never a run against a refused mutation.
//!
//! Without `node`, `python3`, `go`, or a JDK with `mvn`, the run fails and says what to install;
//! `LISTSYNC_HARNESS_SKIP_SDKS=1` skips this test explicitly, saying so on the terminal (the
//! test then reports `ok`).

mod harness_support;

use serde_json::Value;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStderr, Command, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Reads the matrix's stderr to its end, keeping it all for a failure message, and passes each
/// line of adapter provisioning (`provision[..]: ..`, `listsync: provisioning ..`) straight to
/// this process's stderr as it comes. The SDKs the matrix is the first to use (Go, Java) are
/// installed inside it: without the relay their progress would wait in the captured output
/// while the modules and artifacts download. (Written to the stderr handle, which the test
/// harness does not capture, unlike `eprintln!`.)
fn relay_progress(from: ChildStderr) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut kept = String::new();
        for line in BufReader::new(from).lines().map_while(Result::ok) {
            if line.starts_with("provision[") || line.starts_with("listsync: provisioning") {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            kept.push_str(&line);
            kept.push('\n');
        }
        kept
    })
}

#[test]
fn the_matrix_runs_every_sdk_and_confirms_the_observed_behaviours() {
    if harness_support::sdks_skipped("the SDK matrix") {
        return;
    }
    let out = std::env::temp_dir().join(format!("listsync-matrix-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut child = Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["matrix", "--out"])
        .arg(&out)
        .current_dir(repo())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run listsync matrix");
    let relay = relay_progress(child.stderr.take().expect("piped stderr"));
    let run = child.wait_with_output().expect("run listsync matrix");
    let stdout = String::from_utf8_lossy(&run.stdout);
    let stderr = relay.join().expect("stderr relay");
    // What failed goes first and last: a CI log keeps the two ends of a long message, and the
    // 95 expected-failure lines in between would otherwise push the cause out of it.
    let failed: Vec<&str> = stdout
        .lines()
        .filter(|l| !l.starts_with("expected failure: "))
        .collect();
    let failed = failed.join("\n");
    assert!(
        run.status.success(),
        "listsync matrix failed ({:?}):\n{failed}\n--- whole stdout:\n{stdout}\n--- stderr's end:\n{}\n--- again, what failed:\n{failed}",
        run.status.code(),
        stderr
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join("\n")
    );
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("conformance.json")).expect("conformance.json"),
    )
    .expect("conformance.json parses");
    let page = std::fs::read_to_string(out.join("conformance.md")).expect("conformance.md");
    assert!(page.starts_with("# Conformance matrix"));

    // Every implementation has rows, and every row that ran names its package version.
    let rows = json["rows"].as_array().expect("rows");
    for imp in [
        "reference",
        "rmcp",
        "ts-v1",
        "ts-v2",
        "python",
        "go-sdk",
        "mcp-go",
        "java",
        "fastmcp",
        "server-everything",
    ] {
        assert!(
            rows.iter().any(|r| str_of(r, "imp") == imp),
            "no row for {imp}"
        );
    }
    for r in rows {
        let ran = r["runs"].as_array().is_some_and(|a| !a.is_empty());
        if ran {
            let version = str_of(r, "version");
            assert!(
                version.chars().any(|c| c.is_ascii_digit()),
                "row {} {} {} names no version: {version:?}",
                str_of(r, "imp"),
                str_of(r, "role"),
                str_of(r, "era")
            );
        } else {
            let note = str_of(r, "note");
            assert!(
                !note.is_empty(),
                "row {} {} {} neither ran nor says why",
                str_of(r, "imp"),
                str_of(r, "role"),
                str_of(r, "era")
            );
            // Only an era the SDK does not speak may leave a row out: a missing toolchain fails.
            assert!(
                note.contains("does not speak"),
                "row {} {} {} did not run: {note}",
                str_of(r, "imp"),
                str_of(r, "role"),
                str_of(r, "era")
            );
        }
    }
    for (imp, pinned) in [
        ("go-sdk", "github.com/modelcontextprotocol/go-sdk v1.8.0"),
        ("mcp-go", "github.com/mark3labs/mcp-go v1.2.1"),
        ("java", "io.modelcontextprotocol.sdk:mcp 2.1.0"),
        ("fastmcp", "fastmcp 4.2.3"),
        (
            "server-everything",
            "@modelcontextprotocol/server-everything 2026.8.31",
        ),
    ] {
        for r in rows.iter().filter(|r| str_of(r, "imp") == imp) {
            assert!(
                str_of(r, "version").contains(pinned),
                "{imp} row names {:?}, not {pinned}",
                str_of(r, "version")
            );
        }
        assert!(
            rows.iter()
                .any(|r| str_of(r, "imp") == imp
                    && r["runs"].as_array().is_some_and(|a| !a.is_empty())),
            "no {imp} row ran"
        );
    }

    // The everything server cannot change its tools: each of its runs says so, none is judged.
    let runs = json["runs"].as_array().expect("runs");
    let everything: Vec<&Value> = runs
        .iter()
        .filter(|r| str_of(r, "imp") == "server-everything")
        .collect();
    assert!(!everything.is_empty(), "no server-everything run");
    for r in everything {
        assert_eq!(str_of(r, "status"), "unsupported", "{r}");
        assert!(str_of(r, "detail").starts_with("not applicable"), "{r}");
    }

    // Our reference runtime holds every property in every row.
    for r in rows.iter().filter(|r| str_of(r, "imp") == "reference") {
        let cells = r["cells"].as_object().expect("cells");
        for (p, c) in cells {
            assert_ne!(
                str_of(c, "state"),
                "violated",
                "reference {} {} violates {p}",
                str_of(r, "role"),
                str_of(r, "era")
            );
        }
    }

    // Each Observed behaviour of docs/sdk-facts.md was judged, with evidence.
    let findings = json["findings"].as_array().expect("findings");
    for f in findings {
        assert_ne!(
            str_of(f, "status"),
            "not_tested",
            "not tested: {}",
            str_of(f, "claim")
        );
        assert!(
            f["evidence"].as_array().is_some_and(|e| !e.is_empty()),
            "no evidence for: {}",
            str_of(f, "claim")
        );
    }
    let status_of = |claim_start: &str| -> &str {
        findings
            .iter()
            .find(|f| str_of(f, "claim").starts_with(claim_start))
            .map(|f| str_of(f, "status"))
            .unwrap_or_else(|| panic!("no finding about: {claim_start}"))
    };
    for claim in [
        "with debounceMs: 0, three notifications gave three concurrent tools/list",
        "v1 refresh fetches only the first page",
        "MCPServer.add_tool / remove_tool send nothing",
        "mcp.Client on 2026-07-28 receives nothing from a server that only uses the legacy send",
        "ClientHandler::on_tool_list_changed runs each notification in its own spawned task",
        "a tools/call already running when its tool is removed completes normally",
        "calling a removed tool: v1 answers with a tool result carrying isError: true",
        "the client runs notification handlers one at a time",
        "the one-at-a-time handlers do not cover the application's own first list",
        "on 2026-07-28 Client.Connect sends subscriptions/listen and returns without waiting",
        "AddTool and DeleteTools each send one list_changed at once",
        "SetTools with the whole new list sends one list_changed per batch",
        "OnNotification handlers run on the goroutine that reads stdin",
        "McpSyncServer.addTool/removeTool each send one list_changed at once",
        "the client re-lists by itself on every list_changed",
        "FastMCP.add_tool and the local provider's remove_tool send nothing",
        "a list_changed sent on the latest request's session",
        "the client's message handler runs each notification on its own",
        "the client opens no subscriptions/listen stream on 2026-07-28",
    ] {
        assert_eq!(status_of(claim), "confirmed", "{claim}");
    }
    // The released-source checks are in the report (Go cursor guards, Java list cache).
    let checks = json["source_checks"].as_array().expect("source_checks");
    for sdk in ["go-sdk v1.8.0", "mcp-go v1.2.1", "mcp 2.1.0"] {
        assert!(
            checks.iter().any(|c| str_of(c, "sdk").contains(sdk)),
            "no source check for {sdk}"
        );
    }
    assert!(page.contains("### Checked in the released source of the pinned versions"));
    let _ = std::fs::remove_dir_all(&out);
}
