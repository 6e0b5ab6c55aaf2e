//! The implementations the harness drives, and how to start each as a server or client adapter:
//! our reference runtime (`listsync serve|watch`, with any core strategy), the rmcp adapter
//! (`listsync adapter rmcp`, crate `harness/adapters/rmcp`), and the TypeScript v1/v2 and Python
//! adapters in `harness/adapters/`, which the first run installs from their lockfiles with
//! `provision.sh` (a progress message, and a clear error if node or python3 is missing).
//!
//! An implementation under test is a [`Subject`]: implementation, role, variant. Its counterpart
//! on the other end of the link is always our reference runtime.

use listsync_core::vocab::{Era, Kind, KindSet, Op, Scope};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::Mutex;

/// An implementation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Impl {
    /// Our runtime (`rt/`): `listsync serve` / `listsync watch`.
    #[serde(rename = "reference")]
    Reference,
    /// The rmcp adapter (`harness/adapters/rmcp`).
    #[serde(rename = "rmcp")]
    Rmcp,
    /// `@modelcontextprotocol/sdk` (TypeScript v1).
    #[serde(rename = "ts-v1")]
    TsV1,
    /// `@modelcontextprotocol/client` + `/server` (TypeScript v2).
    #[serde(rename = "ts-v2")]
    TsV2,
    /// PyPI `mcp`.
    #[serde(rename = "python")]
    Python,
}

impl Impl {
    /// Every implementation, in report order.
    pub const ALL: [Impl; 5] = [
        Impl::Reference,
        Impl::Rmcp,
        Impl::TsV1,
        Impl::TsV2,
        Impl::Python,
    ];

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Impl::Reference => "reference",
            Impl::Rmcp => "rmcp",
            Impl::TsV1 => "ts-v1",
            Impl::TsV2 => "ts-v2",
            Impl::Python => "python",
        }
    }

    /// Whether it runs on Node or Python and is installed by `provision.sh`.
    pub fn provisioned(self) -> bool {
        matches!(self, Impl::TsV1 | Impl::TsV2 | Impl::Python)
    }

    /// Eras the implementation can be pinned to.
    pub fn eras(self) -> &'static [Era] {
        match self {
            Impl::TsV1 => &[Era::V2025_11_25],
            _ => &Era::ALL,
        }
    }

    /// The adapter variants of a role worth a matrix row (the first is the default).
    pub fn variants(self, role: Role) -> &'static [&'static str] {
        match (self, role) {
            (Impl::Reference, _) => &["reference"],
            (Impl::Rmcp, Role::Server) => &["router"],
            (Impl::Rmcp, Role::Client) => &["list-all"],
            (Impl::TsV1, Role::Server) => &["mcpserver", "mcpserver-coalesced", "lowlevel"],
            (Impl::TsV2, Role::Server) => &["mcpserver", "lowlevel"],
            (Impl::TsV1 | Impl::TsV2, Role::Client) => &["listchanged", "listchanged-debounce0"],
            (Impl::Python, Role::Server) => &["mcpserver", "lowlevel"],
            (Impl::Python, Role::Client) => &["session", "client"],
        }
    }
}

impl fmt::Display for Impl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Impl {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        Impl::ALL
            .into_iter()
            .find(|i| i.as_str() == s)
            .ok_or_else(|| {
                format!("unknown implementation '{s}' (reference, rmcp, ts-v1, ts-v2, python)")
            })
    }
}

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
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Subject {
    /// Implementation.
    pub imp: Impl,
    /// Role under test (None: decided by the trace).
    pub role: Option<Role>,
    /// Variant (None: the default).
    pub variant: Option<String>,
}

impl FromStr for Subject {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (head, variant) = match s.split_once('@') {
            Some((h, v)) => {
                // Accept both `impl@variant:role` and `impl:role@variant`.
                match v.split_once(':') {
                    Some((v, r)) => (format!("{h}:{r}"), Some(v.to_owned())),
                    None => (h.to_owned(), Some(v.to_owned())),
                }
            }
            None => (s.to_owned(), None),
        };
        let (imp, role) = match head.split_once(':') {
            Some((i, r)) => (i.parse::<Impl>()?, Some(r.parse::<Role>()?)),
            None => (head.parse::<Impl>()?, None),
        };
        if let (Some(v), Some(r)) = (&variant, role)
            && imp != Impl::Reference
            && !imp.variants(r).contains(&v.as_str())
        {
            return Err(format!(
                "{imp} has no {r} variant '{v}' (known: {})",
                imp.variants(r).join(", ")
            ));
        }
        Ok(Subject { imp, role, variant })
    }
}

impl fmt::Display for Subject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.imp)?;
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
    /// The repository root (for `harness/adapters/`).
    pub repo: PathBuf,
    /// Adapter cache (`LISTSYNC_CACHE`); None: provision.sh's default (`<repo>/.cache/adapters`).
    pub cache: Option<PathBuf>,
}

impl Paths {
    /// Paths for the running `listsync` binary: the repository is found from the current
    /// directory upwards (the directory holding `harness/adapters/provision.sh`).
    pub fn discover(listsync: PathBuf) -> Result<Paths, String> {
        let start = std::env::current_dir().map_err(|e| e.to_string())?;
        let repo = start
            .ancestors()
            .find(|d| d.join("harness/adapters/provision.sh").is_file())
            .map(Path::to_path_buf)
            .or_else(|| {
                // Fall back to the source tree this binary was built from.
                let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
                here.parent()
                    .filter(|d| d.join("harness/adapters/provision.sh").is_file())
                    .map(Path::to_path_buf)
            })
            .ok_or("cannot find the listsync repository (harness/adapters/provision.sh) from the current directory")?;
        Ok(Paths {
            listsync,
            repo,
            cache: std::env::var_os("LISTSYNC_CACHE").map(PathBuf::from),
        })
    }
}

/// What `provision.sh` reports for an installed adapter.
#[derive(Clone, Debug, Deserialize, Serialize)]
pub struct Provisioned {
    /// Implementation name.
    #[serde(rename = "impl")]
    pub imp: String,
    /// Runtime (`node v20.20.2`, `python 3.11`).
    #[serde(default)]
    pub runtime: String,
    /// Package → exact installed version.
    #[serde(default)]
    pub sdk: std::collections::BTreeMap<String, String>,
    /// argv per role.
    pub launch: HashMap<String, Vec<String>>,
}

static PROVISIONED: Mutex<Option<HashMap<Impl, Result<Provisioned, String>>>> = Mutex::new(None);

/// Installs (once per process) a Node or Python adapter with `provision.sh`.
pub fn provision(paths: &Paths, imp: Impl) -> Result<Provisioned, String> {
    let mut guard = PROVISIONED.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(HashMap::new);
    if let Some(r) = map.get(&imp) {
        return r.clone();
    }
    let r = run_provision(paths, imp);
    map.insert(imp, r.clone());
    r
}

fn run_provision(paths: &Paths, imp: Impl) -> Result<Provisioned, String> {
    let needs = if imp == Impl::Python {
        "python3"
    } else {
        "node"
    };
    if which(needs).is_none() {
        return Err(format!(
            "{imp} adapters need `{needs}` on PATH, and it is not installed"
        ));
    }
    let cache = paths
        .cache
        .clone()
        .unwrap_or_else(|| paths.repo.join(".cache/adapters"))
        .join(imp.as_str());
    if !cache.join("launch.json").is_file() {
        tracing::warn!(
            "provisioning the {imp} adapter (first run: installs its pinned packages into {}; about a minute)...",
            cache.display()
        );
    }
    let script = paths.repo.join("harness/adapters/provision.sh");
    let mut cmd = std::process::Command::new("bash");
    cmd.arg(&script).arg(imp.as_str());
    if let Some(c) = &paths.cache {
        cmd.env("LISTSYNC_CACHE", c);
    }
    cmd.stderr(std::process::Stdio::inherit());
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", script.display()))?;
    if !out.status.success() {
        return Err(format!(
            "provisioning {imp} failed (exit {}); see the messages above",
            out.status.code().unwrap_or(-1)
        ));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .map_err(|e| format!("provision.sh {imp} printed no launch JSON: {e}"))
}

fn which(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
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
    pub imp: Impl,
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
}

/// How to start the client side of a run.
#[derive(Clone, Debug)]
pub struct ClientSetup {
    /// Implementation.
    pub imp: Impl,
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

fn common_env(role: Role, era: Era, variant: &str) -> Vec<(String, String)> {
    vec![
        ("LISTSYNC_ROLE".into(), role.as_str().into()),
        ("LISTSYNC_ERA".into(), era.as_str().into()),
        ("LISTSYNC_VARIANT".into(), variant.into()),
    ]
}

/// The launch of a server adapter.
pub fn server_launch(paths: &Paths, s: &ServerSetup) -> Result<Launch, String> {
    let initial = Value::Array(s.initial.iter().map(op_json).collect()).to_string();
    let mut env = common_env(Role::Server, s.era, &s.variant);
    env.push(("LISTSYNC_PAGE_SIZE".into(), s.page_size.to_string()));
    env.push(("LISTSYNC_INITIAL".into(), initial.clone()));
    let exe = paths.listsync.to_string_lossy().into_owned();
    let argv = match s.imp {
        Impl::Reference => {
            // The strategy is an explicit flag (never taken from the environment), and the
            // initial catalog too (so an empty one is not replaced by the demo catalog).
            let mut a = vec![
                exe,
                "serve".into(),
                "--stdio".into(),
                "--strategy".into(),
                s.variant.clone(),
                "--initial".into(),
                initial.clone(),
            ];
            if let Some(t) = s.ttl_ms {
                a.push("--ttl-ms".into());
                a.push(t.to_string());
            }
            a
        }
        Impl::Rmcp => vec![exe, "adapter".into(), "rmcp".into()],
        imp => provision(paths, imp)?
            .launch
            .get("server")
            .cloned()
            .ok_or_else(|| format!("{imp} has no server launch"))?,
    };
    Ok(Launch {
        argv,
        env,
        label: format!("{} server ({})", s.imp, s.variant),
    })
}

/// The launch of a client adapter.
pub fn client_launch(paths: &Paths, c: &ClientSetup) -> Result<Launch, String> {
    let exe = paths.listsync.to_string_lossy().into_owned();
    let (variant, extra): (&str, Vec<(String, String)>) = match c.variant.as_str() {
        "listchanged-debounce0" => (
            "listchanged",
            vec![("LISTSYNC_DEBOUNCE_MS".into(), "0".into())],
        ),
        v => (v, Vec::new()),
    };
    let mut env = common_env(Role::Client, c.era, variant);
    env.extend(extra);
    let argv = match c.imp {
        Impl::Reference => {
            let kinds: Vec<&str> = c.kinds.iter().map(Kind::as_str).collect();
            // The harness ends the run itself: the client keeps retrying whatever fails.
            // Replays go step by step, as the traces' clients do: no pacing timers (the model
            // and rt's pacing tests check the pacing).
            vec![
                exe,
                "watch".into(),
                "--stdio".into(),
                "--strategy".into(),
                variant.into(),
                "--retry".into(),
                "forever".into(),
                "--kinds".into(),
                kinds.join(","),
                "--pacing".into(),
                "off".into(),
            ]
        }
        Impl::Rmcp => vec![exe, "adapter".into(), "rmcp".into()],
        imp => provision(paths, imp)?
            .launch
            .get("client")
            .cloned()
            .ok_or_else(|| format!("{imp} has no client launch"))?,
    };
    Ok(Launch {
        argv,
        env,
        label: format!("{} client ({})", c.imp, c.variant),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_parse_in_both_orders() {
        let s: Subject = "ts-v1:client@listchanged-debounce0".parse().unwrap();
        assert_eq!(s.imp, Impl::TsV1);
        assert_eq!(s.role, Some(Role::Client));
        assert_eq!(s.variant.as_deref(), Some("listchanged-debounce0"));
        let t: Subject = "reference@naive:client".parse().unwrap();
        assert_eq!(t.role, Some(Role::Client));
        assert_eq!(t.variant.as_deref(), Some("naive"));
        assert!("python:server@nope".parse::<Subject>().is_err());
        assert!("cobol".parse::<Subject>().is_err());
        assert!("rmcp:middle".parse::<Subject>().is_err());
        let r: Subject = "reference".parse().unwrap();
        assert_eq!(r.to_string(), "reference");
    }
}
