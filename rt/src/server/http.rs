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
//! Any path serves MCP (rmcp ignores it); use `http://127.0.0.1:PORT/mcp`. The one exception is
//! `GET /health`: the server's [`HealthReport`](super::HealthReport) as JSON — 200 while it is current, 503
//! while a node of a multi-instance server is cut off from its shared store (it still serves its
//! last version; a load balancer may prefer other nodes).

use super::Server;
use listsync_core::vocab::{AuthCtx, Era};
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

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

/// `Authorization: Bearer auth<N>` → context N; anything else → context 0.
pub fn auth_from_headers(headers: &http::HeaderMap) -> AuthCtx {
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .and_then(|t| t.trim().strip_prefix("auth"))
        .and_then(|n| n.parse::<u8>().ok())
        .map_or(AuthCtx(0), AuthCtx)
}

impl Server {
    /// Serves this server over Streamable HTTP on `addr`, which must be a loopback address
    /// (port 0 picks a free port).
    pub async fn serve_http(&self, addr: SocketAddr) -> std::io::Result<HttpEndpoint> {
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
            .with_cancellation_token(stop.clone());
        let server = self.clone();
        let health_of = self.clone();
        let svc = StreamableHttpService::new(
            move || Ok(server.service()),
            Arc::new(LocalSessionManager::default()),
            config,
        );
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let accept_stop = stop.clone();
        let task = tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    r = listener.accept() => r,
                    _ = accept_stop.cancelled() => break,
                };
                let Ok((tcp, _)) = accepted else {
                    continue;
                };
                let svc = svc.clone();
                let health_of = health_of.clone();
                let svc = hyper::service::service_fn(move |req: http::Request<_>| {
                    let svc = svc.clone();
                    let health_of = health_of.clone();
                    async move {
                        if req.method() == http::Method::GET && req.uri().path() == "/health" {
                            return Ok::<_, std::convert::Infallible>(health_response(
                                &health_of.health(),
                            ));
                        }
                        Ok(svc.handle(req).await)
                    }
                });
                let conn_stop = accept_stop.clone();
                tokio::spawn(async move {
                    let conn = hyper::server::conn::http1::Builder::new()
                        .serve_connection(hyper_util::rt::TokioIo::new(tcp), svc);
                    tokio::pin!(conn);
                    tokio::select! {
                        _ = conn.as_mut() => {}
                        _ = conn_stop.cancelled() => conn.as_mut().graceful_shutdown(),
                    }
                });
            }
        });
        Ok(HttpEndpoint { addr, stop, task })
    }
}

/// `GET /health`'s answer.
fn health_response(
    health: &super::HealthReport,
) -> http::Response<http_body_util::combinators::BoxBody<bytes::Bytes, std::convert::Infallible>> {
    use http_body_util::BodyExt;
    let status = if health.is_stale() {
        http::StatusCode::SERVICE_UNAVAILABLE
    } else {
        http::StatusCode::OK
    };
    let body = http_body_util::Full::new(bytes::Bytes::from(health.to_json().to_string()));
    let mut resp = http::Response::new(body.boxed());
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_name_contexts() {
        let mut h = http::HeaderMap::new();
        assert_eq!(auth_from_headers(&h), AuthCtx(0));
        h.insert(http::header::AUTHORIZATION, "Bearer auth3".parse().unwrap());
        assert_eq!(auth_from_headers(&h), AuthCtx(3));
        h.insert(http::header::AUTHORIZATION, "Bearer xyz".parse().unwrap());
        assert_eq!(auth_from_headers(&h), AuthCtx(0));
    }
}
