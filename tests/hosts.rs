//! The host harness (`listsync host`) against our own two hosts: the stale host (offers the model
//! the first tool list forever) is caught, each plan by the properties it breaks, and the careful
//! host (re-lists on list_changed, offers the current list at every turn) passes, under every
//! built-in plan. Each run is a real session: the host program, the scripted model server on
//! loopback, `listsync record` and `listsync serve`; the verdicts come from the session log and
//! the offered lists the model server recorded. Also: `--report` keeps a summary and renders the
//! hosts page's table from it, `record --numbered` gives each start of a server its own log, and
//! every host manifest reads (the third-party hosts themselves are measured by `listsync host`,
//! not here: they need the package registries on first use).

use listsync_harness::hosts::plan::{BUILTIN, Plan};
use listsync_host::judge::HostProperty;
use listsync_host::{HostOptions, HostRef, HostReport, run_host};
use listsync_session::audit::Status;
use std::path::PathBuf;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn run(host: &str, plan: &str, out: &std::path::Path) -> HostReport {
    let hosts_dir = repo().join("harness/hosts");
    let host = HostRef::find(host, &hosts_dir).unwrap();
    let plan = Plan::load(plan).unwrap();
    let opts = HostOptions {
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
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("known hosts: ai-sdk, careful, claude-code,"),
        "{err}"
    );
}

#[test]
fn the_report_keeps_a_summary_and_renders_the_table_from_it() {
    let out = tempfile::tempdir().unwrap();
    let reports = out.path().join("reports");
    std::fs::create_dir_all(&reports).unwrap();
    let page = "# Hosts\n\nWritten by hand.\n";
    std::fs::write(reports.join("hosts.md"), page).unwrap();
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args([
            "host", "stale", "--plan", "in-call", "--repeat", "2", "--out",
        ])
        .arg(out.path().join("runs"))
        .arg("--report")
        .arg(&reports)
        .current_dir(repo())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
    let json = std::fs::read_to_string(reports.join("hosts/stale.json")).unwrap();
    let summary: listsync_harness::hosts::summary::HostSummary =
        serde_json::from_str(&json).unwrap();
    let plan = &summary.plans[0];
    assert_eq!((plan.plan.as_str(), plan.runs), ("in-call", 2));
    let v = plan
        .host
        .iter()
        .find(|v| v.property == "no_offer_of_removed")
        .unwrap();
    assert_eq!((v.violated, v.holds), (2, 0), "{json}");
    // Run 1 is kept, with no path of this machine in it.
    let log = std::fs::read_to_string(reports.join("hosts/stale/in-call/session.jsonl")).unwrap();
    let header = log.lines().next().unwrap();
    assert!(
        header.contains(r#""server":["listsync","serve""#),
        "{header}"
    );
    assert!(header.contains("$TMP/admin-0.sock"), "{header}");
    // The page keeps its prose and gains the table, rendered from the summary.
    let text = std::fs::read_to_string(reports.join("hosts.md")).unwrap();
    assert!(text.starts_with(page), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("| stale | in-call | 2 | violated 2/2 |")),
        "{text}"
    );
}

#[test]
fn record_numbered_gives_each_start_its_own_log_and_server() {
    let dir = tempfile::tempdir().unwrap();
    let exe = env!("CARGO_BIN_EXE_listsync");
    for _ in 0..2 {
        // The host closes the pipe at once: the server exits, the log is closed.
        let status = std::process::Command::new(exe)
            .args(["record", "--numbered", "--out"])
            .arg(dir.path().join("s.{n}.jsonl"))
            .args(["--", exe, "serve", "--stdio", "--admin-socket"])
            .arg(dir.path().join("a-{n}.sock"))
            .stdin(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(status.success());
    }
    for n in 0..2 {
        let log = std::fs::read_to_string(dir.path().join(format!("s.{n}.jsonl"))).unwrap();
        let header = log.lines().next().unwrap();
        assert!(header.contains(&format!("a-{n}.sock")), "{header}");
    }
    assert!(!dir.path().join("s.2.jsonl").exists());
}

#[test]
fn every_host_manifest_reads_and_pins_what_it_provisions() {
    let hosts_dir = repo().join("harness/hosts");
    let mut n = 0;
    for e in std::fs::read_dir(&hosts_dir).unwrap() {
        let dir = e.unwrap().path();
        if !dir.join("host.toml").exists() {
            continue;
        }
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let host = HostRef::find(&name, &hosts_dir).unwrap_or_else(|e| panic!("{e}"));
        n += 1;
        if host.manifest.provision.is_empty() {
            continue;
        }
        // A pinned default version, and a provisioning script that is there.
        assert!(!host.version.is_empty(), "{name}");
        let script = host.manifest.provision[1].replace("{hosts}", &hosts_dir.to_string_lossy());
        assert!(std::path::Path::new(&script).is_file(), "{name}: {script}");
        // Every program the command starts from the hosts' directory is there too.
        for a in &host.manifest.command {
            if let Some(rest) = a.strip_prefix("{hosts}/") {
                assert!(hosts_dir.join(rest).is_file(), "{name}: {a}");
            }
        }
    }
    assert!(n >= 10, "{n} manifests");
}
