//! What every HTTP request passes before rmcp sees it, in this order: `GET /health` is answered
//! here; a disallowed `Origin` gets 403; `/admin/change` goes to [`super::admin`] (404 unless
//! enabled); authentication selects the principal (401 with
//! `WWW-Authenticate` for a missing or unknown token when tokens are configured); a new
//! 2025-11-25 session beyond the cap gets 503; the body is read within a size and time bound
//! (413, 408); a POST body that is not JSON gets 400 with a JSON-RPC parse error (-32700), and
//! JSON that is not a JSON-RPC message 400 with -32600 (rmcp answers both with 415). The
//! principal travels to the handler in the request's extensions
//! ([`super::handler`] fixes a session's context on its first request).

use super::Server;
use super::handler::Handler;
use super::http::{HttpAuth, HttpOptions, insecure_test_auth};
use super::tokens::Principal;
use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use rmcp::transport::streamable_http_server::{
    StreamableHttpService, session::local::LocalSessionManager,
};
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;

pub(crate) type Reply = http::Response<BoxBody<Bytes, Infallible>>;

/// The per-request checks of one endpoint, in front of rmcp's service.
pub(crate) struct Guard {
    server: Server,
    svc: StreamableHttpService<Handler, LocalSessionManager>,
    sessions: Arc<LocalSessionManager>,
    options: HttpOptions,
    /// 2025-11-25: sessions exist (and are capped).
    legacy: bool,
}

impl Guard {
    pub(crate) fn new(
        server: Server,
        svc: StreamableHttpService<Handler, LocalSessionManager>,
        sessions: Arc<LocalSessionManager>,
        options: HttpOptions,
        legacy: bool,
    ) -> Guard {
        Guard {
            server,
            svc,
            sessions,
            options,
            legacy,
        }
    }

    pub(crate) async fn handle(&self, req: http::Request<hyper::body::Incoming>) -> Reply {
        if req.method() == http::Method::GET && req.uri().path() == "/health" {
            return health_response(&self.server.health());
        }
        if let Err(origin) = origin_allowed(req.headers(), &self.options.allowed_origins) {
            tracing::warn!("refused a request from origin {origin:?} (403)");
            return plain(
                http::StatusCode::FORBIDDEN,
                "Forbidden: origin not allowed\n",
            );
        }
        if req.uri().path() == super::admin::PATH {
            return super::admin::handle(&self.server, &self.options, req).await;
        }
        let principal = match self.authenticate(req.headers()) {
            Ok(p) => p,
            Err(reply) => return *reply,
        };
        let new_session = self.legacy
            && req.method() == http::Method::POST
            && !req.headers().contains_key("mcp-session-id");
        if new_session {
            let live = self.sessions.sessions.read().await.len();
            if live >= self.options.max_sessions {
                tracing::warn!("refused a new session: {live} sessions live (the cap)");
                let mut r = plain(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: too many sessions\n",
                );
                r.headers_mut().insert(
                    http::header::RETRY_AFTER,
                    http::HeaderValue::from_static("5"),
                );
                return r;
            }
        }
        let json_body = is_json(req.headers());
        let (mut parts, body) = req.into_parts();
        let limit = self.options.max_body_bytes;
        let read = tokio::time::timeout(
            self.options.body_timeout,
            Limited::new(body, limit).collect(),
        )
        .await;
        let bytes = match read {
            Ok(Ok(collected)) => collected.to_bytes(),
            Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
                return plain(
                    http::StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("Payload Too Large: the limit is {limit} bytes\n"),
                );
            }
            Ok(Err(e)) => {
                return plain(
                    http::StatusCode::BAD_REQUEST,
                    &format!("Bad Request: cannot read the body: {e}\n"),
                );
            }
            Err(_) => {
                return plain(
                    http::StatusCode::REQUEST_TIMEOUT,
                    "Request Timeout: the body did not arrive in time\n",
                );
            }
        };
        let post = parts.method == http::Method::POST;
        if post
            && json_body
            && let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(&bytes)
        {
            return rpc_error(-32700, &format!("Parse error: {e}"));
        }
        parts.extensions.insert(principal);
        let resp = self
            .svc
            .handle(http::Request::from_parts(parts, Full::new(bytes)))
            .await;
        if post && json_body && resp.status() == http::StatusCode::UNSUPPORTED_MEDIA_TYPE {
            // The body is JSON (checked above) but not a JSON-RPC message rmcp can read.
            return rpc_error(-32600, "Invalid Request: not a JSON-RPC message");
        }
        resp
    }

    /// The principal of a request, or the 401 reply.
    fn authenticate(&self, headers: &http::HeaderMap) -> Result<Principal, Box<Reply>> {
        match &self.options.auth {
            HttpAuth::Anonymous => Ok(Principal::anonymous()),
            HttpAuth::InsecureTestAuth => Ok(insecure_test_auth(headers).map_or_else(
                Principal::anonymous,
                |auth| Principal {
                    name: format!("auth{}", auth.0).into(),
                    auth,
                },
            )),
            HttpAuth::Tokens(table) => {
                let presented = headers
                    .get(http::header::AUTHORIZATION)
                    .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
                    .map(<[u8]>::trim_ascii);
                match presented {
                    None => Err(Box::new(unauthorized(
                        "Bearer realm=\"listsync\"",
                        "Unauthorized: a bearer token is required\n",
                    ))),
                    Some(token) => match table.lookup(token) {
                        Some(p) => Ok(p.clone()),
                        None => {
                            tracing::warn!("refused a request with an unknown bearer token (401)");
                            Err(Box::new(unauthorized(
                                "Bearer realm=\"listsync\", error=\"invalid_token\"",
                                "Unauthorized: unknown bearer token\n",
                            )))
                        }
                    },
                }
            }
        }
    }
}

/// Whether the request says its body is JSON.
fn is_json(headers: &http::HeaderMap) -> bool {
    headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|t| t.trim().eq_ignore_ascii_case("application/json"))
}

/// Whether the request's `Origin` may use this endpoint: absent, a loopback origin (any scheme
/// of http/https, any port), or one of `allowed`. `Err` carries the refused origin.
pub(crate) fn origin_allowed(headers: &http::HeaderMap, allowed: &[String]) -> Result<(), String> {
    let Some(v) = headers.get(http::header::ORIGIN) else {
        return Ok(());
    };
    let Ok(origin) = v.to_str() else {
        return Err(String::from_utf8_lossy(v.as_bytes()).into_owned());
    };
    let origin = origin.trim().to_ascii_lowercase();
    if is_loopback_origin(&origin) || allowed.iter().any(|a| origin_matches(&origin, a)) {
        Ok(())
    } else {
        Err(origin)
    }
}

fn split_origin(origin: &str) -> Option<(&str, &str, Option<&str>)> {
    let (scheme, rest) = origin.split_once("://")?;
    if rest.contains('/') {
        return None;
    }
    // `[::1]:8080`, `[::1]`, `host:8080`, `host`.
    let (host, port) = if let Some(after) = rest.strip_prefix('[') {
        let (h, tail) = after.split_once(']')?;
        match tail {
            "" => (h, None),
            t => (h, Some(t.strip_prefix(':')?)),
        }
    } else {
        match rest.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (rest, None),
        }
    };
    Some((scheme, host, port))
}

fn is_loopback_origin(origin: &str) -> bool {
    matches!(
        split_origin(origin),
        Some(("http" | "https", "127.0.0.1" | "localhost" | "::1", port))
            if port.is_none_or(|p| p.parse::<u16>().is_ok())
    )
}

/// `allowed` is `scheme://host[:port]` (exact) or `scheme://host:*` (any port).
fn origin_matches(origin: &str, allowed: &str) -> bool {
    let allowed = allowed.trim().to_ascii_lowercase();
    match allowed.strip_suffix(":*") {
        Some(prefix) => split_origin(origin).is_some_and(|(scheme, host, _)| {
            split_origin(prefix).is_some_and(|(s, h, p)| p.is_none() && s == scheme && h == host)
        }),
        None => origin == allowed,
    }
}

pub(crate) fn plain(status: http::StatusCode, text: &str) -> Reply {
    let mut r = http::Response::new(Full::new(Bytes::from(text.to_owned())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

fn unauthorized(challenge: &'static str, text: &str) -> Reply {
    let mut r = plain(http::StatusCode::UNAUTHORIZED, text);
    r.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        http::HeaderValue::from_static(challenge),
    );
    r
}

/// 400 with a JSON-RPC error response (id null: the request's id could not be read).
fn rpc_error(code: i32, message: &str) -> Reply {
    let body = json!({"jsonrpc": "2.0", "id": null, "error": {"code": code, "message": message}});
    let mut r = http::Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = http::StatusCode::BAD_REQUEST;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// `GET /health`'s answer.
fn health_response(health: &super::HealthReport) -> Reply {
    let status = if health.is_stale() {
        http::StatusCode::SERVICE_UNAVAILABLE
    } else {
        http::StatusCode::OK
    };
    let body = Full::new(Bytes::from(health.to_json().to_string()));
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

    fn with_origin(o: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(http::header::ORIGIN, o.parse().unwrap());
        h
    }

    #[test]
    fn loopback_and_listed_origins_pass_others_do_not() {
        let allowed = vec![
            "https://app.example:8443".to_owned(),
            "http://tools.example:*".to_owned(),
        ];
        assert!(origin_allowed(&http::HeaderMap::new(), &[]).is_ok());
        for ok in [
            "http://127.0.0.1:3000",
            "http://localhost",
            "https://LOCALHOST:8443",
            "http://[::1]:9",
            "https://app.example:8443",
            "http://tools.example:1234",
        ] {
            assert!(origin_allowed(&with_origin(ok), &allowed).is_ok(), "{ok}");
        }
        for bad in [
            "http://evil.example",
            "null",
            "http://127.0.0.1.evil.example",
            "http://localhost.evil.example:80",
            "https://app.example:8444",
            "https://tools.example:1234",
            "file://",
            "http://127.0.0.1:3000/path",
        ] {
            assert!(
                origin_allowed(&with_origin(bad), &allowed).is_err(),
                "{bad}"
            );
        }
    }
}
