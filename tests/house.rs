//! House rules read off the source tree: one public type name for one thing across the
//! workspace's crates.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Names deliberately defined `pub` in more than one crate: (name, its crates sorted as the
/// failure message lists them, why). Keep it short; an entry that matches no duplicate fails the
/// test too.
const ALLOWED: &[(&str, &[&str], &str)] = &[];

/// The workspace's members, read from the one-line `members = [...]` of Cargo.toml, and the
/// CLI itself (the root package, `.`).
fn crates(root: &Path) -> Vec<String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut members: Vec<String> = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("one-line `members = [...]` in Cargo.toml")
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"').to_string())
        .filter(|m| !m.is_empty())
        .collect();
    members.push(".".to_string());
    members
}

/// The name of the type, trait or alias a line defines `pub` (not `pub(crate)`, not a
/// re-export), if it does.
fn pub_type_name(line: &str) -> Option<&str> {
    let rest = line.trim_start().strip_prefix("pub ")?.trim_start();
    let rest = ["struct ", "enum ", "trait ", "type "]
        .iter()
        .find_map(|k| rest.strip_prefix(k))?
        .trim_start();
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    (end > 0).then(|| &rest[..end])
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
    out
}

/// Public type names of every crate's `src/`: name → crate → where.
fn definitions(root: &Path) -> BTreeMap<String, BTreeMap<String, Vec<String>>> {
    let mut defs: BTreeMap<String, BTreeMap<String, Vec<String>>> = BTreeMap::new();
    for krate in crates(root) {
        let src = root.join(&krate).join("src");
        assert!(src.is_dir(), "{}: no src/", src.display());
        for file in rust_files(&src) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (i, line) in text.lines().enumerate() {
                if let Some(name) = pub_type_name(line) {
                    let at = file.strip_prefix(root).unwrap().display().to_string();
                    defs.entry(name.to_string())
                        .or_default()
                        .entry(krate.clone())
                        .or_default()
                        .push(format!("{at}:{}", i + 1));
                }
            }
        }
    }
    defs
}

#[test]
fn recognizes_public_type_definitions_only() {
    assert_eq!(pub_type_name("pub struct Walk {"), Some("Walk"));
    assert_eq!(pub_type_name("    pub enum Fate<'a> {"), Some("Fate"));
    assert_eq!(
        pub_type_name("pub trait Recorder: Send {"),
        Some("Recorder")
    );
    assert_eq!(
        pub_type_name("pub type Body = BoxBody<Bytes, E>;"),
        Some("Body")
    );
    assert_eq!(pub_type_name("pub(crate) struct Walk {"), None);
    assert_eq!(pub_type_name("struct Walk {"), None);
    assert_eq!(pub_type_name("pub use crate::log::Entry;"), None);
    assert_eq!(pub_type_name("pub fn entry() {}"), None);
    assert_eq!(pub_type_name("// pub struct Walk {"), None);
}

#[test]
fn no_public_type_name_is_defined_in_two_crates() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let defs = definitions(root);
    assert!(
        defs.get("CatalogClient")
            .is_some_and(|d| d.contains_key("core")),
        "the scan misses core's CatalogClient: it reads nothing"
    );
    let mut problems = Vec::new();
    let mut allowed_used = BTreeSet::new();
    for (name, by_crate) in &defs {
        if by_crate.len() < 2 {
            continue;
        }
        let crates: Vec<&str> = by_crate.keys().map(String::as_str).collect();
        if ALLOWED
            .iter()
            .any(|(n, cs, _)| n == name && cs.iter().copied().eq(crates.iter().copied()))
        {
            allowed_used.insert(name.as_str());
            continue;
        }
        let places: Vec<String> = by_crate.values().flatten().cloned().collect();
        problems.push(format!(
            "{name} in {}: {}",
            crates.join(", "),
            places.join(", ")
        ));
    }
    for (name, crates, _) in ALLOWED {
        if !allowed_used.contains(name) {
            problems.push(format!(
                "allow-list entry {name} {crates:?} matches no duplicate: remove it"
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} public type names defined in more than one crate (rename one: one name for one \
         thing):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
