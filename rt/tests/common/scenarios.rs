//! Scenarios run over every transport (duplex and HTTP test files call them).

use super::*;
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::gate::{GateTarget, Phase};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::ServerSettings;

/// Startup, then add, remove, update and a mixed batch across page boundaries of every list;
/// quiescence after each, judged at the end.
pub async fn converges_after_batches(era: Era, transport: Transport) {
    let history = SharedHistory::new();
    let server = server(ServerSettings::new(era, 2), &initial(5), &history);
    let (catalog, _http) = connect(
        transport,
        &server,
        client_settings(era, all_kinds(), 0, &history),
    )
    .await;
    let expect = [(0, all_kinds())];
    settle(&server, &[&catalog]).await;
    quiescent(&history, &expect);

    let batches = vec![
        vec![Op::add(Kind::Tools, "t9", "t9 v1")],
        vec![Op::remove(Kind::Tools, "t0")],
        vec![Op::update(Kind::Tools, "t2", "t2 v2")],
        vec![
            Op::add(Kind::Tools, "t7", "t7 v1"),
            Op::remove(Kind::Tools, "t1"),
            Op::update(Kind::Tools, "t3", "t3 v2"),
            Op::add(Kind::Prompts, "p2", "p2 v1"),
            Op::remove(Kind::Resources, "mem://r0"),
            Op::update(Kind::ResourceTemplates, "mem://{x}", "x v2"),
        ],
    ];
    for batch in batches {
        within("apply", server.apply(&batch)).await;
        settle(&server, &[&catalog]).await;
        quiescent(&history, &expect);
    }
    assert_holds(&history);
    // What the application reads is the server's list (the checker saw the same at quiescence).
    let names: Vec<String> = catalog.tools().names();
    assert_eq!(names, ["t2", "t3", "t4", "t7", "t9"]);
    assert_eq!(catalog.tools().version, Some(server.version()));
}

/// A walk's page 2 is parked (before it is served, or with its reply held) while another batch
/// commits; judged at quiescence.
pub async fn mutation_between_pages(era: Era, transport: Transport, phase: Phase) {
    let history = SharedHistory::new();
    let server = server(ServerSettings::new(era, 2), &initial(5), &history);
    let tools = KindSet::only(Kind::Tools);
    let (catalog, _http) =
        connect(transport, &server, client_settings(era, tools, 0, &history)).await;
    settle(&server, &[&catalog]).await;

    let gate = server.gates().arm(
        GateTarget::Request {
            method: "tools/list".into(),
            phase,
        },
        2,
    );
    within(
        "apply",
        server.apply(&[Op::add(Kind::Tools, "t8", "t8 v1")]),
    )
    .await;
    assert!(within("page 2 parked", server.gates().parked(gate)).await);
    within("apply", server.apply(&[Op::remove(Kind::Tools, "t4")])).await;
    server.gates().release(gate);
    settle(&server, &[&catalog]).await;
    quiescent(&history, &[(0, tools)]);
    if std::env::var("SHOW").is_ok() {
        eprintln!("{}", history.render());
    }
    assert_holds(&history);
}
