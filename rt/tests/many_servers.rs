//! One application, several servers (docs/design.md, "Many servers in one client"), over
//! Streamable HTTP on 127.0.0.1: two of our servers that both report `serverInfo.name` "files"
//! and both have a tool `read` (with different definitions). With the reference prefixes (the
//! keys the application configured) the combined listing holds every tool of both, each
//! combined name reaches the server it came from, the listing follows a server's change, and a
//! member that reconnects keeps its names. The known-bad `prefix-from-server-info` hides one
//! `read` behind the other. Where a call went is judged from each server's own history (the
//! calls its observer saw dispatched), never from what the client says.

mod common;

use common::*;
use listsync_core::aggregate::CombinedEntry;
use listsync_core::history::Event;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Op};
use listsync_rt::client::{Change, ClientHandle, Endpoint, ListHealth, Servers, ServersError};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::http::HttpEndpoint;
use listsync_rt::server::{Server, ServerSettings};
use tokio::sync::watch;

/// One of the two servers: the server, its history, its HTTP endpoint.
struct Side {
    server: Server,
    history: SharedHistory,
    ep: Option<HttpEndpoint>,
}

impl Side {
    async fn start(era: Era, only: &str, read: &str) -> Side {
        let history = SharedHistory::new();
        let mut settings = ServerSettings::new(era, 0);
        settings.name = "files".into();
        let initial = [
            Op::add(Kind::Tools, "read", read),
            Op::add(Kind::Tools, only, &format!("{only} v1")),
        ];
        let server = server(settings, &initial, &history);
        let ep = within("bind", server.serve_http("127.0.0.1:0".parse().unwrap()))
            .await
            .expect("bind 127.0.0.1");
        Side {
            server,
            history,
            ep: Some(ep),
        }
    }

    fn client(&self, era: Era, id: u32) -> ClientHandle {
        let mut s = client_settings(era, KindSet::only(Kind::Tools), id, &self.history);
        // The server's history holds what the server observed only.
        s.history = None;
        let url = self.ep.as_ref().expect("serving").url();
        ClientHandle::spawn(s, Endpoint::Http { url })
    }

    /// Calls of `tool` this server ran, as its observer saw them.
    fn ran(&self, tool: &str) -> usize {
        self.history
            .events()
            .iter()
            .filter(|e| matches!(e, Event::Dispatched { tool: t, .. } if &**t == tool))
            .count()
    }

    /// How many tools this server lists now.
    fn tools(&self) -> usize {
        self.server.visible(Kind::Tools, AuthCtx(0)).len()
    }

    /// This server's definition of `tool`.
    fn def(&self, tool: &str) -> String {
        self.server
            .visible(Kind::Tools, AuthCtx(0))
            .into_iter()
            .find(|i| &*i.name == tool)
            .map(|i| i.def.to_string())
            .expect("listed")
    }
}

fn names(listing: &[CombinedEntry]) -> Vec<String> {
    listing.iter().map(|e| e.name.to_string()).collect()
}

/// Resolves when any of `rxs` sees a change.
async fn any_changed(rxs: &mut [watch::Receiver<Change>]) {
    let mut futs: Vec<_> = rxs.iter_mut().map(|rx| Box::pin(rx.changed())).collect();
    std::future::poll_fn(move |cx| {
        for f in futs.iter_mut() {
            if f.as_mut().poll(cx).is_ready() {
                return std::task::Poll::Ready(());
            }
        }
        std::task::Poll::Pending
    })
    .await
}

/// Waits until the combined listing satisfies `pred`.
async fn wait_listing(what: &str, servers: &Servers, pred: impl Fn(&[CombinedEntry]) -> bool) {
    within(what, async {
        loop {
            let mut rxs: Vec<_> = servers.handles().map(|(_, h)| h.changes()).collect();
            if pred(&servers.listing()) {
                return;
            }
            any_changed(&mut rxs).await;
        }
    })
    .await
}

/// Waits until every member is connected, idle, and has listed its tools, its list current and
/// its snapshot not marked stale.
async fn wait_listed(servers: &Servers) {
    for (key, h) in servers.handles() {
        wait_status(key, h, |s| {
            s.ready
                && s.idle
                && s.lists.get(&Kind::Tools).map(|l| l.health) == Some(ListHealth::Current)
        })
        .await;
        wait_view(key, h, Kind::Tools, |v| v.fetched && !v.is_stale()).await;
    }
}

async fn two_files(era: Era, strategy: ClientStrategy) -> (Side, Side, Servers) {
    let a = Side::start(era, "a_only", "reads from A").await;
    let b = Side::start(era, "b_only", "reads from B").await;
    let servers = Servers::new(
        strategy,
        vec![
            ("alpha".into(), a.client(era, 0)),
            ("beta".into(), b.client(era, 1)),
        ],
    )
    .expect("valid keys");
    wait_listed(&servers).await;
    (a, b, servers)
}

async fn configured_keys_keep_same_named_servers_apart(era: Era) {
    let (mut a, b, servers) = two_files(era, ClientStrategy::Reference).await;
    let members = servers.members();
    assert!(
        members.iter().all(|m| m.server_name == "files"),
        "{members:?}"
    );
    let listing = servers.listing();
    assert_eq!(
        names(&listing),
        ["alpha__a_only", "alpha__read", "beta__b_only", "beta__read"]
    );
    assert_eq!(listing.len(), a.tools() + b.tools());
    for (name, side) in [("alpha__read", &a), ("beta__read", &b)] {
        let e = listing.iter().find(|e| &*e.name == name).unwrap();
        assert_eq!(&*e.item.def, side.def("read"), "{name}");
    }

    within("alpha__read", servers.call("alpha__read"))
        .await
        .expect("alpha__read runs");
    assert_eq!((a.ran("read"), b.ran("read")), (1, 0));
    within("beta__read", servers.call("beta__read"))
        .await
        .expect("beta__read runs");
    assert_eq!((a.ran("read"), b.ran("read")), (1, 1));
    within("beta__b_only", servers.call("beta__b_only"))
        .await
        .expect("beta__b_only runs");
    assert_eq!((a.ran("b_only"), b.ran("b_only")), (0, 1));
    let unknown = within("alpha__b_only", servers.call("alpha__b_only")).await;
    assert_eq!(
        unknown,
        Err(ServersError::Unknown("alpha__b_only".into())),
        "A has no b_only"
    );
    assert_eq!(a.ran("b_only"), 0);

    // B changes its list: the combined listing follows.
    within(
        "change B",
        b.server.apply(&[
            Op::add(Kind::Tools, "b_new", "b_new v1"),
            Op::remove(Kind::Tools, "b_only"),
        ]),
    )
    .await;
    wait_listing("B's change", &servers, |l| {
        names(l) == ["alpha__a_only", "alpha__read", "beta__b_new", "beta__read"]
    })
    .await;
    within("beta__b_new", servers.call("beta__b_new"))
        .await
        .expect("beta__b_new runs");
    assert_eq!((a.ran("b_new"), b.ran("b_new")), (0, 1));
    let gone = within("beta__b_only", servers.call("beta__b_only")).await;
    assert_eq!(gone, Err(ServersError::Unknown("beta__b_only".into())));
    assert_eq!(b.ran("b_only"), 1, "not sent again");

    // A restarts on the same port: alpha reconnects, keeps its names, and they reach A.
    let alpha = servers.handle("alpha").unwrap().clone();
    let before = names(&servers.listing());
    let ep = a.ep.take().unwrap();
    let addr = ep.addr();
    within("A stops", ep.shutdown()).await;
    wait_status("alpha disconnected", &alpha, |s| !s.connected).await;
    assert_eq!(names(&servers.listing()), before, "kept while A is away");
    a.ep = Some(
        within("A restarts", a.server.serve_http(addr))
            .await
            .expect("rebind"),
    );
    wait_status("alpha reconnected", &alpha, |s| {
        s.connections >= 2 && s.connected && s.ready && s.idle
    })
    .await;
    wait_listed(&servers).await;
    assert_eq!(
        names(&servers.listing()),
        before,
        "same names after reconnect"
    );
    within("alpha__read again", servers.call("alpha__read"))
        .await
        .expect("alpha__read runs after the reconnect");
    within("beta__read again", servers.call("beta__read"))
        .await
        .expect("beta__read runs");
    assert_eq!((a.ran("read"), b.ran("read")), (2, 2));
    servers.shutdown();
    within("A stops", a.ep.take().unwrap().shutdown()).await;
    within("B stops", b.ep.unwrap().shutdown()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_keys_keep_same_named_servers_apart_2025() {
    configured_keys_keep_same_named_servers_apart(Era::V2025_11_25).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn configured_keys_keep_same_named_servers_apart_2026() {
    configured_keys_keep_same_named_servers_apart(Era::V2026_07_28).await;
}

/// The known-bad prefixes: both servers report "files", so both `read`s are `files__read`, one
/// shadows the other, and no combined name reaches A's `read` although A lists it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_info_prefixes_hide_one_read() {
    let era = Era::V2025_11_25;
    let (a, b, servers) = two_files(era, ClientStrategy::PrefixFromServerInfo).await;
    let listing = servers.listing();
    assert_eq!(
        names(&listing),
        ["files__a_only", "files__b_only", "files__read"]
    );
    assert_eq!(a.tools() + b.tools(), 4, "the servers list four tools");
    assert!(
        listing.len() < a.tools() + b.tools(),
        "the combined listing hides one: {:?}",
        names(&listing)
    );
    // Calling every name the application shows never reaches A's read.
    for e in &listing {
        within(&e.name, servers.call(&e.name))
            .await
            .unwrap_or_else(|err| panic!("{}: {err}", e.name));
    }
    within("files__read", servers.call("files__read"))
        .await
        .expect("files__read runs");
    assert_eq!(
        (a.ran("read"), b.ran("read")),
        (0, 2),
        "files__read reaches B only"
    );
    assert_eq!((a.ran("a_only"), b.ran("b_only")), (1, 1));
    let keyed = within("alpha__read", servers.call("alpha__read")).await;
    assert_eq!(keyed, Err(ServersError::Unknown("alpha__read".into())));
    servers.shutdown();
    within("A stops", a.ep.unwrap().shutdown()).await;
    within("B stops", b.ep.unwrap().shutdown()).await;
}

/// Keys are the application's: invalid or repeated ones are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_are_checked() {
    let a = Side::start(Era::V2025_11_25, "a_only", "reads from A").await;
    let c = || a.client(Era::V2025_11_25, 0);
    let twice = Servers::new(
        ClientStrategy::Reference,
        vec![("alpha".into(), c()), ("alpha".into(), c())],
    );
    assert!(twice.err().unwrap().contains("twice"));
    let bad = Servers::new(ClientStrategy::Reference, vec![("a_b".into(), c())]);
    assert!(bad.err().unwrap().contains("'a_b'"));
    within("A stops", a.ep.unwrap().shutdown()).await;
}
