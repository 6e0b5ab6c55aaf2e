//! `listsync record --http ADDR --upstream URL`: the Streamable HTTP reverse proxy (MCP
//! 2025-11-25 transport). Clients are pointed at the recorder's URL ([`HttpRecorder::url`]: its
//! address and the upstream's path); every request is forwarded to the upstream server and
//! every response back, unchanged — method, path and query, status, headers (`Mcp-Session-Id`,
//! `MCP-Protocol-Version`, `Authorization`, `Last-Event-ID`, `Origin`...) except the hop-by-hop
//! ones and `Host` (set to the upstream's), and body — with SSE bodies passed on chunk by chunk
//! as they arrive ([`body`]).
//!
//! On the MCP endpoint's path every JSON-RPC message that crosses is logged (the session log of
//! [`crate::log`], header `transport: "http"`, `server: [URL]`): a POST body as `c2s` (a batch
//! as one message per element), a JSON response body and each server-sent event's data as
//! `s2c`; a body that is not JSON is forwarded and logged as `invalid`. Other paths (e.g.
//! `/health`, OAuth metadata) are forwarded unlogged. Each MCP session is one log connection
//! ([`conns`]): a request naming a session belongs to it; a request without one (the
//! `initialize`) to the session its response assigns, and is logged when that response's head
//! arrives, before anything of the response is forwarded; exchanges no session id is ever
//! attached to (a stateless server) share one connection. A connection closes when a `DELETE`
//! of its session is answered with success, when the server answers a request of it with 404
//! (it no longer knows the session), when a stream of it breaks off or the server cannot be
//! reached (the server is gone), and when the recording stops.
//!
//! Bounds: [`MAX_CONNECTIONS`] client connections at once (one more is closed at once), a
//! request head within [`HEADER_TIMEOUT`], a JSON-RPC body whole within
//! [`body::BODY_TIMEOUT`] and kept up to [`MAX_LINE_BYTES`] (a longer one is forwarded and
//! logged as too long), an event's data kept up to the same limit.

pub mod body;
pub mod conns;
pub mod sse;
pub mod upstream;

use crate::log::{LogDir, MAX_LINE_BYTES, RecordTransport, Writer};
use body::{HttpBody, Read, Sink, Tap, TapWatch, full, read_capped};
use conns::Conns;
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use upstream::Upstream;

/// Most client connections served at once.
pub const MAX_CONNECTIONS: usize = 256;
/// Longest wait for a request head (from a connection's start or its previous response).
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

const SESSION_ID: &str = "mcp-session-id";

/// What `listsync record --http` was asked to do.
#[derive(Clone, Debug)]
pub struct HttpRecorderOptions {
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The upstream server's URL (`http://HOST:PORT/PATH`).
    pub upstream: String,
    /// The session log to write.
    pub out: PathBuf,
    /// Listen on an address that is not loopback (the recorder has no authentication of its
    /// own: anyone who reaches it reaches the server).
    pub allow_non_loopback: bool,
}

/// A bound recorder, not yet serving.
pub struct HttpRecorder {
    listener: tokio::net::TcpListener,
    addr: SocketAddr,
    shared: Arc<Shared>,
}

struct Shared {
    log: Arc<Writer>,
    conns: Arc<Conns>,
    upstream: Upstream,
}

impl HttpRecorder {
    /// Checks the options, binds the address and creates the log (in that order: a refused
    /// address leaves an existing log alone).
    pub async fn bind(opts: &HttpRecorderOptions) -> Result<HttpRecorder, String> {
        let upstream = Upstream::parse(&opts.upstream)?;
        if !opts.listen.ip().is_loopback() && !opts.allow_non_loopback {
            return Err(format!(
                "--http {}: not a loopback address; the recorder has no authentication of its own, so anyone who reaches it reaches the server (--allow-non-loopback to listen there anyway)",
                opts.listen
            ));
        }
        let listener = tokio::net::TcpListener::bind(opts.listen)
            .await
            .map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("cannot listen on {}: {e}", opts.listen))?;
        let log = Arc::new(
            Writer::create(&opts.out, RecordTransport::Http, vec![upstream.url.clone()])
                .map_err(|e| format!("cannot create {}: {e}", opts.out.display()))?,
        );
        Ok(HttpRecorder {
            listener,
            addr,
            shared: Arc::new(Shared {
                conns: Arc::new(Conns::new(log.clone())),
                log,
                upstream,
            }),
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL to point MCP clients at: its address with the upstream's path and query.
    pub fn url(&self) -> String {
        format!(
            "http://{}{}",
            self.addr, self.shared.upstream.path_and_query
        )
    }

    /// Serves until `stop` completes; then ends every exchange in progress and closes every
    /// connection still open in the log.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        let mut tasks = tokio::task::JoinSet::new();
        let mut backoff = Duration::from_millis(10);
        let mut refusing = false;
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
                accepted = self.listener.accept() => match accepted {
                    Ok((tcp, peer)) => {
                        backoff = Duration::from_millis(10);
                        if tasks.len() >= MAX_CONNECTIONS {
                            if !refusing {
                                tracing::warn!("record: {MAX_CONNECTIONS} client connections open; closing new ones (from {peer}) until one ends");
                                refusing = true;
                            }
                            drop(tcp);
                            continue;
                        }
                        refusing = false;
                        tasks.spawn(serve_connection(self.shared.clone(), tcp));
                    }
                    Err(e) => {
                        tracing::warn!("record: accept failed ({e}); retrying in {} ms", backoff.as_millis());
                        tokio::time::sleep(backoff).await;
                        backoff = (backoff * 2).min(Duration::from_secs(1));
                    }
                },
            }
        }
        tasks.abort_all();
        while tasks.join_next().await.is_some() {}
        self.shared.conns.close_all("recording stopped");
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM: how `listsync record --http` is stopped.
pub async fn interrupted() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            tokio::select! {
                r = tokio::signal::ctrl_c() => if r.is_err() { term.recv().await; },
                _ = term.recv() => {}
            }
            return;
        }
    }
    if tokio::signal::ctrl_c().await.is_err() {
        // No signal handling at all: run until killed.
        std::future::pending::<()>().await;
    }
}

async fn serve_connection(shared: Arc<Shared>, tcp: tokio::net::TcpStream) {
    let _ = tcp.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let shared = shared.clone();
        async move { Ok::<_, Infallible>(handle(&shared, req).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(TokioIo::new(tcp), service)
        .await;
    if let Err(e) = served {
        tracing::debug!("record: client connection: {e}");
    }
}

/// Hop-by-hop headers (RFC 9110 §7.6.1): they concern one connection, not the message.
const HOP_BY_HOP: [&str; 9] = [
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "proxy-connection",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
];

/// `headers` without the hop-by-hop ones (those named by `Connection` too).
fn end_to_end(headers: &HeaderMap) -> HeaderMap {
    let named: Vec<String> = headers
        .get_all(hyper::header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().to_ascii_lowercase())
        .collect();
    let mut out = HeaderMap::with_capacity(headers.len());
    for (name, value) in headers {
        let n = name.as_str();
        if !HOP_BY_HOP.contains(&n) && !named.iter().any(|t| t == n) {
            out.append(name.clone(), value.clone());
        }
    }
    out
}

fn session_of(headers: &HeaderMap) -> Option<String> {
    headers
        .get(SESSION_ID)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The request to send upstream: the client's, with the upstream's `Host`.
fn upstream_request(
    shared: &Shared,
    parts: &hyper::http::request::Parts,
    body: HttpBody,
) -> Request<HttpBody> {
    let mut headers = end_to_end(&parts.headers);
    if let Ok(host) = HeaderValue::from_str(&shared.upstream.authority) {
        headers.insert(hyper::header::HOST, host);
    }
    let target = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    let mut req = Request::new(body);
    *req.method_mut() = parts.method.clone();
    *req.uri_mut() = target.parse().unwrap_or_default();
    *req.headers_mut() = headers;
    req
}

/// The response to send the client: the server's, without hop-by-hop headers.
fn client_response(parts: hyper::http::response::Parts, body: HttpBody) -> Response<HttpBody> {
    let mut resp = Response::new(body);
    *resp.status_mut() = parts.status;
    *resp.headers_mut() = end_to_end(&parts.headers);
    resp
}

/// An answer of the recorder's own (the exchange could not be forwarded), in one line.
fn own_answer(status: StatusCode, what: &str) -> Response<HttpBody> {
    let mut resp = Response::new(full(format!("listsync record: {what}\n")));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

async fn handle(shared: &Shared, req: Request<Incoming>) -> Response<HttpBody> {
    if req.uri().path() != shared.upstream.path {
        return pass(shared, req).await;
    }
    let session = session_of(req.headers());
    let delete = req.method() == Method::DELETE;
    let (parts, body) = req.into_parts();
    let body = match read_capped(body, MAX_LINE_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            tracing::warn!(
                "record: a {} body from the client was {e}: not forwarded",
                parts.method
            );
            return own_answer(
                StatusCode::REQUEST_TIMEOUT,
                &format!("the request body was {e}"),
            );
        }
    };
    // What to log of the request: a whole body (a longer one is logged as too long when it
    // ends, by the tap that forwards it).
    let whole = match &body {
        Read::Whole(b) if !b.is_empty() => Some(b.clone()),
        _ => None,
    };
    let log_request = |conn: u32| {
        if let Some(b) = &whole {
            shared.log.body(conn, LogDir::ClientToServer, b, b.len());
        }
    };
    // The connection is known now if the request names a session: its messages are logged
    // before the server can see them. Otherwise the response's head says (below).
    let known = session
        .as_deref()
        .map(|s| shared.conns.session(s, "first seen on a request"));
    if let Some(c) = known {
        log_request(c);
    }
    let sink = |conn: u32, dir: LogDir| Sink {
        log: shared.log.clone(),
        conns: shared.conns.clone(),
        conn,
        dir,
    };
    let forwarded = match body {
        Read::Whole(b) => full(b),
        Read::Over { head, rest } => {
            // On the session's connection, or the sessionless one if the request names none.
            let conn = known.unwrap_or_else(|| shared.conns.sessionless());
            Tap::oversized(head, rest, sink(conn, LogDir::ClientToServer)).boxed()
        }
    };
    let resp = match shared
        .upstream
        .send(upstream_request(shared, &parts, forwarded))
        .await
    {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!("record: {e}");
            if let Some(c) = known {
                shared
                    .conns
                    .close(c, &format!("the server is unreachable ({e})"));
            }
            return own_answer(
                StatusCode::BAD_GATEWAY,
                &format!("the server is unreachable: {e}"),
            );
        }
    };
    let conn = match known {
        Some(c) => c,
        None => {
            let c = match session_of(resp.headers()) {
                Some(s) => shared.conns.session(&s, "assigned by the server"),
                None => shared.conns.sessionless(),
            };
            log_request(c);
            c
        }
    };
    let (parts, rbody) = resp.into_parts();
    let sse = parts
        .headers
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|t| {
            t.trim_start()
                .to_ascii_lowercase()
                .starts_with("text/event-stream")
        });
    let status = parts.status;
    let body = if sse {
        Tap::new(
            None,
            rbody,
            TapWatch::Events(Default::default()),
            Some(sink(conn, LogDir::ServerToClient)),
        )
        .boxed()
    } else {
        match read_capped(rbody, MAX_LINE_BYTES).await {
            Ok(Read::Whole(b)) => {
                if !b.is_empty() {
                    shared.log.body(conn, LogDir::ServerToClient, &b, b.len());
                }
                full(b)
            }
            Ok(Read::Over { head, rest }) => {
                Tap::oversized(head, rest, sink(conn, LogDir::ServerToClient)).boxed()
            }
            Err(e) => {
                tracing::warn!("record: a response body from the server was {e}");
                shared
                    .conns
                    .close(conn, &format!("the server's response was {e}"));
                return own_answer(
                    StatusCode::BAD_GATEWAY,
                    &format!("the server's response was {e}"),
                );
            }
        }
    };
    if session.is_some() && status == StatusCode::NOT_FOUND {
        shared.conns.close(
            conn,
            "the server answered 404: it no longer knows the session",
        );
    } else if delete && status.is_success() {
        shared
            .conns
            .close(conn, &format!("DELETE answered {}", status.as_u16()));
    }
    client_response(parts, body)
}

/// An exchange outside the MCP endpoint: forwarded both ways as it streams, not logged.
async fn pass(shared: &Shared, req: Request<Incoming>) -> Response<HttpBody> {
    let (parts, body) = req.into_parts();
    let up = upstream_request(shared, &parts, Tap::plain(body).boxed());
    match shared.upstream.send(up).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            client_response(parts, Tap::plain(body).boxed())
        }
        Err(e) => {
            tracing::warn!("record: {e}");
            own_answer(
                StatusCode::BAD_GATEWAY,
                &format!("the server is unreachable: {e}"),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::header::HeaderName;

    #[test]
    fn hop_by_hop_headers_are_dropped_and_the_rest_kept_in_order() {
        let mut h = HeaderMap::new();
        h.append("connection", HeaderValue::from_static("keep-alive, X-Hop"));
        h.append("x-hop", HeaderValue::from_static("1"));
        h.append("transfer-encoding", HeaderValue::from_static("chunked"));
        h.append(SESSION_ID, HeaderValue::from_static("abc"));
        h.append("set-cookie", HeaderValue::from_static("a=1"));
        h.append("set-cookie", HeaderValue::from_static("b=2"));
        h.append(
            HeaderName::from_static("mcp-protocol-version"),
            HeaderValue::from_static("2025-11-25"),
        );
        let kept = end_to_end(&h);
        let names: Vec<&str> = kept.keys().map(|k| k.as_str()).collect();
        assert_eq!(names, [SESSION_ID, "set-cookie", "mcp-protocol-version"]);
        let cookies: Vec<_> = kept.get_all("set-cookie").iter().collect();
        assert_eq!(cookies, ["a=1", "b=2"]);
    }
}
