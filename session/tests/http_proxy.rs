//! The Streamable HTTP recorder against a scripted upstream on 127.0.0.1 (a hyper server whose
//! every answer the test writes): what crosses is forwarded unchanged both ways (status,
//! headers but the hop-by-hop ones and `Host`, body bytes), an SSE body is passed on as it
//! arrives (each event reaches the client while the upstream still holds the stream open, and is
//! in the log by then; half an event is not), sessions become log connections that open and
//! close as the wire says, and oversized or non-JSON bodies are forwarded whole and logged as
//! `invalid`. Every wait is on an event, bounded by `listsync_testkit::LIMIT`.

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::{HeaderMap, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use listsync_session::http::{HttpRecorder, HttpRecorderOptions};
use listsync_session::log::{LogDir, SessionLog, What};
use serde_json::{Value, json};
use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::sync::{mpsc, oneshot};

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type Body = BoxBody<Bytes, BoxError>;

use listsync_testkit::within;

fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).map_err(|e| match e {}).boxed()
}

/// A body fed chunk by chunk from the test (an `Err` item breaks it off).
struct Fed(mpsc::UnboundedReceiver<Result<Bytes, String>>);

impl hyper::body::Body for Fed {
    type Data = Bytes;
    type Error = BoxError;
    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.0
            .poll_recv(cx)
            .map(|o| o.map(|r| r.map(Frame::data).map_err(|e| -> BoxError { e.into() })))
    }
}

/// A request as the upstream received it.
#[derive(Debug)]
struct Got {
    method: String,
    target: String,
    headers: HeaderMap,
    body: Bytes,
}

type Handler = Arc<dyn Fn(&Got) -> Response<Body> + Send + Sync>;

/// The scripted upstream: answers each request with `handler`, and reports it.
async fn upstream(handler: Handler) -> (String, mpsc::UnboundedReceiver<Got>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let (handler, tx) = (handler.clone(), tx.clone());
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let (handler, tx) = (handler.clone(), tx.clone());
                async move {
                    let (parts, body) = req.into_parts();
                    let body = body.collect().await.unwrap().to_bytes();
                    let got = Got {
                        method: parts.method.to_string(),
                        target: parts.uri.to_string(),
                        headers: parts.headers,
                        body,
                    };
                    let resp = handler(&got);
                    let _ = tx.send(got);
                    Ok::<_, Infallible>(resp)
                }
            });
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), svc)
                    .await;
            });
        }
    });
    (format!("http://{addr}/mcp"), rx)
}

/// The recorder in front of `upstream_url`, logging to DIR/session.jsonl; stopped by the
/// returned sender (or when the test ends).
async fn recorder(
    dir: &Path,
    upstream_url: &str,
) -> (
    String,
    PathBuf,
    oneshot::Sender<()>,
    tokio::task::JoinHandle<()>,
) {
    let out = dir.join("session.jsonl");
    let rec = HttpRecorder::bind(&HttpRecorderOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: upstream_url.to_owned(),
        out: out.clone(),
        allow_non_loopback: false,
    })
    .await
    .unwrap();
    let url = rec.url();
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(rec.run_until(async {
        let _ = stopped.await;
    }));
    (url, out, stop, task)
}

/// Sends `req` to `url`'s host on a new connection.
async fn send(url: &str, req: Request<Body>) -> Response<Incoming> {
    let uri: hyper::Uri = url.parse().unwrap();
    let tcp = tokio::net::TcpStream::connect(uri.authority().unwrap().as_str())
        .await
        .unwrap();
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
        .await
        .unwrap();
    tokio::spawn(conn);
    within("a response head", sender.send_request(req))
        .await
        .unwrap()
}

fn request(method: &str, url: &str, headers: &[(&str, &str)], body: Body) -> Request<Body> {
    let uri: hyper::Uri = url.parse().unwrap();
    let mut b = Request::builder()
        .method(method)
        .uri(uri.path_and_query().unwrap().as_str())
        .header("host", uri.authority().unwrap().as_str());
    for (k, v) in headers {
        b = b.header(*k, *v);
    }
    b.body(body).unwrap()
}

fn read_log(path: &Path) -> SessionLog {
    listsync_session::log::read(path).unwrap()
}

/// Entries as (conn, type, dir, json or why).
fn entries(log: &SessionLog) -> Vec<(u32, &'static str, Option<LogDir>, Value)> {
    log.entries
        .iter()
        .map(|e| match &e.what {
            What::Open { detail } => (e.conn, "open", None, json!(detail)),
            What::Close { detail } => (e.conn, "close", None, json!(detail)),
            What::Msg { dir, json } => (e.conn, "msg", Some(*dir), json.clone()),
            What::Invalid {
                dir, len, preview, ..
            } => (
                e.conn,
                "invalid",
                Some(*dir),
                json!({"len": len, "preview": preview}),
            ),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_and_responses_cross_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    // The upstream answers with a status, headers and a body the recorder must not touch:
    // JSON with odd spacing, a repeated header, a custom one.
    let answer = b"{ \"jsonrpc\":\"2.0\",  \"id\":7,\n \"result\":{\"x\":\"\\u00e9\"} }".to_vec();
    let reply = answer.clone();
    let (up, mut got) = upstream(Arc::new(move |_g: &Got| {
        Response::builder()
            .status(StatusCode::IM_A_TEAPOT)
            .header("content-type", "application/json")
            .header("mcp-session-id", "s-1")
            .header("x-upstream", "kept")
            .header("set-cookie", "a=1")
            .header("set-cookie", "b=2")
            .body(full(reply.clone()))
            .unwrap()
    }))
    .await;
    let (url, log, stop, task) = recorder(dir.path(), &up).await;
    let sent = b"[{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"},  {\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]".to_vec();
    let headers = [
        ("mcp-protocol-version", "2025-11-25"),
        ("authorization", "Bearer secret-token"),
        ("last-event-id", "41"),
        ("origin", "http://127.0.0.1:9"),
        ("accept", "application/json, text/event-stream"),
        ("content-type", "application/json"),
        ("x-client", "kept too"),
        ("connection", "keep-alive, x-hop"),
        ("x-hop", "dropped"),
    ];
    let resp = send(
        &url,
        request("POST", &format!("{url}?q=1"), &headers, full(sent.clone())),
    )
    .await;
    // What the upstream received: the same bytes, the end-to-end headers unchanged, its own
    // Host, the path and query as sent.
    let g = within("the upstream's request", got.recv()).await.unwrap();
    assert_eq!(g.method, "POST");
    assert_eq!(g.target, "/mcp?q=1");
    assert_eq!(g.body, sent);
    for (k, v) in &headers[..7] {
        assert_eq!(g.headers.get(*k).unwrap(), v, "{k}");
    }
    assert!(g.headers.get("x-hop").is_none(), "{:?}", g.headers);
    assert_eq!(
        g.headers.get("host").unwrap(),
        up.trim_start_matches("http://").trim_end_matches("/mcp")
    );
    // What the client received: the upstream's status, headers and bytes.
    assert_eq!(resp.status(), StatusCode::IM_A_TEAPOT);
    assert_eq!(resp.headers().get("mcp-session-id").unwrap(), "s-1");
    assert_eq!(resp.headers().get("x-upstream").unwrap(), "kept");
    let cookies: Vec<_> = resp.headers().get_all("set-cookie").iter().collect();
    assert_eq!(cookies, ["a=1", "b=2"]);
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(body, answer);

    // A body that is not JSON crosses unchanged too, and is logged as such.
    let junk = b"\xff\xfe not json \x00 at all".to_vec();
    let resp = send(
        &url,
        request(
            "POST",
            &url,
            &[("mcp-session-id", "s-1")],
            full(junk.clone()),
        ),
    )
    .await;
    let g = within("the upstream's request", got.recv()).await.unwrap();
    assert_eq!(g.body, junk);
    assert_eq!(resp.into_body().collect().await.unwrap().to_bytes(), answer);

    let _ = stop.send(());
    task.await.unwrap();
    let l = read_log(&log);
    assert_eq!(l.header.server, [up.as_str()]);
    let e = entries(&l);
    // The batch is one entry per element, logged under the session its response assigned.
    assert_eq!(e[0].0, 0);
    assert_eq!(e[0].1, "open");
    assert_eq!(e[1].3["method"], "tools/list");
    assert_eq!(e[2].3["method"], "notifications/initialized");
    assert_eq!((e[3].1, e[3].2), ("msg", Some(LogDir::ServerToClient)));
    assert_eq!(e[3].3["id"], 7);
    assert_eq!(
        (e[4].0, e[4].1, e[4].2),
        (0, "invalid", Some(LogDir::ClientToServer))
    );
    assert_eq!(e[4].3["len"], junk.len());
    assert!(e[4].3["preview"].as_str().unwrap().contains("not json"));
    assert_eq!((e[5].1, e[5].2), ("msg", Some(LogDir::ServerToClient)));
    assert_eq!((e[6].0, e[6].1), (0, "close"));
    assert_eq!(e.len(), 7, "{e:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sse_events_pass_through_as_they_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let (feed_tx, feed_rx) = mpsc::unbounded_channel::<Result<Bytes, String>>();
    let feed = Mutex::new(Some(feed_rx));
    let (up, _got) = upstream(Arc::new(move |_g: &Got| {
        let rx = feed.lock().unwrap().take().expect("one stream");
        Response::builder()
            .header("content-type", "text/event-stream")
            .header("mcp-session-id", "s-9")
            .body(Fed(rx).boxed())
            .unwrap()
    }))
    .await;
    let (url, log, stop, task) = recorder(dir.path(), &up).await;
    let resp = send(
        &url,
        request(
            "GET",
            &url,
            &[("mcp-session-id", "s-9"), ("accept", "text/event-stream")],
            full(Bytes::new()),
        ),
    )
    .await;
    assert_eq!(
        resp.headers().get("content-type").unwrap(),
        "text/event-stream"
    );
    let mut body = resp.into_body();
    let mut received: Vec<u8> = Vec::new();
    let mut sent: Vec<u8> = Vec::new();
    // Reads until `received` ends with `want`.
    async fn until(body: &mut Incoming, received: &mut Vec<u8>, want: &[u8]) {
        within("bytes from the stream", async {
            while !received.ends_with(want) {
                let f = body.frame().await.expect("stream open").expect("no error");
                if let Some(d) = f.data_ref() {
                    received.extend_from_slice(d);
                }
            }
        })
        .await
    }
    let msgs = |log: &Path| -> Vec<Value> {
        entries(&read_log(log))
            .into_iter()
            .filter(|e| e.1 == "msg")
            .map(|e| e.3)
            .collect()
    };
    // A priming event (no data), then a notification: it reaches the client while the
    // upstream holds the stream open, and the log has it by then.
    let first = b": ok\n\nid: 0\ndata:\n\nid: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n";
    feed_tx.send(Ok(Bytes::from_static(first))).unwrap();
    sent.extend_from_slice(first);
    until(&mut body, &mut received, first).await;
    let m = msgs(&log);
    assert_eq!(m.len(), 1, "{m:?}");
    assert_eq!(m[0]["method"], "notifications/tools/list_changed");
    // Half an event crosses at once but is not a message yet; its end makes it one.
    let half = b"id: 2\ndata: {\"jsonrpc\":\"2.0\",";
    feed_tx.send(Ok(Bytes::from_static(half))).unwrap();
    sent.extend_from_slice(half);
    until(&mut body, &mut received, half).await;
    assert_eq!(msgs(&log).len(), 1);
    let rest = b"\"method\":\"notifications/prompts/list_changed\"}\r\n\r\n";
    feed_tx.send(Ok(Bytes::from_static(rest))).unwrap();
    sent.extend_from_slice(rest);
    until(&mut body, &mut received, rest).await;
    let m = msgs(&log);
    assert_eq!(m.len(), 2);
    assert_eq!(m[1]["method"], "notifications/prompts/list_changed");
    // The upstream ends the stream: so does the client's, having received every byte.
    drop(feed_tx);
    within("the stream's end", async {
        while let Some(f) = body.frame().await {
            received.extend_from_slice(f.unwrap().data_ref().unwrap());
        }
    })
    .await;
    assert_eq!(received, sent);
    let _ = stop.send(());
    task.await.unwrap();
    let e = entries(&read_log(&log));
    assert!(
        e.iter().all(|x| x.0 == 0)
            && e.first().unwrap().1 == "open"
            && e.last().unwrap().1 == "close",
        "{e:#?}"
    );
    // A stream that ended cleanly does not end the session: only the recording's stop did.
    assert_eq!(e.last().unwrap().3, "recording stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_are_connections_that_open_and_close_as_the_wire_says() {
    let dir = tempfile::tempdir().unwrap();
    let (broken_tx, broken_rx) = mpsc::unbounded_channel::<Result<Bytes, String>>();
    let broken = Mutex::new(Some(broken_rx));
    let next = Mutex::new(0u32);
    let (up, _got) = upstream(Arc::new(move |g: &Got| {
        let session = g
            .headers
            .get("mcp-session-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let body: Value = serde_json::from_slice(&g.body).unwrap_or(Value::Null);
        match (
            g.method.as_str(),
            session.as_deref(),
            body["method"].as_str(),
        ) {
            ("POST", None, Some("initialize")) => {
                let mut n = next.lock().unwrap();
                *n += 1;
                Response::builder()
                    .header("content-type", "application/json")
                    .header("mcp-session-id", format!("s{n}"))
                    .body(full(
                        json!({"jsonrpc":"2.0","id":body["id"],"result":{}}).to_string(),
                    ))
                    .unwrap()
            }
            ("POST", None, _) => Response::builder()
                .header("content-type", "application/json")
                .body(full(
                    json!({"jsonrpc":"2.0","id":body["id"],"result":{"stateless":true}})
                        .to_string(),
                ))
                .unwrap(),
            ("DELETE", Some(_), _) => Response::new(full(Bytes::new())),
            ("GET", Some("s2"), _) => Response::builder()
                .header("content-type", "text/event-stream")
                .body(Fed(broken.lock().unwrap().take().unwrap()).boxed())
                .unwrap(),
            ("POST", Some("s3"), _) => Response::builder()
                .status(StatusCode::NOT_FOUND)
                .body(full("no such session"))
                .unwrap(),
            ("POST", Some(_), _) => Response::builder()
                .status(StatusCode::ACCEPTED)
                .body(full(Bytes::new()))
                .unwrap(),
            _ => Response::builder()
                .status(StatusCode::METHOD_NOT_ALLOWED)
                .body(full(Bytes::new()))
                .unwrap(),
        }
    }))
    .await;
    let (url, log, stop, task) = recorder(dir.path(), &up).await;
    let post = |session: Option<&str>, v: Value| {
        let mut h = vec![("content-type", "application/json")];
        if let Some(s) = session {
            h.push(("mcp-session-id", s));
        }
        request("POST", &url, &h, full(v.to_string()))
    };
    let init = |id: u32| json!({"jsonrpc":"2.0","id":id,"method":"initialize","params":{}});
    let note = json!({"jsonrpc":"2.0","method":"notifications/initialized"});
    // Session s1: conn 0, ended by DELETE.
    send(&url, post(None, init(1))).await;
    send(&url, post(Some("s1"), note.clone())).await;
    // Session s2: conn 1, its GET stream broken off by the server.
    send(&url, post(None, init(1))).await;
    let del = send(
        &url,
        request(
            "DELETE",
            &url,
            &[("mcp-session-id", "s1")],
            full(Bytes::new()),
        ),
    )
    .await;
    assert_eq!(del.status(), StatusCode::OK);
    let get = send(
        &url,
        request("GET", &url, &[("mcp-session-id", "s2")], full(Bytes::new())),
    )
    .await;
    let ping = b"data: {\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"id\":5}\n\n";
    broken_tx.send(Ok(Bytes::from_static(ping))).unwrap();
    let mut body = get.into_body();
    let mut received = Vec::new();
    within("the event", async {
        while !received.ends_with(ping) {
            let f = body.frame().await.expect("open").expect("no error");
            received.extend_from_slice(f.data_ref().unwrap());
        }
    })
    .await;
    broken_tx.send(Err("server died".into())).unwrap();
    within("the broken stream", async {
        while let Some(f) = body.frame().await {
            if f.is_err() {
                return;
            }
        }
        panic!("the stream ended cleanly, not broken");
    })
    .await;
    // Session s3: conn 2, which the server no longer knows (404).
    send(&url, post(Some("s3"), note.clone())).await;
    // A stateless exchange: conn 3, shared by every exchange without a session id.
    send(
        &url,
        post(None, json!({"jsonrpc":"2.0","id":9,"method":"tools/list"})),
    )
    .await;
    send(
        &url,
        post(None, json!({"jsonrpc":"2.0","id":10,"method":"tools/list"})),
    )
    .await;
    let _ = stop.send(());
    task.await.unwrap();
    let l = read_log(&log);
    let e: Vec<(u32, &str, Option<LogDir>)> =
        entries(&l).into_iter().map(|x| (x.0, x.1, x.2)).collect();
    use LogDir::{ClientToServer as C, ServerToClient as S};
    assert_eq!(
        e,
        [
            (0, "open", None),
            (0, "msg", Some(C)),
            (0, "msg", Some(S)),
            (0, "msg", Some(C)),
            (1, "open", None),
            (1, "msg", Some(C)),
            (1, "msg", Some(S)),
            (0, "close", None),
            (1, "msg", Some(S)),
            (1, "close", None),
            (2, "open", None),
            (2, "msg", Some(C)),
            (2, "invalid", Some(S)),
            (2, "close", None),
            (3, "open", None),
            (3, "msg", Some(C)),
            (3, "msg", Some(S)),
            (3, "msg", Some(C)),
            (3, "msg", Some(S)),
            (3, "close", None),
        ],
        "{:#?}",
        l.entries
    );
    let close = |n: usize| match &l.entries[n].what {
        What::Close { detail } => detail.clone(),
        w => panic!("{w:?}"),
    };
    assert_eq!(close(7), "DELETE answered 200");
    assert!(close(9).contains("broke"), "{}", close(9));
    assert!(close(13).contains("404"), "{}", close(13));
    assert_eq!(close(19), "recording stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_body_is_forwarded_whole_and_logged_as_too_long() {
    let dir = tempfile::tempdir().unwrap();
    let (up, mut got) = upstream(Arc::new(|_g: &Got| {
        Response::builder()
            .header("content-type", "application/json")
            .header("mcp-session-id", "big")
            .body(full(Bytes::new()))
            .unwrap()
    }))
    .await;
    let (url, log, stop, task) = recorder(dir.path(), &up).await;
    let len = listsync_session::log::MAX_LINE_BYTES + 123;
    let mut big = b"[\"".to_vec();
    big.resize(len - 2, b'x');
    big.extend_from_slice(b"\"]");
    send(
        &url,
        request(
            "POST",
            &url,
            &[("mcp-session-id", "big")],
            full(big.clone()),
        ),
    )
    .await;
    let g = within("the upstream's request", got.recv()).await.unwrap();
    assert!(
        g.body == big,
        "the body arrived changed ({} bytes)",
        g.body.len()
    );
    let _ = stop.send(());
    task.await.unwrap();
    let e = entries(&read_log(&log));
    assert_eq!(
        (e[1].1, e[1].2),
        ("invalid", Some(LogDir::ClientToServer)),
        "{e:?}"
    );
    assert_eq!(e[1].3["len"], len);
    assert_eq!(
        e[1].3["preview"].as_str().unwrap().len(),
        listsync_session::log::MAX_PREVIEW
    );
}

#[tokio::test]
async fn a_non_loopback_address_is_refused_unless_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.jsonl");
    let e = HttpRecorder::bind(&HttpRecorderOptions {
        listen: "0.0.0.0:0".parse().unwrap(),
        upstream: "http://127.0.0.1:1/mcp".into(),
        out: out.clone(),
        allow_non_loopback: false,
    })
    .await
    .err()
    .expect("refused");
    assert!(
        e.contains("not a loopback address") && e.contains("--allow-non-loopback"),
        "{e}"
    );
    assert!(!out.exists(), "no log is created for a refused address");
    let e = HttpRecorder::bind(&HttpRecorderOptions {
        listen: "127.0.0.1:0".parse().unwrap(),
        upstream: "https://127.0.0.1:1/mcp".into(),
        out: out.clone(),
        allow_non_loopback: false,
    })
    .await
    .err()
    .expect("refused");
    assert!(e.contains("TLS"), "{e}");
}
