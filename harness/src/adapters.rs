//! The implementations the harness drives and how to start each as a server or client adapter.
//! Every implementation — our reference runtime (`listsync serve|watch`, with any core
//! strategy), the rmcp adapter (`listsync adapter rmcp`), the third-party SDK adapters in
//! `harness/adapters/`, and any adapter of a user's own — is described by a manifest
//! ([`crate::manifest`]); this file turns one into a running process: it provisions it (once per
//! process, with a progress message and a clear error naming what to install when a toolchain
//! is missing), reads its version, and builds its argv and environment for a run.
//!
//! An implementation under test is a [`Subject`]: manifest, role, variant. Its counterpart on
//! the other end of the link is always our reference runtime ([`crate::manifest::reference`]).

use crate::manifest::{self, Manifest};
use listsync_core::vocab::{Era, Kind, KindSet, Op, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::{Arc, Mutex};

/// A role on the MCP link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// The MCP server.
    Server,
    /// The MCP client.
    Client,
}

impl Role {
    /// `server` / `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Server => "server",
            Role::Client => "client",
        }
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Role {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "server" => Ok(Role::Server),
            "client" => Ok(Role::Client),
            _ => Err(format!("unknown role '{s}' (server or client)")),
        }
    }
}

/// An implementation under test: `IMPL[:ROLE][@VARIANT]`. For `reference` the variant is a core
/// strategy of that role (`reference@naive:client` is the rt client running `naive`), or
/// `trace`: the strategies the trace names. Without a role, the role a trace is about is used.
#[derive(Clone, Debug)]
pub struct Subject {
    /// The implementation's manifest.
    pub adapter: Arc<Manifest>,
    /// Role under test (None: decided by the trace).
    pub role: Option<Role>,
    /// Variant (None: the default).
    pub variant: Option<String>,
}

impl Subject {
    /// The implementation's name.
    pub fn name(&self) -> &str {
        &self.adapter.name
    }

    /// Our runtime in `role` with its default (reference) strategy or `variant`.
    pub fn reference(role: Option<Role>, variant: Option<&str>) -> Subject {
        Subject {
            adapter: manifest::reference(),
            role,
            variant: variant.map(str::to_owned),
        }
    }

    /// `SPEC[:ROLE][@VARIANT]` where SPEC names a built-in implementation, or with
    /// `from_file`, is the path of a manifest (`--adapter FILE[:role]`).
    pub fn parse(s: &str, from_file: bool) -> Result<Subject, String> {
        let (head, variant) = match s.rsplit_once('@') {
            Some((h, v)) => {
                // Accept both `impl@variant:role` and `impl:role@variant`.
                match v.split_once(':') {
                    Some((v, r)) => (format!("{h}:{r}"), Some(v.to_owned())),
                    None => (h.to_owned(), Some(v.to_owned())),
                }
            }
            None => (s.to_owned(), None),
        };
        let (spec, role) = match head.rsplit_once(':') {
            // A manifest path may hold a colon; only a role name after the last one is a role.
            Some((i, r)) if !from_file || matches!(r, "server" | "client") => {
                (i.to_owned(), Some(r.parse::<Role>()?))
            }
            _ => (head.clone(), None),
        };
        let adapter = if from_file {
            Arc::new(Manifest::load(Path::new(&spec))?)
        } else {
            manifest::find(&spec)?
        };
        if let Some(r) = role
            && !adapter.plays(r)
        {
            return Err(format!("{} does not play the {r} role", adapter.name));
        }
        if let (Some(v), Some(r)) = (&variant, role)
            && adapter.variant(r, v).is_none()
        {
            let known: Vec<&str> = adapter
                .variants(r)
                .iter()
                .map(|v| v.name.as_str())
                .collect();
            return Err(format!(
                "{} has no {r} variant '{v}' (known: {})",
                adapter.name,
                known.join(", ")
            ));
        }
        Ok(Subject {
            adapter,
            role,
            variant,
        })
    }
}

impl FromStr for Subject {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Subject::parse(s, false)
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.adapter.name)?;
        if let Some(r) = self.role {
            write!(f, ":{r}")?;
        }
        if let Some(v) = &self.variant {
            write!(f, "@{v}")?;
        }
        Ok(())
    }
}

/// Where things are.
#[derive(Clone, Debug)]
pub struct Paths {
    /// The `listsync` executable (reference adapters and the rmcp adapter run from it).
    pub listsync: PathBuf,
    /// The root of the tree holding `harness/adapters/` (`{repo}`): the source tree, or the
    /// copy an installed binary unpacked.
    pub repo: PathBuf,
    /// Adapter cache (`LISTSYNC_CACHE`); None: provision.sh's default (`<repo>/.cache/adapters`).
    pub cache: Option<PathBuf>,
}

impl Paths {
    /// The listsync source tree holding the current directory (the nearest directory upwards
    /// holding `harness/adapters/provision.sh`), if there is one. An installed binary outside
    /// any tree uses the copies of those files it carries (the `listsync` binary's `home`
    /// module), never a tree found through a path fixed when it was built.
    pub fn source_tree() -> Option<PathBuf> {
        let start = std::env::current_dir().ok()?;
        start
            .ancestors()
            .find(|d| d.join("harness/adapters/provision.sh").is_file())
            .map(Path::to_path_buf)
    }
}

/// What an adapter's `provision` command reported on its last stdout line (all optional: a
/// command that prints no JSON reports nothing).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct Provisioned {
    /// Runtime (`node v20.20.2`, `python 3.11`).
    #[serde(default)]
    pub runtime: String,
    /// Package → exact installed version.
    #[serde(default)]
    pub sdk: BTreeMap<String, String>,
    /// argv per role (used where the manifest has no `[launch]` entry).
    #[serde(default)]
    pub launch: HashMap<String, Vec<String>>,
}

type ProvisionCache = HashMap<String, Result<Provisioned, String>>;
static PROVISIONED: Mutex<Option<ProvisionCache>> = Mutex::new(None);

/// The cache directory of one adapter (`{cache}`): `$LISTSYNC_CACHE/NAME`, else
/// `<repo>/.cache/adapters/NAME`.
pub fn cache_dir(paths: &Paths, m: &Manifest) -> PathBuf {
    paths
        .cache
        .clone()
        .unwrap_or_else(|| paths.repo.join(".cache/adapters"))
        .join(&m.name)
}

/// Provisions an adapter (once per process and manifest): checks `needs`, runs `provision`.
/// An adapter without a provision command has nothing to do.
pub fn provision(paths: &Paths, m: &Manifest) -> Result<Provisioned, String> {
    let key = format!("{}\0{:?}", m.name, m.origin);
    let mut guard = PROVISIONED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(r) = map.get(&key) {
        return r.clone();
    }
    let r = run_provision(paths, m);
    map.insert(key, r.clone());
    r
}

fn run_provision(paths: &Paths, m: &Manifest) -> Result<Provisioned, String> {
    if let Some(missing) = m.needs.iter().find(|p| which(p).is_none()) {
        return Err(format!(
            "{} adapters need `{missing}` on PATH, and it is not installed: install {}, or set LISTSYNC_HARNESS_SKIP_SDKS=1 to skip the third-party SDK rows",
            m.name,
            if m.install.is_empty() {
                missing
            } else {
                &m.install
            }
        ));
    }
    let Some(argv) = &m.provision else {
        return Ok(Provisioned::default());
    };
    let cache = cache_dir(paths, m);
    if !cache.join("launch.json").is_file() {
        tracing::warn!(
            "provisioning the {} adapter (first run: installs its pinned packages into {}; up to a minute)...",
            m.name,
            cache.display()
        );
    }
    let vars = Vars::base(paths, m);
    let argv = vars.argv(argv)?;
    let (prog, args) = argv
        .split_first()
        .ok_or_else(|| format!("{}: provision is empty", m.name))?;
    let mut cmd = std::process::Command::new(prog);
    cmd.args(args).current_dir(m.dir(&paths.repo));
    if let Some(c) = &paths.cache {
        cmd.env("LISTSYNC_CACHE", c);
    }
    cmd.stderr(std::process::Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("{}: cannot run provision command {prog}: {e}", m.name))?;
    if !out.status.success() {
        return Err(format!(
            "provisioning {} failed (exit {}); see the messages above",
            m.name,
            out.status.code().unwrap_or(-1)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().rev().find(|l| !l.trim().is_empty()) {
        Some(line) if line.trim_start().starts_with('{') => serde_json::from_str(line)
            .map_err(|e| format!("{}: provision printed a malformed JSON line: {e}", m.name)),
        _ => Ok(Provisioned::default()),
    }
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
    })
}

/// The version string of an implementation: its manifest's `version`, else the first line its
/// `version_command` prints, else the packages and runtime its provisioning reported.
pub fn version_of(paths: &Paths, m: &Manifest) -> Result<String, String> {
    let installed = provision(paths, m)?;
    if let Some(v) = &m.version {
        return Ok(v
            .replace("{listsync_version}", env!("CARGO_PKG_VERSION"))
            .replace("{rmcp_version}", crate::RMCP_VERSION));
    }
    if let Some(cmd) = &m.version_command {
        let argv = Vars::base(paths, m).argv(cmd)?;
        let (prog, args) = argv
            .split_first()
            .ok_or_else(|| format!("{}: version_command is empty", m.name))?;
        let out = std::process::Command::new(prog)
            .args(args)
            .current_dir(m.dir(&paths.repo))
            .stdin(std::process::Stdio::null())
            .output()
            .map_err(|e| format!("{}: cannot run version_command {prog}: {e}", m.name))?;
        let text = String::from_utf8_lossy(&out.stdout);
        let first = text.lines().next().unwrap_or_default().trim();
        if !out.status.success() || first.is_empty() {
            return Err(format!(
                "{}: version_command printed no version (exit {})",
                m.name,
                out.status.code().unwrap_or(-1)
            ));
        }
        return Ok(first.to_owned());
    }
    if installed.sdk.is_empty() {
        return Err(format!(
            "{}: neither version, version_command, nor the provision command's JSON (\"sdk\") names a version",
            m.name
        ));
    }
    let pkgs: Vec<String> = installed
        .sdk
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    Ok(if installed.runtime.is_empty() {
        pkgs.join(", ")
    } else {
        format!("{} ({})", pkgs.join(", "), installed.runtime)
    })
}

/// Everything needed to start one adapter process.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Program and arguments.
    pub argv: Vec<String>,
    /// Environment (on top of the harness's own).
    pub env: Vec<(String, String)>,
    /// For reports: `ts-v1 server (mcpserver)`.
    pub label: String,
}

/// How to start the server side of a run.
#[derive(Clone, Debug)]
pub struct ServerSetup {
    /// Implementation.
    pub adapter: Arc<Manifest>,
    /// Adapter variant, or the core server strategy for the reference.
    pub variant: String,
    /// Era.
    pub era: Era,
    /// Items per page (0: one page).
    pub page_size: u16,
    /// Initial catalog.
    pub initial: Vec<Op>,
    /// `ttlMs` (reference, 2026-07-28).
    pub ttl_ms: Option<u32>,
    /// (reference) Walk versions the server keeps serving to their end (`serve
    /// --retain-versions`); `None`: its default.
    pub retain_versions: Option<u8>,
}

/// How to start the client side of a run.
#[derive(Clone, Debug)]
pub struct ClientSetup {
    /// Implementation.
    pub adapter: Arc<Manifest>,
    /// Adapter variant, or the core client strategy for the reference.
    pub variant: String,
    /// Era.
    pub era: Era,
    /// Lists the client keeps (the reference keeps only these; SDK clients list what they list).
    pub kinds: KindSet,
}

/// A control-protocol op for a core op (`def` is the description).
pub fn op_json(op: &Op) -> Value {
    match op {
        Op::Add {
            kind,
            name,
            def,
            scope,
        } => {
            let mut v =
                json!({"op": "add", "kind": kind.as_str(), "name": &**name, "description": &**def});
            if let Scope::Only(a) = scope {
                v["auth"] = json!(a.0);
            }
            v
        }
        Op::Remove { kind, name } => {
            json!({"op": "remove", "kind": kind.as_str(), "name": &**name})
        }
        Op::Update { kind, name, def } => {
            json!({"op": "update", "kind": kind.as_str(), "name": &**name, "description": &**def})
        }
        Op::SetContent { uri, text } => {
            json!({"op": "set_content", "uri": &**uri, "text": &**text})
        }
    }
}

/// The placeholders of a manifest's argv and environment (`{name}`). An argument naming a
/// placeholder that has no value in this run (`{ttl_ms}` when the scenario sets none) is left
/// out; an unknown placeholder is an error.
struct Vars(BTreeMap<&'static str, Option<String>>);

/// Every placeholder name.
pub const PLACEHOLDERS: &[&str] = &[
    "listsync",
    "dir",
    "repo",
    "cache",
    "role",
    "era",
    "variant",
    "page_size",
    "initial",
    "kinds",
    "ttl_ms",
    "retain_versions",
];

impl Vars {
    fn base(paths: &Paths, m: &Manifest) -> Vars {
        let mut v: BTreeMap<&'static str, Option<String>> =
            PLACEHOLDERS.iter().map(|p| (*p, None)).collect();
        let s = |p: &Path| Some(p.to_string_lossy().into_owned());
        v.insert("listsync", s(&paths.listsync));
        v.insert("dir", s(&m.dir(&paths.repo)));
        v.insert("repo", s(&paths.repo));
        v.insert("cache", s(&cache_dir(paths, m)));
        Vars(v)
    }

    fn set(&mut self, k: &'static str, v: impl Into<String>) {
        self.0.insert(k, Some(v.into()));
    }

    /// One argument: Ok(None) when it names a placeholder without a value.
    fn expand(&self, arg: &str) -> Result<Option<String>, String> {
        let mut out = String::new();
        let mut rest = arg;
        while let Some(open) = rest.find('{') {
            out.push_str(&rest[..open]);
            let after = &rest[open + 1..];
            match after.find('}') {
                Some(close)
                    if !after[..close].is_empty()
                        && after[..close]
                            .chars()
                            .all(|c| c.is_ascii_lowercase() || c == '_') =>
                {
                    let name = &after[..close];
                    match self.0.get(name) {
                        Some(Some(v)) => out.push_str(v),
                        Some(None) => return Ok(None),
                        None => {
                            return Err(format!(
                                "unknown placeholder {{{name}}} in '{arg}' (known: {})",
                                PLACEHOLDERS.join(", ")
                            ));
                        }
                    }
                    rest = &after[close + 1..];
                }
                _ => {
                    out.push('{');
                    rest = after;
                }
            }
        }
        out.push_str(rest);
        Ok(Some(out))
    }

    fn argv(&self, argv: &[String]) -> Result<Vec<String>, String> {
        let mut out = Vec::new();
        for a in argv {
            if let Some(x) = self.expand(a)? {
                out.push(x);
            }
        }
        Ok(out)
    }
}

/// Builds one adapter's launch in `role`.
fn launch(
    paths: &Paths,
    m: &Manifest,
    role: Role,
    variant: &str,
    era: Era,
    mut vars_of: impl FnMut(&mut Vars),
    mut env: Vec<(String, String)>,
) -> Result<Launch, String> {
    if !m.plays(role) {
        return Err(format!("{} does not play the {role} role", m.name));
    }
    let v = m
        .variant(role, variant)
        .ok_or_else(|| format!("{} has no {role} variant '{variant}'", m.name))?;
    let installed = provision(paths, m)?;
    let argv = match m.launch.get(&role) {
        Some(a) => a.clone(),
        None => installed.launch.get(role.as_str()).cloned().ok_or_else(|| {
            format!(
                "{} has no {role} launch: neither [launch] {role} nor its provision command names one",
                m.name
            )
        })?,
    };
    let mut vars = Vars::base(paths, m);
    vars.set("role", role.as_str());
    vars.set("era", era.as_str());
    vars.set("variant", v.variant.clone());
    vars_of(&mut vars);
    env.splice(
        0..0,
        [
            ("LISTSYNC_ROLE".into(), role.as_str().into()),
            ("LISTSYNC_ERA".into(), era.as_str().into()),
            ("LISTSYNC_VARIANT".into(), v.variant.clone()),
        ],
    );
    for (k, val) in m.env.iter().chain(&v.env) {
        if let Some(x) = vars.expand(val)? {
            env.push((k.clone(), x));
        }
    }
    Ok(Launch {
        argv: vars
            .argv(&argv)
            .map_err(|e| format!("{} [launch] {role}: {e}", m.name))?,
        env,
        label: format!("{} {role} ({variant})", m.name),
    })
}

/// The launch of a server adapter.
pub fn server_launch(paths: &Paths, s: &ServerSetup) -> Result<Launch, String> {
    let initial = Value::Array(s.initial.iter().map(op_json).collect()).to_string();
    let env = vec![
        ("LISTSYNC_PAGE_SIZE".into(), s.page_size.to_string()),
        ("LISTSYNC_INITIAL".into(), initial.clone()),
    ];
    launch(
        paths,
        &s.adapter,
        Role::Server,
        &s.variant,
        s.era,
        |v| {
            v.set("page_size", s.page_size.to_string());
            v.set("initial", initial.clone());
            if let Some(t) = s.ttl_ms {
                v.set("ttl_ms", t.to_string());
            }
            if let Some(r) = s.retain_versions {
                v.set("retain_versions", r.to_string());
            }
        },
        env,
    )
}

/// The launch of a client adapter.
pub fn client_launch(paths: &Paths, c: &ClientSetup) -> Result<Launch, String> {
    let kinds: Vec<&str> = c.kinds.iter().map(Kind::as_str).collect();
    launch(
        paths,
        &c.adapter,
        Role::Client,
        &c.variant,
        c.era,
        |v| v.set("kinds", kinds.join(",")),
        Vec::new(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_parse_in_both_orders() {
        let s: Subject = "ts-v1:client@listchanged-debounce0".parse().unwrap();
        assert_eq!(s.name(), "ts-v1");
        assert_eq!(s.role, Some(Role::Client));
        assert_eq!(s.variant.as_deref(), Some("listchanged-debounce0"));
        let t: Subject = "reference@naive:client".parse().unwrap();
        assert_eq!(t.role, Some(Role::Client));
        assert_eq!(t.variant.as_deref(), Some("naive"));
        assert!("python:server@nope".parse::<Subject>().is_err());
        assert!("cobol".parse::<Subject>().is_err());
        assert!("rmcp:middle".parse::<Subject>().is_err());
        assert!("go-sdk:client@channel".parse::<Subject>().is_ok());
        assert!("java:server@async".parse::<Subject>().is_err());
        let r: Subject = "reference".parse().unwrap();
        assert_eq!(r.to_string(), "reference");
    }

    #[test]
    fn placeholders_expand_drop_or_refuse() {
        let paths = Paths {
            listsync: "/bin/listsync".into(),
            repo: "/repo".into(),
            cache: None,
        };
        let m = manifest::reference();
        let mut v = Vars::base(&paths, &m);
        v.set("variant", "naive");
        assert_eq!(
            v.expand("--strategy={variant}").unwrap().as_deref(),
            Some("--strategy=naive")
        );
        assert_eq!(v.expand("--ttl-ms={ttl_ms}").unwrap(), None);
        assert_eq!(
            v.expand("{ not a placeholder }").unwrap().as_deref(),
            Some("{ not a placeholder }")
        );
        assert!(
            v.expand("{nope}")
                .unwrap_err()
                .contains("unknown placeholder")
        );
        assert_eq!(
            v.expand("{dir}/x").unwrap().as_deref(),
            Some("/repo/harness/adapters/reference/x")
        );
    }
}
