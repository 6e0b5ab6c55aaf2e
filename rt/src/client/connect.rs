//! Where a client connects, and how one connection is opened: the transport for the endpoint,
//! the lifecycle for the era (`initialize` for 2025-11-25, `server/discover` pinned to
//! 2026-07-28), and rmcp's own response cache switched off (the catalog machine is the cache).
//! Every transport is [`Guarded`] against a server that talks without answering the handshake
//! or answers requests never sent, and [`Paced`] against one that floods requests.

#[cfg(feature = "http")]
use super::guard::GuardedHttp;
use super::guard::{Guarded, Tripped};
use super::handler::Notifier;
use crate::pace::{self, Paced};
use crate::server::Server;
use crate::sniff;
use listsync_core::vocab::{AuthCtx, Era};
use rmcp::model::ProtocolVersion;
use rmcp::service::{RoleClient, RunningService};
use rmcp::transport::IntoTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::{ClientCacheConfig, ClientLifecycleMode, ClientServiceExt, ServiceExt};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, DuplexStream};

/// The reading half of a byte-stream connection.
pub type BoxRead = Box<dyn AsyncRead + Send + Unpin>;
/// The writing half of a byte-stream connection.
pub type BoxWrite = Box<dyn AsyncWrite + Send + Unpin>;

type IoFuture = Pin<Box<dyn Future<Output = std::io::Result<(BoxRead, BoxWrite)>> + Send>>;

/// Opens the client side of a fresh byte-stream connection (newline-delimited JSON-RPC, as on
/// stdio); what is at the other end is the factory's business. Called with the authorization
/// context the connection is for.
pub type IoFactory = Arc<dyn Fn(AuthCtx) -> IoFuture + Send + Sync>;

/// Where a client connects. Every endpoint but [`Endpoint::Stdio`] can be connected again after
/// a connection is lost.
#[derive(Clone)]
pub enum Endpoint {
    /// Byte streams from a factory: `tokio::io::duplex` pairs to an in-process server, the pipes
    /// of a child process the caller started...
    Io(IoFactory),
    /// A child process speaking MCP on its stdin/stdout.
    Command {
        /// Program.
        program: String,
        /// Arguments.
        args: Vec<String>,
    },
    /// Streamable HTTP.
    #[cfg(feature = "http")]
    Http {
        /// MCP URL (`http://127.0.0.1:PORT/mcp`).
        url: String,
    },
    /// This process's own stdin/stdout (the harness runs a client adapter this way). One
    /// connection only.
    Stdio,
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.describe())
    }
}

impl Endpoint {
    /// Connections from a factory of byte streams.
    pub fn io<F, Fut>(factory: F) -> Endpoint
    where
        F: Fn(AuthCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<(BoxRead, BoxWrite)>> + Send + 'static,
    {
        Endpoint::Io(Arc::new(move |auth| Box::pin(factory(auth))))
    }

    /// Connections from a factory of `tokio::io::duplex` streams.
    pub fn duplex<F, Fut>(factory: F) -> Endpoint
    where
        F: Fn(AuthCtx) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = std::io::Result<DuplexStream>> + Send + 'static,
    {
        let factory = Arc::new(factory);
        Endpoint::io(move |auth| {
            let factory = factory.clone();
            async move {
                let (r, w) = tokio::io::split(factory(auth).await?);
                Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
            }
        })
    }

    /// In-memory connections to an in-process server: each connection serves a fresh handler,
    /// whose requests are made under the connection's authorization context.
    pub fn server(server: &Server) -> Endpoint {
        let server = server.clone();
        Endpoint::duplex(move |auth| {
            let server = server.clone();
            async move {
                let (client, theirs) = tokio::io::duplex(1 << 16);
                tokio::spawn(async move {
                    let (read, write) = tokio::io::split(theirs);
                    let transport = pace::paced(read, write);
                    if let Ok(running) = server.service_as(auth).serve(transport).await {
                        let _ = running.waiting().await;
                    }
                });
                Ok(client)
            }
        })
    }

    /// A Streamable HTTP endpoint, if `url` is an absolute `http://` or `https://` URL with a
    /// host.
    #[cfg(feature = "http")]
    pub fn http(url: &str) -> Result<Endpoint, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("'{url}' is not a URL: {e}"))?;
        match (uri.scheme_str(), uri.host()) {
            (Some("http" | "https"), Some(h)) if !h.is_empty() => Ok(Endpoint::Http {
                url: url.to_owned(),
            }),
            _ => Err(format!(
                "'{url}' is not an http:// URL with a host (e.g. http://127.0.0.1:8080/mcp)"
            )),
        }
    }

    /// A child process from an argv.
    pub fn command(argv: &[String]) -> Option<Endpoint> {
        let (program, args) = argv.split_first()?;
        Some(Endpoint::Command {
            program: program.clone(),
            args: args.to_vec(),
        })
    }

    /// A short description (used in the cache key and in messages).
    pub fn describe(&self) -> String {
        match self {
            Endpoint::Io(_) => "io".into(),
            Endpoint::Command { program, args } => {
                let mut s = program.clone();
                for a in args {
                    s.push(' ');
                    s.push_str(a);
                }
                s
            }
            #[cfg(feature = "http")]
            Endpoint::Http { url } => url.clone(),
            Endpoint::Stdio => "stdio".into(),
        }
    }

    /// Whether a lost connection can be opened again.
    pub fn reconnectable(&self) -> bool {
        !matches!(self, Endpoint::Stdio)
    }

    /// Whether a failed request means the connection is gone (HTTP: rmcp's HTTP client never
    /// notices a dead server by itself).
    pub(crate) fn request_failure_is_disconnect(&self) -> bool {
        #[cfg(feature = "http")]
        if matches!(self, Endpoint::Http { .. }) {
            return true;
        }
        false
    }
}

/// A client's byte-stream transport, paced and guarded.
type GuardedStream<R, W> = Guarded<Paced<RoleClient, AsyncRwTransport<RoleClient, R, W>>>;

/// A byte-stream connection (newline-delimited JSON-RPC), paced and guarded.
fn guarded<R, W>(read: R, write: W, warn: sniff::Report) -> (GuardedStream<R, W>, Tripped)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    Guarded::new(pace::paced(read, write), warn)
}

/// Runs the lifecycle for `era` over `transport`; `tripped` says why the guard closed it, if
/// it did.
async fn start<T, E, A>(
    handler: Notifier,
    (transport, tripped): (T, Tripped),
    era: Era,
) -> Result<RunningService<RoleClient, Notifier>, String>
where
    T: IntoTransport<RoleClient, E, A>,
    E: std::error::Error + Send + Sync + 'static,
{
    let running = match era {
        Era::V2025_11_25 => handler.serve(transport).await,
        Era::V2026_07_28 => {
            handler
                .serve_with_lifecycle(
                    transport,
                    ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    },
                )
                .await
        }
    }
    .map_err(|e| tripped.get().cloned().unwrap_or_else(|| describe(&e)))?;
    running
        .peer()
        .set_response_cache_config(ClientCacheConfig::disabled())
        .await;
    Ok(running)
}

/// An error as one readable line: rmcp's message without the transport's type name, followed by
/// the causes it does not mention (e.g. "Connection refused").
pub(crate) fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = tidy(&e.to_string());
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = tidy(&c.to_string());
        if !text.is_empty() && !out.contains(&text) {
            out.push_str(": ");
            out.push_str(&text);
        }
        cause = c.source();
    }
    out
}

/// Removes bracketed Rust type names (`Transport [rmcp::transport::...] error`).
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" [") {
        let after = &rest[at + 2..];
        // A type path: `ident::ident...<...>]`, brackets balanced.
        let mut depth = 1usize;
        let mut end = None;
        for (i, ch) in after.char_indices() {
            match ch {
                '[' => depth += 1,
                ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(i);
                        break;
                    }
                }
                _ => {}
            }
        }
        match end {
            Some(i) if after[..i].contains("::") => {
                out.push_str(&rest[..at]);
                rest = &after[i + 1..];
            }
            _ => {
                out.push_str(&rest[..at + 2]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Opens one connection to `endpoint` in `era`, under authorization context `auth` (HTTP: sent
/// as `Authorization: Bearer <bearer>`, or as the test convention `Bearer auth<N>` when N > 0
/// and no token is given; byte-stream factories get it; a child process cannot be told).
/// `warn` hears what a child process prints on stdout that is not JSON-RPC, and the responses
/// that answer no request in flight.
pub(crate) async fn open(
    endpoint: &Endpoint,
    handler: Notifier,
    era: Era,
    auth: AuthCtx,
    bearer: Option<&str>,
    warn: sniff::Report,
) -> Result<Opened, String> {
    // Only Streamable HTTP presents a token.
    #[cfg(not(feature = "http"))]
    let _ = bearer;
    match endpoint {
        Endpoint::Io(factory) => {
            let io = factory(auth).await.map_err(|e| e.to_string())?;
            start(handler, guarded(io.0, io.1, warn), era)
                .await
                .map(Opened::service)
        }
        Endpoint::Command { program, args } => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(args)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .kill_on_drop(true);
            let mut child = cmd
                .spawn()
                .map_err(|e| format!("cannot start {program}: {e}"))?;
            let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
                return Err(format!("cannot start {program}: no pipes"));
            };
            let child = Arc::new(std::sync::Mutex::new(child));
            let read = sniff::sniffer(stdout, child.clone(), warn.clone());
            let transport = guarded(read, stdin, warn);
            let tripped = transport.1.clone();
            match start(handler, transport, era).await {
                Ok(running) => Ok(Opened {
                    running,
                    child: Some(child),
                }),
                // The guard closed the connection (and so killed the child): no exit to tell.
                Err(e) if tripped.get().is_some() => Err(e),
                Err(e) => Err(
                    match sniff::exit_status(&child, Duration::from_millis(300)).await {
                        Some(status) => {
                            format!("{program} exited ({status}) before the handshake: {e}")
                        }
                        None => e,
                    },
                ),
            }
        }
        #[cfg(feature = "http")]
        Endpoint::Http { url } => {
            use rmcp::transport::StreamableHttpClientTransport;
            use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
            // rmcp re-initializes a session the server no longer knows (404) behind the
            // client's back, so the catalog would never learn that it is talking to a new
            // session (a restarted server, or another node behind a load balancer) and would
            // not re-list what changed meanwhile. Surfaced as an error instead, the lost
            // session is a lost connection: reconnect, then list everything again.
            let mut cfg = StreamableHttpClientTransportConfig::with_uri(url.as_str())
                .reinit_on_expired_session(false);
            match bearer {
                Some(token) => cfg = cfg.auth_header(token.to_owned()),
                None if auth.0 != 0 => cfg = cfg.auth_header(format!("auth{}", auth.0)),
                None => {}
            }
            let tripped = Tripped::default();
            let client = GuardedHttp::new(tripped.clone())?;
            match start(
                handler,
                Guarded::sharing(
                    Paced::new(StreamableHttpClientTransport::with_client(client, cfg)),
                    tripped,
                    warn,
                ),
                era,
            )
            .await
            {
                Ok(running) => Ok(Opened::service(running)),
                // rmcp's message does not say why the request could not be sent: ask TCP.
                Err(e) => Err(match unreachable(url).await {
                    Some(why) => format!("{e}: {why}"),
                    None => e,
                }),
            }
        }
        Endpoint::Stdio => {
            let (read, write) = rmcp::transport::stdio();
            start(handler, guarded(read, write, warn), era)
                .await
                .map(Opened::service)
        }
    }
}

/// A connection [`open`] opened: the running service, and the server child it talks to (a
/// [`Endpoint::Command`]), whose exit status says why the connection ended.
pub(crate) struct Opened {
    pub(crate) running: RunningService<RoleClient, Notifier>,
    pub(crate) child: Option<Child>,
}

/// A server child process, shared with the connection that kills it when dropped.
pub(crate) type Child = Arc<std::sync::Mutex<tokio::process::Child>>;

impl Opened {
    fn service(running: RunningService<RoleClient, Notifier>) -> Opened {
        Opened {
            running,
            child: None,
        }
    }

    /// Why the connection ended, given rmcp's `why`: with the server child's exit status when
    /// it has exited (or does within `wait`).
    pub(crate) async fn ended(child: Option<&Child>, why: String, wait: Duration) -> String {
        let Some(child) = child else { return why };
        match sniff::exit_status(child, wait).await {
            Some(status) => format!("{why}; the server exited ({status})"),
            None => why,
        }
    }
}

/// Why the host of `url` cannot be reached over TCP, if it cannot (one attempt, one second).
#[cfg(feature = "http")]
async fn unreachable(url: &str) -> Option<String> {
    let uri: http::Uri = url.parse().ok()?;
    let host = uri.host()?.trim_start_matches('[').trim_end_matches(']');
    let port = uri
        .port_u16()
        .unwrap_or(if uri.scheme_str() == Some("https") {
            443
        } else {
            80
        });
    let attempt = tokio::net::TcpStream::connect((host, port));
    match tokio::time::timeout(Duration::from_secs(1), attempt).await {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(format!("{host}:{port}: {e}")),
        Err(_) => Some(format!("{host}:{port}: no answer within 1 s")),
    }
}

/// Watches an HTTP connection while it may be idle: rmcp's HTTP client keeps retrying a dead
/// server's SSE stream without telling anyone, so a `ping` every `every` (answered, or refused
/// with a JSON-RPC error as a 2026-07-28 server does: either way the server is there) is the only
/// way to notice. A failed ping ends the connection through `kill`.
pub(crate) async fn probe(
    peer: rmcp::service::Peer<RoleClient>,
    kill: tokio_util::sync::CancellationToken,
    every: std::time::Duration,
    timeout: std::time::Duration,
) {
    use rmcp::model::{ClientRequest, PingRequest};
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = kill.cancelled() => return,
        }
        let ping = ClientRequest::PingRequest(PingRequest {
            method: Default::default(),
            extensions: Default::default(),
        });
        match tokio::time::timeout(timeout, peer.send_request(ping)).await {
            Ok(Ok(_)) | Ok(Err(rmcp::ServiceError::McpError(_))) => {}
            _ => {
                kill.cancel();
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_names_are_removed_from_messages() {
        assert_eq!(
            tidy(
                "Send message error Transport [rmcp::transport::X<a::B, c::D>] error: Broken pipe"
            ),
            "Send message error Transport error: Broken pipe"
        );
        assert_eq!(tidy("list [a, b] kept"), "list [a, b] kept");
    }
}
