//! The installed binary, used as a downstream project uses it: installed into a temporary root,
//! then run from an empty temporary directory holding only a copy of the example adapter
//! (`harness/adapters/example/`) and one regression trace, with the cache in a temporary
//! `$XDG_CACHE_HOME`.
//!
//! With `LISTSYNC_TEST_CARGO_INSTALL=1` the install is `cargo install --path . --locked --offline
//! --root TMP` with the workspace's target directory. `cargo install` leaves dev-dependencies out
//! of its feature resolution, so after `cargo test --workspace --release` (whose build unifies
//! the features of every member and dev-dependency) it builds the binary's dependency graph
//! again: 220 s of the test's 274 s on 2 busy cores after `cargo test --release --test install`
//! alone, more after the whole workspace. Without it (as in `.ci/run`, to keep its time) the
//! test places the binary cargo test built (`CARGO_BIN_EXE_listsync`, the same sources) in the
//! temporary root's `bin/`, as `cargo install` would. Either way the binary under test finds
//! nothing through the source tree:
//!
//! - `listsync --version` names the commit the tree is at;
//! - the first command unpacks the adapters, the corpus and the conformance-suite pin the binary
//!   carries into `$XDG_CACHE_HOME/listsync/` and says so, once;
//! - `listsync adapter check` passes the example (exit 0);
//! - `listsync replay` takes a corpus trace by name and a trace file by path and gives a verdict;
//! - `listsync matrix --adapter … --only example` exits 1 on the `last-response-wins` rows'
//!   violations, 0 when an `--expected-failures` file lists them (JUnit: skipped, "expected
//!   failure"), and 2 on a malformed file (an expected failure that no longer happens is
//!   asserted on the in-process matrix of `tests/adapter_example.rs`, without a third run).
//!
//! Needs `python3` (the example adapter's language) and `git` for the commit (without git the
//! version says `unknown`, and so does the test's expectation).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The workspace's target directory and whether the test was built in the dev profile: the
/// tested binary is `<target>/<profile>/listsync`.
fn target() -> (PathBuf, bool) {
    let exe = Path::new(env!("CARGO_BIN_EXE_listsync"));
    let profile_dir = exe.parent().expect("the binary's directory");
    let debug = profile_dir.file_name().is_some_and(|n| n == "debug");
    (
        profile_dir
            .parent()
            .expect("the target directory")
            .to_path_buf(),
        debug,
    )
}

fn text(o: &Output) -> (i32, String, String) {
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

struct Installed {
    bin: PathBuf,
    project: PathBuf,
    cache: PathBuf,
    _tmp: tempfile::TempDir,
}

impl Installed {
    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let o = Command::new(&self.bin)
            .args(args)
            .current_dir(&self.project)
            .env("XDG_CACHE_HOME", &self.cache)
            .env_remove("LISTSYNC_CACHE")
            .output()
            .expect("run the installed listsync");
        text(&o)
    }
}

/// `cargo install --path . --locked --offline --root ROOT` with the workspace's target directory.
fn cargo_install(root: &Path) {
    let (target_dir, debug) = target();
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["install", "--path", ".", "--locked", "--offline", "--root"])
        .arg(root)
        .current_dir(repo())
        .env("CARGO_TARGET_DIR", &target_dir);
    if debug {
        cmd.arg("--debug");
    }
    let (code, stdout, stderr) = text(&cmd.output().expect("run cargo install"));
    assert_eq!(code, 0, "cargo install failed:\n{stdout}\n{stderr}");
}

fn install() -> Installed {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let root = tmp.path().join("root");
    let bin = root.join("bin/listsync");
    if std::env::var_os("LISTSYNC_TEST_CARGO_INSTALL").is_some_and(|v| v == "1") {
        cargo_install(&root);
    } else {
        std::fs::create_dir_all(root.join("bin")).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_listsync"), &bin).expect("copy the binary");
    }
    assert!(bin.is_file(), "{} was not installed", bin.display());

    // A project directory of its own: the adapter and a regression trace, nothing else.
    let project = tmp.path().join("project");
    let adapter = project.join("mcp-adapter");
    std::fs::create_dir_all(&adapter).unwrap();
    for f in ["adapter.toml", "client.py"] {
        std::fs::copy(
            repo().join("harness/adapters/example").join(f),
            adapter.join(f),
        )
        .unwrap();
    }
    std::fs::create_dir_all(project.join("regression")).unwrap();
    std::fs::copy(
        repo().join("traces/naive.json"),
        project.join("regression/stale.json"),
    )
    .unwrap();
    let cache = tmp.path().join("cache");
    Installed {
        bin,
        project,
        cache,
        _tmp: tmp,
    }
}

/// `git rev-parse HEAD` of the tree the binary was built from, or `unknown`.
fn commit() -> String {
    Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(repo())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

const ADAPTER: &str = "mcp-adapter/adapter.toml";

/// The cells the matrix's FAIL lines name: `(row, property)`.
fn failed_cells(stdout: &str) -> Vec<(String, String)> {
    stdout
        .lines()
        .filter_map(|l| l.strip_prefix("FAIL: "))
        .filter_map(|l| {
            let (row, rest) = l.split_once(" violates ")?;
            let property = rest.split_whitespace().next()?;
            Some((row.to_string(), property.to_string()))
        })
        .collect()
}

fn entries(cells: &[(String, String)]) -> String {
    cells
        .iter()
        .map(|(row, p)| {
            format!(
                "[[expected]]\nrow = \"{row}\"\nproperty = \"{p}\"\nreason = \"every notification starts a walk of its own\"\n\n"
            )
        })
        .collect()
}

#[test]
fn the_installed_binary_works_from_an_empty_directory() {
    let it = install();

    let (code, stdout, stderr) = it.run(&["--version"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains(&format!("(commit {})", commit())),
        "{stdout}"
    );

    // adapter check: the first command that needs the tree unpacks it, and says where.
    let (code, stdout, stderr) = it.run(&["adapter", "check", ADAPTER]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stderr.contains("unpacking"), "{stderr}");
    let trees: Vec<PathBuf> = std::fs::read_dir(it.cache.join("listsync"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("tree-"))
        })
        .collect();
    assert_eq!(trees.len(), 1, "{trees:?}");
    assert!(trees[0].join("traces/naive.json").is_file());
    assert!(trees[0].join("harness/adapters/provision.sh").is_file());
    // `listsync host`: the host manifests and plans.
    assert!(
        trees[0]
            .join("harness/hosts/claude-code/host.toml")
            .is_file()
    );
    assert!(trees[0].join("harness/hosts/plans/in-call.toml").is_file());
    assert!(
        trees[0]
            .join("harness/conformance-suite/package-lock.json")
            .is_file()
    );

    // replay: a corpus trace by name, and a file by path. The exact statuses of replays are
    // asserted by the replay tests; here, that each runs and gives a verdict (0 or 1, not 2)
    // naming its trace, and that the tree is not unpacked again.
    for (trace, names) in [
        ("naive", "naive.json"),
        ("regression/stale.json", "stale.json"),
    ] {
        let (code, stdout, stderr) = it.run(&[
            "replay",
            trace,
            "--adapter",
            &format!("{ADAPTER}:client@coalescing"),
            "--out",
            "out/replay",
        ]);
        assert!(
            code == 0 || code == 1,
            "replay {trace}: exit {code}\n{stdout}\n{stderr}"
        );
        assert!(
            stdout.contains(names) && stdout.contains("no_stale_overwrite"),
            "{stdout}"
        );
        assert!(!stderr.contains("unpacking"), "{stderr}");
    }
    let (code, _, stderr) = it.run(&["replay", "no-such-trace", "--adapter", ADAPTER]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no-such-trace"), "{stderr}");

    // matrix: the last-response-wins rows violate no_stale_overwrite, so the run fails...
    let matrix = |extra: &[&str]| {
        let mut args = vec![
            "matrix",
            "--adapter",
            ADAPTER,
            "--only",
            "example",
            "--out",
            "out/matrix",
            "--junit",
            "out/matrix.xml",
            // One wave: the runs mostly wait on the processes they drive (22 runs: 17 s against
            // 28 s at the default 4 at a time on 2 cores).
            "--jobs",
            "24",
        ];
        args.extend_from_slice(extra);
        it.run(&args)
    };
    let (code, stdout, stderr) = matrix(&[]);
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let failed = failed_cells(&stdout);
    for era in ["2025-11-25", "2026-07-28"] {
        let row = format!("example:client@last-response-wins.{era}");
        assert!(
            failed.contains(&(row.clone(), "no_stale_overwrite".into())),
            "{row} no_stale_overwrite is not among {failed:?}\n{stdout}"
        );
    }
    assert!(
        failed
            .iter()
            .all(|(row, _)| row.contains("@last-response-wins.")),
        "only the last-response-wins rows fail: {failed:?}"
    );
    assert!(
        it.project.join("out/matrix/conformance.md").is_file(),
        "the report is written under --out"
    );

    // ... and passes when an expected-failures file lists those violations.
    std::fs::write(it.project.join("expected.toml"), entries(&failed)).unwrap();
    let (code, stdout, stderr) = matrix(&["--expected-failures", "expected.toml"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("expected failure: example:client@last-response-wins."),
        "{stdout}"
    );
    let xml = std::fs::read_to_string(it.project.join("out/matrix.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    assert!(
        !doc.descendants().any(|n| n.has_tag_name("failure")),
        "{xml}"
    );
    assert!(
        doc.descendants()
            .filter(|n| n.has_tag_name("skipped"))
            .any(|n| n
                .attribute("message")
                .is_some_and(|m| m.starts_with("expected failure: no_stale_overwrite: every"))),
        "{xml}"
    );

    // A malformed file is refused before anything runs, naming the file and line.
    std::fs::write(
        it.project.join("expected.toml"),
        "[[expected]]\nrow = \"example:client@coalescing.2025-11-25\"\nproperty = \"converges\"\nreson = \"typo\"\n",
    )
    .unwrap();
    let (code, stdout, stderr) = matrix(&["--expected-failures", "expected.toml"]);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("expected.toml:4") && stderr.contains("reson"),
        "{stderr}"
    );
}
