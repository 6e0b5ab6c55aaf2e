//! Core responses as rmcp results: list pages with the catalog version in `_meta` and in the
//! cursor, tool and prompt results, resource contents, and JSON-RPC errors.

use crate::items;
use listsync_core::vocab::Kind;
use listsync_core::wire::{CacheScope, ErrorReason, Page, Response, RpcError};
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CallToolResult, ContentBlock, ErrorCode, GetPromptResult, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, MetaObject, PromptMessage,
    ReadResourceResult, ResourceContents, Role,
};
use serde_json::{Value, json};

/// `_meta` key of a list result carrying the catalog version it was cut from.
pub const VERSION_KEY: &str = "dev.listsync/catalogVersion";
/// `_meta` key of a list result naming the version space of [`VERSION_KEY`] (versions compare
/// only within one; a server whose catalog does not survive a restart starts a new one).
pub const CATALOG_KEY: &str = "dev.listsync/catalogId";
/// `_meta` key of a list result set to `true` when the server's cursors are version-bound:
/// every page reached by following `nextCursor` from it is cut from the catalog at its
/// [`VERSION_KEY`], or refused with -32602 (docs/design.md).
pub const VERSION_BOUND_KEY: &str = "dev.listsync/versionBoundCursors";

/// `_meta` key of a `tools/call` request carrying, as 16 hex digits, the fingerprint of the
/// input schema the call's arguments were built for (core's `schema_fingerprint`): the server
/// refuses the call with -32602 (`reason: schema_changed`) if the tool's input schema is no
/// longer that one (docs/design.md, "The schema-change race").
pub const INPUT_SCHEMA_KEY: &str = "dev.listsync/inputSchema";

/// The schema fingerprint a `tools/call`'s `_meta` carries (0: none, or not ours).
pub fn schema_of(meta: Option<&rmcp::model::RequestMetaObject>) -> u64 {
    meta.and_then(|m| m.0.get(INPUT_SCHEMA_KEY))
        .and_then(Value::as_str)
        .and_then(|s| u64::from_str_radix(s, 16).ok())
        .unwrap_or(0)
}

/// A core error as a JSON-RPC error.
pub fn error(e: &RpcError) -> McpError {
    let data = match &e.reason {
        ErrorReason::Other(_) => None,
        reason => Some(json!({ "reason": reason })),
    };
    // Display is "<code> <what>"; the code travels on its own.
    let text = e.to_string();
    let message = text
        .split_once(' ')
        .map_or(text.clone(), |(_, m)| m.to_owned());
    McpError::new(ErrorCode(e.code), message, data)
}

fn unexpected(resp: &Response, what: &str) -> McpError {
    McpError::internal_error(format!("registry answered {what} with {resp:?}"), None)
}

/// The parts every list result shares.
struct Common {
    meta: Option<MetaObject>,
    next: Option<String>,
    ttl_ms: Option<u64>,
    cache_scope: Option<rmcp::model::CacheScope>,
}

fn common(page: &Page) -> Common {
    Common {
        meta: page.version.map(|v| {
            let mut m = MetaObject::default();
            m.0.insert(VERSION_KEY.into(), Value::from(v));
            if let Some(c) = page.catalog {
                m.0.insert(CATALOG_KEY.into(), Value::from(c));
            }
            if page.version_bound {
                m.0.insert(VERSION_BOUND_KEY.into(), Value::from(true));
            }
            m
        }),
        next: page.next.as_ref().map(|c| c.0.to_string()),
        ttl_ms: page.ttl_ms.map(u64::from),
        cache_scope: page.cache_scope.map(|s| match s {
            CacheScope::Public => rmcp::model::CacheScope::Public,
            CacheScope::Private => rmcp::model::CacheScope::Private,
        }),
    }
}

fn page_of(resp: Response, kind: Kind) -> Result<Page, McpError> {
    match resp {
        Response::Page(p) if p.kind == kind => Ok(p),
        Response::Error(e) => Err(error(&e)),
        other => Err(unexpected(&other, kind.list_method())),
    }
}

macro_rules! list_result {
    ($name:ident, $ty:ident, $field:ident, $item:ty, $kind:expr) => {
        /// A page of this list as rmcp's result type.
        pub fn $name(resp: Response) -> Result<$ty, McpError> {
            let page = page_of(resp, $kind)?;
            let c = common(&page);
            let mut r = $ty::with_all_items(
                page.items
                    .iter()
                    .filter_map(|i| items::typed::<$item>($kind, i))
                    .collect(),
            );
            r.meta = c.meta;
            r.next_cursor = c.next;
            r.ttl_ms = c.ttl_ms;
            r.cache_scope = c.cache_scope;
            Ok(r)
        }
    };
}

list_result!(
    tools,
    ListToolsResult,
    tools,
    rmcp::model::Tool,
    Kind::Tools
);
list_result!(
    prompts,
    ListPromptsResult,
    prompts,
    rmcp::model::Prompt,
    Kind::Prompts
);
list_result!(
    resources,
    ListResourcesResult,
    resources,
    rmcp::model::Resource,
    Kind::Resources
);
list_result!(
    templates,
    ListResourceTemplatesResult,
    resource_templates,
    rmcp::model::ResourceTemplate,
    Kind::ResourceTemplates
);

/// The text a reference tool returns: `"<name>:<description>"`, so a caller can tell which
/// definition ran.
pub fn tool_text(name: &str, def: &str) -> String {
    format!("{name}:{}", items::description_of(def))
}

/// A `tools/call` result.
pub fn call(resp: Response) -> Result<CallToolResult, McpError> {
    match resp {
        Response::ToolResult { name, def } => {
            Ok(CallToolResult::success(vec![ContentBlock::text(
                tool_text(&name, &def),
            )]))
        }
        Response::Error(e) => Err(error(&e)),
        other => Err(unexpected(&other, "tools/call")),
    }
}

/// A `prompts/get` result.
pub fn prompt(resp: Response) -> Result<GetPromptResult, McpError> {
    match resp {
        Response::Prompt { name, def } => Ok(GetPromptResult::new(vec![PromptMessage::new_text(
            Role::User,
            tool_text(&name, &def),
        )])),
        Response::Error(e) => Err(error(&e)),
        other => Err(unexpected(&other, "prompts/get")),
    }
}

/// A `resources/read` result. A resource whose content was never set reads as its definition.
pub fn read(resp: Response) -> Result<ReadResourceResult, McpError> {
    match resp {
        Response::Content { uri, text } => {
            Ok(ReadResourceResult::new(vec![ResourceContents::text(
                text.to_string(),
                uri.to_string(),
            )]))
        }
        Response::Error(e) => Err(error(&e)),
        other => Err(unexpected(&other, "resources/read")),
    }
}

/// A `resources/subscribe` result.
pub fn subscribed(resp: Response) -> Result<(), McpError> {
    match resp {
        Response::Subscribed => Ok(()),
        Response::Error(e) => Err(error(&e)),
        other => Err(unexpected(&other, "resources/subscribe")),
    }
}
