//! Canonical JSON: the byte form of an item definition that both sides of a connection agree on.
//!
//! An item's definition (core's `Item.def`) is the canonical JSON of the MCP object (`Tool`,
//! `Prompt`, `Resource`, `ResourceTemplate`) as rmcp serializes it: object keys sorted, no
//! insignificant whitespace. The server stores it; the client recomputes it from the object it
//! received; equal objects give byte-equal definitions, so core's property checkers (which
//! compare digests of name, definition and scope) see equal lists.
//!
//! Keys are sorted here explicitly, so the result does not depend on whether some crate in the
//! build enabled serde_json's `preserve_order`.

use serde_json::Value;

/// The canonical text of a JSON value.
pub fn canonical(v: &Value) -> String {
    let mut out = String::new();
    write(v, &mut out);
    out
}

/// The canonical text of anything serializable (None if it does not serialize to JSON).
pub fn canonical_of<T: serde::Serialize>(v: &T) -> Option<String> {
    serde_json::to_value(v).ok().map(|v| canonical(&v))
}

fn write(v: &Value, out: &mut String) {
    match v {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                write(&map[k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_at_every_depth() {
        let v = json!({"b": 1, "a": {"z": [true, null, {"y": "é\n", "x": 1.5}], "c": "s"}});
        assert_eq!(
            canonical(&v),
            r#"{"a":{"c":"s","z":[true,null,{"x":1.5,"y":"é\n"}]},"b":1}"#
        );
        let reparsed: Value = serde_json::from_str(&canonical(&v)).unwrap();
        assert_eq!(reparsed, v);
    }
}
