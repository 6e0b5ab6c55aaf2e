//! Core requests as rmcp calls, and rmcp results (or errors) as core responses.
//!
//! A list page is read item by item ([`crate::items::read`]): a malformed item or an invalid
//! schema makes the whole response invalid (the machine then keeps its old snapshot). The catalog
//! version comes from `_meta["dev.listsync/catalogVersion"]` when the server sends it, and the
//! server's promise that a walk is never a mix of versions from
//! `_meta["dev.listsync/versionBoundCursors"]`.

use crate::items;
use crate::server::{CATALOG_KEY, VERSION_BOUND_KEY, VERSION_KEY};
use listsync_core::vocab::{Item, Kind};
use listsync_core::wire::{
    CacheScope, Cursor, ErrorReason, INVALID_PARAMS, Page, RESOURCE_NOT_FOUND, Request, Response,
    RpcError,
};
use rmcp::ServiceError;
use rmcp::model::{
    CallToolRequestParams, MetaObject, PaginatedRequestParams, ReadResourceRequestParams,
    SubscribeRequestParams,
};
use rmcp::service::{Peer, RoleClient};
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;

/// Why a request failed when the connection's byte stream closed under it.
pub(crate) const TRANSPORT_CLOSED: &str = "connection closed";

/// How a request ended.
#[derive(Clone, Debug)]
pub(crate) enum RequestOutcome {
    /// A response (possibly a JSON-RPC error).
    Response(Response),
    /// Lost in transport; `fatal` when the connection itself is gone.
    Failed { why: String, fatal: bool },
    /// A response that could not be read as what was asked for.
    Invalid(String),
}

/// What a tool call returned besides the text core keeps.
#[derive(Clone, Debug)]
pub(crate) struct CallMeta {
    pub(crate) is_error: bool,
    pub(crate) text: String,
}

/// Performs one request on `peer` within `timeout`.
pub(crate) async fn perform(
    peer: &Peer<RoleClient>,
    req: &Request,
    timeout: Duration,
) -> (RequestOutcome, Option<CallMeta>) {
    match tokio::time::timeout(timeout, perform_inner(peer, req)).await {
        Ok(r) => r,
        Err(_) => (
            RequestOutcome::Failed {
                why: format!("{} timed out after {timeout:?}", req.method()),
                fatal: false,
            },
            None,
        ),
    }
}

async fn perform_inner(
    peer: &Peer<RoleClient>,
    req: &Request,
) -> (RequestOutcome, Option<CallMeta>) {
    match req {
        Request::List { kind, cursor } => (list(peer, *kind, cursor.as_ref()).await, None),
        Request::CallTool { name, schema } => {
            let mut params = CallToolRequestParams::new(name.to_string());
            if *schema != 0 {
                let mut meta = rmcp::model::RequestMetaObject::default();
                meta.0.insert(
                    crate::server::reply::INPUT_SCHEMA_KEY.into(),
                    Value::from(format!("{schema:016x}")),
                );
                params.meta = Some(meta);
            }
            match peer.call_tool(params).await {
                Ok(r) => {
                    let text = texts(&r.content);
                    let meta = CallMeta {
                        is_error: r.is_error == Some(true),
                        text: text.clone(),
                    };
                    let resp = Response::ToolResult {
                        name: name.clone(),
                        def: text.into(),
                    };
                    (RequestOutcome::Response(resp), Some(meta))
                }
                Err(e) => (failure(e, req), None),
            }
        }
        Request::ReadResource { uri } => {
            match peer
                .read_resource(ReadResourceRequestParams::new(uri.to_string()))
                .await
            {
                Ok(r) => {
                    let resp = Response::Content {
                        uri: uri.clone(),
                        text: texts(&r.contents).into(),
                    };
                    (RequestOutcome::Response(resp), None)
                }
                Err(e) => (failure(e, req), None),
            }
        }
        Request::Subscribe { uri } => {
            #[allow(deprecated)] // legacy (2025-11-25) only, which is where it is used
            let r = peer
                .subscribe(SubscribeRequestParams::new(uri.to_string()))
                .await;
            match r {
                Ok(()) => (RequestOutcome::Response(Response::Subscribed), None),
                Err(e) => (failure(e, req), None),
            }
        }
        Request::Initialize | Request::Listen { .. } | Request::GetPrompt { .. } => (
            RequestOutcome::Invalid(format!("{} is not sent this way", req.method())),
            None,
        ),
    }
}

/// The `text` fields of a content list, joined.
fn texts<T: Serialize>(content: &T) -> String {
    let mut out = Vec::new();
    if let Ok(Value::Array(items)) = serde_json::to_value(content) {
        for item in items {
            if let Some(Value::String(t)) = item.get("text") {
                out.push(t.clone());
            }
        }
    }
    out.join("\n")
}

async fn list(peer: &Peer<RoleClient>, kind: Kind, cursor: Option<&Cursor>) -> RequestOutcome {
    let req = Request::List {
        kind,
        cursor: cursor.cloned(),
    };
    let params =
        Some(PaginatedRequestParams::default().with_cursor(cursor.map(|c| c.0.to_string())));
    macro_rules! fetch {
        ($call:ident, $field:ident) => {
            match peer.$call(params).await {
                Ok(r) => page(
                    kind,
                    &r.$field,
                    r.next_cursor,
                    r.meta.as_ref(),
                    r.ttl_ms,
                    r.cache_scope,
                ),
                Err(e) => failure(e, &req),
            }
        };
    }
    match kind {
        Kind::Tools => fetch!(list_tools, tools),
        Kind::Prompts => fetch!(list_prompts, prompts),
        Kind::Resources => fetch!(list_resources, resources),
        Kind::ResourceTemplates => fetch!(list_resource_templates, resource_templates),
    }
}

fn page<T: Serialize>(
    kind: Kind,
    entries: &[T],
    next: Option<String>,
    meta: Option<&MetaObject>,
    ttl_ms: Option<u64>,
    cache_scope: Option<rmcp::model::CacheScope>,
) -> RequestOutcome {
    let mut items: Vec<Item> = Vec::with_capacity(entries.len());
    for e in entries {
        match items::read_typed(kind, e) {
            Ok(item) => items.push(item),
            Err(why) => return RequestOutcome::Invalid(why),
        }
    }
    let version = meta
        .and_then(|m| m.0.get(VERSION_KEY))
        .and_then(Value::as_u64);
    let catalog = meta
        .and_then(|m| m.0.get(CATALOG_KEY))
        .and_then(Value::as_u64);
    let cache_scope = cache_scope.map(|s| match s {
        rmcp::model::CacheScope::Private => CacheScope::Private,
        _ => CacheScope::Public,
    });
    RequestOutcome::Response(Response::Page(Page {
        kind,
        items: items.into(),
        next: next.map(|c| Cursor(c.into())),
        version,
        catalog,
        ttl_ms: ttl_ms.map(|t| u32::try_from(t).unwrap_or(u32::MAX)),
        cache_scope,
        version_bound: meta
            .and_then(|m| m.0.get(VERSION_BOUND_KEY))
            .and_then(Value::as_bool)
            .unwrap_or(false),
    }))
}

/// Whether a `-32602` answering a call or a `prompts/get` says the item does not exist (the
/// reference server's `data.reason`, or the wording SDKs use: "unknown tool", "tool not found",
/// "no such prompt"), rather than that the arguments are invalid: only the first is a sign the
/// list changed (docs/design.md, "Errors are not changes").
fn names_unknown_item(err: &rmcp::ErrorData) -> bool {
    if let Some(reason) = err
        .data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
    {
        return matches!(reason, "unknown_tool" | "unknown_prompt");
    }
    let m = err.message.to_ascii_lowercase();
    m.contains("unknown") || m.contains("not found") || m.contains("no such")
}

/// Whether a -32602 to a call says the tool's input schema changed (our servers' `data.reason`).
fn says_schema_changed(err: &rmcp::ErrorData) -> bool {
    err.data
        .as_ref()
        .and_then(|d| d.get("reason"))
        .and_then(Value::as_str)
        == Some("schema_changed")
}

/// A failed rmcp request as an outcome.
pub(crate) fn failure(e: ServiceError, req: &Request) -> RequestOutcome {
    match e {
        ServiceError::McpError(err) => {
            let code = err.code.0;
            let reason = match (req, code) {
                (
                    Request::List {
                        cursor: Some(_), ..
                    },
                    INVALID_PARAMS,
                ) => ErrorReason::InvalidCursor,
                (Request::CallTool { .. }, INVALID_PARAMS) if says_schema_changed(&err) => {
                    ErrorReason::SchemaChanged
                }
                (Request::CallTool { .. }, INVALID_PARAMS) if names_unknown_item(&err) => {
                    ErrorReason::UnknownTool
                }
                (Request::GetPrompt { .. }, INVALID_PARAMS) if names_unknown_item(&err) => {
                    ErrorReason::UnknownPrompt
                }
                (
                    Request::ReadResource { .. } | Request::Subscribe { .. },
                    RESOURCE_NOT_FOUND | INVALID_PARAMS,
                ) => ErrorReason::ResourceNotFound,
                _ => ErrorReason::Other(err.message.to_string().into()),
            };
            RequestOutcome::Response(Response::Error(RpcError { code, reason }))
        }
        ServiceError::UnexpectedResponse => {
            RequestOutcome::Invalid(format!("{}: a result of the wrong shape", req.method()))
        }
        ServiceError::TransportClosed => RequestOutcome::Failed {
            why: TRANSPORT_CLOSED.into(),
            fatal: true,
        },
        ServiceError::TransportSend(e) => RequestOutcome::Failed {
            why: format!("send failed: {e}"),
            fatal: true,
        },
        other => RequestOutcome::Failed {
            why: other.to_string(),
            fatal: false,
        },
    }
}
