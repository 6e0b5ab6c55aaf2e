//! Named catalogs for `listsync serve`: the demo catalog it serves when given no other
//! (`--fixtures demo`, the default), and the catalog and tool side effects the official MCP
//! conformance suite expects of a server under test (`--fixtures conformance`).
//!
//! The suite's list, subscription and caching scenarios look for a few well-known items (a
//! `test_simple_text` tool, a `test://watched-resource` to subscribe to, ...) and drive list
//! changes by calling two trigger tools: `test_trigger_tool_change` and
//! `test_trigger_prompt_change`. Here a trigger call commits one batch through the registry —
//! the same path as an administrator's batch — that toggles a dynamic item, so the suite sees a
//! real version bump and the one coalesced `list_changed` that follows the commit.

use crate::items;
use crate::server::CallEffects;
use listsync_core::vocab::{Catalog, Kind, Op, Scope};
use std::sync::Arc;

/// Tool whose call adds or removes [`DYNAMIC_TOOL`].
pub const TRIGGER_TOOL_CHANGE: &str = "test_trigger_tool_change";
/// Tool whose call adds or removes [`DYNAMIC_PROMPT`].
pub const TRIGGER_PROMPT_CHANGE: &str = "test_trigger_prompt_change";
/// The tool [`TRIGGER_TOOL_CHANGE`] toggles.
pub const DYNAMIC_TOOL: &str = "test_dynamic_tool";
/// The prompt [`TRIGGER_PROMPT_CHANGE`] toggles.
pub const DYNAMIC_PROMPT: &str = "test_dynamic_prompt";

/// Named fixture sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixtures {
    /// A small catalog to try the server and `listsync watch` with: three tools, a prompt, a
    /// resource (with content) and a resource template.
    Demo,
    /// The official conformance suite's items and trigger tools.
    Conformance,
}

impl std::str::FromStr for Fixtures {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "demo" => Ok(Fixtures::Demo),
            "conformance" => Ok(Fixtures::Conformance),
            other => Err(format!(
                "unknown fixture set '{other}' (known: demo, conformance)"
            )),
        }
    }
}

impl Fixtures {
    /// The initial catalog (administrator ops) of this fixture set.
    pub fn catalog(self) -> Vec<Op> {
        let add = |kind: Kind, name: &str, description: &str| Op::Add {
            kind,
            name: name.into(),
            def: items::def_of(kind, name, description, Scope::Public),
            scope: Scope::Public,
        };
        if self == Fixtures::Demo {
            return vec![
                add(Kind::Tools, "echo", "Returns its description"),
                add(Kind::Tools, "greet", "Says hello"),
                add(Kind::Tools, "time", "Tells the time of the catalog"),
                add(Kind::Prompts, "summarize", "Summarize a document"),
                add(Kind::Resources, "demo://readme", "What this server is"),
                Op::SetContent {
                    uri: "demo://readme".into(),
                    text: "The listsync demo catalog: change it through the control channel \
                           (--control) and watch clients follow."
                        .into(),
                },
                add(Kind::ResourceTemplates, "demo://notes/{id}", "A note by id"),
            ];
        }
        vec![
            add(Kind::Tools, "test_simple_text", "Returns a short text"),
            add(
                Kind::Tools,
                TRIGGER_TOOL_CHANGE,
                "Adds or removes test_dynamic_tool (one committed batch)",
            ),
            add(
                Kind::Tools,
                TRIGGER_PROMPT_CHANGE,
                "Adds or removes test_dynamic_prompt (one committed batch)",
            ),
            add(
                Kind::Prompts,
                "test_simple_prompt",
                "A prompt without arguments",
            ),
            add(
                Kind::Resources,
                "test://static-text",
                "A static text resource",
            ),
            add(
                Kind::Resources,
                "test://watched-resource",
                "A resource to subscribe to",
            ),
            add(
                Kind::ResourceTemplates,
                "test://template/{id}/data",
                "A resource template",
            ),
        ]
    }

    /// The side effects of this set's trigger tools.
    pub fn effects(self) -> CallEffects {
        CallEffects::new(Arc::new(trigger))
    }
}

/// The batch a successful call of `tool` commits, if any: the trigger tools toggle their item.
fn trigger(tool: &str, catalog: &Catalog) -> Option<Vec<Op>> {
    let (kind, name, description) = match tool {
        TRIGGER_TOOL_CHANGE => (
            Kind::Tools,
            DYNAMIC_TOOL,
            "Added by test_trigger_tool_change",
        ),
        TRIGGER_PROMPT_CHANGE => (
            Kind::Prompts,
            DYNAMIC_PROMPT,
            "Added by test_trigger_prompt_change",
        ),
        _ => return None,
    };
    let present = catalog.get(kind, name).is_some();
    Some(vec![if present {
        Op::Remove {
            kind,
            name: name.into(),
        }
    } else {
        Op::Add {
            kind,
            name: name.into(),
            def: items::def_of(kind, name, description, Scope::Public),
            scope: Scope::Public,
        }
    }])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_catalog_has_a_few_of_each_kind() {
        let mut catalog = Catalog::default();
        for op in Fixtures::Demo.catalog() {
            catalog.apply(&op);
        }
        for (kind, want) in [
            (Kind::Tools, 3),
            (Kind::Prompts, 1),
            (Kind::Resources, 1),
            (Kind::ResourceTemplates, 1),
        ] {
            assert_eq!(
                catalog
                    .visible(kind, listsync_core::vocab::AuthCtx(0))
                    .len(),
                want,
                "{kind}"
            );
        }
    }

    #[test]
    fn a_trigger_toggles_its_item_and_other_tools_do_nothing() {
        let mut catalog = Catalog::default();
        for op in Fixtures::Conformance.catalog() {
            catalog.apply(&op);
        }
        let add = trigger(TRIGGER_TOOL_CHANGE, &catalog).unwrap();
        assert!(matches!(&add[..], [Op::Add { name, .. }] if &**name == DYNAMIC_TOOL));
        catalog.apply(&add[0]);
        let remove = trigger(TRIGGER_TOOL_CHANGE, &catalog).unwrap();
        assert!(matches!(&remove[..], [Op::Remove { name, .. }] if &**name == DYNAMIC_TOOL));
        let prompt = trigger(TRIGGER_PROMPT_CHANGE, &catalog).unwrap();
        assert!(matches!(
            &prompt[..],
            [Op::Add {
                kind: Kind::Prompts,
                ..
            }]
        ));
        assert!(trigger("test_simple_text", &catalog).is_none());
    }
}
