//! The host harness (`listsync host`) against our own two hosts: the stale host (offers the model
//! the first tool list forever) is caught, each plan by the properties it breaks, and the careful
//! host (re-lists on list_changed, offers the current list at every turn) passes, under every
//! built-in plan. Each run is a real session: the host program, the scripted model server on
//! loopback, `listsync record` and `listsync serve`; the verdicts come from the session log and
//! the offered lists the model server recorded.

use listsync_harness::hosts::plan::{BUILTIN, Plan};
use listsync_host::judge::HostProperty;
use listsync_host::{HostRef, HostReport, Options, run_host};
use listsync_session::audit::Status;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(host: &str, plan: &str, out: &std::path::Path) -> HostReport {
    let hosts_dir = repo().join("harness/hosts");
    let host = HostRef::find(host, &hosts_dir).unwrap();
    let plan = Plan::load(plan).unwrap();
    let opts = Options {
        listsync: PathBuf::from(env!("CARGO_BIN_EXE_listsync")),
        hosts_dir,
        cache: out.join("cache"),
        era: "2025-11-25".into(),
        repeat: 2,
        catch_up: 0,
        out: out.to_path_buf(),
    };
    run_host(&host, &plan, &opts).unwrap_or_else(|e| panic!("{e}"))
}

fn status(r: &HostReport, p: HostProperty) -> Status {
    r.tally(p).status()
}

#[test]
fn the_stale_host_is_caught_by_the_properties_it_breaks() {
    let out = tempfile::tempdir().unwrap();
    for (plan, _) in BUILTIN {
        let r = run("stale", plan, out.path());
        let text = listsync_host::render(&r);
        for p in [
            HostProperty::OfferedCatchesUp,
            HostProperty::NoOfferOfRemoved,
            HostProperty::NoCallToRemoved,
        ] {
            // Every run, not just one: the stale host is wrong by construction.
            assert_eq!(r.tally(p).violated, r.runs.len(), "{plan}: {p:?}\n{text}");
        }
        // It offers what it dispatches (both stale), and the MCP side re-lists as it should:
        // the harness blames the offered list, not the wire.
        assert_eq!(
            status(&r, HostProperty::ConsumersAgree),
            Status::HoldsAsObserved,
            "{text}"
        );
        assert!(r.runs.iter().all(|x| !x.audit.violated()), "{text}");
        assert!(r.violated());
        // The evidence: a turn after the removal still offers the removed tool.
        let turns = &r.runs[0].judgement.turns;
        assert!(
            turns.iter().any(|t| t
                .listed
                .as_ref()
                .is_some_and(|l| t.offered.iter().any(|o| !l.contains(o)))),
            "{text}"
        );
    }
}

#[test]
fn the_careful_host_passes_every_plan() {
    let out = tempfile::tempdir().unwrap();
    for (plan, _) in BUILTIN {
        let r = run("careful", plan, out.path());
        let text = listsync_host::render(&r);
        for p in HostProperty::ALL {
            assert_eq!(
                status(&r, p),
                Status::HoldsAsObserved,
                "{plan}: {p:?}\n{text}"
            );
        }
        assert!(!r.violated(), "{text}");
        assert_eq!(r.runs[0].judgement.max_lag, Some((0, false)), "{text}");
    }
}

#[test]
fn the_command_exits_1_on_the_stale_host_and_writes_junit() {
    let out = tempfile::tempdir().unwrap();
    let junit = out.path().join("host.xml");
    let run = |host: &str| {
        std::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
            .args(["host", host, "--plan", "in-call", "--out"])
            .arg(out.path())
            .arg("--junit")
            .arg(&junit)
            .current_dir(repo())
            .output()
            .unwrap()
    };
    let stale = run("stale");
    let text = String::from_utf8_lossy(&stale.stdout);
    assert_eq!(stale.status.code(), Some(1), "{text}");
    assert!(
        text.contains("no_offer_of_removed        violated"),
        "{text}"
    );
    assert!(
        text.contains("offered [echo, greet, time] host's list [greet, time]"),
        "{text}"
    );
    let xml = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let failed: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter(|n| n.children().any(|c| c.has_tag_name("failure")))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert!(failed.contains(&"no_call_to_removed"), "{xml}");
    let careful = run("careful");
    assert_eq!(
        careful.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&careful.stdout)
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["host", "no-such-host"])
        .current_dir(repo())
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("known hosts: careful, claude-code, stale")
    );
}
