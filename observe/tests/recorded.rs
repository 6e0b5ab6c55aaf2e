//! The observer against session logs recorded by `listsync host` (reports/hosts: real hosts and
//! our own against `listsync serve`, paged and not), and against the few message shapes those
//! logs lack (a cancelled list, a cursor of no walk, a listen acknowledged).

use listsync_core::vocab::Kind;
use listsync_observe::{ConnObserver, Observed, Sighting, Toward, WalkFate};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The messages of a session log (docs/session-log.md): (conn, seq, toward, json).
fn messages(path: &Path) -> Vec<(u32, u64, Toward, Value)> {
    let text = std::fs::read_to_string(path).expect("log");
    text.lines()
        .skip(1)
        .map(|l| serde_json::from_str::<Value>(l).expect("entry"))
        .filter(|e| e["type"] == "msg")
        .map(|e| {
            let toward = if e["dir"] == "c2s" {
                Toward::Server
            } else {
                Toward::Client
            };
            let conn = u32::try_from(e["conn"].as_u64().expect("conn")).expect("conn");
            (
                conn,
                e["seq"].as_u64().expect("seq"),
                toward,
                e["json"].clone(),
            )
        })
        .collect()
}

/// Each connection's observations, with what each message was.
fn observe(path: &Path) -> BTreeMap<u32, (Observed, Vec<(u64, Sighting)>)> {
    let mut conns: BTreeMap<u32, (ConnObserver, Vec<(u64, Sighting)>)> = BTreeMap::new();
    for (conn, seq, toward, v) in messages(path) {
        let (o, s) = conns
            .entry(conn)
            .or_insert_with(|| (ConnObserver::new(conn), Vec::new()));
        s.push((seq, o.see(seq, toward, &v)));
    }
    conns
        .into_iter()
        .map(|(c, (o, s))| (c, (o.finish(), s)))
        .collect()
}

fn names(o: &Observed, walk: usize) -> Vec<String> {
    o.walks[walk].items().into_iter().map(|i| i.name).collect()
}

#[test]
fn a_paged_session_is_three_walks_of_two_pages() {
    let all = observe(&repo().join("reports/hosts/careful/paged/session.jsonl"));
    let (o, sightings) = &all[&0];
    assert_eq!(o.walks.len(), 3);
    for w in &o.walks {
        assert_eq!(
            (w.kind, &w.fate, w.pages.len()),
            (Kind::Tools, &WalkFate::Complete, 2)
        );
    }
    assert_eq!(names(o, 0), ["echo", "greet", "time"]);
    assert_eq!(names(o, 1), ["echo", "greet", "time", "weather"]);
    assert_eq!(names(o, 2), ["echo", "greet", "weather"]);
    assert_eq!(o.walks[1].requests, [11, 13]);
    assert_eq!(o.walks[1].ended_at, Some(14));
    let called: Vec<&str> = o.calls.iter().map(|c| c.tool.as_str()).collect();
    assert_eq!(called, ["echo", "echo", "weather", "echo"]);
    assert!(o.calls.iter().all(|c| c.answer.is_some_and(|(_, ok)| ok)));
    assert_eq!(
        o.received.iter().map(|r| r.seq).collect::<Vec<_>>(),
        [10, 19]
    );
    assert_eq!(o.unanswered, 0);
    let at = |seq: u64| &sightings.iter().find(|(s, _)| *s == seq).expect("seq").1;
    assert_eq!(
        at(6),
        &Sighting::ListRequest {
            kind: Kind::Tools,
            walk: Some(0)
        }
    );
    assert!(matches!(
        at(5),
        Sighting::ListPage {
            more: true,
            walk: Some(0),
            ..
        }
    ));
    assert!(matches!(
        at(7),
        Sighting::ListPage {
            more: false,
            walk: Some(0),
            ..
        }
    ));
    assert_eq!(
        at(19),
        &Sighting::ListChanged {
            kind: Kind::Tools,
            subscription: None
        }
    );
}

#[test]
fn a_call_answered_after_a_relist_keeps_its_own_answer() {
    let all = observe(&repo().join("reports/hosts/stale/in-call/session.jsonl"));
    let o = &all[&0].0;
    assert_eq!(names(o, 0), ["echo", "greet", "time"]);
    assert_eq!(names(o, 1), ["greet", "time"]);
    assert_eq!((o.walks[1].start(), o.walks[1].ended_at), (8, Some(9)));
    assert_eq!(o.calls[0].request, 6);
    assert_eq!(o.calls[0].answer.map(|a| a.0), Some(10));
    assert_eq!(o.calls.len(), 3);
}

/// Across every recorded host session: each first-page list request starts one walk, each
/// `tools/call` is one call, every server notification is received, and a complete walk has
/// one page per request and ends at its last page.
#[test]
fn every_recorded_session_reads_consistently() {
    let mut logs = 0;
    for host in std::fs::read_dir(repo().join("reports/hosts")).expect("reports/hosts") {
        let Ok(plans) = std::fs::read_dir(host.expect("entry").path()) else {
            continue;
        };
        for plan in plans {
            let log = plan.expect("entry").path().join("session.jsonl");
            if !log.exists() {
                continue;
            }
            logs += 1;
            let raw = messages(&log);
            let count = |f: &dyn Fn(&Toward, &Value) -> bool| {
                raw.iter().filter(|(_, _, t, v)| f(t, v)).count()
            };
            let first_pages = count(&|t, v| {
                *t == Toward::Server
                    && v["method"].as_str().is_some_and(|m| m.ends_with("/list"))
                    && v["params"]["cursor"].is_null()
            });
            let calls = count(&|t, v| *t == Toward::Server && v["method"] == "tools/call");
            let notices = count(&|t, v| *t == Toward::Client && v.get("id").is_none());
            let all = observe(&log);
            let sum =
                |f: &dyn Fn(&Observed) -> usize| all.values().map(|(o, _)| f(o)).sum::<usize>();
            assert_eq!(sum(&|o| o.walks.len()), first_pages, "{}", log.display());
            assert_eq!(sum(&|o| o.calls.len()), calls, "{}", log.display());
            assert_eq!(sum(&|o| o.received.len()), notices, "{}", log.display());
            for (o, _) in all.values() {
                for w in o.walks.iter().filter(|w| w.fate == WalkFate::Complete) {
                    assert_eq!(w.requests.len(), w.pages.len(), "{}", log.display());
                    assert_eq!(w.ended_at, w.pages.last().map(|p| p.0), "{}", log.display());
                }
            }
        }
    }
    assert!(logs >= 20, "only {logs} recorded sessions found");
}

#[test]
fn a_cancelled_list_fails_its_walk_and_its_late_answer_is_a_page_of_no_walk() {
    let mut o = ConnObserver::new(7);
    o.see(
        1,
        Toward::Server,
        &json!({"jsonrpc":"2.0","id":1,"method":"tools/list"}),
    );
    let cancel =
        json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}});
    o.see(2, Toward::Server, &cancel);
    let late = json!({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]}});
    let s = o.see(3, Toward::Client, &late);
    assert!(matches!(
        s,
        Sighting::ListPage {
            walk: None,
            more: false,
            ..
        }
    ));
    let stray = json!({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"x"}});
    assert_eq!(
        o.see(4, Toward::Server, &stray),
        Sighting::ListRequest {
            kind: Kind::Tools,
            walk: None
        }
    );
    let done = o.finish();
    assert_eq!(done.walks.len(), 1);
    assert_eq!(done.walks[0].fate, WalkFate::Failed(None));
    assert_eq!(done.walks[0].ended_at, Some(2));
    assert_eq!(done.walks[0].conn, 7);
    // The stray cursor request is still waiting; the cancelled one is not.
    assert_eq!(done.unanswered, 1);
    assert_eq!(done.notes.len(), 1);
}

#[test]
fn an_acknowledgement_answers_the_listen_it_names() {
    let mut o = ConnObserver::new(0);
    let listen = json!({"jsonrpc":"2.0","id":"s1","method":"subscriptions/listen","params":{}});
    o.see(1, Toward::Server, &listen);
    o.see(
        2,
        Toward::Server,
        &json!({"jsonrpc":"2.0","id":"s2","method":"subscriptions/listen"}),
    );
    let ack = json!({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",
        "params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"s1"}}});
    assert_eq!(o.see(3, Toward::Client, &ack), Sighting::Other);
    let done = o.finish();
    assert!(done.listened);
    assert_eq!(done.unanswered, 1, "the second listen is not acknowledged");
    assert_eq!(done.received.len(), 1);
}
