//! The reference client against the reference server over Streamable HTTP on 127.0.0.1:
//! 2025-11-25 (sessions, notifications on the GET stream) and 2026-07-28 (stateless,
//! `server/discover`, `subscriptions/listen`). The same scenarios as over duplex, plus an outage
//! of the endpoint. All judged with core's property checkers. Authorization contexts over HTTP
//! (bearer tokens, items visible to one context only) are in `http_security.rs`.

mod common;

use common::Transport::Http;
use common::scenarios::*;
use common::*;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Op};
use listsync_rt::client::{ClientHandle, Endpoint, View};
use listsync_rt::gate::Phase;
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_after_batches_2025() {
    converges_after_batches(Era::V2025_11_25, Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn converges_after_batches_2026() {
    converges_after_batches(Era::V2026_07_28, Http).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_between_pages_2025() {
    mutation_between_pages(Era::V2025_11_25, Http, Phase::After).await;
    mutation_between_pages(Era::V2025_11_25, Http, Phase::Before).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutation_between_pages_2026() {
    mutation_between_pages(Era::V2026_07_28, Http, Phase::After).await;
    mutation_between_pages(Era::V2026_07_28, Http, Phase::Before).await;
}

/// A client that listed the tools of a server whose HTTP endpoint then went away: the client
/// noticed, and shows the list it had, marked stale.
struct Outage {
    history: SharedHistory,
    server: Server,
    addr: std::net::SocketAddr,
    catalog: ClientHandle,
    before: std::sync::Arc<View>,
}

async fn outage(era: Era) -> Outage {
    let history = SharedHistory::new();
    let server = server(ServerSettings::new(era, 2), &initial(3), &history);
    let ep = within("bind", server.serve_http("127.0.0.1:0".parse().unwrap()))
        .await
        .unwrap();
    let addr = ep.addr();
    let catalog = ClientHandle::spawn(
        client_settings(era, KindSet::only(Kind::Tools), 0, &history),
        Endpoint::Http { url: ep.url() },
    );
    settle(&server, &[&catalog]).await;
    let before = catalog.tools();
    within("shutdown", ep.shutdown()).await;
    wait_status("disconnect noticed", &catalog, |s| !s.connected).await;
    wait_view("marked stale", &catalog, Kind::Tools, |v| v.is_stale()).await;
    assert_eq!(catalog.tools().items, before.items, "old snapshot kept");
    Outage {
        history,
        server,
        addr,
        catalog,
        before,
    }
}

/// The server becomes unreachable and comes back unchanged: the walk after the reconnect lists
/// the very version the client already shows, so nothing new is published, and the snapshot
/// marked stale at the disconnect is shown current again (not left marked for ever).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_without_change_clears_the_stale_mark() {
    for era in Era::ALL {
        let Outage {
            history,
            server,
            addr,
            catalog,
            before,
        } = outage(era).await;

        let ep = within("rebind", server.serve_http(addr)).await.unwrap();
        wait_status("reconnected", &catalog, |s| {
            s.connections >= 2 && s.connected && s.ready && s.idle
        })
        .await;
        wait_view("shown current", &catalog, Kind::Tools, |v| !v.is_stale()).await;
        let after = catalog.tools();
        assert_eq!(
            (&after.items, after.version),
            (&before.items, before.version),
            "the same list"
        );
        history.quiescent(vec![(0, Kind::Tools, AuthCtx(0))]);
        assert_holds(&history);
        within("shutdown", ep.shutdown()).await;
    }
}

/// The server becomes unreachable (its HTTP endpoint shuts down) and changes meanwhile: the
/// client notices (2025-11-25: its idle probe fails; 2026-07-28: the listen stream ends), keeps
/// its snapshot marked stale, reconnects when the endpoint is back, and re-lists. Judged whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_keeps_snapshot_then_relists() {
    for era in Era::ALL {
        let Outage {
            history,
            server,
            addr,
            catalog,
            ..
        } = outage(era).await;
        within(
            "add while down",
            server.apply(&[Op::add(Kind::Tools, "t9", "t9 v1")]),
        )
        .await;

        let ep = within("rebind", server.serve_http(addr)).await.unwrap();
        wait_view("relisted", &catalog, Kind::Tools, |v| {
            v.version == Some(2) && !v.is_stale()
        })
        .await;
        wait_status("idle", &catalog, |s| s.ready && s.idle).await;
        history.quiescent(vec![(0, Kind::Tools, AuthCtx(0))]);
        assert_holds(&history);
        within("shutdown", ep.shutdown()).await;
    }
}
