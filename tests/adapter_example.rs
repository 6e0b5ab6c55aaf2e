//! Bringing an implementation of one's own: the example adapter of docs/writing-an-adapter.md
//! (`harness/adapters/example/`, a from-scratch Python client, not built in) driven through its
//! manifest file like any user's adapter:
//!
//! - in the matrix, its `coalescing` variant holds every property in both eras and its
//!   `last-response-wins` variant is caught by `no_stale_overwrite`, the property it breaks;
//! - `listsync replay --adapter FILE:client@VARIANT` poses the corpus traces about clients to
//!   it: the coalescing client holds with each race posed, last-response-wins is violated;
//! - `adapter check` passes it, and names the docs/harness-protocol.md rule each broken adapter
//!   breaks (every rule it applies is documented there).
//!
//! Needs `python3` on PATH (the example's manifest says so, and a missing one fails naming it).

mod harness_support;

use harness_support::{REPLAY_LIMIT, listsync, paths, repo};
use listsync_core::property::Property;
use listsync_harness::adapter_check::{self, RULES};
use listsync_harness::expected::Expectations;
use listsync_harness::manifest::Manifest;
use listsync_harness::matrix::{self, CellState, Options};
use listsync_harness::run::Bounds;
use std::sync::Arc;
use std::time::Duration;

fn example() -> Arc<Manifest> {
    Arc::new(
        Manifest::load(&repo().join("harness/adapters/example/adapter.toml"))
            .unwrap_or_else(|e| panic!("{e}")),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn the_matrix_passes_the_example_and_catches_its_last_response_wins_variant() {
    let (paths, _pin) = paths();
    let opts = Options {
        jobs: 2,
        traces: repo().join("traces"),
        only: vec!["example".into()],
        adapters: vec![example()],
        bounds: Bounds::default(),
    };
    let m = matrix::run(&paths, &opts, &|line: &str| eprintln!("{line}"))
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(m.rows.len(), 4, "example: 2 variants x 2 eras");
    for row in &m.rows {
        let k = &row.key;
        assert_eq!(k.imp, "example");
        assert!(row.note.is_none(), "{k:?}: {:?}", row.note);
        let stale = row.cells.get(&Property::NoStaleOverwrite).map(|c| c.state);
        match k.variant.as_str() {
            "coalescing" => {
                let bad: Vec<_> = row
                    .cells
                    .iter()
                    .filter(|(_, c)| c.state == CellState::Violated)
                    .map(|(p, c)| format!("{p}: {:?}", c.run))
                    .collect();
                assert!(bad.is_empty(), "{k:?} violates {bad:?}");
                assert_eq!(stale, Some(CellState::Holds), "{k:?}");
                assert_eq!(
                    row.cells.get(&Property::Converges).map(|c| c.state),
                    Some(CellState::Holds),
                    "{k:?}"
                );
            }
            "last-response-wins" => {
                assert_eq!(stale, Some(CellState::Violated), "{k:?} was not caught");
            }
            other => panic!("unexpected variant {other}"),
        }
    }
    // No built-in row ran: --only names the user's adapter alone.
    assert!(m.runs.iter().all(|r| r.imp == "example"));
    assert!(m.validation.is_empty());
    // The user's rows fail the run on their violations (none expected here).
    let failures = m.failures(&Expectations::default());
    for era in ["2025-11-25", "2026-07-28"] {
        let says = format!("example:client@last-response-wins.{era} violates no_stale_overwrite");
        assert!(
            failures.iter().any(|f| f.starts_with(&says)),
            "{says}: {failures:?}"
        );
    }
    assert!(
        failures.iter().all(|f| !f.contains("@coalescing.")),
        "{failures:?}"
    );
    // Listed as expected failures, the violations fail nothing; a listed cell that holds (the
    // coalescing row's no_stale_overwrite) is fixed, and fails the run until it is removed.
    let listed: String = m
        .rows
        .iter()
        .flat_map(|r| {
            r.cells
                .iter()
                .filter(|(_, c)| c.state == CellState::Violated)
                .map(move |(p, _)| (r.key.to_string(), *p))
        })
        .chain([(
            "example:client@coalescing.2025-11-25".to_string(),
            Property::NoStaleOverwrite,
        )])
        .map(|(row, p)| {
            format!("[[expected]]\nrow = \"{row}\"\nproperty = \"{p}\"\nreason = \"r\"\n")
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("expected.toml");
    std::fs::write(&file, listed).unwrap();
    let mut known = listsync_harness::manifest::built_in().to_vec();
    known.push(example());
    let expected = Expectations::load(&repo(), &known, &[file]).unwrap_or_else(|e| panic!("{e}"));
    let failures = m.failures(&expected);
    assert_eq!(failures.len(), 1, "{failures:?}");
    assert!(
        failures[0].starts_with(
            "fixed: example:client@coalescing.2025-11-25 no longer violates no_stale_overwrite (now holds); remove its entry at "
        ),
        "{failures:?}"
    );

    // `listsync matrix --junit`: one testcase per run; the last-response-wins rows' stale-race
    // fails naming no_stale_overwrite, the coalescing rows fail nothing.
    let xml = listsync_render::junit::render(&[listsync_render::junit::from_matrix(
        &m.runs,
        &repo().join("reports"),
        &Expectations::default(),
        &[],
    )]);
    let doc = roxmltree::Document::parse(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), m.runs.len());
    let failed = |class_has: &str| {
        cases
            .iter()
            .filter(|c| c.attribute("classname").unwrap_or("").contains(class_has))
            .filter_map(|c| c.children().find(|n| n.has_tag_name("failure")))
            .map(|f| f.attribute("message").unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    assert!(
        failed("@coalescing.").is_empty(),
        "{:?}",
        failed("@coalescing.")
    );
    let lrw = failed("@last-response-wins.");
    assert!(
        lrw.iter()
            .any(|m| m.starts_with("scenario stale-race: violated")
                && m.contains("no_stale_overwrite")),
        "{lrw:?}"
    );
}

/// `listsync replay` poses each replayable corpus trace about clients to the example's two
/// clients: the coalescing one holds every property with the trace's race posed (exit 0), the
/// last-response-wins one is caught by `no_stale_overwrite` on the traces of that race (exit 1).
#[test]
fn replay_judges_the_example_clients_by_what_they_do() {
    let out = tempfile::tempdir().unwrap();
    let replayable = [
        "clear-then-fetch",
        "first-page-only",
        "flag-cleared-after-await",
        "listen-without-relist",
        "naive",
        "request-id-guard",
    ];
    let traces: Vec<String> = replayable
        .iter()
        .map(|t| format!("traces/{t}.json"))
        .collect();
    let replay = |variant: &str| {
        let adapter = format!("harness/adapters/example/adapter.toml:client@{variant}");
        let mut args = vec!["replay"];
        args.extend(traces.iter().map(String::as_str));
        args.extend(["--adapter", &adapter, "--out", out.path().to_str().unwrap()]);
        listsync(&args)
    };
    let outcomes = |stdout: &str| -> Vec<(String, String)> {
        stdout
            .lines()
            .filter(|l| l.starts_with("trace "))
            .map(|l| {
                let name = l.split_whitespace().nth(1).unwrap_or("").to_owned();
                let outcome = l.rsplit("): ").next().unwrap_or("").to_owned();
                (name, outcome)
            })
            .collect()
    };
    let (code, stdout, stderr) = replay("coalescing");
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let got = outcomes(&stdout);
    assert_eq!(got.len(), replayable.len(), "{stdout}");
    for (name, outcome) in &got {
        assert!(
            outcome.starts_with("holds: "),
            "{name}: {outcome}\n{stdout}"
        );
    }
    // The traces of a race the wire shows: posed, and named.
    for t in [
        "naive",
        "request-id-guard",
        "clear-then-fetch",
        "flag-cleared-after-await",
    ] {
        let (_, o) = got.iter().find(|(n, _)| n.contains(t)).unwrap();
        assert!(o.contains("race posed (notify_during_refresh"), "{t}: {o}");
    }
    let (code, stdout, stderr) = replay("last-response-wins");
    assert_eq!(code, 1, "{stdout}\n{stderr}");
    let got = outcomes(&stdout);
    for t in ["naive", "request-id-guard"] {
        let (_, o) = got.iter().find(|(n, _)| n.contains(t)).unwrap();
        assert!(
            o.starts_with("violated: ") && o.contains("no_stale_overwrite"),
            "{t}: {o}\n{stdout}"
        );
    }
    assert!(!stdout.contains("diverged"), "{stdout}");
}

#[test]
fn replay_takes_an_adapter_manifest_with_a_role_and_variant() {
    let (code, _, stderr) = listsync(&[
        "replay",
        "traces/naive.json",
        "--adapter",
        "harness/adapters/example/adapter.toml:client@no-such-variant",
    ]);
    assert_eq!(code, 2);
    assert!(
        stderr.contains("no client variant 'no-such-variant'"),
        "{stderr}"
    );
    let (code, _, stderr) = listsync(&["replay", "traces/naive.json", "--adapter", "nope.toml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nope.toml"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_check_passes_the_example() {
    let (paths, _pin) = paths();
    let c = tokio::time::timeout(
        REPLAY_LIMIT,
        adapter_check::check(&paths, example(), Bounds::default(), &mut |_, _| {}),
    )
    .await
    .expect("adapter check hung");
    assert!(c.ok(), "{}", c.lines().join("\n"));
    assert_eq!(c.sessions.len(), 2, "client in two eras");
    for s in &c.sessions {
        assert!(s.passed.len() >= 10, "{}: {:?}", s.label(), s.passed);
    }
}

/// A manifest in `dir` whose client is `script` run by python3.
fn broken(dir: &std::path::Path, script: &str) -> Arc<Manifest> {
    std::fs::write(dir.join("broken.py"), script).unwrap();
    let toml = "name = \"broken\"\nversion = \"0\"\nroles = [\"client\"]\neras = [\"2025-11-25\"]\n\
                [launch]\nclient = [\"python3\", \"{dir}/broken.py\"]\n";
    let file = dir.join("adapter.toml");
    std::fs::write(&file, toml).unwrap();
    Arc::new(Manifest::load(&file).unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn adapter_check_names_the_rule_a_broken_adapter_breaks() {
    let (paths, _pin) = paths();
    // What never comes is waited for this long (it never comes whatever the bound).
    let bounds = Bounds {
        startup: Duration::from_secs(4),
        command: Duration::from_secs(4),
        ..Bounds::default()
    };
    let dir = tempfile::tempdir().unwrap();
    // Says it is a server, never reports negotiation or a list, and accepts every command.
    let yes_man = broken(
        dir.path(),
        r#"
import json, os, socket
s = socket.socket(socket.AF_UNIX); s.connect(os.environ["LISTSYNC_CONTROL"])
def send(o): s.sendall((json.dumps(o) + "\n").encode())
send({"type": "event", "event": "ready", "role": "server", "era_requested": os.environ["LISTSYNC_ERA"], "sdk": "x", "sdk_version": "1"})
for line in s.makefile("rb"):
    c = json.loads(line)
    send({"type": "reply", "id": c["id"], "ok": True})
    if c["cmd"] == "shutdown":
        break
"#,
    );
    let c = adapter_check::check(&paths, yes_man, bounds, &mut |_, _| {}).await;
    let lines = c.lines().join("\n");
    assert!(!c.ok(), "{lines}");
    let broken_rules: Vec<&str> = c.sessions[0].failures.iter().map(|f| f.rule).collect();
    for rule in [
        "ready-fields",
        "negotiated",
        "initial-list",
        "snapshot",
        "unknown-command",
    ] {
        assert!(
            broken_rules.contains(&rule),
            "{rule} not reported:\n{lines}"
        );
        assert!(
            lines.contains(&format!("docs/harness-protocol.md, rule {rule}")),
            "{lines}"
        );
    }
    assert!(
        c.sessions[0].passed.contains(&"clean-exit"),
        "it does exit cleanly:\n{lines}"
    );
    // Exits at once without connecting.
    let gone = broken(dir.path(), "raise SystemExit(3)\n");
    let c = adapter_check::check(&paths, gone, bounds, &mut |_, _| {}).await;
    let lines = c.lines().join("\n");
    let first = &c.sessions[0].failures[0];
    assert!(matches!(first.rule, "connect" | "ready"), "{lines}");
}

#[test]
fn every_rule_adapter_check_applies_is_documented() {
    let doc = std::fs::read_to_string(repo().join("docs/harness-protocol.md")).unwrap();
    for (rule, _) in RULES {
        assert!(
            doc.contains(&format!("| `{rule}` |")),
            "docs/harness-protocol.md has no row for rule `{rule}`"
        );
    }
}
