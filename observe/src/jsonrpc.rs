//! JSON-RPC framing on an MCP link as listsync reads it: one message per line, classified
//! as request, notification, response or invalid, with the few fields the harness reads (id,
//! method, error code). Ids are compared by their canonical JSON text, so `5` and `"5"` differ as
//! JSON-RPC says they do.

use serde_json::Value;

/// Longest line the proxy forwards; longer lines are dropped and reported (bounded memory).
pub const MAX_LINE_BYTES: usize = 8 << 20;

/// A JSON-RPC id as its canonical JSON text (`5`, `"probe-1"`).
pub type IdKey = String;

/// What one line is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A request: has `method` and an `id`.
    Request {
        /// Canonical id.
        id: IdKey,
        /// Method name.
        method: &'a str,
    },
    /// A notification: has `method`, no `id`.
    Notification {
        /// Method name.
        method: &'a str,
    },
    /// A response: an `id` and a `result` or an `error`.
    Response {
        /// Canonical id.
        id: IdKey,
        /// `error.code` if it is an error response.
        error: Option<i64>,
    },
    /// Not a JSON-RPC 2.0 message.
    Invalid(&'static str),
}

/// Classifies a parsed line.
pub fn classify(v: &Value) -> Frame<'_> {
    let Some(obj) = v.as_object() else {
        return Frame::Invalid("not a JSON object");
    };
    let id = obj.get("id").filter(|i| !i.is_null()).map(id_key);
    match (obj.get("method").and_then(Value::as_str), id) {
        (Some(method), Some(id)) => Frame::Request { id, method },
        (Some(method), None) => Frame::Notification { method },
        (None, Some(id)) if obj.contains_key("result") || obj.contains_key("error") => {
            Frame::Response {
                id,
                error: obj
                    .get("error")
                    .and_then(|e| e.get("code"))
                    .and_then(Value::as_i64),
            }
        }
        _ => Frame::Invalid("neither request, notification nor response"),
    }
}

/// The canonical text of an id.
pub fn id_key(id: &Value) -> IdKey {
    id.to_string()
}

/// `params` of a message (Null if absent).
pub fn params(v: &Value) -> &Value {
    v.get("params").unwrap_or(&Value::Null)
}

/// `result` of a response (Null if absent).
pub fn result(v: &Value) -> &Value {
    v.get("result").unwrap_or(&Value::Null)
}

/// Whether a request carries a pagination cursor.
pub fn has_cursor(v: &Value) -> bool {
    params(v).get("cursor").is_some_and(|c| !c.is_null())
}

/// A one-line human summary of a message: `req #3 tools/list cursor`, `resp #3 (4 tools, more)`,
/// `notif tools/list_changed`.
pub fn summary(v: &Value) -> String {
    match classify(v) {
        Frame::Request { id, method } => {
            let mut s = format!("req {id} {method}");
            if has_cursor(v) {
                s.push_str(" cursor");
            }
            if let Some(n) = params(v).get("name").and_then(Value::as_str) {
                s.push(' ');
                s.push_str(n);
            }
            s
        }
        Frame::Notification { method } => format!("notif {method}"),
        Frame::Response { id, error: Some(c) } => format!("resp {id} error {c}"),
        Frame::Response { id, error: None } => {
            let r = result(v);
            let mut s = format!("resp {id}");
            for field in ["tools", "prompts", "resources", "resourceTemplates"] {
                if let Some(items) = r.get(field).and_then(Value::as_array) {
                    let names: Vec<&str> = items
                        .iter()
                        .filter_map(|i| {
                            i.get("name")
                                .or_else(|| i.get("uri"))
                                .or_else(|| i.get("uriTemplate"))
                                .and_then(Value::as_str)
                        })
                        .collect();
                    s.push_str(&format!(" {field}=[{}]", names.join(",")));
                }
            }
            if r.get("nextCursor").is_some_and(|c| !c.is_null()) {
                s.push_str(" more");
            }
            if r.get("isError").and_then(Value::as_bool) == Some(true) {
                s.push_str(" isError");
            }
            s
        }
        Frame::Invalid(why) => format!("invalid ({why})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn classifies_every_shape() {
        let req = json!({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"x"}});
        assert_eq!(
            classify(&req),
            Frame::Request {
                id: "3".into(),
                method: "tools/list"
            }
        );
        assert!(has_cursor(&req));
        let n = json!({"jsonrpc":"2.0","method":"notifications/tools/list_changed"});
        assert_eq!(
            classify(&n),
            Frame::Notification {
                method: "notifications/tools/list_changed"
            }
        );
        let e = json!({"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"x"}});
        assert_eq!(
            classify(&e),
            Frame::Response {
                id: "\"a\"".into(),
                error: Some(-32602)
            }
        );
        assert!(matches!(classify(&json!([1, 2])), Frame::Invalid(_)));
        assert!(matches!(classify(&json!({"id": 1})), Frame::Invalid(_)));
        let r = json!({"id":1,"result":{"tools":[{"name":"a"}],"nextCursor":"c"}});
        assert_eq!(summary(&r), "resp 1 tools=[a] more");
    }
}
