//! A host plan (TOML): what the scripted model does at each of its turns — which tool it calls,
//! by role ("a tool that exists", "the tool just added", "the tool just removed") or that it ends
//! the turn with text — and where the server's list changes: between model turns (`before`:
//! committed when that turn's request reaches the model server, which answers `settle` later)
//! or inside the tool call of a turn (`during_call`: the server holds the call, commits, and
//! returns the result 200 ms later). Roles are resolved here, once, against the catalog the plan
//! itself tracks; the ops are `listsync change`'s shorthand (docs/test-your-client.md).

use serde::Deserialize;
use std::time::Duration;

/// What the model does at one turn, by role.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Role {
    /// Calls a tool the server has at that turn (the first of its catalog, as the plan tracks it).
    Existing,
    /// Calls the tool the latest change added.
    Added,
    /// Calls the tool the latest change removed.
    Removed,
    /// Ends the turn with text (no tool call).
    End,
}

impl Role {
    /// `existing`, `added`, `removed`, `end`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Existing => "existing",
            Role::Added => "added",
            Role::Removed => "removed",
            Role::End => "end",
        }
    }
}

/// One model turn as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TurnSpec {
    /// Ops committed when this turn's request arrives, before the model answers.
    #[serde(default)]
    pub before: Vec<String>,
    /// What the model does.
    pub call: Role,
    /// Ops committed while this turn's tool call runs at the server.
    #[serde(default)]
    pub during_call: Vec<String>,
}

/// A plan as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    description: String,
    /// The catalog at the start (ops); without it the server's demo catalog.
    #[serde(default)]
    initial: Option<Vec<String>>,
    /// Items per list page (0: one page).
    #[serde(default)]
    page_size: u16,
    /// How long the model waits after a `before` change before it answers.
    #[serde(default = "default_settle")]
    settle: String,
    /// The user's prompt.
    #[serde(default = "default_prompt")]
    prompt: String,
    turn: Vec<TurnSpec>,
}

fn default_settle() -> String {
    "500ms".into()
}

fn default_prompt() -> String {
    "Use the tools of the listsync server as you are told.".into()
}

/// One turn with its role resolved to a server tool name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Turn {
    /// 1-based.
    pub index: usize,
    /// Ops committed before the answer.
    pub before: Vec<String>,
    /// The role as written.
    pub role: Role,
    /// The server tool the model calls (`None` for `end`).
    pub tool: Option<String>,
    /// Ops committed while the call runs.
    pub during_call: Vec<String>,
}

/// A resolved plan.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Its name (the built-in's, or the file's stem).
    pub name: String,
    /// What it does.
    pub description: String,
    /// The initial catalog (ops), `None` for the demo catalog.
    pub initial: Option<Vec<String>>,
    /// Items per page.
    pub page_size: u16,
    /// Wait after a `before` change.
    pub settle: Duration,
    /// The prompt.
    pub prompt: String,
    /// The turns, roles resolved.
    pub turns: Vec<Turn>,
}

/// The built-in plans: name, TOML.
pub const BUILTIN: [(&str, &str); 3] = [
    (
        "between-turns",
        include_str!("../../hosts/plans/between-turns.toml"),
    ),
    ("in-call", include_str!("../../hosts/plans/in-call.toml")),
    ("paged", include_str!("../../hosts/plans/paged.toml")),
];

/// The demo catalog's tools, in order (`listsync serve` without `--initial`).
const DEMO_TOOLS: [&str; 3] = ["echo", "greet", "time"];

/// A tool op's effect on the tracked catalog: `add:tool:NAME...` or `remove:tool:NAME`.
fn tool_effect(op: &str) -> Option<(bool, String)> {
    let (verb, rest) = op.split_once(":tool:")?;
    let name = rest.split(['=', '@']).next()?.trim().to_owned();
    match verb {
        "add" => Some((true, name)),
        "remove" => Some((false, name)),
        _ => None,
    }
}

/// Parses a duration: `250ms`, `2s`, `1.5s`.
pub fn duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or((s, "s"), |i| s.split_at(i));
    let n: f64 = num
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 250ms, 2s)"))?;
    let secs = match unit {
        "ms" => n / 1000.0,
        "s" => n,
        _ => return Err(format!("{s:?}: unit must be ms or s")),
    };
    if !(0.0..=60.0).contains(&secs) {
        return Err(format!("{s:?}: at most 60 s"));
    }
    Ok(Duration::from_secs_f64(secs))
}

impl Plan {
    /// A built-in plan by name, or a plan file by path.
    pub fn load(name_or_path: &str) -> Result<Plan, String> {
        if let Some((name, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
            return Plan::parse(name, text);
        }
        let path = std::path::Path::new(name_or_path);
        if !path.exists() {
            let names: Vec<&str> = BUILTIN.iter().map(|(n, _)| *n).collect();
            return Err(format!(
                "{name_or_path}: no such plan file or built-in plan (built-in: {})",
                names.join(", ")
            ));
        }
        let text = crate::limited_file::read_text(path, 1 << 20)
            .map_err(|e| format!("{name_or_path}: {e}"))?;
        let stem = path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "plan".into());
        Plan::parse(&stem, &text).map_err(|e| format!("{name_or_path}: {e}"))
    }

    /// Parses and resolves a plan.
    pub fn parse(name: &str, text: &str) -> Result<Plan, String> {
        let f: PlanFile = toml::from_str(text).map_err(|e| e.to_string())?;
        if f.turn.is_empty() || f.turn.len() > 50 {
            return Err("a plan has 1 to 50 turns".into());
        }
        let mut catalog: Vec<String> = match &f.initial {
            Some(ops) => ops
                .iter()
                .filter_map(|o| tool_effect(o).filter(|(a, _)| *a).map(|(_, n)| n))
                .collect(),
            None => DEMO_TOOLS.iter().map(|s| (*s).to_owned()).collect(),
        };
        let mut added: Option<String> = None;
        let mut removed: Option<String> = None;
        let apply = |ops: &[String],
                     catalog: &mut Vec<String>,
                     added: &mut Option<String>,
                     removed: &mut Option<String>| {
            for op in ops {
                match tool_effect(op) {
                    Some((true, n)) => {
                        catalog.push(n.clone());
                        *added = Some(n);
                    }
                    Some((false, n)) => {
                        catalog.retain(|c| *c != n);
                        *removed = Some(n);
                    }
                    None => {}
                }
            }
        };
        let mut turns = Vec::new();
        let mut called: Vec<String> = Vec::new();
        for (i, t) in f.turn.iter().enumerate() {
            let index = i + 1;
            apply(&t.before, &mut catalog, &mut added, &mut removed);
            let tool = match t.call {
                Role::Existing => Some(catalog.first().cloned().ok_or_else(|| {
                    format!("turn {index}: `existing`, but the server has no tool then")
                })?),
                Role::Added => Some(added.clone().ok_or_else(|| {
                    format!("turn {index}: `added`, but no change before it added a tool")
                })?),
                Role::Removed => Some(removed.clone().ok_or_else(|| {
                    format!("turn {index}: `removed`, but no change before it removed a tool")
                })?),
                Role::End => None,
            };
            if !t.during_call.is_empty() {
                let Some(tool) = &tool else {
                    return Err(format!("turn {index}: `during_call` needs a tool call"));
                };
                // The server holds the next call of that tool from its start on.
                if called.contains(tool) {
                    return Err(format!(
                        "turn {index}: `during_call` on {tool}, which an earlier turn calls (the server would hold that call)"
                    ));
                }
            }
            if let Some(t) = &tool {
                called.push(t.clone());
            }
            apply(&t.during_call, &mut catalog, &mut added, &mut removed);
            turns.push(Turn {
                index,
                before: t.before.clone(),
                role: t.call,
                tool,
                during_call: t.during_call.clone(),
            });
        }
        Ok(Plan {
            name: name.to_owned(),
            description: f.description.trim().to_owned(),
            initial: f.initial,
            page_size: f.page_size,
            settle: duration(&f.settle)?,
            prompt: f.prompt,
            turns,
        })
    }

    /// The server script (`listsync serve --script`) of the plan's `during_call` changes, if any.
    pub fn call_script(&self) -> Option<String> {
        let steps: Vec<String> = self
            .turns
            .iter()
            .filter(|t| !t.during_call.is_empty())
            .filter_map(|t| {
                let tool = t.tool.as_ref()?;
                let ops: Vec<String> = t
                    .during_call
                    .iter()
                    .map(|o| serde_json::Value::String(o.clone()).to_string())
                    .collect();
                Some(format!(
                    "[[step]]\nname = \"turn {}: inside the call of {tool}\"\nduring_call = {}\ntimeout = \"10m\"\nops = [{}]\nrelease = \"200ms\"\n",
                    t.index,
                    serde_json::Value::String(tool.clone()),
                    ops.join(", ")
                ))
            })
            .collect();
        (!steps.is_empty()).then(|| {
            format!(
                "description = \"changes inside tool calls (host plan {})\"\nstart = \"now\"\n\n{}",
                self.name,
                steps.join("\n")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_plans_resolve() {
        for (name, text) in BUILTIN {
            let p = Plan::parse(name, text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(!p.turns.is_empty());
        }
    }

    #[test]
    fn roles_follow_the_changes() {
        let p = Plan::parse(
            "t",
            r#"
description = "x"
[[turn]]
call = "existing"
[[turn]]
before = ["add:tool:weather=Tells the weather"]
call = "added"
[[turn]]
before = ["remove:tool:echo"]
call = "removed"
[[turn]]
call = "existing"
"#,
        )
        .unwrap();
        let tools: Vec<_> = p.turns.iter().map(|t| t.tool.clone()).collect();
        assert_eq!(
            tools,
            [
                Some("echo".into()),
                Some("weather".into()),
                Some("echo".into()),
                Some("greet".into())
            ]
        );
        assert!(p.call_script().is_none());
    }

    #[test]
    fn a_role_without_its_change_is_refused() {
        let e = Plan::parse("t", "description = \"x\"\n[[turn]]\ncall = \"added\"\n").unwrap_err();
        assert!(e.contains("no change before it added"), "{e}");
        let e = Plan::parse(
            "t",
            "description = \"x\"\n[[turn]]\ncall = \"existing\"\n[[turn]]\ncall = \"existing\"\nduring_call = [\"remove:tool:echo\"]\n",
        )
        .unwrap_err();
        assert!(e.contains("earlier turn calls"), "{e}");
    }

    #[test]
    fn in_call_changes_become_a_server_script() {
        let p = Plan::parse(
            "t",
            "description = \"x\"\n[[turn]]\ncall = \"existing\"\nduring_call = [\"remove:tool:echo\"]\n[[turn]]\ncall = \"removed\"\n",
        )
        .unwrap();
        let s = p.call_script().unwrap();
        assert!(s.contains("during_call = \"echo\""), "{s}");
        assert!(s.contains("ops = [\"remove:tool:echo\"]"), "{s}");
        assert_eq!(p.turns[1].tool.as_deref(), Some("echo"));
    }
}
