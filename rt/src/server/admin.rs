//! The HTTP endpoint's admin path, `POST /admin/change` (`listsync change URL --token-file F`):
//! one batch of control-protocol ops (`{"ops": [...]}`, the codec of [`crate::control`]) applied
//! all or nothing, answered like the control protocol's `mutate` (`{"ok":true,"version":N,
//! "notified":K}`, or `{"ok":false,"error":...}`).
//!
//! Closed unless enabled: without [`HttpOptions::admin`] the path answers 404 whatever is sent.
//! Enabled, it takes exactly one token (`listsync serve --admin-token-file FILE`), compared in
//! constant time by the bearer-token table ([`super::tokens::TokenTable::lookup`]): no token is
//! 401, a wrong one 403. It lives on the same loopback listener as MCP, behind the same origin
//! check; a malformed batch is 400, a batch the catalog refuses (adding an existing item,
//! removing a missing one) 409, and nothing of it is applied.

use super::Server;
use super::http::HttpOptions;
use super::http_guard::{Reply, plain};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::{Value, json};

/// The admin path.
pub const PATH: &str = "/admin/change";

/// Largest admin request body (the control channel's line limit).
const MAX_BODY: usize = listsync_control::MAX_LINE;

/// Answers one request to [`PATH`].
pub(crate) async fn handle(
    server: &Server,
    options: &HttpOptions,
    req: http::Request<hyper::body::Incoming>,
) -> Reply {
    let Some(tokens) = &options.admin else {
        return plain(
            http::StatusCode::NOT_FOUND,
            "Not Found: the admin endpoint is off (listsync serve --admin-token-file FILE)\n",
        );
    };
    if req.method() != http::Method::POST {
        let mut r = plain(
            http::StatusCode::METHOD_NOT_ALLOWED,
            "Method Not Allowed: POST a batch\n",
        );
        r.headers_mut()
            .insert(http::header::ALLOW, http::HeaderValue::from_static("POST"));
        return r;
    }
    let presented = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(<[u8]>::trim_ascii);
    match presented {
        None => {
            let mut r = plain(
                http::StatusCode::UNAUTHORIZED,
                "Unauthorized: the admin token is required\n",
            );
            r.headers_mut().insert(
                http::header::WWW_AUTHENTICATE,
                http::HeaderValue::from_static("Bearer realm=\"listsync-admin\""),
            );
            return r;
        }
        Some(token) if tokens.lookup(token).is_none() => {
            tracing::warn!("refused an admin request with a wrong token (403)");
            return plain(
                http::StatusCode::FORBIDDEN,
                "Forbidden: wrong admin token\n",
            );
        }
        Some(_) => {}
    }
    let read = tokio::time::timeout(
        options.body_timeout,
        Limited::new(req.into_body(), MAX_BODY).collect(),
    )
    .await;
    let bytes = match read {
        Ok(Ok(c)) => c.to_bytes(),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return answer(
                http::StatusCode::PAYLOAD_TOO_LARGE,
                Err(format!("the body is over {MAX_BODY} bytes (the limit)")),
            );
        }
        Ok(Err(e)) => {
            return answer(
                http::StatusCode::BAD_REQUEST,
                Err(format!("cannot read the body: {e}")),
            );
        }
        Err(_) => {
            return answer(
                http::StatusCode::REQUEST_TIMEOUT,
                Err("the body did not arrive in time".into()),
            );
        }
    };
    let ops = serde_json::from_slice::<Value>(&bytes)
        .map_err(|e| format!("not JSON: {e}"))
        .and_then(|v| {
            crate::admin::parse_ops(v.get("ops").unwrap_or(&Value::Null))
                .map_err(|f| format!("ops: {}", f.error))
        });
    let ops = match ops {
        Ok(ops) => ops,
        Err(e) => return answer(http::StatusCode::BAD_REQUEST, Err(e)),
    };
    match server.apply_checked(&ops).await {
        Ok(applied) => answer(
            http::StatusCode::OK,
            Ok(json!({"version": applied.version, "notified": applied.notified})),
        ),
        Err(e) => answer(http::StatusCode::CONFLICT, Err(e.to_string())),
    }
}

/// A JSON answer shaped like a control-protocol reply.
fn answer(status: http::StatusCode, result: Result<Value, String>) -> Reply {
    let body = match result {
        Ok(Value::Object(mut m)) => {
            m.insert("ok".into(), json!(true));
            Value::Object(m)
        }
        Ok(_) => json!({"ok": true}),
        Err(e) => json!({"ok": false, "error": e}),
    };
    let mut r = http::Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}
