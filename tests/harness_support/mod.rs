//! What the harness test files share: the repository root, the binary under test pinned for a
//! test's duration (a concurrent rebuild of `target/release/listsync` cannot swap builds under
//! a run), the time limit past which a replay fails instead of hanging, a way to run the CLI
//! (`listsync audit --json`, `listsync record --http` in front of a server), and the one reading of `LISTSYNC_HARNESS_SKIP_SDKS`.

// Each test file that shares this module uses part of it.
#![allow(dead_code)]

use listsync_harness::adapters::Paths;
use listsync_harness::pin::PinnedExe;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// A whole replay never takes this long; past it the test fails instead of hanging.
pub const REPLAY_LIMIT: Duration = Duration::from_secs(120);

/// The repository root (the `listsync` package's directory).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Paths for the binary under test, pinned while the returned [`PinnedExe`] lives; adapters'
/// packages go to `$LISTSYNC_CACHE` when it is set.
pub fn paths() -> (Paths, PinnedExe) {
    let pin = PinnedExe::new(Path::new(env!("CARGO_BIN_EXE_listsync"))).expect("pin the binary");
    let paths = Paths {
        listsync: pin.path().to_path_buf(),
        repo: repo(),
        cache: std::env::var_os("LISTSYNC_CACHE").map(PathBuf::from),
    };
    (paths, pin)
}

/// Runs the binary under test in the repository: (exit status, stdout, stderr).
pub fn listsync(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(args)
        .current_dir(repo())
        .output()
        .expect("run listsync");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Whether the third-party SDK tests are skipped: `LISTSYNC_HARNESS_SKIP_SDKS=1`, the explicit
/// opt-out (README, "What the test suite needs"). libtest has no way to mark a test skipped at
/// run time, so a skipped test reports `ok`; the skip is therefore written to this process's
/// stderr handle, which the test harness does not capture (unlike `eprintln!`), and shows in
/// every run's output beside that `ok`. Any other value fails the test rather than skipping it
/// (`=0`, `=true` or a typo does not leave the SDKs out).
pub fn sdks_skipped(what: &str) -> bool {
    match std::env::var("LISTSYNC_HARNESS_SKIP_SDKS") {
        Err(std::env::VarError::NotPresent) => false,
        Ok(v) if v == "1" => {
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED (LISTSYNC_HARNESS_SKIP_SDKS=1): {what}"
            );
            true
        }
        Ok(v) => panic!(
            "LISTSYNC_HARNESS_SKIP_SDKS={v:?}: set it to 1 to skip the third-party SDK tests, or unset it to run them"
        ),
        Err(e) => panic!(
            "LISTSYNC_HARNESS_SKIP_SDKS: {e}: set it to 1 to skip the third-party SDK tests, or unset it to run them"
        ),
    }
}

/// `listsync audit --json LOG`: exit code and the document.
pub fn audit(log: &Path) -> (i32, serde_json::Value) {
    let out = Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["audit", "--json"])
        .arg(log)
        .output()
        .expect("run audit");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "audit printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    (out.status.code().unwrap_or(-1), doc)
}

/// `listsync record --out LOG --http 127.0.0.1:0 --upstream UPSTREAM`, once it listens: the
/// process and the URL it serves. Its diagnostics pass through to the test's stderr (and never
/// fill the pipe).
pub async fn record_http(upstream: &str, log: &Path) -> (tokio::process::Child, String) {
    use tokio::io::{AsyncBufReadExt, BufReader};
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["record", "--out"])
        .arg(log)
        .args(["--http", "127.0.0.1:0", "--upstream", upstream])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("spawn record");
    let mut err = BufReader::new(child.stderr.take().expect("stderr")).lines();
    let url = listsync_testkit::within("the recorder's URL", async {
        loop {
            let l = err
                .next_line()
                .await
                .expect("read")
                .expect("record ended before listening");
            if let Some(rest) = l.strip_prefix("listsync record: listening on ") {
                return rest.split_whitespace().next().expect("a URL").to_owned();
            }
            eprintln!("{l}");
        }
    })
    .await;
    tokio::spawn(async move {
        while let Ok(Some(l)) = err.next_line().await {
            eprintln!("{l}");
        }
    });
    (child, url)
}
