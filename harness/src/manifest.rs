//! Adapter manifests: everything the harness knows about one implementation, in a TOML file
//! (`docs/writing-an-adapter.md` describes the format). The built-in implementations are
//! described by the committed manifests `harness/adapters/*/adapter.toml`, compiled into the
//! binary and parsed by the same [`Manifest::parse`] that reads a user's own file
//! (`--adapter FILE`); nothing else in the harness is per implementation.
//!
//! ```toml
//! name = "my-client"
//! description = "what it is"
//! version = "1.2.3"                    # or version_command = ["my-client", "--version"]
//! roles = ["client"]
//! eras = ["2025-11-25"]
//! provision = ["./install.sh"]         # optional: run once per process, idempotent
//! [launch]
//! client = ["python3", "{dir}/client.py"]
//! [env]
//! MY_FLAG = "1"
//! [client]
//! variants = ["default", { name = "fast", variant = "default", env = { FAST = "1" } }]
//! ```

use crate::adapters::Role;
use listsync_core::vocab::{Era, Kind, KindSet};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

/// Largest manifest file read.
const MAX_MANIFEST: u64 = 1 << 20;

/// The built-in manifests: (directory under `harness/adapters/`, text), in report order.
const BUILT_IN: &[(&str, &str)] = &[
    (
        "reference",
        include_str!("../adapters/reference/adapter.toml"),
    ),
    ("rmcp", include_str!("../adapters/rmcp/adapter.toml")),
    ("ts-v1", include_str!("../adapters/ts-v1/adapter.toml")),
    ("ts-v2", include_str!("../adapters/ts-v2/adapter.toml")),
    ("python", include_str!("../adapters/python/adapter.toml")),
    ("go-sdk", include_str!("../adapters/go-sdk/adapter.toml")),
    ("mcp-go", include_str!("../adapters/mcp-go/adapter.toml")),
    ("java", include_str!("../adapters/java/adapter.toml")),
    ("fastmcp", include_str!("../adapters/fastmcp/adapter.toml")),
    (
        "server-everything",
        include_str!("../adapters/server-everything/adapter.toml"),
    ),
];

/// One variant of a role: a name for rows and the command line, the `LISTSYNC_VARIANT` value
/// the adapter gets, and environment of its own.
#[derive(Clone, Debug, Deserialize)]
#[serde(untagged)]
enum VariantEntry {
    /// `"name"`: `LISTSYNC_VARIANT=name`.
    Name(String),
    /// `{ name, variant, env }`.
    Full {
        name: String,
        #[serde(default)]
        variant: Option<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
    },
}

/// A variant, resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variant {
    /// Name in rows and on the command line (`listchanged-debounce0`).
    pub name: String,
    /// What the adapter gets as `LISTSYNC_VARIANT` (`listchanged`).
    pub variant: String,
    /// Extra environment (`LISTSYNC_DEBOUNCE_MS=0`).
    pub env: BTreeMap<String, String>,
}

/// What a manifest says about one role.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RoleEntry {
    #[serde(default)]
    variants: Vec<VariantEntry>,
    #[serde(default)]
    scenarios: Vec<String>,
    /// Server only: the kinds whose lists `mutate` can change (default: every kind).
    #[serde(default)]
    mutates: Option<Vec<Kind>>,
}

/// `[launch]`: argv per role.
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LaunchEntry {
    server: Option<Vec<String>>,
    client: Option<Vec<String>>,
}

/// Which corpus traces an adapter's rows replay.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum Corpus {
    /// `"all"` (the default): every trace about the row's role and era.
    All(String),
    /// Only these file names. For SDKs whose patterns leave most traces at their first step
    /// (they walk every page, list before they listen, do not notify where the trace's server
    /// does), the replays that can only diverge cost seconds each and are left out; the
    /// generated scenarios cover those races for every row.
    Only(Vec<String>),
}

impl Default for Corpus {
    fn default() -> Self {
        Corpus::All("all".into())
    }
}

impl Corpus {
    /// Whether a trace file is replayed.
    pub fn includes(&self, file: &str) -> bool {
        match self {
            Corpus::All(_) => true,
            Corpus::Only(files) => files.iter().any(|f| f == file),
        }
    }
}

/// The file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    name: String,
    #[serde(default)]
    description: String,
    version: Option<String>,
    version_command: Option<Vec<String>>,
    roles: Vec<Role>,
    eras: Vec<Era>,
    #[serde(default)]
    kinds: Option<Vec<Kind>>,
    #[serde(default)]
    launch: LaunchEntry,
    #[serde(default)]
    env: BTreeMap<String, String>,
    provision: Option<Vec<String>>,
    #[serde(default)]
    needs: Vec<String>,
    #[serde(default)]
    install: String,
    #[serde(default)]
    corpus: Corpus,
    #[serde(default)]
    runs_core: bool,
    #[serde(default)]
    server: RoleEntry,
    #[serde(default)]
    client: RoleEntry,
}

/// Where a manifest came from: `{dir}` in its argv is this directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A committed manifest, `harness/adapters/DIR/adapter.toml` of the repository.
    BuiltIn(&'static str),
    /// A file (its directory).
    File(PathBuf),
}

/// One adapter, as its manifest describes it.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Name on the command line and in reports (`ts-v1`).
    pub name: String,
    /// One line saying what it is.
    pub description: String,
    /// A fixed version string (`{listsync_version}` and `{rmcp_version}` are replaced).
    pub version: Option<String>,
    /// A command printing the version on its first line.
    pub version_command: Option<Vec<String>>,
    /// Roles it plays.
    pub roles: Vec<Role>,
    /// Eras it can be pinned to.
    pub eras: Vec<Era>,
    /// Kinds of list it serves (server) and keeps (client).
    pub kinds: KindSet,
    /// Server: the kinds whose lists its `mutate` can change (`[server] mutates`; default: every
    /// kind). A server with a fixed catalog refuses the rest, and the traces and scenarios that
    /// change them are not applicable to it.
    pub mutates: KindSet,
    /// argv per role (else from what `provision` printed).
    pub launch: BTreeMap<Role, Vec<String>>,
    /// Environment for every run.
    pub env: BTreeMap<String, String>,
    /// Run once per process before the first launch; idempotent.
    pub provision: Option<Vec<String>>,
    /// Programs it needs on PATH.
    pub needs: Vec<String>,
    /// What to install when one of `needs` is missing.
    pub install: String,
    /// Corpus traces its rows replay.
    pub corpus: Corpus,
    /// Our runtime: the adapter runs core's machines, its variants are core strategies, it
    /// reports `history` events, and replays against it are exact.
    pub runs_core: bool,
    variants: BTreeMap<Role, Vec<Variant>>,
    scenarios: BTreeMap<Role, Vec<String>>,
    /// Where it came from.
    pub origin: Origin,
}

/// Scenario names a manifest may opt into (`[server] scenarios = [...]`).
pub const OPT_IN_SCENARIOS: &[&str] = &["notify-explicit", "notify-explicit-session"];

impl Manifest {
    /// Parses a manifest's text (`origin` resolves `{dir}`).
    pub fn parse(text: &str, origin: Origin) -> Result<Manifest, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string().trim().to_owned())?;
        if f.name.is_empty()
            || !f
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        {
            return Err(format!(
                "name '{}': use letters, digits, '-', '_' or '.'",
                f.name
            ));
        }
        if f.roles.is_empty() {
            return Err("roles is empty: say \"server\", \"client\" or both".into());
        }
        if f.eras.is_empty() {
            return Err("eras is empty: say \"2025-11-25\", \"2026-07-28\" or both".into());
        }
        if let Corpus::All(w) = &f.corpus
            && w != "all"
        {
            return Err(format!(
                "corpus = \"{w}\": write \"all\" or a list of trace file names"
            ));
        }
        if f.version.is_none() && f.version_command.is_none() && f.provision.is_none() {
            return Err(
                "no version: give version = \"...\", version_command = [...], or a provision command that prints one (docs/writing-an-adapter.md)".into(),
            );
        }
        let mut launch = BTreeMap::new();
        for (role, argv) in [
            (Role::Server, f.launch.server),
            (Role::Client, f.launch.client),
        ] {
            if let Some(argv) = argv {
                if argv.is_empty() {
                    return Err(format!("[launch] {role} is empty"));
                }
                if !f.roles.contains(&role) {
                    return Err(format!(
                        "[launch] {role} is given but roles does not list {role}"
                    ));
                }
                launch.insert(role, argv);
            }
        }
        if f.provision.is_none()
            && let Some(r) = f.roles.iter().find(|r| !launch.contains_key(r))
        {
            return Err(format!(
                "roles lists {r} but [launch] has no {r} = [argv...] (and no provision command prints one)"
            ));
        }
        if f.client.mutates.is_some() {
            return Err(
                "[client] mutates: only a server mutates its catalog (write it under [server])"
                    .into(),
            );
        }
        let mutates: KindSet = f
            .server
            .mutates
            .clone()
            .map(|k| k.into_iter().collect())
            .unwrap_or_else(|| Kind::ALL.into_iter().collect());
        let mut variants = BTreeMap::new();
        let mut scenarios = BTreeMap::new();
        for (role, entry) in [(Role::Server, f.server), (Role::Client, f.client)] {
            let mut vs: Vec<Variant> = entry
                .variants
                .into_iter()
                .map(|v| match v {
                    VariantEntry::Name(n) => Variant {
                        variant: n.clone(),
                        name: n,
                        env: BTreeMap::new(),
                    },
                    VariantEntry::Full { name, variant, env } => Variant {
                        variant: variant.unwrap_or_else(|| name.clone()),
                        name,
                        env,
                    },
                })
                .collect();
            if vs.is_empty() {
                vs.push(Variant {
                    name: "default".into(),
                    variant: "default".into(),
                    env: BTreeMap::new(),
                });
            }
            for s in &entry.scenarios {
                if !OPT_IN_SCENARIOS.contains(&s.as_str()) {
                    return Err(format!(
                        "[{role}] scenarios: unknown scenario '{s}' (known: {})",
                        OPT_IN_SCENARIOS.join(", ")
                    ));
                }
            }
            variants.insert(role, vs);
            scenarios.insert(role, entry.scenarios);
        }
        Ok(Manifest {
            name: f.name,
            description: f.description,
            version: f.version,
            version_command: f.version_command,
            roles: f.roles,
            eras: f.eras,
            kinds: f
                .kinds
                .map(|k| k.into_iter().collect())
                .unwrap_or_else(|| Kind::ALL.into_iter().collect()),
            mutates,
            launch,
            env: f.env,
            provision: f.provision,
            needs: f.needs,
            install: f.install,
            corpus: f.corpus,
            runs_core: f.runs_core,
            variants,
            scenarios,
            origin,
        })
    }

    /// Reads and parses a manifest file (at most 1 MiB).
    pub fn load(path: &Path) -> Result<Manifest, String> {
        let text = crate::limited_file::read_text(path, MAX_MANIFEST)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        Manifest::parse(&text, Origin::File(dir)).map_err(|e| format!("{}: {e}", path.display()))
    }

    /// The variants of a role worth a matrix row (the first is the default).
    pub fn variants(&self, role: Role) -> &[Variant] {
        self.variants.get(&role).map_or(&[], Vec::as_slice)
    }

    /// The default variant of a role.
    pub fn default_variant(&self, role: Role) -> String {
        self.variants(role)
            .first()
            .map_or_else(|| "default".into(), |v| v.name.clone())
    }

    /// A variant by name (None for an unknown one; any name for [`Manifest::runs_core`]).
    pub fn variant(&self, role: Role, name: &str) -> Option<Variant> {
        if self.runs_core {
            return Some(Variant {
                name: name.into(),
                variant: name.into(),
                env: BTreeMap::new(),
            });
        }
        self.variants(role).iter().find(|v| v.name == name).cloned()
    }

    /// Whether the manifest opts its role into a scenario (`notify-explicit`...).
    pub fn opts_into(&self, role: Role, scenario: &str) -> bool {
        self.scenarios
            .get(&role)
            .is_some_and(|s| s.iter().any(|x| x == scenario))
    }

    /// Whether it plays `role`.
    pub fn plays(&self, role: Role) -> bool {
        self.roles.contains(&role)
    }

    /// The directory `{dir}` stands for.
    pub fn dir(&self, repo: &Path) -> PathBuf {
        match &self.origin {
            Origin::BuiltIn(d) => repo.join("harness/adapters").join(d),
            Origin::File(d) => d.clone(),
        }
    }
}

/// The built-in adapters, parsed once.
pub fn built_in() -> &'static [Arc<Manifest>] {
    static ALL: OnceLock<Vec<Arc<Manifest>>> = OnceLock::new();
    ALL.get_or_init(|| {
        BUILT_IN
            .iter()
            .map(|(dir, text)| {
                // A committed manifest that does not parse is a build defect the unit test
                // below reports; it is left out rather than taking the process down.
                Manifest::parse(text, Origin::BuiltIn(dir))
                    .map_err(|e| tracing::error!("harness/adapters/{dir}/adapter.toml: {e}"))
                    .ok()
                    .map(Arc::new)
            })
            .collect::<Option<Vec<_>>>()
            .unwrap_or_default()
    })
}

/// A built-in adapter by name.
pub fn find(name: &str) -> Result<Arc<Manifest>, String> {
    built_in()
        .iter()
        .find(|m| m.name == name)
        .cloned()
        .ok_or_else(|| {
            let names: Vec<&str> = built_in().iter().map(|m| m.name.as_str()).collect();
            format!(
                "unknown implementation '{name}' (built in: {}; or --adapter FILE for a manifest of your own)",
                names.join(", ")
            )
        })
}

/// Our runtime (the counterpart of every run): the built-in adapter that runs core.
pub fn reference() -> Arc<Manifest> {
    built_in()
        .iter()
        .find(|m| m.runs_core)
        .cloned()
        .unwrap_or_else(|| {
            // Unreachable with the committed manifests (the unit test checks it); a stand-in
            // keeps callers total.
            Arc::new(Manifest {
                name: "reference".into(),
                description: String::new(),
                version: None,
                version_command: None,
                roles: vec![Role::Server, Role::Client],
                eras: Era::ALL.to_vec(),
                kinds: Kind::ALL.into_iter().collect(),
                mutates: Kind::ALL.into_iter().collect(),
                launch: BTreeMap::new(),
                env: BTreeMap::new(),
                provision: None,
                needs: Vec::new(),
                install: String::new(),
                corpus: Corpus::default(),
                runs_core: true,
                variants: BTreeMap::new(),
                scenarios: BTreeMap::new(),
                origin: Origin::BuiltIn("reference"),
            })
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_built_in_manifest_parses_and_names_its_directory() {
        assert_eq!(
            built_in().len(),
            BUILT_IN.len(),
            "a built-in manifest failed to parse"
        );
        for (m, (dir, text)) in built_in().iter().zip(BUILT_IN) {
            Manifest::parse(text, Origin::BuiltIn(dir)).unwrap();
            assert_eq!(m.name, *dir);
            for r in &m.roles {
                assert!(!m.variants(*r).is_empty());
            }
        }
        assert_eq!(reference().name, "reference");
        assert_eq!(built_in().iter().filter(|m| m.runs_core).count(), 1);
    }

    #[test]
    fn mutates_defaults_to_every_kind_and_belongs_to_the_server() {
        let base = "name = \"x\"\nversion = \"1\"\nroles = [\"server\"]\neras = [\"2025-11-25\"]\n[launch]\nserver = [\"s\"]\n";
        let all = Manifest::parse(base, Origin::File("/tmp".into())).unwrap();
        assert!(Kind::ALL.into_iter().all(|k| all.mutates.contains(k)));
        let fixed = Manifest::parse(
            &format!("{base}[server]\nmutates = [\"resources\"]\n"),
            Origin::File("/tmp".into()),
        )
        .unwrap();
        assert!(fixed.mutates.contains(Kind::Resources));
        assert!(!fixed.mutates.contains(Kind::Tools));
        let err = Manifest::parse(
            &format!("{base}[client]\nmutates = [\"tools\"]\n"),
            Origin::File("/tmp".into()),
        )
        .unwrap_err();
        assert!(err.contains("[client] mutates"), "{err}");
        let everything = find("server-everything").unwrap();
        assert!(!everything.mutates.contains(Kind::Tools));
    }

    #[test]
    fn a_minimal_manifest_parses_and_bad_ones_say_why() {
        let m = Manifest::parse(
            "name = \"x\"\nversion = \"1\"\nroles = [\"client\"]\neras = [\"2025-11-25\"]\n[launch]\nclient = [\"python3\", \"{dir}/c.py\"]\n",
            Origin::File("/tmp".into()),
        )
        .unwrap();
        assert_eq!(m.default_variant(Role::Client), "default");
        assert!(m.corpus.includes("naive.json"));
        assert!(m.variant(Role::Client, "nope").is_none());
        let err = |t: &str| Manifest::parse(t, Origin::File("/tmp".into())).unwrap_err();
        assert!(err("name = \"x\"\nroles = [\"client\"]\neras = [\"2025-11-25\"]\n[launch]\nclient = [\"a\"]\n").contains("no version"));
        assert!(
            err("name = \"x\"\nversion = \"1\"\nroles = [\"client\"]\neras = [\"2025-11-25\"]\n")
                .contains("[launch] has no client")
        );
        assert!(
            err("name = \"x\"\nversion = \"1\"\nroles = [\"middle\"]\neras = [\"2025-11-25\"]\n")
                .contains("middle")
        );
        assert!(err("name = \"x\"\nversion = \"1\"\nroles = [\"client\"]\neras = [\"2025-11-25\"]\nlanch = 1\n").contains("lanch"));
    }
}
