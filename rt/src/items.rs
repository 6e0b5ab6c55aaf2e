//! Item definitions on the wire: what the server builds for an administrator's op, and how the
//! client reads an item back from a list result.
//!
//! An item's definition is the canonical JSON ([`crate::canon`]) of the rmcp object as rmcp
//! serializes it. The server builds the object from a description (a `Tool` with that
//! description and an `{"type":"object"}` input schema, a `Prompt`, a `Resource`, a
//! `ResourceTemplate`), round-trips it through rmcp's own types, and stores the canonical text in
//! core's registry. A client converting the object it received the same way gets byte-identical
//! text. An item scoped to one authorization context carries its scope in
//! `_meta["dev.listsync/scope"]`, so the scope survives the wire too (core compares it).

use crate::canon::canonical;
use listsync_core::vocab::{Catalog, Item, Kind, Op, Scope};
use rmcp::model::{Prompt, Resource, ResourceTemplate, Tool};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::sync::Arc;

/// `_meta` key holding a non-public item's scope.
pub const SCOPE_KEY: &str = "dev.listsync/scope";

/// The rmcp object (as JSON) for an item of `kind` named `name` (the URI for resources, the URI
/// template for templates) with this description and scope.
pub fn build(kind: Kind, name: &str, description: &str, scope: Scope) -> Value {
    let schema = json!({"type": "object"});
    let object = match kind {
        Kind::Tools => {
            let schema = Arc::new(schema.as_object().cloned().unwrap_or_default());
            to_value(&Tool::new(name.to_owned(), description.to_owned(), schema))
        }
        Kind::Prompts => to_value(&Prompt::new(name, Some(description), None)),
        Kind::Resources => to_value(&Resource::new(name, name).with_description(description)),
        Kind::ResourceTemplates => {
            to_value(&ResourceTemplate::new(name, name).with_description(description))
        }
    };
    let mut object = object.unwrap_or_else(|| json!({}));
    if scope != Scope::Public
        && let Value::Object(map) = &mut object
    {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(
                SCOPE_KEY.into(),
                serde_json::to_value(scope).unwrap_or(Value::Null),
            );
        }
    }
    // Round-trip through rmcp's own type so the text is exactly what rmcp puts on the wire.
    let round = match kind {
        Kind::Tools => round_trip::<Tool>(&object),
        Kind::Prompts => round_trip::<Prompt>(&object),
        Kind::Resources => round_trip::<Resource>(&object),
        Kind::ResourceTemplates => round_trip::<ResourceTemplate>(&object),
    };
    round.unwrap_or(object)
}

fn to_value<T: Serialize>(v: &T) -> Option<Value> {
    serde_json::to_value(v).ok()
}

fn round_trip<T: Serialize + DeserializeOwned>(v: &Value) -> Option<Value> {
    let typed: T = serde_json::from_value(v.clone()).ok()?;
    to_value(&typed)
}

/// The canonical definition text of an item built from a description.
pub fn def_of(kind: Kind, name: &str, description: &str, scope: Scope) -> Arc<str> {
    canonical(&build(kind, name, description, scope)).into()
}

/// The description inside a definition, if it has one (the definition itself otherwise).
pub fn description_of(def: &str) -> String {
    match serde_json::from_str::<Value>(def) {
        Ok(Value::Object(map)) => match map.get("description") {
            Some(Value::String(s)) => s.clone(),
            _ => String::new(),
        },
        _ => def.to_owned(),
    }
}

/// Whether `def` already is a canonical definition of an item of `kind` named `name` with this
/// scope.
fn is_canonical(kind: Kind, name: &str, def: &str, scope: Scope) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(def) else {
        return false;
    };
    matches!(read(kind, &v), Ok(item) if &*item.name == name && item.scope == scope && *item.def == *def)
}

/// Rewrites an op so its definition is canonical JSON: a definition that is not already the
/// canonical object for this item is taken as the item's description. `catalog` supplies the
/// scope an update keeps.
pub fn normalize(op: &Op, catalog: &Catalog) -> Op {
    match op {
        Op::Add {
            kind,
            name,
            def,
            scope,
        } => {
            let def = if is_canonical(*kind, name, def, *scope) {
                def.clone()
            } else {
                def_of(*kind, name, def, *scope)
            };
            Op::Add {
                kind: *kind,
                name: name.clone(),
                def,
                scope: *scope,
            }
        }
        Op::Update { kind, name, def } => {
            let scope = catalog
                .get(*kind, name)
                .map(|e| e.scope)
                .unwrap_or_default();
            let def = if is_canonical(*kind, name, def, scope) {
                def.clone()
            } else {
                def_of(*kind, name, def, scope)
            };
            Op::Update {
                kind: *kind,
                name: name.clone(),
                def,
            }
        }
        other => other.clone(),
    }
}

/// The JSON field that names an item of `kind`.
pub fn name_field(kind: Kind) -> &'static str {
    match kind {
        Kind::Tools | Kind::Prompts => "name",
        Kind::Resources => "uri",
        Kind::ResourceTemplates => "uriTemplate",
    }
}

/// Reads one item of a list result (as JSON): its name, canonical definition and scope. Rejects
/// what MCP forbids: a missing or empty name, a tool whose `inputSchema` is not a JSON Schema
/// object of type `"object"`, a scope marker that is not a scope.
pub fn read(kind: Kind, v: &Value) -> Result<Item, String> {
    let Value::Object(map) = v else {
        return Err(format!("a {kind} entry is not an object"));
    };
    let field = name_field(kind);
    let name = match map.get(field) {
        Some(Value::String(s)) if !s.is_empty() => s.clone(),
        _ => return Err(format!("a {kind} entry has no {field}")),
    };
    if kind == Kind::Tools {
        match map.get("inputSchema") {
            Some(Value::Object(schema))
                if schema.get("type") == Some(&Value::String("object".into())) => {}
            _ => {
                return Err(format!(
                    "tool '{name}' has an invalid inputSchema (MCP requires a JSON Schema object of type \"object\")"
                ));
            }
        }
    }
    let scope = match map
        .get("_meta")
        .and_then(|m| m.as_object())
        .and_then(|m| m.get(SCOPE_KEY))
    {
        None => Scope::Public,
        Some(s) => serde_json::from_value(s.clone())
            .map_err(|_| format!("{kind} '{name}' has a malformed {SCOPE_KEY}"))?,
    };
    Ok(Item {
        name: name.into(),
        def: canonical(v).into(),
        scope,
    })
}

/// Reads a typed rmcp item received in a list result.
pub fn read_typed<T: Serialize>(kind: Kind, item: &T) -> Result<Item, String> {
    let v = serde_json::to_value(item).map_err(|e| format!("unserializable {kind} entry: {e}"))?;
    read(kind, &v)
}

/// The rmcp object for a stored item (built afresh from its description if the stored text is
/// not an object of that type).
pub fn typed<T: DeserializeOwned>(kind: Kind, item: &Item) -> Option<T> {
    serde_json::from_str::<T>(&item.def)
        .ok()
        .or_else(|| serde_json::from_value(build(kind, &item.name, &item.def, item.scope)).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use listsync_core::vocab::AuthCtx;

    #[test]
    fn built_definitions_read_back_byte_identical() {
        for kind in Kind::ALL {
            for scope in [Scope::Public, Scope::Only(AuthCtx(2))] {
                let name = match kind {
                    Kind::Resources => "mem://r",
                    Kind::ResourceTemplates => "mem://{x}",
                    _ => "a",
                };
                let def = def_of(kind, name, "a v1", scope);
                let v: Value = serde_json::from_str(&def).unwrap();
                let item = read(kind, &v).unwrap();
                assert_eq!(&*item.name, name);
                assert_eq!(item.def, def, "{kind}");
                assert_eq!(item.scope, scope);
                assert_eq!(description_of(&def), "a v1");
                let again = normalize(
                    &Op::Add {
                        kind,
                        name: name.into(),
                        def: def.clone(),
                        scope,
                    },
                    &Catalog::default(),
                );
                assert!(matches!(again, Op::Add { def: d, .. } if d == def));
            }
        }
    }

    #[test]
    fn typed_tools_round_trip_through_rmcp() {
        let def = def_of(Kind::Tools, "t", "desc", Scope::Public);
        let item = Item {
            name: "t".into(),
            def: def.clone(),
            scope: Scope::Public,
        };
        let tool: Tool = typed(Kind::Tools, &item).unwrap();
        assert_eq!(read_typed(Kind::Tools, &tool).unwrap().def, def);
    }

    #[test]
    fn invalid_items_are_rejected() {
        assert!(
            read(
                Kind::Tools,
                &json!({"name": "t", "inputSchema": {"type": "string"}})
            )
            .is_err()
        );
        assert!(read(Kind::Tools, &json!({"name": "t"})).is_err());
        assert!(read(Kind::Prompts, &json!({"name": ""})).is_err());
        assert!(read(Kind::Resources, &json!({"name": "r"})).is_err());
        assert!(read(Kind::Prompts, &json!([1])).is_err());
    }
}
