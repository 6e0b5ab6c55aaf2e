//! The HTTP endpoint against hostile local peers, on 127.0.0.1: requests written by hand over
//! TCP (so nothing a client library adds or checks hides what the server does) and the reference
//! client. Bearer tokens select the context (401 with `WWW-Authenticate` otherwise), the
//! `auth<N>` convention works only when asked for, a session stays in its context, disallowed
//! origins get 403, malformed bodies get a JSON-RPC error with 400, sessions and connections are
//! capped (503), and a connection that never finishes its request head is closed.

mod common;

use common::*;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet, Op, Scope};
use listsync_rt::client::{ClientHandle, Endpoint};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::http::{HttpAuth, HttpEndpoint, HttpOptions};
use listsync_rt::server::tokens::TokenTable;
use listsync_rt::server::{Server, ServerSettings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-9876543210xyz";

fn tokens() -> HttpAuth {
    let text = format!("{ALICE} alice 1\n{BOB} bob 0\n");
    HttpAuth::Tokens(Arc::new(TokenTable::parse(&text).unwrap()))
}

/// A catalog with two public tools and one only context 1 may see.
fn scoped_initial() -> Vec<Op> {
    let mut ops = initial(2);
    ops.push(Op::Add {
        kind: Kind::Tools,
        name: "secret".into(),
        def: "only for auth1".into(),
        scope: Scope::Only(AuthCtx(1)),
    });
    ops
}

async fn endpoint(era: Era, options: HttpOptions) -> (Server, HttpEndpoint) {
    let history = SharedHistory::new();
    let server = server(ServerSettings::new(era, 0), &scoped_initial(), &history);
    let ep = within(
        "bind",
        server.serve_http_with("127.0.0.1:0".parse().unwrap(), options),
    )
    .await
    .expect("bind 127.0.0.1");
    (server, ep)
}

/// An HTTP response as read off the wire.
struct Reply {
    status: u16,
    head: String,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_owned())
        })
    }
}

/// Sends one request to `/mcp` (`Connection: close`) and reads the whole response.
async fn send(addr: SocketAddr, method: &str, headers: &[(&str, &str)], body: &str) -> Reply {
    send_to(addr, method, "/mcp", headers, body).await
}

async fn send_to(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("\r\n");
    req.push_str(body);
    let mut tcp = within("connect", TcpStream::connect(addr)).await.unwrap();
    tcp.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    within("response", tcp.read_to_end(&mut raw)).await.unwrap();
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no status line in {text:?}"));
    Reply {
        status,
        head: head.to_owned(),
        body: body.to_owned(),
    }
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;
const LIST: &str = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
const INITIALIZED: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;

fn mcp_headers<'a>(extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut h = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    h.extend_from_slice(extra);
    h
}

async fn initialize(addr: SocketAddr, extra: &[(&str, &str)]) -> Reply {
    send(addr, "POST", &mcp_headers(extra), INITIALIZE).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_are_required_when_configured() {
    let options = HttpOptions {
        auth: tokens(),
        ..HttpOptions::default()
    };
    let (_server, ep) = endpoint(Era::V2025_11_25, options).await;
    let addr = ep.addr();

    let none = initialize(addr, &[]).await;
    assert_eq!(none.status, 401, "{}", none.head);
    let challenge = none.header("www-authenticate").expect("a challenge");
    assert!(challenge.starts_with("Bearer"), "{challenge}");

    let wrong = initialize(addr, &[("Authorization", "Bearer alice-token-0123456788")]).await;
    assert_eq!(wrong.status, 401);
    assert!(
        wrong
            .header("www-authenticate")
            .is_some_and(|c| c.contains("invalid_token"))
    );
    // The test convention means nothing here.
    let convention = initialize(addr, &[("Authorization", "Bearer auth1")]).await;
    assert_eq!(convention.status, 401);

    let ok = initialize(addr, &[("Authorization", &format!("Bearer {ALICE}"))]).await;
    assert_eq!(ok.status, 200, "{}\n{}", ok.head, ok.body);
    assert!(ok.header("mcp-session-id").is_some());
    // Health needs no token (it holds no item); everything else does.
    let health = send_to(addr, "GET", "/health", &[], "").await;
    assert_eq!(health.status, 200, "{}", health.head);
    let stream = send(addr, "GET", &[("Accept", "text/event-stream")], "").await;
    assert_eq!(stream.status, 401);
    ep.shutdown().await;
}

/// A session stays in the context it was initialized in: a request on it with another
/// principal's token is refused, whatever that token may see.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_cannot_switch_context() {
    let options = HttpOptions {
        auth: tokens(),
        ..HttpOptions::default()
    };
    let (_server, ep) = endpoint(Era::V2025_11_25, options).await;
    let addr = ep.addr();
    let bob = format!("Bearer {BOB}");
    let alice = format!("Bearer {ALICE}");
    let init = initialize(addr, &[("Authorization", &bob)]).await;
    assert_eq!(init.status, 200);
    let session = init.header("mcp-session-id").unwrap();
    let proto = ("Mcp-Protocol-Version", "2025-11-25");
    let done = send(
        addr,
        "POST",
        &mcp_headers(&[("Authorization", &bob), ("Mcp-Session-Id", &session), proto]),
        INITIALIZED,
    )
    .await;
    assert!(done.status < 300, "{}", done.head);
    let own = send(
        addr,
        "POST",
        &mcp_headers(&[("Authorization", &bob), ("Mcp-Session-Id", &session), proto]),
        LIST,
    )
    .await;
    assert!(own.body.contains("\"t0\""), "{}", own.body);
    assert!(!own.body.contains("secret"), "{}", own.body);
    let hijack = send(
        addr,
        "POST",
        &mcp_headers(&[
            ("Authorization", &alice),
            ("Mcp-Session-Id", &session),
            proto,
        ]),
        LIST,
    )
    .await;
    assert!(
        hijack.body.contains("another authorization context"),
        "{} {}",
        hijack.status,
        hijack.body
    );
    assert!(!hijack.body.contains("secret"), "{}", hijack.body);
    ep.shutdown().await;
}

/// `Bearer auth<N>` selects a context only on a server that asked for the convention.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_auth_convention_is_off_by_default() {
    for (auth, sees_secret) in [
        (HttpAuth::Anonymous, false),
        (HttpAuth::InsecureTestAuth, true),
    ] {
        let history = SharedHistory::new();
        let options = HttpOptions {
            auth,
            ..HttpOptions::default()
        };
        let (server, ep) = endpoint(Era::V2025_11_25, options).await;
        let mut settings =
            client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, &history);
        settings.client.auth = AuthCtx(1);
        let catalog = ClientHandle::spawn(settings, Endpoint::Http { url: ep.url() });
        settle(&server, &[&catalog]).await;
        let names: Vec<String> = catalog.tools().names();
        assert_eq!(
            names.contains(&"secret".to_owned()),
            sees_secret,
            "{names:?}"
        );
        catalog.shutdown();
        ep.shutdown().await;
    }
}

/// `auth_isolation` over HTTP with real tokens: a client switches between two principals'
/// tokens while a scoped item is added; each context's snapshot holds only what it may see, judged
/// from the recorded history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contexts_never_share_private_items_with_real_tokens() {
    for era in Era::ALL {
        let (server, ep, history) = token_endpoint(ServerSettings::new(era, 2)).await;
        let mut settings = client_settings(era, KindSet::only(Kind::Tools), 0, &history);
        settings.bearer.insert(AuthCtx(0), BOB.to_owned());
        settings.bearer.insert(AuthCtx(1), ALICE.to_owned());
        let catalog = ClientHandle::spawn(settings, Endpoint::Http { url: ep.url() });
        settle(&server, &[&catalog]).await;
        assert_eq!(catalog.tools().items.len(), 2, "bob sees no secret");

        catalog.set_auth(AuthCtx(1));
        wait_view("alice listed", &catalog, Kind::Tools, |v| {
            v.auth == AuthCtx(1) && v.fetched
        })
        .await;
        settle(&server, &[&catalog]).await;
        assert_eq!(catalog.tools().items.len(), 3, "alice sees the secret");
        add_secret2(&server).await;
        settle(&server, &[&catalog]).await;
        history.quiescent(vec![(0, Kind::Tools, AuthCtx(1))]);

        catalog.set_auth(AuthCtx(0));
        wait_view("back to bob", &catalog, Kind::Tools, |v| {
            v.auth == AuthCtx(0) && v.fetched && !v.is_stale()
        })
        .await;
        settle(&server, &[&catalog]).await;
        history.quiescent(vec![(0, Kind::Tools, AuthCtx(0))]);
        assert!(
            catalog
                .tools()
                .items
                .iter()
                .all(|i| i.scope == Scope::Public)
        );
        assert_holds(&history);
        catalog.shutdown();
        ep.shutdown().await;
    }
}

/// no_spurious_notify over HTTP with real tokens: a rebuild that changes nothing is announced to
/// nobody, a change only alice's context sees only to alice's session, a public change to both;
/// the observer's history judges every notification sound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_told_only_of_changes_they_can_see() {
    for era in Era::ALL {
        let (server, ep, history) = token_endpoint(ServerSettings::new(era, 2)).await;
        let mut bob = client_settings(era, KindSet::only(Kind::Tools), 0, &history);
        bob.bearer.insert(AuthCtx(0), BOB.to_owned());
        let mut alice = client_settings(era, KindSet::only(Kind::Tools), 1, &history);
        alice.bearer.insert(AuthCtx(1), ALICE.to_owned());
        alice.client.auth = AuthCtx(1);
        let bob = ClientHandle::spawn(bob, Endpoint::Http { url: ep.url() });
        let alice = ClientHandle::spawn(alice, Endpoint::Http { url: ep.url() });
        settle(&server, &[&bob, &alice]).await;
        let before = notified(&history);
        assert_eq!(alice.tools().items.len(), 3, "{era}: alice sees the secret");

        let rebuild: Vec<Op> = scoped_initial()
            .into_iter()
            .filter_map(|op| match op {
                Op::Add {
                    kind, name, def, ..
                } => Some(Op::update(kind, &name, &def)),
                _ => None,
            })
            .collect();
        within("rebuild", server.apply(&rebuild)).await;
        settle(&server, &[&bob, &alice]).await;
        assert_eq!(notified(&history), before, "{era}: a rebuild is no news");

        add_secret2(&server).await;
        settle(&server, &[&bob, &alice]).await;
        let scoped = notified(&history);
        assert_eq!(scoped.len(), before.len() + 1, "{era}: one session told");
        within(
            "public add",
            server.apply(&[Op::add(Kind::Tools, "t9", "t9 v1")]),
        )
        .await;
        settle(&server, &[&bob, &alice]).await;
        let public = notified(&history);
        assert_eq!(public.len(), scoped.len() + 2, "{era}: both sessions told");
        let alice_session = scoped.last().unwrap();
        assert_eq!(
            public[scoped.len()..]
                .iter()
                .filter(|c| *c == alice_session)
                .count(),
            1,
            "{era}: the scoped change went to the session that got one of the public ones"
        );
        history.quiescent(vec![
            (0, Kind::Tools, AuthCtx(0)),
            (1, Kind::Tools, AuthCtx(1)),
        ]);
        assert_eq!(
            alice.tools().items.len(),
            5,
            "{era}: alice has both secrets"
        );
        assert_eq!(bob.tools().items.len(), 3, "{era}: bob has no secret");
        assert_holds(&history);
        bob.shutdown();
        alice.shutdown();
        ep.shutdown().await;
    }
}

/// The known-bad `notify-on-noop` over the same transport: the change only alice's context
/// sees is announced to bob too, and the observer's history judges it spurious.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_tells_everyone_is_judged_spurious() {
    let era = Era::V2025_11_25;
    let mut ss = ServerSettings::new(era, 2);
    ss.core.strategy = listsync_core::strategy::ServerStrategy::NotifyOnNoop;
    let (server, ep, history) = token_endpoint(ss).await;
    let mut bob = client_settings(era, KindSet::only(Kind::Tools), 0, &history);
    bob.bearer.insert(AuthCtx(0), BOB.to_owned());
    let bob = ClientHandle::spawn(bob, Endpoint::Http { url: ep.url() });
    settle(&server, &[&bob]).await;
    assert!(violated_set(&history).is_empty(), "{}", history.render());
    add_secret2(&server).await;
    settle(&server, &[&bob]).await;
    assert_eq!(
        violated_set(&history),
        [listsync_core::property::Property::NoSpuriousNotify],
        "{}",
        history.render()
    );
    bob.shutdown();
    ep.shutdown().await;
}

/// A server over HTTP on 127.0.0.1 with the token table (bob: context 0, alice: context 1), its
/// catalog `scoped_initial`, and its recorded history.
async fn token_endpoint(settings: ServerSettings) -> (Server, HttpEndpoint, SharedHistory) {
    let history = SharedHistory::new();
    let server = server(settings, &scoped_initial(), &history);
    let options = HttpOptions {
        auth: tokens(),
        ..HttpOptions::default()
    };
    let ep = within(
        "bind",
        server.serve_http_with("127.0.0.1:0".parse().unwrap(), options),
    )
    .await
    .unwrap();
    (server, ep, history)
}

/// Adds `secret2`, which only context 1 sees.
async fn add_secret2(server: &Server) {
    within(
        "scoped add",
        server.apply(&[Op::Add {
            kind: Kind::Tools,
            name: "secret2".into(),
            def: "also for auth1".into(),
            scope: Scope::Only(AuthCtx(1)),
        }]),
    )
    .await;
}

/// The sessions the server's `list_changed` went to, in history order.
fn notified(history: &SharedHistory) -> Vec<listsync_core::history::ClientId> {
    history
        .events()
        .into_iter()
        .filter_map(|e| match e {
            listsync_core::history::Event::Notified { client, .. } => Some(client),
            _ => None,
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disallowed_origins_get_403() {
    let options = HttpOptions {
        allowed_origins: vec!["https://app.example:*".into()],
        ..HttpOptions::default()
    };
    let (_server, ep) = endpoint(Era::V2025_11_25, options).await;
    let addr = ep.addr();
    for (origin, want) in [
        ("http://evil.example", 403),
        ("null", 403),
        ("http://127.0.0.1.evil.example", 403),
        ("http://127.0.0.1:5173", 200),
        ("http://localhost:3000", 200),
        ("https://app.example:8443", 200),
    ] {
        let r = initialize(addr, &[("Origin", origin)]).await;
        assert_eq!(r.status, want, "{origin}: {}", r.head);
    }
    assert_eq!(
        initialize(addr, &[]).await.status,
        200,
        "no Origin: allowed"
    );
    ep.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_bodies_get_json_rpc_errors_with_400() {
    let (_server, ep) = endpoint(Era::V2025_11_25, HttpOptions::default()).await;
    let addr = ep.addr();
    for (body, code) in [
        ("{not json", -32700),
        ("\u{1}\u{2}", -32700),
        ("{}", -32600),
        ("[1,2]", -32600),
    ] {
        let r = send(addr, "POST", &mcp_headers(&[]), body).await;
        assert_eq!(r.status, 400, "{body:?}: {} {}", r.head, r.body);
        let v: serde_json::Value = serde_json::from_str(&r.body).expect("a JSON body");
        assert_eq!(v["error"]["code"], code, "{body:?}: {v}");
        assert_eq!(v["id"], serde_json::Value::Null);
    }
    // Still serving.
    assert_eq!(initialize(addr, &[]).await.status, 200);
    ep.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_beyond_the_cap_get_503() {
    let options = HttpOptions {
        max_sessions: 3,
        ..HttpOptions::default()
    };
    let (_server, ep) = endpoint(Era::V2025_11_25, options).await;
    let addr = ep.addr();
    for i in 0..3 {
        assert_eq!(initialize(addr, &[]).await.status, 200, "session {i}");
    }
    let over = initialize(addr, &[]).await;
    assert_eq!(over.status, 503, "{}", over.head);
    assert!(over.header("retry-after").is_some());
    ep.shutdown().await;
}

/// A peer that sends half a request head and goes silent is cut off after the header timeout;
/// connections beyond the cap are answered 503 at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_and_surplus_connections_are_closed() {
    let options = HttpOptions {
        header_timeout: Duration::from_millis(300),
        max_connections: 2,
        ..HttpOptions::default()
    };
    let (_server, ep) = endpoint(Era::V2025_11_25, options).await;
    let addr = ep.addr();
    let mut slow = Vec::new();
    for _ in 0..2 {
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        tcp.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
            .await
            .unwrap();
        slow.push(tcp);
    }
    // Both slots are held: a third connection is refused with 503.
    let mut third = TcpStream::connect(addr).await.unwrap();
    let mut raw = Vec::new();
    within("the 503", third.read_to_end(&mut raw))
        .await
        .unwrap();
    let text = String::from_utf8_lossy(&raw);
    assert!(text.starts_with("HTTP/1.1 503"), "{text}");
    // The silent ones are closed after the header timeout (well within the bound).
    let started = Instant::now();
    for mut tcp in slow {
        let mut buf = Vec::new();
        // Ends (EOF, or a reset) only when the server closes the connection.
        let _ = within("the server closes", tcp.read_to_end(&mut buf)).await;
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "closed after {:?} (header timeout 300 ms)",
        started.elapsed()
    );
    // And the slots are free again.
    assert_eq!(initialize(addr, &[]).await.status, 200);
    ep.shutdown().await;
}
