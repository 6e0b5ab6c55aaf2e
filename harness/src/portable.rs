//! Machine-independent text for the reports the harness writes (message logs under
//! `reports/conformance/` and `reports/replay/`, `reports/conformance.json`): absolute paths of
//! the generating machine become placeholders, so that a regeneration on another machine gives
//! the same bytes where nothing changed.
//!
//! | path on this machine | written as |
//! |---|---|
//! | a pinned `listsync` executable (`…/.listsync-pinned-PID-N`, [`crate::pin`]) | `<pinned listsync>` |
//! | the adapter cache (`$LISTSYNC_CACHE`, default `<repo>/.cache/adapters`) | `<cache>` |
//! | the repository | `<repo>` |
//! | the `node` and `python3` found on PATH | `<node>`, `<python3>` |
//! | the temporary directory | `<tmp>` |
//! | the home directory | `~` |

use std::path::PathBuf;
use std::sync::OnceLock;

/// The placeholder of a pinned executable.
pub const PINNED: &str = "<pinned listsync>";
/// What marks a pinned executable's file name ([`crate::pin::PinnedExe`]).
const PIN_MARK: &str = ".listsync-pinned-";

/// `text` with this machine's paths replaced by placeholders.
pub fn portable(text: &str) -> String {
    static THIS: OnceLock<Machine> = OnceLock::new();
    THIS.get_or_init(Machine::this).apply(text)
}

/// The paths of one machine and their placeholders.
#[derive(Clone, Debug)]
pub struct Machine {
    /// (absolute path, placeholder), longest path first.
    subs: Vec<(String, String)>,
}

impl Machine {
    /// The paths of the running process's machine.
    pub fn this() -> Machine {
        let mut subs: Vec<(PathBuf, &str)> = Vec::new();
        let repos = repo_roots();
        match std::env::var_os("LISTSYNC_CACHE") {
            Some(c) => {
                let c = PathBuf::from(c);
                let c = if c.is_absolute() {
                    c
                } else {
                    std::env::current_dir().unwrap_or_default().join(c)
                };
                subs.push((c, "<cache>"));
            }
            None => subs.extend(repos.iter().map(|r| (r.join(".cache/adapters"), "<cache>"))),
        }
        subs.extend(repos.into_iter().map(|r| (r, "<repo>")));
        for (program, placeholder) in [
            ("node", "<node>"),
            ("python3", "<python3>"),
            ("java", "<java>"),
            ("go", "<go>"),
        ] {
            if let Some(p) = on_path(program) {
                subs.push((p, placeholder));
            }
        }
        subs.push((std::env::temp_dir(), "<tmp>"));
        if let Some(home) = std::env::var_os("HOME") {
            subs.push((PathBuf::from(home), "~"));
        }
        Machine::new(subs)
    }

    /// A machine with the given (path, placeholder) pairs; each path is also matched in its
    /// canonical form (symlinks resolved). Paths shorter than two components are ignored.
    pub fn new<'a>(pairs: impl IntoIterator<Item = (PathBuf, &'a str)>) -> Machine {
        let mut subs: Vec<(String, String)> = Vec::new();
        for (path, placeholder) in pairs {
            let canonical = std::fs::canonicalize(&path).ok();
            for p in std::iter::once(path).chain(canonical) {
                let s = p.to_string_lossy().trim_end_matches('/').to_string();
                if p.is_absolute() && s.len() > 1 && !subs.iter().any(|(have, _)| *have == s) {
                    subs.push((s, placeholder.to_string()));
                }
            }
        }
        subs.sort_by_key(|(path, _)| std::cmp::Reverse(path.len()));
        Machine { subs }
    }

    /// `text` with pinned executables and then each path (as a whole path prefix, never inside a
    /// longer name) replaced by its placeholder.
    pub fn apply(&self, text: &str) -> String {
        let mut out = replace_pinned(text);
        for (path, placeholder) in &self.subs {
            out = replace_prefix(&out, path, placeholder);
        }
        out
    }
}

/// A character that may stand in a path token (not a delimiter of the texts we write).
fn in_path(c: char) -> bool {
    !(c.is_whitespace() || "\"'`()[]{}<>,;=\\".contains(c))
}

/// A character that continues a file or directory name.
fn in_name(c: char) -> bool {
    c.is_alphanumeric() || "-_.+~".contains(c)
}

/// Every path token whose file name is a pinned executable's becomes [`PINNED`].
fn replace_pinned(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(PIN_MARK) {
        let start = rest[..at]
            .char_indices()
            .rev()
            .find(|(_, c)| !in_path(*c))
            .map_or(0, |(i, c)| i + c.len_utf8());
        let tail = &rest[at + PIN_MARK.len()..];
        let end = tail
            .find(|c: char| !(c.is_ascii_digit() || c == '-'))
            .unwrap_or(tail.len());
        out.push_str(&rest[..start]);
        out.push_str(PINNED);
        rest = &tail[end..];
    }
    out.push_str(rest);
    out
}

/// `path` replaced by `placeholder` wherever it stands as a whole path prefix: not preceded by a
/// name or a slash, and followed by the end, a slash or a delimiter.
fn replace_prefix(text: &str, path: &str, placeholder: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(path) {
        let before = rest[..at].chars().next_back();
        let after = rest[at + path.len()..].chars().next();
        let whole =
            before.is_none_or(|c| !(in_name(c) || c == '/')) && after.is_none_or(|c| !in_name(c));
        out.push_str(&rest[..at]);
        out.push_str(if whole { placeholder } else { path });
        rest = &rest[at + path.len()..];
    }
    out.push_str(rest);
    out
}

/// The repository roots this process may have written paths of: the source tree holding the
/// current directory, if any.
fn repo_roots() -> Vec<PathBuf> {
    crate::adapters::Paths::source_tree().into_iter().collect()
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine() -> Machine {
        Machine::new([
            (PathBuf::from("/work/main"), "<repo>"),
            (PathBuf::from("/work/main/.cache/fresh"), "<cache>"),
            (PathBuf::from("/usr/bin/node"), "<node>"),
            (PathBuf::from("/tmp"), "<tmp>"),
            (PathBuf::from("/root"), "~"),
        ])
    }

    #[test]
    fn machine_paths_become_placeholders() {
        let m = machine();
        let note = "server: reference — /tmp/.listsync-pinned-11657-0 serve --stdio; client: ts — \
                    /usr/bin/node /work/main/.cache/fresh/ts-v2/app/ts-v2/adapter.mjs";
        assert_eq!(
            m.apply(note),
            "server: reference — <pinned listsync> serve --stdio; client: ts — \
             <node> <cache>/ts-v2/app/ts-v2/adapter.mjs"
        );
        // A pin beside the executable, inside the repository, in a JSON string.
        assert_eq!(
            m.apply(r#"{"argv":["/work/main/target/release/.listsync-pinned-7-12","adapter"]}"#),
            r#"{"argv":["<pinned listsync>","adapter"]}"#
        );
        assert_eq!(
            m.apply(r#"  File "/root/.pyenv/lib/python3.11/asyncio/events.py", line 80"#),
            r#"  File "~/.pyenv/lib/python3.11/asyncio/events.py", line 80"#
        );
        assert_eq!(m.apply("/work/main"), "<repo>");
    }

    #[test]
    fn only_whole_path_prefixes_are_replaced() {
        let m = machine();
        for untouched in [
            "/work/mainline/x",
            "/var/tmp/x",
            "/usr/bin/nodejs",
            "/tmpfile",
            "no paths here",
        ] {
            assert_eq!(m.apply(untouched), untouched);
        }
    }
}
