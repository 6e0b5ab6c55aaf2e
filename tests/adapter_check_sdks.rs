//! `listsync adapter check` on the built-in manifests of FastMCP (PyPI `fastmcp`, server and
//! client) and the everything server (npm `@modelcontextprotocol/server-everything`, server only,
//! fixed catalog): each is provisioned on first use like the matrix does, started in every role
//! and era it claims, and passes every rule of docs/harness-protocol.md. The everything server's
//! session goes the fixed-catalog way: its own catalog, and a batch adding a tool refused whole.
//!
//! Needs `python3` and `node`/`npm`, like the matrix; `LISTSYNC_HARNESS_SKIP_SDKS=1` skips it
//! explicitly, saying so on the terminal (the test then reports `ok`).

mod harness_support;

use harness_support::{REPLAY_LIMIT, paths, sdks_skipped};
use listsync_harness::adapter_check;
use listsync_harness::adapters::Role;
use listsync_harness::manifest;
use listsync_harness::run::Bounds;

async fn passes(name: &str, sessions: usize) {
    if sdks_skipped(&format!("adapter check of {name}")) {
        return;
    }
    let (paths, _pin) = paths();
    let m = manifest::find(name).unwrap_or_else(|e| panic!("{e}"));
    let c = tokio::time::timeout(
        REPLAY_LIMIT * 2,
        adapter_check::check(&paths, m, Bounds::default(), &mut |_, _| {}),
    )
    .await
    .expect("adapter check hung");
    assert!(c.ok(), "{}", c.lines().join("\n"));
    assert_eq!(c.sessions.len(), sessions, "{}", c.lines().join("\n"));
    for s in &c.sessions {
        for rule in [
            "ready",
            "ready-fields",
            "one-reply",
            "unknown-command",
            "clean-exit",
        ] {
            assert!(
                s.passed.contains(&rule),
                "{}: {rule} not checked",
                s.label()
            );
        }
        if s.role == Role::Server {
            assert!(s.passed.contains(&"mutate"), "{}", s.label());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_check_passes_fastmcp_in_both_roles_and_eras() {
    passes("fastmcp", 4).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_check_passes_the_everything_server_with_its_fixed_catalog() {
    let m = manifest::find("server-everything").unwrap();
    assert!(!m.mutates.contains(listsync_core::vocab::Kind::Tools));
    passes("server-everything", 1).await;
}
