//! What the harness test files share: the repository root, the binary under test pinned for a
//! test's duration (a concurrent rebuild of `target/release/listsync` cannot swap builds under
//! a run), the time limit past which a replay fails instead of hanging, and a way to run the CLI.

// Each test file that shares this module uses part of it.
#![allow(dead_code)]

use listsync_harness::adapters::Paths;
use listsync_harness::pin::PinnedExe;
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
