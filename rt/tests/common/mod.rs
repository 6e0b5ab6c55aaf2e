//! Shared helpers of the runtime's integration tests: bounded waits (every await that depends
//! on a peer has a timeout), a settle condition built from events (never sleeps), and judging a
//! recorded history with core's property checkers.

#![allow(dead_code)]

use listsync_core::history::ClientId;
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::{AuthCtx, Kind, KindSet, Op};
use listsync_rt::client::{ClientHandle, ClientSettings, ClientStatus, Endpoint};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};

pub mod memory;
pub mod raw_peer;
pub mod scenarios;
use std::future::Future;
use std::time::Duration;

pub use listsync_testkit::within;

/// Waits until `catalog`'s status satisfies `pred`.
pub async fn wait_status(
    what: &str,
    catalog: &ClientHandle,
    pred: impl Fn(&ClientStatus) -> bool,
) -> ClientStatus {
    let mut rx = catalog.status();
    within(what, async {
        rx.wait_for(|s| pred(s))
            .await
            .map(|s| s.clone())
            .expect("client alive")
    })
    .await
}

/// Waits until every client is connected, past its handshake, idle, and has received every
/// notification the server handed to a transport: nothing is in flight or running.
pub async fn settle(server: &Server, catalogs: &[&ClientHandle]) {
    within("quiescence", async {
        loop {
            let sent = u64::from(server.notifications_sent());
            let mut received = 0;
            let mut all_idle = true;
            for c in catalogs {
                let s = c.status().borrow().clone();
                received += s.notifications;
                all_idle &= s.ready && s.idle;
            }
            if all_idle && received >= sent {
                return;
            }
            // Wake on the next status change of any client.
            let mut rxs: Vec<_> = catalogs.iter().map(|c| c.status()).collect();
            let waits = rxs.iter_mut().map(|rx| Box::pin(rx.changed()));
            let _ = futures_select(waits.collect()).await;
        }
    })
    .await
}

/// Resolves when the first of `futs` does.
async fn futures_select<F: Future + Unpin>(futs: Vec<F>) {
    let mut futs = futs;
    std::future::poll_fn(move |cx| {
        for f in futs.iter_mut() {
            if std::pin::Pin::new(f).poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Records quiescence for these clients' kinds (current context 0).
pub fn quiescent(history: &SharedHistory, clients: &[(ClientId, KindSet)]) {
    let expect = clients
        .iter()
        .flat_map(|(c, kinds)| kinds.iter().map(move |k| (*c, k, AuthCtx(0))))
        .collect();
    history.quiescent(expect);
}

/// Judges the history; returns the violated properties.
pub fn violated(history: &SharedHistory) -> Vec<Property> {
    let j = history.judge();
    Property::ALL
        .into_iter()
        .filter(|p| j.verdicts[p] == Verdict::Violated)
        .collect()
}

/// Fails the test unless every property holds, showing the history and the violations.
pub fn assert_holds(history: &SharedHistory) {
    let j = history.judge();
    if !j.violations.is_empty() {
        let v: Vec<String> = j
            .violations
            .iter()
            .map(|v| format!("{} at event {}: {}", v.property, v.at, v.detail))
            .collect();
        panic!(
            "properties violated:\n{}\nhistory:\n{}",
            v.join("\n"),
            history.render()
        );
    }
}

/// Every kind.
pub fn all_kinds() -> KindSet {
    Kind::ALL.into_iter().collect()
}

/// A catalog of `tools` tools (t0, t1...), two prompts, two resources and a template.
pub fn initial(tools: usize) -> Vec<Op> {
    let mut ops: Vec<Op> = (0..tools)
        .map(|i| Op::add(Kind::Tools, &format!("t{i}"), &format!("t{i} v1")))
        .collect();
    ops.push(Op::add(Kind::Prompts, "p0", "p0 v1"));
    ops.push(Op::add(Kind::Prompts, "p1", "p1 v1"));
    ops.push(Op::add(Kind::Resources, "mem://r0", "r0 v1"));
    ops.push(Op::add(Kind::Resources, "mem://r1", "r1 v1"));
    ops.push(Op::add(Kind::ResourceTemplates, "mem://{x}", "x v1"));
    ops
}

/// A server recording into `history`.
pub fn server(settings: ServerSettings, initial: &[Op], history: &SharedHistory) -> Server {
    Server::new(settings, initial, Some(history.clone()))
}

/// Client settings for tests: recording into `history`, short backoffs, bounded requests.
pub fn client_settings(
    era: listsync_core::vocab::Era,
    kinds: KindSet,
    id: ClientId,
    history: &SharedHistory,
) -> ClientSettings {
    let mut s = ClientSettings::new(era, kinds);
    s.id = id;
    s.history = Some(history.clone());
    s.request_timeout = Duration::from_secs(10);
    s.client.limits.backoff_base_ms = 10;
    s.client.limits.backoff_max_ms = 200;
    s.reconnect_base = Duration::from_millis(10);
    s.reconnect_max = Duration::from_millis(200);
    s.probe_interval = Duration::from_millis(100);
    s
}

/// A client connected to an in-process server over `tokio::io::duplex`.
pub fn duplex_client(server: &Server, settings: ClientSettings) -> ClientHandle {
    ClientHandle::spawn(settings, Endpoint::server(server))
}

/// Waits until `catalog`'s current snapshot of `kind` satisfies `pred`.
pub async fn wait_view(
    what: &str,
    catalog: &ClientHandle,
    kind: Kind,
    pred: impl Fn(&listsync_rt::client::View) -> bool,
) {
    let mut changes = catalog.changes();
    within(what, async {
        loop {
            if pred(&catalog.list(kind)) {
                return;
            }
            if changes.changed().await.is_err() {
                panic!("client stopped while waiting for {what}");
            }
        }
    })
    .await
}

/// Applies a batch in its own task (the call returns only once its notifications are sent,
/// which a gate may hold).
pub fn apply_later(server: &Server, ops: Vec<Op>) -> tokio::task::JoinHandle<()> {
    let server = server.clone();
    tokio::spawn(async move {
        server.apply(&ops).await;
    })
}

/// The violated properties, sorted, for comparing with an expected set.
pub fn violated_set(history: &SharedHistory) -> Vec<Property> {
    let mut v = violated(history);
    v.sort();
    v
}

/// How a test client reaches its in-process server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    /// `tokio::io::duplex`.
    Duplex,
    /// Streamable HTTP on 127.0.0.1.
    Http,
}

/// A client connected to `server` over `transport`; keep the returned endpoint alive.
pub async fn connect(
    transport: Transport,
    server: &Server,
    settings: ClientSettings,
) -> (
    ClientHandle,
    Option<listsync_rt::server::http::HttpEndpoint>,
) {
    match transport {
        Transport::Duplex => (duplex_client(server, settings), None),
        Transport::Http => {
            let ep = within(
                "http bind",
                server.serve_http("127.0.0.1:0".parse().expect("addr")),
            )
            .await
            .expect("bind 127.0.0.1");
            let catalog = ClientHandle::spawn(settings, Endpoint::Http { url: ep.url() });
            (catalog, Some(ep))
        }
    }
}
