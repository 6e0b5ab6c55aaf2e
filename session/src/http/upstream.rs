//! The upstream server: its URL (plain `http://`; the recorder speaks no TLS) and one fresh
//! HTTP/1.1 connection per forwarded request. A fresh connection costs a loopback connect, and
//! spares the recorder a pool whose idle connections the server may close under it (a stale
//! pooled connection would fail a request the client sent once).

use super::body::HttpBody;
use hyper::Request;
use hyper::Response;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use std::time::Duration;

/// Longest wait for a connection to the upstream server. A response head takes as long as the
/// server takes: the client's own timeout bounds it, and a client that goes away drops the
/// exchange.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the recorded server is.
#[derive(Clone, Debug)]
pub struct Upstream {
    /// The URL as given.
    pub url: String,
    /// `host:port` (the `Host` header of forwarded requests).
    pub authority: String,
    host: String,
    port: u16,
    /// The MCP endpoint's path (`/mcp`): exchanges on it are logged, others only forwarded.
    pub path: String,
    /// Its path and query, as clients are told to use it.
    pub path_and_query: String,
}

impl Upstream {
    /// Parses an `http://HOST[:PORT]/PATH` URL.
    pub fn parse(url: &str) -> Result<Upstream, String> {
        let uri: http::Uri = url
            .parse()
            .map_err(|e| format!("--upstream '{url}' is not a URL: {e}"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some("https") => {
                return Err(format!(
                    "--upstream '{url}': https is not supported (the recorder speaks no TLS); use the server's http:// endpoint"
                ));
            }
            _ => {
                return Err(format!(
                    "--upstream '{url}' is not an http:// URL (e.g. http://127.0.0.1:8080/mcp)"
                ));
            }
        }
        let Some(authority) = uri.authority() else {
            return Err(format!("--upstream '{url}' has no host"));
        };
        let host = authority
            .host()
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_owned();
        if host.is_empty() {
            return Err(format!("--upstream '{url}' has no host"));
        }
        let path_and_query = uri
            .path_and_query()
            .map_or("/".to_owned(), |p| p.as_str().to_owned());
        Ok(Upstream {
            url: url.to_owned(),
            authority: authority.as_str().to_owned(),
            host,
            port: authority.port_u16().unwrap_or(80),
            path: uri.path().to_owned(),
            path_and_query,
        })
    }

    /// Sends `req` (origin-form URI) on a new connection and returns the response head with
    /// its body streaming.
    pub async fn send(&self, req: Request<HttpBody>) -> Result<Response<Incoming>, String> {
        let tcp = tokio::time::timeout(
            CONNECT_TIMEOUT,
            tokio::net::TcpStream::connect((self.host.as_str(), self.port)),
        )
        .await
        .map_err(|_| {
            format!(
                "no connection to {} within {} s",
                self.authority,
                CONNECT_TIMEOUT.as_secs()
            )
        })?
        .map_err(|e| format!("cannot connect to {}: {e}", self.authority))?;
        let _ = tcp.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| format!("{}: {e}", self.authority))?;
        // The connection task lives as long as the exchange: it ends when the response body
        // has been read or dropped.
        tokio::spawn(async move {
            if let Err(e) = conn.await {
                tracing::debug!("record: upstream connection: {e}");
            }
        });
        sender
            .send_request(req)
            .await
            .map_err(|e| format!("{}: {e}", self.authority))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let u = Upstream::parse("http://127.0.0.1:8080/mcp?x=1").unwrap();
        assert_eq!(
            (u.authority.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1:8080", 8080, "/mcp")
        );
        assert_eq!(u.path_and_query, "/mcp?x=1");
        let u = Upstream::parse("http://[::1]/").unwrap();
        assert_eq!((u.host.as_str(), u.port), ("::1", 80));
        assert!(
            Upstream::parse("https://x/mcp")
                .unwrap_err()
                .contains("TLS")
        );
        assert!(Upstream::parse("ftp://x/").unwrap_err().contains("http://"));
        assert!(Upstream::parse("not a url").is_err());
    }
}
