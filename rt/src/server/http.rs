//! Streamable HTTP on 127.0.0.1: rmcp's `StreamableHttpService` (a tower service) served by a
//! plain hyper HTTP/1 accept loop — no web framework, no TLS.
//!
//! * 2025-11-25: sessions (`Mcp-Session-Id`); rmcp calls the factory once per session and the
//!   handler lives for it, so `initialize` registers the session's peer; responses ride each
//!   POST's SSE stream, notifications the session's GET stream.
//! * 2026-07-28: stateless; rmcp calls the factory for every POST. State lives in the shared
//!   registry, not in handlers; `subscriptions/listen` is a long POST whose SSE stream carries the
//!   acknowledgement and the tagged notifications.
//!
//! Any path serves MCP (rmcp ignores it); use `http://127.0.0.1:PORT/mcp`. The exceptions are
//! `GET /health`: the server's [`HealthReport`](super::HealthReport) as JSON — 200 while it is
//! current, 503 while a node of a multi-instance server is cut off from its shared store (it still
//! serves its last version; a load balancer may prefer other nodes) — and `/admin/change`, the
//! token-protected admin endpoint when [`HttpOptions::admin`] enables it ([`super::admin`]).
//!
//! The endpoint is closed by default against other local users and web pages ([`HttpOptions`]):
//! disallowed `Origin`s get 403, bearer tokens (when configured) select the principal and its
//! authorization context (401 otherwise), sessions and connections are capped (503 beyond), a
//! connection that does not send a request head within [`HttpOptions::header_timeout`] (or stays
//! idle that long between requests) is closed, and a failing `accept` (out of file descriptors)
//! backs off instead of spinning. Each request passes [`super::http_guard`] before rmcp sees it.

use super::Server;
use super::http_guard::Guard;
use super::tokens::TokenTable;
use listsync_core::vocab::{AuthCtx, Era};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// How requests are authenticated.
#[derive(Clone, Debug, Default)]
pub enum HttpAuth {
    /// Nobody is: every request is made under context 0, which sees public items only; an
    /// `Authorization` header is ignored.
    #[default]
    Anonymous,
    /// `Authorization: Bearer TOKEN` with a token of the table selects its principal and context;
    /// a missing or unknown token gets 401 with `WWW-Authenticate`.
    Tokens(Arc<TokenTable>),
    /// Test convenience (`--insecure-test-auth`): `Authorization: Bearer auth<N>` selects
    /// context N for anyone who sends it; no header is context 0. Never for a real deployment.
    InsecureTestAuth,
}

/// The security limits of an HTTP endpoint. The defaults are the documented ones (README,
/// "Security").
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// Authentication.
    pub auth: HttpAuth,
    /// Origins allowed besides the loopback ones (`http(s)://127.0.0.1`, `localhost`, `[::1]`,
    /// any port) and an absent `Origin`; exact `scheme://host[:port]`, or `scheme://host:*` for
    /// any port.
    pub allowed_origins: Vec<String>,
    /// Most live 2025-11-25 sessions; an `initialize` beyond gets 503.
    pub max_sessions: usize,
    /// Most open connections; one beyond gets 503 and is closed.
    pub max_connections: usize,
    /// Longest wait for a request head (from the connection's start, or from the end of the
    /// previous response on a kept-alive connection).
    pub header_timeout: Duration,
    /// Longest wait for a request body.
    pub body_timeout: Duration,
    /// Largest request body (413 beyond).
    pub max_body_bytes: usize,
    /// How long a 2025-11-25 session may stay without traffic before it is closed.
    pub session_idle: Duration,
    /// The admin endpoint `POST /admin/change` and the one token it accepts
    /// ([`TokenTable::admin`]); None (the default): the path answers 404.
    pub admin: Option<Arc<TokenTable>>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            auth: HttpAuth::Anonymous,
            allowed_origins: Vec::new(),
            max_sessions: 256,
            max_connections: 512,
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(10),
            max_body_bytes: 4 << 20,
            session_idle: Duration::from_secs(300),
            admin: None,
        }
    }
}

/// A running HTTP endpoint.
pub struct HttpEndpoint {
    addr: SocketAddr,
    stop: CancellationToken,
    task: JoinHandle<()>,
}

impl HttpEndpoint {
    /// The bound address (the port is the real one when 0 was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP URL.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops accepting, closes sessions and streams, and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.stop.cancel();
        let _ = self.task.await;
    }

    /// Waits until the endpoint stops (after [`HttpEndpoint::stopper`] is cancelled).
    pub async fn wait(self) {
        let _ = self.task.await;
    }

    /// A token that stops the endpoint when cancelled.
    pub fn stopper(&self) -> CancellationToken {
        self.stop.clone()
    }
}

/// The test convention `Authorization: Bearer auth<N>` → context N (anything else → None).
pub fn insecure_test_auth(headers: &http::HeaderMap) -> Option<AuthCtx> {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| t.trim().strip_prefix("auth"))
        .and_then(|n| n.parse::<u8>().ok())
        .map(AuthCtx)
}

impl Server {
    /// Serves this server over Streamable HTTP on `addr` with the default [`HttpOptions`]
    /// (anonymous: every request in context 0).
    pub async fn serve_http(&self, addr: SocketAddr) -> std::io::Result<HttpEndpoint> {
        self.serve_http_with(addr, HttpOptions::default()).await
    }

    /// Serves this server over Streamable HTTP on `addr`, which must be a loopback address
    /// (port 0 picks a free port).
    pub async fn serve_http_with(
        &self,
        addr: SocketAddr,
        options: HttpOptions,
    ) -> std::io::Result<HttpEndpoint> {
        if !addr.ip().is_loopback() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("refusing to listen on {addr}: loopback only (127.0.0.1)"),
            ));
        }
        let stop = CancellationToken::new();
        let config = StreamableHttpServerConfig::default()
            .with_legacy_session_mode(self.era() == Era::V2025_11_25)
            .with_sse_keep_alive(Some(Duration::from_secs(15)))
            .with_max_request_body_bytes(options.max_body_bytes)
            .with_cancellation_token(stop.clone());
        let mut sessions = LocalSessionManager::default();
        sessions.session_config.keep_alive = Some(options.session_idle);
        let sessions = Arc::new(sessions);
        let server = self.clone();
        let svc =
            StreamableHttpService::new(move || Ok(server.service()), sessions.clone(), config);
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let guard = Arc::new(Guard::new(
            self.clone(),
            svc,
            sessions,
            options.clone(),
            self.era() == Era::V2025_11_25,
        ));
        let task = tokio::spawn(accept_loop(listener, guard, options, stop.clone()));
        Ok(HttpEndpoint { addr, stop, task })
    }
}

/// Accepts connections until `stop`; at most `max_connections` are served at once.
async fn accept_loop(
    listener: TcpListener,
    guard: Arc<Guard>,
    options: HttpOptions,
    stop: CancellationToken,
) {
    let slots = Arc::new(Semaphore::new(options.max_connections));
    let mut backoff = Backoff::default();
    loop {
        let accepted = tokio::select! {
            r = listener.accept() => r,
            _ = stop.cancelled() => break,
        };
        let tcp = match accepted {
            Ok((tcp, _)) => {
                backoff.reset();
                tcp
            }
            Err(e) => {
                // Out of file descriptors (EMFILE/ENFILE), or a connection reset before it was
                // accepted: the pending connection stays queued, so retrying at once would spin.
                let delay = backoff.next();
                tracing::warn!("accept failed: {e}; next attempt in {delay:?}");
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = stop.cancelled() => break,
                }
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                "connection refused: {} connections open (the cap)",
                options.max_connections
            );
            tokio::spawn(refuse(tcp));
            continue;
        };
        let guard = guard.clone();
        let conn_stop = stop.clone();
        let header_timeout = options.header_timeout;
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let guard = guard.clone();
                async move { Ok::<_, std::convert::Infallible>(guard.handle(req).await) }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(header_timeout)
                .max_buf_size(64 << 10);
            let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(tcp), svc);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = conn_stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
            drop(slot);
        });
    }
}

/// Answers a connection over the cap with 503 and closes it (bounded: one second at most).
async fn refuse(mut tcp: TcpStream) {
    const BODY: &str = "too many connections\n";
    let reply = format!(
        "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n\
         Content-Type: text/plain\r\nContent-Length: {}\r\n\r\n{BODY}",
        BODY.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = tcp.write_all(reply.as_bytes()).await;
        let _ = tcp.shutdown().await;
    })
    .await;
}

/// Delays between failed accepts: 10 ms doubling to 1 s, reset by a success.
#[derive(Default)]
struct Backoff {
    failures: u32,
}

impl Backoff {
    fn next(&mut self) -> Duration {
        let d = Duration::from_millis(10).saturating_mul(1 << self.failures.min(7));
        self.failures += 1;
        d.min(Duration::from_secs(1))
    }

    fn reset(&mut self) {
        self.failures = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_convention_names_contexts() {
        let mut h = http::HeaderMap::new();
        assert_eq!(insecure_test_auth(&h), None);
        h.insert(http::header::AUTHORIZATION, "Bearer auth3".parse().unwrap());
        assert_eq!(insecure_test_auth(&h), Some(AuthCtx(3)));
        h.insert(http::header::AUTHORIZATION, "Bearer xyz".parse().unwrap());
        assert_eq!(insecure_test_auth(&h), None);
    }

    #[test]
    fn accept_backoff_grows_to_a_second_and_resets() {
        let mut b = Backoff::default();
        let delays: Vec<_> = (0..10).map(|_| b.next()).collect();
        assert_eq!(delays[0], Duration::from_millis(10));
        assert!(delays.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(delays[9], Duration::from_secs(1));
        b.reset();
        assert_eq!(b.next(), Duration::from_millis(10));
    }
}
