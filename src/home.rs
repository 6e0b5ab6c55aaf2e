//! Where the running `listsync` finds the files it needs besides itself — the adapters'
//! tree (`harness/adapters/`: manifests, `provision.sh`, the SDK adapters' sources and lockfiles,
//! each built-in adapter's expected failures), the trace corpus (`traces/`) and the conformance
//! suite's pin (`harness/conformance-suite/`) — and where it provisions things.
//!
//! Inside a listsync source tree (found from the current directory upwards), the tree's own
//! files are used and provisioned adapters go to its `.cache/`. Anywhere else (an installed
//! binary), the copies embedded in the binary at build time are unpacked on first use into the
//! cache directory — `--cache-dir DIR`, else `$XDG_CACHE_HOME/listsync`, else
//! `~/.cache/listsync` — under `tree-<hash of their contents>/`, and adapters are provisioned into
//! its `adapters/`. `LISTSYNC_CACHE` still names the adapters' cache wherever it is set. Nothing
//! here finds the source tree through a path fixed at build time.

use anyhow::{Context, Result, bail};
use include_dir::{Dir, DirEntry, include_dir};
use listsync_harness::adapters::Paths;
use std::hash::Hasher as _;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The files embedded at build time, each at its path relative to the tree's root.
static ADAPTERS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/harness/adapters");
static CORPUS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/traces");
static SUITE_PIN: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/harness/conformance-suite");
static HOSTS: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/harness/hosts");

/// (root-relative directory, its embedded copy).
fn embedded() -> [(&'static str, &'static Dir<'static>); 4] {
    [
        ("harness/adapters", &ADAPTERS),
        ("traces", &CORPUS),
        ("harness/conformance-suite", &SUITE_PIN),
        ("harness/hosts", &HOSTS),
    ]
}

/// `--cache-dir`, as given on the command line (set once by `main`).
static CACHE_DIR: OnceLock<Option<PathBuf>> = OnceLock::new();

/// Records `--cache-dir` (made absolute: adapters' provisioning runs in other directories).
pub fn set_cache_dir(dir: Option<PathBuf>) {
    let dir = dir.map(|d| std::path::absolute(&d).unwrap_or(d));
    let _ = CACHE_DIR.set(dir);
}

fn cache_dir_flag() -> Option<PathBuf> {
    CACHE_DIR.get().cloned().flatten()
}

/// Where the files come from, and where provisioned things go.
#[derive(Clone, Debug)]
pub struct Home {
    /// The tree's root: the source tree, or the unpacked copy.
    pub tree: PathBuf,
    /// Whether `tree` is a source tree found from the current directory.
    pub source: bool,
    /// Provisioned adapters (None: `provision.sh`'s default, the source tree's `.cache/adapters`).
    pub adapter_cache: Option<PathBuf>,
    /// The conformance suite's runner installation.
    pub suite_cache: PathBuf,
}

/// The cache directory outside a source tree: `--cache-dir`, `$XDG_CACHE_HOME/listsync`,
/// `~/.cache/listsync`.
fn cache_root() -> Result<PathBuf> {
    if let Some(d) = cache_dir_flag() {
        return Ok(d);
    }
    let absolute = |v: std::ffi::OsString| Some(PathBuf::from(v)).filter(|p| p.is_absolute());
    if let Some(x) = std::env::var_os("XDG_CACHE_HOME").and_then(absolute) {
        return Ok(x.join("listsync"));
    }
    if let Some(h) = std::env::var_os("HOME").and_then(absolute) {
        return Ok(h.join(".cache/listsync"));
    }
    bail!("no cache directory: set HOME or XDG_CACHE_HOME, or give --cache-dir DIR")
}

/// Finds (or unpacks) the tree once per process.
pub fn home() -> Result<&'static Home> {
    static HOME: OnceLock<std::result::Result<Home, String>> = OnceLock::new();
    HOME.get_or_init(|| locate().map_err(|e| format!("{e:#}")))
        .as_ref()
        .map_err(|e| anyhow::anyhow!("{e}"))
}

fn locate() -> Result<Home> {
    let env_cache = std::env::var_os("LISTSYNC_CACHE").map(PathBuf::from);
    if let Some(tree) = Paths::source_tree() {
        let flag = cache_dir_flag();
        return Ok(Home {
            adapter_cache: env_cache.or_else(|| flag.as_ref().map(|d| d.join("adapters"))),
            suite_cache: flag.map_or_else(
                || tree.join(".cache/conformance-suite"),
                |d| d.join("conformance-suite"),
            ),
            tree,
            source: true,
        });
    }
    let root = cache_root()?;
    let tree = unpack(&root)?;
    Ok(Home {
        adapter_cache: Some(env_cache.unwrap_or_else(|| root.join("adapters"))),
        suite_cache: root.join("conformance-suite"),
        tree,
        source: false,
    })
}

/// A hash of every embedded file (path and bytes): the name of its unpacked copy, so that
/// another build's files never mix with this one's.
fn content_hash() -> String {
    // FNV-1a: stable across builds and platforms (std's hasher is not promised to be).
    struct Fnv(u64);
    impl std::hash::Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for b in bytes {
                self.0 = (self.0 ^ u64::from(*b)).wrapping_mul(0x100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    for (root, dir) in embedded() {
        for f in files(dir) {
            h.write(root.as_bytes());
            h.write(f.path().to_string_lossy().as_bytes());
            h.write(&[0]);
            h.write(&(f.contents().len() as u64).to_le_bytes());
            h.write(f.contents());
        }
    }
    format!("{:016x}", h.finish())
}

/// Every file under `dir`, depth first.
fn files(dir: &'static Dir<'static>) -> Vec<&'static include_dir::File<'static>> {
    let mut out = Vec::new();
    for e in dir.entries() {
        match e {
            DirEntry::Dir(d) => out.extend(files(d)),
            DirEntry::File(f) => out.push(f),
        }
    }
    out
}

/// Unpacks the embedded files into `<root>/tree-<hash>/` unless they are there, with one line
/// on stderr when it does; a concurrent unpacking of the same build is harmless (each writes
/// its own directory and renames it into place; the first rename wins).
fn unpack(root: &Path) -> Result<PathBuf> {
    let tree = root.join(format!("tree-{}", content_hash()));
    if tree.join(".complete").is_file() {
        return Ok(tree);
    }
    eprintln!(
        "listsync: first use of this build: unpacking its adapters, trace corpus and conformance-suite pin into {}",
        tree.display()
    );
    std::fs::create_dir_all(root).with_context(|| format!("creating {}", root.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".tree-unpacking-")
        .tempdir_in(root)
        .with_context(|| format!("creating a directory in {}", root.display()))?;
    for (rel, dir) in embedded() {
        for f in files(dir) {
            let to = staging.path().join(rel).join(f.path());
            if let Some(parent) = to.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("creating {}", parent.display()))?;
            }
            std::fs::write(&to, f.contents())
                .with_context(|| format!("writing {}", to.display()))?;
        }
    }
    std::fs::write(staging.path().join(".complete"), "")?;
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &tree) {
        let _ = std::fs::remove_dir_all(&staged);
        if !tree.join(".complete").is_file() {
            return Err(e)
                .with_context(|| format!("moving the unpacked files to {}", tree.display()));
        }
    }
    Ok(tree)
}

/// The harness's paths for the executable `listsync`: the tree, and the adapters' cache.
pub fn paths(listsync: PathBuf) -> Result<Paths> {
    let h = home()?;
    Ok(Paths {
        listsync,
        repo: h.tree.clone(),
        cache: h.adapter_cache.clone(),
    })
}

/// A trace named on the command line: the file if there is one at that path, else a corpus
/// trace by name (`naive.json`, or `naive`).
pub fn trace_file(arg: &Path) -> Result<PathBuf> {
    if arg.exists() || arg.components().count() != 1 {
        return Ok(arg.to_path_buf());
    }
    let corpus = home()?.tree.join("traces");
    let named = corpus.join(arg);
    if named.is_file() {
        return Ok(named);
    }
    let with_ext = corpus.join(format!("{}.json", arg.display()));
    if with_ext.is_file() {
        return Ok(with_ext);
    }
    bail!(
        "{}: no such file, nor a trace of that name in the corpus ({})",
        arg.display(),
        corpus.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_tree_holds_the_adapters_corpus_and_suite_pin() {
        for (rel, file) in [
            ("harness/adapters", "provision.sh"),
            ("harness/adapters", "example/adapter.toml"),
            ("harness/adapters", "python/expected-failures.toml"),
            ("traces", "naive.json"),
            ("harness/conformance-suite", "package-lock.json"),
        ] {
            let dir = embedded().into_iter().find(|(r, _)| *r == rel).unwrap().1;
            assert!(dir.get_file(file).is_some(), "{rel}/{file} is not embedded");
        }
        assert_eq!(content_hash(), content_hash());
        assert_eq!(content_hash().len(), 16);
    }

    #[test]
    fn unpacking_writes_every_file_once_and_reuses_it() {
        let root = tempfile::tempdir().unwrap();
        let tree = unpack(root.path()).unwrap();
        let on_disk = std::fs::read(tree.join("traces/naive.json")).unwrap();
        assert_eq!(
            on_disk,
            CORPUS.get_file("naive.json").unwrap().contents(),
            "unpacked bytes are the embedded ones"
        );
        assert!(tree.join("harness/adapters/provision.sh").is_file());
        std::fs::write(tree.join("traces/marker"), "kept").unwrap();
        assert_eq!(unpack(root.path()).unwrap(), tree);
        assert!(tree.join("traces/marker").is_file(), "not unpacked again");
        let left: Vec<_> = std::fs::read_dir(root.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left.len(), 1, "no staging directory left: {left:?}");
    }
}
