//! The nouns every listsync component shares: list kinds, protocol eras, authorization contexts,
//! items with their definition fingerprints, catalogs, and the mutations an administrator applies.
//!
//! Everything here is plain data (`Clone + Hash + Eq`), cheap to clone (`Arc` inside), and
//! serializable, so the model checker can hash it, the simulator can copy it and traces can
//! carry it.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::str::FromStr;
use std::sync::Arc;

/// Which of a server's lists an item belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `tools/list`
    Tools,
    /// `prompts/list`
    Prompts,
    /// `resources/list`
    Resources,
    /// `resources/templates/list`
    ResourceTemplates,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 4] = [
        Kind::Tools,
        Kind::Prompts,
        Kind::Resources,
        Kind::ResourceTemplates,
    ];

    /// The JSON-RPC method that lists this kind.
    pub fn list_method(self) -> &'static str {
        match self {
            Kind::Tools => "tools/list",
            Kind::Prompts => "prompts/list",
            Kind::Resources => "resources/list",
            Kind::ResourceTemplates => "resources/templates/list",
        }
    }

    /// The notification that announces a change of this list. Resource templates share the
    /// resources notification: MCP has no separate one.
    pub fn list_changed_method(self) -> &'static str {
        match self {
            Kind::Tools => "notifications/tools/list_changed",
            Kind::Prompts => "notifications/prompts/list_changed",
            Kind::Resources | Kind::ResourceTemplates => "notifications/resources/list_changed",
        }
    }

    /// The kinds a `list_changed` notification with this method covers.
    pub fn covered_by_notification(method: &str) -> &'static [Kind] {
        match method {
            "notifications/tools/list_changed" => &[Kind::Tools],
            "notifications/prompts/list_changed" => &[Kind::Prompts],
            "notifications/resources/list_changed" => &[Kind::Resources, Kind::ResourceTemplates],
            _ => &[],
        }
    }

    /// The short name used in configs, traces and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Tools => "tools",
            Kind::Prompts => "prompts",
            Kind::Resources => "resources",
            Kind::ResourceTemplates => "resource_templates",
        }
    }

    /// The kinds that share this kind's `list_changed` notification (itself included).
    pub fn notification_group(self) -> &'static [Kind] {
        Kind::covered_by_notification(self.list_changed_method())
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Kind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Kind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| {
                format!(
                    "unknown kind '{s}' (expected tools, prompts, resources or resource_templates)"
                )
            })
    }
}

/// A small set of kinds, as a bit set (hashable, `Copy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct KindSet(u8);

impl KindSet {
    /// No kind.
    pub const EMPTY: KindSet = KindSet(0);

    /// Just one kind.
    pub fn only(kind: Kind) -> Self {
        KindSet(1 << kind as u8)
    }

    /// Whether `kind` is in the set.
    pub fn contains(self, kind: Kind) -> bool {
        self.0 & (1 << kind as u8) != 0
    }

    /// The set with `kind` added.
    pub fn with(self, kind: Kind) -> Self {
        KindSet(self.0 | (1 << kind as u8))
    }

    /// The kinds in either set.
    pub fn union(self, other: KindSet) -> Self {
        KindSet(self.0 | other.0)
    }

    /// The kinds in the set, in `Kind::ALL` order.
    pub fn iter(self) -> impl Iterator<Item = Kind> {
        Kind::ALL.into_iter().filter(move |k| self.contains(*k))
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl fmt::Display for KindSet {
    /// The kinds' names, comma-separated.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, k) in self.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            f.write_str(k.as_str())?;
        }
        Ok(())
    }
}

impl FromIterator<Kind> for KindSet {
    fn from_iter<I: IntoIterator<Item = Kind>>(iter: I) -> Self {
        iter.into_iter().fold(KindSet::EMPTY, KindSet::with)
    }
}

impl Serialize for KindSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for KindSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<Kind>::deserialize(d)?.into_iter().collect())
    }
}

/// The two MCP protocol eras listsync speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Era {
    /// Sessions: `initialize`, bare `list_changed` notifications on the session.
    #[serde(rename = "2025-11-25")]
    V2025_11_25,
    /// Stateless: `server/discover`, notifications only on `subscriptions/listen` streams.
    #[serde(rename = "2026-07-28")]
    V2026_07_28,
}

impl Era {
    /// Both eras.
    pub const ALL: [Era; 2] = [Era::V2025_11_25, Era::V2026_07_28];

    /// The protocol version string.
    pub fn as_str(self) -> &'static str {
        match self {
            Era::V2025_11_25 => "2025-11-25",
            Era::V2026_07_28 => "2026-07-28",
        }
    }
}

impl fmt::Display for Era {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Era {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Era::ALL
            .into_iter()
            .find(|e| e.as_str() == s)
            .ok_or_else(|| {
                format!("unknown protocol era '{s}' (expected 2025-11-25 or 2026-07-28)")
            })
    }
}

/// An authorization context: the identity a request is made under. Lists may vary by it.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct AuthCtx(pub u8);

impl fmt::Display for AuthCtx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "auth{}", self.0)
    }
}

/// Who may see an item.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    /// Every authorization context.
    #[default]
    Public,
    /// Only this authorization context.
    Only(AuthCtx),
}

impl Scope {
    /// Whether a request made under `auth` may see an item with this scope.
    pub fn visible_to(self, auth: AuthCtx) -> bool {
        match self {
            Scope::Public => true,
            Scope::Only(a) => a == auth,
        }
    }
}

/// An item's identity within its kind: the name (tools, prompts) or URI (resources, templates).
pub type Name = Arc<str>;

/// One entry of a list as a client sees it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Item {
    /// Name, or URI for resources.
    pub name: Name,
    /// The definition (description, schema...) as canonical text; a change here is an update.
    pub def: Arc<str>,
    /// Who may see it.
    #[serde(default, skip_serializing_if = "is_public")]
    pub scope: Scope,
}

fn is_public(s: &Scope) -> bool {
    *s == Scope::Public
}

impl Item {
    /// A public item.
    pub fn new(name: &str, def: &str) -> Self {
        Item {
            name: name.into(),
            def: def.into(),
            scope: Scope::Public,
        }
    }

    /// A stable 64-bit fingerprint of the definition.
    pub fn fingerprint(&self) -> u64 {
        fingerprint(&self.def)
    }
}

/// A stable 64-bit fingerprint of a definition: what a user's approval of a tool is keyed by
/// (with the tool's name), so that a changed definition is a different thing to approve.
pub fn fingerprint(def: &str) -> u64 {
    let mut h = Fnv::default();
    def.hash(&mut h);
    h.finish()
}

/// The input schema of a tool definition: what a call's arguments must fit. For a JSON
/// definition, the canonical text of its `inputSchema` (`{}` if it has none); a definition that
/// is not JSON stands for its own schema, so any change of it changes the schema.
pub fn input_schema(def: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(def) {
        Ok(serde_json::Value::Object(map)) => map
            .get("inputSchema")
            .map_or_else(|| "{}".to_owned(), |s| s.to_string()),
        _ => def.to_owned(),
    }
}

/// The fingerprint of a tool definition's [`input_schema`]: what a call says its arguments were
/// built for (0: nothing, a call made by name without a definition in hand).
pub fn schema_fingerprint(def: &str) -> u64 {
    fingerprint(&input_schema(def)).max(1)
}

/// Whether a tool definition declares itself read-only: a JSON object whose `annotations`
/// hold `readOnlyHint: true`. Every other tool may have side effects (MCP's default for a tool
/// without annotations is "not read-only"), so calls of it are the ones a user approves. A
/// definition that is not JSON declares nothing.
pub fn declares_read_only(def: &str) -> bool {
    if !def.contains("readOnlyHint") {
        return false; // most definitions: no need to parse
    }
    serde_json::from_str::<serde_json::Value>(def).is_ok_and(|v| {
        v.pointer("/annotations/readOnlyHint") == Some(&serde_json::Value::Bool(true))
    })
}

/// An immutable list of items, as served or published. Cheap to clone.
pub type ItemList = Arc<[Item]>;

/// A 64-bit digest of a list, independent of item order: two lists with the same items (names,
/// definitions, scopes) have the same digest. The property checkers compare lists by digest.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
#[serde(transparent)]
pub struct Digest(pub u64);

impl Digest {
    /// The digest of a list of items.
    pub fn of(items: &[Item]) -> Digest {
        let mut sorted: Vec<&Item> = items.iter().collect();
        sorted.sort();
        let mut h = Fnv::default();
        sorted.len().hash(&mut h);
        for item in sorted {
            item.hash(&mut h);
        }
        Digest(h.finish())
    }
}

/// FNV-1a: a small, stable, seedless hasher, so digests are the same in every run and process.
#[derive(Clone, Copy)]
pub struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for b in bytes {
            self.0 ^= u64::from(*b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

/// One change an administrator makes to a server's registry.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Add (or replace) an item.
    Add {
        /// List kind.
        kind: Kind,
        /// Name or URI.
        name: Name,
        /// Definition text.
        def: Arc<str>,
        /// Visibility.
        #[serde(default, skip_serializing_if = "is_public")]
        scope: Scope,
    },
    /// Remove an item (no-op if absent).
    Remove {
        /// List kind.
        kind: Kind,
        /// Name or URI.
        name: Name,
    },
    /// Change an existing item's definition (no-op if absent).
    Update {
        /// List kind.
        kind: Kind,
        /// Name or URI.
        name: Name,
        /// New definition text.
        def: Arc<str>,
    },
    /// Change a resource's content (not its list membership).
    SetContent {
        /// Resource URI.
        uri: Name,
        /// New content.
        text: Arc<str>,
    },
}

impl Op {
    /// Shorthand for a public `Add`.
    pub fn add(kind: Kind, name: &str, def: &str) -> Op {
        Op::Add {
            kind,
            name: name.into(),
            def: def.into(),
            scope: Scope::Public,
        }
    }

    /// Shorthand for `Remove`.
    pub fn remove(kind: Kind, name: &str) -> Op {
        Op::Remove {
            kind,
            name: name.into(),
        }
    }

    /// Shorthand for `Update`.
    pub fn update(kind: Kind, name: &str, def: &str) -> Op {
        Op::Update {
            kind,
            name: name.into(),
            def: def.into(),
        }
    }

    /// The list kind whose membership or definitions this op can change (None for content).
    pub fn kind(&self) -> Option<Kind> {
        match self {
            Op::Add { kind, .. } | Op::Remove { kind, .. } | Op::Update { kind, .. } => Some(*kind),
            Op::SetContent { .. } => None,
        }
    }
}

impl fmt::Display for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Op::Add {
                kind,
                name,
                def,
                scope,
            } => {
                write!(f, "add {kind} {name}={def}")?;
                if let Scope::Only(a) = scope {
                    write!(f, " (only {a})")?;
                }
                Ok(())
            }
            Op::Remove { kind, name } => write!(f, "remove {kind} {name}"),
            Op::Update { kind, name, def } => write!(f, "update {kind} {name}={def}"),
            Op::SetContent { uri, text } => write!(f, "set content {uri}={text}"),
        }
    }
}

/// A set of ops an administrator wants applied together.
pub type Batch = Arc<[Op]>;

/// Definition and visibility of one catalog entry.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Entry {
    /// Definition text.
    pub def: Arc<str>,
    /// Visibility.
    pub scope: Scope,
}

/// A server's whole catalog at one version: every kind, every scope, plus resource contents.
/// Ordered maps give every list a deterministic order (by name). In JSON it is the list of
/// `add` (and `set_content`) ops that builds it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(into = "Vec<Op>", from = "Vec<Op>")]
pub struct Catalog {
    /// Items by (kind, name).
    pub items: BTreeMap<(Kind, Name), Entry>,
    /// Resource content by URI (present only for resources whose content was set).
    pub contents: BTreeMap<Name, Arc<str>>,
}

impl From<Catalog> for Vec<Op> {
    fn from(c: Catalog) -> Vec<Op> {
        c.to_ops()
    }
}

impl From<Vec<Op>> for Catalog {
    fn from(ops: Vec<Op>) -> Catalog {
        Catalog::from_ops(&ops)
    }
}

impl Catalog {
    /// The ops that build this catalog from an empty one.
    pub fn to_ops(&self) -> Vec<Op> {
        let items = self.items.iter().map(|((kind, name), e)| Op::Add {
            kind: *kind,
            name: name.clone(),
            def: e.def.clone(),
            scope: e.scope,
        });
        let contents = self.contents.iter().map(|(uri, text)| Op::SetContent {
            uri: uri.clone(),
            text: text.clone(),
        });
        items.chain(contents).collect()
    }

    /// A catalog holding the result of applying `ops` to an empty one.
    pub fn from_ops(ops: &[Op]) -> Self {
        let mut c = Catalog::default();
        for op in ops {
            c.apply(op);
        }
        c
    }

    /// Applies one op. Returns whether the list of some kind changed (content changes return
    /// false: they are not list changes).
    pub fn apply(&mut self, op: &Op) -> bool {
        match op {
            Op::Add {
                kind,
                name,
                def,
                scope,
            } => {
                let entry = Entry {
                    def: def.clone(),
                    scope: *scope,
                };
                self.items.insert((*kind, name.clone()), entry.clone()) != Some(entry)
            }
            Op::Remove { kind, name } => self.items.remove(&(*kind, name.clone())).is_some(),
            Op::Update { kind, name, def } => match self.items.get_mut(&(*kind, name.clone())) {
                Some(e) if e.def != *def => {
                    e.def = def.clone();
                    true
                }
                _ => false,
            },
            Op::SetContent { uri, text } => {
                self.contents.insert(uri.clone(), text.clone());
                false
            }
        }
    }

    /// The list a request of `kind` made under `auth` sees, in deterministic order.
    pub fn visible(&self, kind: Kind, auth: AuthCtx) -> Vec<Item> {
        self.items
            .range((kind, Name::from(""))..)
            .take_while(|((k, _), _)| *k == kind)
            .filter(|(_, e)| e.scope.visible_to(auth))
            .map(|((_, name), e)| Item {
                name: name.clone(),
                def: e.def.clone(),
                scope: e.scope,
            })
            .collect()
    }

    /// Whether the list of `kind` differs between authorization contexts.
    pub fn varies_by_auth(&self, kind: Kind) -> bool {
        self.items
            .iter()
            .any(|((k, _), e)| *k == kind && e.scope != Scope::Public)
    }

    /// Looks up one entry.
    pub fn get(&self, kind: Kind, name: &str) -> Option<&Entry> {
        self.items.get(&(kind, Name::from(name)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_annotation_declares_a_tool_read_only() {
        assert!(declares_read_only(
            r#"{"annotations":{"readOnlyHint":true},"name":"r"}"#
        ));
        for def in [
            "a1",
            r#"{"annotations":{"readOnlyHint":false}}"#,
            r#"{"annotations":{"destructiveHint":true}}"#,
            // The hint's name inside a schema or a description declares nothing.
            r#"{"inputSchema":{"readOnlyHint":true},"name":"w"}"#,
            r#"{"description":"{\"annotations\":{\"readOnlyHint\":true}}"}"#,
            r#"{"annotations":{"readOnlyHint":true}"#,
        ] {
            assert!(!declares_read_only(def), "{def}");
        }
    }

    #[test]
    fn digest_ignores_order_but_not_definitions() {
        let a = Item::new("a", "1");
        let b = Item::new("b", "1");
        assert_eq!(
            Digest::of(&[a.clone(), b.clone()]),
            Digest::of(&[b.clone(), a.clone()])
        );
        assert_ne!(
            Digest::of(std::slice::from_ref(&a)),
            Digest::of(&[Item::new("a", "2")])
        );
        assert_ne!(
            Digest::of(std::slice::from_ref(&a)),
            Digest::of(&[a.clone(), a])
        );
        assert_ne!(Digest::of(&[]), Digest::of(&[b]));
    }

    #[test]
    fn visible_filters_kind_and_scope_in_name_order() {
        let c = Catalog::from_ops(&[
            Op::add(Kind::Tools, "b", "b1"),
            Op::add(Kind::Tools, "a", "a1"),
            Op::add(Kind::Prompts, "p", "p1"),
            Op::Add {
                kind: Kind::Tools,
                name: "secret".into(),
                def: "s1".into(),
                scope: Scope::Only(AuthCtx(1)),
            },
        ]);
        let names = |auth| {
            c.visible(Kind::Tools, auth)
                .into_iter()
                .map(|i| i.name.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(names(AuthCtx(0)), ["a", "b"]);
        assert_eq!(names(AuthCtx(1)), ["a", "b", "secret"]);
        assert!(c.varies_by_auth(Kind::Tools));
        assert!(!c.varies_by_auth(Kind::Prompts));
    }

    #[test]
    fn apply_reports_list_changes_only() {
        let mut c = Catalog::default();
        assert!(c.apply(&Op::add(Kind::Tools, "a", "1")));
        assert!(!c.apply(&Op::add(Kind::Tools, "a", "1")));
        assert!(c.apply(&Op::update(Kind::Tools, "a", "2")));
        assert!(!c.apply(&Op::update(Kind::Tools, "zz", "2")));
        assert!(!c.apply(&Op::SetContent {
            uri: "file:///r".into(),
            text: "x".into()
        }));
        assert!(c.apply(&Op::remove(Kind::Tools, "a")));
        assert!(!c.apply(&Op::remove(Kind::Tools, "a")));
    }

    #[test]
    fn catalogs_round_trip_through_json() {
        let c = Catalog::from_ops(&[
            Op::add(Kind::Tools, "a", "a1"),
            Op::Add {
                kind: Kind::Prompts,
                name: "p".into(),
                def: "p1".into(),
                scope: Scope::Only(AuthCtx(2)),
            },
            Op::SetContent {
                uri: "file:///r".into(),
                text: "hello".into(),
            },
        ]);
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Catalog>(&json).unwrap(), c);
    }

    #[test]
    fn names_round_trip() {
        for k in Kind::ALL {
            assert_eq!(k.as_str().parse::<Kind>().unwrap(), k);
        }
        for e in Era::ALL {
            assert_eq!(e.as_str().parse::<Era>().unwrap(), e);
        }
        assert!("widgets".parse::<Kind>().is_err());
    }
}
