//! Names the commit the binary is built from for `listsync --version`: `LISTSYNC_COMMIT` is the
//! output of `git rev-parse HEAD` in the package directory when it is the top of a git
//! repository (a `cargo install --git` build runs in a git checkout too), else `unknown`. Rebuilt when HEAD
//! or the branch it names moves, and when the embedded trees (src/home.rs) change.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // A directory is scanned whole: a file added to the embedded trees is embedded too.
    for dir in ["harness/adapters", "traces", "harness/conformance-suite"] {
        println!("cargo:rerun-if-changed={dir}");
    }
    // Only this package's own repository: a copy inside another project's checkout is not it.
    let here = std::env::var("CARGO_MANIFEST_DIR").ok();
    let ours = |top: &String| {
        let canon = |p: &str| std::fs::canonicalize(p).ok();
        here.as_deref()
            .and_then(canon)
            .is_some_and(|h| canon(top) == Some(h))
    };
    let commit = git(&["rev-parse", "--show-toplevel"])
        .filter(ours)
        .and_then(|_| git(&["rev-parse", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=LISTSYNC_COMMIT={commit}");
    // HEAD (of this worktree), the ref it points to, and packed refs; only files that exist (a
    // missing one would rerun the script on every build).
    let mut watch = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(git(&["rev-parse", "--git-path", &r]));
    }
    watch.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    for p in watch.into_iter().flatten() {
        if Path::new(&p).is_file() {
            println!("cargo:rerun-if-changed={p}");
        }
    }
}
