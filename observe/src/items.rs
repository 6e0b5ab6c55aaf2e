//! What a message says about the lists: the kind a list method lists and a `list_changed`
//! announces, a page's items normalised to (name, description) as listsync compares them across
//! SDKs, and the core event a notification delivered to a client is on the client's side.

use listsync_core::history::{Cause, ClientId, Event};
use listsync_core::vocab::{Kind, KindSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One list item as listsync compares them across SDKs: name (or URI) and description.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct NamedItem {
    /// Name, URI or URI template.
    pub name: String,
    /// Description ("" if absent).
    pub description: String,
}

/// The kind a `list_changed` method announces (resources also covers templates).
pub fn notified_kind(method: &str) -> Option<Kind> {
    match method {
        "notifications/tools/list_changed" => Some(Kind::Tools),
        "notifications/prompts/list_changed" => Some(Kind::Prompts),
        "notifications/resources/list_changed" => Some(Kind::Resources),
        _ => None,
    }
}

/// The kind a list method lists.
pub fn listed_kind(method: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.list_method() == method)
}

/// The result field holding a kind's items, and the field naming each item.
fn item_fields(kind: Kind) -> (&'static str, &'static str) {
    match kind {
        Kind::Tools => ("tools", "name"),
        Kind::Prompts => ("prompts", "name"),
        Kind::Resources => ("resources", "uri"),
        Kind::ResourceTemplates => ("resourceTemplates", "uriTemplate"),
    }
}

/// An item of a JSON array, its name read from field `name`.
fn named(i: &Value, name: &str) -> NamedItem {
    let text = |f: &str| {
        i.get(f)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    NamedItem {
        name: text(name),
        description: text("description"),
    }
}

/// The items of a list result (one page), normalised to (name, description).
pub fn page_items(kind: Kind, result: &Value) -> Option<Vec<NamedItem>> {
    let (field, name) = item_fields(kind);
    let items = result.get(field)?.as_array()?;
    Some(items.iter().map(|i| named(i, name)).collect())
}

/// Items of a control-protocol item array (`[{name, description}]`), normalised.
pub fn control_items(v: &Value) -> Option<Vec<NamedItem>> {
    Some(v.as_array()?.iter().map(|i| named(i, "name")).collect())
}

/// The event a server-to-client message delivered to client `client` is on the client's side,
/// for a client that keeps `kinds`: a `list_changed` of a kept kind wakes it
/// ([`Event::Woken`]), a 2026-07-28 `notifications/subscriptions/acknowledged` is
/// [`Event::ListenAcked`] with the kept kinds the server honours. Shared by the replay's
/// reconstruction and the session-log audit (`listsync audit`).
pub fn delivered_event(v: &Value, kinds: KindSet, client: ClientId) -> Option<Event> {
    let method = v.get("method").and_then(Value::as_str).unwrap_or_default();
    if let Some(k) = notified_kind(method) {
        let woken: KindSet = k
            .notification_group()
            .iter()
            .copied()
            .filter(|g| kinds.contains(*g))
            .collect();
        (!woken.is_empty()).then_some(Event::Woken {
            client,
            kinds: woken,
            cause: Cause::ListChanged,
        })
    } else if method == "notifications/subscriptions/acknowledged" {
        let n = v.get("params").and_then(|p| p.get("notifications"));
        let flag = |f: &str| n.and_then(|n| n.get(f)).and_then(Value::as_bool) == Some(true);
        let mut honoured = KindSet::EMPTY;
        if flag("toolsListChanged") {
            honoured = honoured.with(Kind::Tools);
        }
        if flag("promptsListChanged") {
            honoured = honoured.with(Kind::Prompts);
        }
        if flag("resourcesListChanged") {
            honoured = honoured.with(Kind::Resources).with(Kind::ResourceTemplates);
        }
        Some(Event::ListenAcked {
            client,
            kinds: honoured.iter().filter(|k| kinds.contains(*k)).collect(),
        })
    } else {
        None
    }
}

/// The subscription id a server-to-client message names in its `_meta` (2026-07-28: the listen
/// stream a notification or acknowledgement belongs to).
pub fn subscription_id(v: &Value) -> Option<&Value> {
    v.get("params")
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get("io.modelcontextprotocol/subscriptionId"))
}
