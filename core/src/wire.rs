//! The abstract wire: the requests, responses and notifications of MCP that concern lists,
//! without JSON. The runtime (`rt/`) maps these to and from JSON-RPC; the model and the simulator
//! move them through simulated networks as they are.

use crate::vocab::{AuthCtx, Era, ItemList, Kind, KindSet, Name};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::sync::Arc;

/// JSON-RPC "invalid params": unknown tool or prompt, invalid cursor, and (2026-07-28) unknown
/// resource.
pub const INVALID_PARAMS: i32 = -32602;
/// 2025-11-25 "resource not found".
pub const RESOURCE_NOT_FOUND: i32 = -32002;
/// JSON-RPC "internal error".
pub const INTERNAL_ERROR: i32 = -32603;
/// JSON-RPC "method not found" (e.g. `subscriptions/listen` on a server that does not serve it).
pub const METHOD_NOT_FOUND: i32 = -32601;

/// A request id, unique per connection.
pub type ReqId = u32;

/// Which stream of a connection a server message travels on. On stdio both lanes are one pipe;
/// over HTTP responses come back on their own POSTs while notifications use the GET stream
/// (2025-11-25) or a `subscriptions/listen` stream (2026-07-28).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    /// Responses to requests.
    Rpc,
    /// Notifications.
    Stream,
}

/// An opaque pagination cursor. Clients never look inside; servers decide what it means.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Cursor(pub Arc<str>);

impl fmt::Display for Cursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What the reference server encodes in its cursors: the catalog version the walk started at,
/// the authorization context, and the offset. The offset-only form is what the `offset-cursor`
/// known-bad server uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServerCursor {
    /// Catalog version the cursor is bound to (None: offset-only cursor).
    pub version: Option<u64>,
    /// Authorization context the cursor was issued under.
    pub auth: Option<AuthCtx>,
    /// Index of the first item of the next page.
    pub offset: u32,
}

impl ServerCursor {
    /// Encodes as an opaque cursor string.
    pub fn encode(self) -> Cursor {
        let s = match (self.version, self.auth) {
            (Some(v), Some(a)) => format!("v{v}.a{}.o{}", a.0, self.offset),
            (Some(v), None) => format!("v{v}.o{}", self.offset),
            (None, _) => format!("o{}", self.offset),
        };
        Cursor(s.into())
    }

    /// Decodes a cursor string; None if it is not one of ours.
    pub fn decode(c: &Cursor) -> Option<ServerCursor> {
        let mut out = ServerCursor {
            version: None,
            auth: None,
            offset: u32::MAX,
        };
        for part in c.0.split('.') {
            let (tag, num) = part.split_at_checked(1)?;
            match tag {
                "v" if out.version.is_none() => out.version = Some(num.parse().ok()?),
                "a" if out.auth.is_none() => out.auth = Some(AuthCtx(num.parse().ok()?)),
                "o" if out.offset == u32::MAX => out.offset = num.parse().ok()?,
                _ => return None,
            }
        }
        (out.offset != u32::MAX).then_some(out)
    }
}

/// `cacheScope` of a 2026-07-28 list result.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheScope {
    /// The same for every authorization context: may be shared.
    Public,
    /// Varies by authorization: must never be served to another context.
    Private,
}

/// A request from a client, with the authorization context it is made under.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ClientMsg {
    /// Request id.
    pub id: ReqId,
    /// Authorization context.
    pub auth: AuthCtx,
    /// The request.
    pub req: Request,
}

/// The requests listsync speaks.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case")]
pub enum Request {
    /// `initialize` (2025-11-25 only).
    Initialize,
    /// `tools/list` and friends.
    List {
        /// Which list.
        kind: Kind,
        /// Continuation cursor.
        cursor: Option<Cursor>,
    },
    /// `tools/call`.
    CallTool {
        /// Tool name.
        name: Name,
        /// The [`schema_fingerprint`](crate::vocab::schema_fingerprint) of the definition the
        /// arguments were built for (0: none known, a call made by name). It stands for the
        /// arguments themselves: they fit a definition whose input schema has this fingerprint.
        #[serde(default, skip_serializing_if = "is_zero")]
        schema: u64,
    },
    /// `prompts/get`.
    GetPrompt {
        /// Prompt name.
        name: Name,
    },
    /// `resources/subscribe` (content updates of one URI).
    Subscribe {
        /// Resource URI.
        uri: Name,
    },
    /// `resources/read`.
    ReadResource {
        /// Resource URI.
        uri: Name,
    },
    /// `subscriptions/listen` (2026-07-28): opens a notification stream for these kinds.
    Listen {
        /// List kinds whose `list_changed` the client wants.
        kinds: KindSet,
        /// Resource URIs whose `updated` the client wants.
        uris: Vec<Name>,
    },
}

impl Request {
    /// The JSON-RPC method name.
    pub fn method(&self) -> &'static str {
        match self {
            Request::Initialize => "initialize",
            Request::List { kind, .. } => kind.list_method(),
            Request::CallTool { .. } => "tools/call",
            Request::GetPrompt { .. } => "prompts/get",
            Request::Subscribe { .. } => "resources/subscribe",
            Request::ReadResource { .. } => "resources/read",
            Request::Listen { .. } => "subscriptions/listen",
        }
    }

    /// The lane the response to this request comes back on.
    pub fn reply_lane(&self) -> Lane {
        match self {
            Request::Listen { .. } => Lane::Stream,
            _ => Lane::Rpc,
        }
    }
}

/// One page of a list result.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Page {
    /// Which list.
    pub kind: Kind,
    /// This page's items.
    pub items: ItemList,
    /// Cursor for the next page; None on the last page.
    pub next: Option<Cursor>,
    /// Catalog version the page was served at (the reference server's `_meta`), if the server
    /// says.
    pub version: Option<u64>,
    /// Identity of the version space `version` belongs to (a server instance, or a cluster's
    /// shared store): versions are comparable only within one.
    pub catalog: Option<u64>,
    /// `ttlMs` (2026-07-28).
    pub ttl_ms: Option<u32>,
    /// `cacheScope` (2026-07-28).
    pub cache_scope: Option<CacheScope>,
    /// The server declares its cursors version-bound (`_meta["dev.listsync/versionBoundCursors"]`,
    /// docs/design.md): every page reached by following this page's cursor is cut from the
    /// catalog at this page's `version`, or refused with -32602 — a walk is never a mix of
    /// versions. Only meaningful together with `version`.
    #[serde(default)]
    pub version_bound: bool,
}

/// Capabilities a server advertises (the list-related part).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Caps {
    /// Kinds the server sends `list_changed` for.
    pub list_changed: KindSet,
    /// `resources.subscribe`.
    pub subscribe: bool,
}

/// A response's result or error.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "result", rename_all = "snake_case")]
pub enum Response {
    /// `initialize` result.
    Initialized {
        /// Negotiated protocol version.
        era: Era,
        /// Capabilities.
        caps: Caps,
    },
    /// A list page.
    Page(Page),
    /// A tool ran; `def` is the definition that ran.
    ToolResult {
        /// Tool name.
        name: Name,
        /// Definition of the tool that ran.
        def: Arc<str>,
    },
    /// `prompts/get` result; `def` is the definition of the prompt that was served.
    Prompt {
        /// Prompt name.
        name: Name,
        /// Definition of the prompt.
        def: Arc<str>,
    },
    /// `resources/subscribe` acknowledged.
    Subscribed,
    /// `resources/read` result.
    Content {
        /// Resource URI.
        uri: Name,
        /// Content text.
        text: Arc<str>,
    },
    /// A JSON-RPC error.
    Error(RpcError),
}

/// A JSON-RPC error, with listsync's reading of it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RpcError {
    /// JSON-RPC error code.
    pub code: i32,
    /// What it means.
    pub reason: ErrorReason,
}

/// Why a request failed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorReason {
    /// The cursor is unknown or bound to another catalog version.
    InvalidCursor,
    /// No such tool (or it was removed).
    UnknownTool,
    /// The tool's input schema changed since the call's arguments were built: they do not fit
    /// the current definition.
    SchemaChanged,
    /// No such prompt (or it was removed).
    UnknownPrompt,
    /// No such resource.
    ResourceNotFound,
    /// The request needs an initialized session.
    NotInitialized,
    /// Anything else, with a message.
    Other(Arc<str>),
}

impl ErrorReason {
    /// Whether the error is news of a change to the tool called: it is gone, or its input
    /// schema changed (both `-32602`, naming the reason).
    pub fn says_tool_changed(&self) -> bool {
        matches!(self, ErrorReason::UnknownTool | ErrorReason::SchemaChanged)
    }
}

impl RpcError {
    /// `-32602 invalid cursor`.
    pub fn invalid_cursor() -> Self {
        RpcError {
            code: INVALID_PARAMS,
            reason: ErrorReason::InvalidCursor,
        }
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.reason {
            ErrorReason::InvalidCursor => "invalid cursor",
            ErrorReason::UnknownTool => "unknown tool",
            ErrorReason::SchemaChanged => {
                "arguments built for an earlier input schema: the tool changed, list tools again"
            }
            ErrorReason::UnknownPrompt => "unknown prompt",
            ErrorReason::ResourceNotFound => "resource not found",
            ErrorReason::NotInitialized => "not initialized",
            ErrorReason::Other(m) => m,
        };
        write!(f, "{} {what}", self.code)
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

/// Identifies a `subscriptions/listen` stream (2026-07-28); every notification on it carries it
/// in `_meta["io.modelcontextprotocol/subscriptionId"]`.
pub type SubId = u32;

/// Notifications a server sends.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "notification", rename_all = "snake_case")]
pub enum Notification {
    /// `notifications/{tools,prompts,resources}/list_changed`. For resources and templates the
    /// kind is `Resources`.
    ListChanged {
        /// Which list (the notification's group).
        kind: Kind,
        /// Listen stream it was sent on (2026-07-28).
        sub: Option<SubId>,
    },
    /// `notifications/resources/updated`: one resource's content changed.
    ResourceUpdated {
        /// Resource URI.
        uri: Name,
        /// Listen stream it was sent on (2026-07-28).
        sub: Option<SubId>,
    },
    /// `notifications/subscriptions/acknowledged` (2026-07-28): the first message of a listen
    /// stream, naming the subset of kinds the server will deliver.
    Acknowledged {
        /// Listen stream id.
        sub: SubId,
        /// Kinds honoured.
        kinds: KindSet,
    },
}

impl Notification {
    /// The JSON-RPC method name.
    pub fn method(&self) -> &'static str {
        match self {
            Notification::ListChanged { kind, .. } => kind.list_changed_method(),
            Notification::ResourceUpdated { .. } => "notifications/resources/updated",
            Notification::Acknowledged { .. } => "notifications/subscriptions/acknowledged",
        }
    }
}

/// A message from the server to one client.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServerMsg {
    /// The response to request `id`.
    Response {
        /// Request id.
        id: ReqId,
        /// Result or error.
        resp: Response,
    },
    /// A notification.
    Notification(Notification),
}

impl ServerMsg {
    /// A short human description: `tools/list page (v3, 2 items, more)`, `tools list_changed`...
    pub fn describe(&self) -> String {
        match self {
            ServerMsg::Response { id, resp } => match resp {
                Response::Page(p) => format!(
                    "#{id} {} page{} [{}]{}",
                    p.kind,
                    p.version.map(|v| format!(" v{v}")).unwrap_or_default(),
                    p.items
                        .iter()
                        .map(|i| format!("{}={}", i.name, i.def))
                        .collect::<Vec<_>>()
                        .join(","),
                    p.next
                        .as_ref()
                        .map(|c| format!(" next={c}"))
                        .unwrap_or_default()
                ),
                Response::Initialized { era, .. } => format!("#{id} initialized {era}"),
                Response::ToolResult { name, def } => format!("#{id} ran {name}={def}"),
                Response::Prompt { name, def } => format!("#{id} prompt {name}={def}"),
                Response::Subscribed => format!("#{id} subscribed"),
                Response::Content { uri, text } => format!("#{id} content {uri}={text}"),
                Response::Error(e) => format!("#{id} error {e}"),
            },
            ServerMsg::Notification(n) => match n {
                Notification::ListChanged { kind, .. } => format!("{kind} list_changed"),
                Notification::ResourceUpdated { uri, .. } => format!("updated {uri}"),
                Notification::Acknowledged { kinds, .. } => format!(
                    "listen acknowledged [{}]",
                    kinds
                        .iter()
                        .map(|k| k.as_str())
                        .collect::<Vec<_>>()
                        .join(",")
                ),
            },
        }
    }
}

impl ClientMsg {
    /// A short human description: `#3 tools/list cursor=v1.o1`.
    pub fn describe(&self) -> String {
        let extra = match &self.req {
            Request::List {
                cursor: Some(c), ..
            } => format!(" cursor={c}"),
            Request::CallTool { name, .. } | Request::GetPrompt { name } => format!(" {name}"),
            Request::Subscribe { uri } | Request::ReadResource { uri } => format!(" {uri}"),
            _ => String::new(),
        };
        let auth = if self.auth.0 == 0 {
            String::new()
        } else {
            format!(" ({})", self.auth)
        };
        format!("#{} {}{extra}{auth}", self.id, self.req.method())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_reject_garbage() {
        let c = ServerCursor {
            version: Some(7),
            auth: Some(AuthCtx(1)),
            offset: 4,
        };
        assert_eq!(ServerCursor::decode(&c.encode()), Some(c));
        let o = ServerCursor {
            version: None,
            auth: None,
            offset: 2,
        };
        assert_eq!(ServerCursor::decode(&o.encode()), Some(o));
        for bad in ["", "x", "v1", "v1.o", "o1.o2", "vv.o1", "v1.o1.z3", "ø"] {
            assert_eq!(ServerCursor::decode(&Cursor(bad.into())), None, "{bad}");
        }
    }
}
