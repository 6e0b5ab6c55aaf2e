//! The implementations the harness drives, and how to start each as a server or client adapter:
//! our reference runtime (`listsync serve|watch`, with any core strategy), the rmcp adapter
//! (`listsync adapter rmcp`, crate `harness/adapters/rmcp`), and the third-party SDK adapters in
//! `harness/adapters/` (TypeScript v1/v2, Python, Go SDK, mcp-go, Java), which the first run
//! installs from their lockfiles with `provision.sh` (a progress message, and a clear error naming
//! what to install if a toolchain is missing).
//!
//! Everything the harness knows about one adapter (its name, the programs it needs, its eras and
//! variants, which corpus traces its rows replay) is one [`AdapterSpec`] in [`Impl::spec`], the
//! only per-adapter table: the shape an adapter manifest file would have.
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
    /// `github.com/modelcontextprotocol/go-sdk` (the official Go SDK).
    #[serde(rename = "go-sdk")]
    GoSdk,
    /// `github.com/mark3labs/mcp-go`.
    #[serde(rename = "mcp-go")]
    McpGo,
    /// Maven `io.modelcontextprotocol.sdk:mcp` (the official Java SDK).
    #[serde(rename = "java")]
    Java,
}

/// Which traces of the `traces/` corpus an adapter's rows replay.
#[derive(Clone, Copy, Debug)]
pub enum Corpus {
    /// Every trace about the row's role and era.
    All,
    /// Only these files. For SDKs whose patterns leave most traces at their first step (they walk
    /// every page, list before they listen, do not notify where the trace's server does), the
    /// replays that can only diverge cost seconds each and are left out; the generated scenarios
    /// cover those races for every row.
    Only(&'static [&'static str]),
}

impl Corpus {
    /// Whether a trace file is replayed.
    pub fn includes(self, file: &str) -> bool {
        match self {
            Corpus::All => true,
            Corpus::Only(files) => files.contains(&file),
        }
    }
}

/// What the harness knows about one adapter: the data an adapter manifest would hold.
#[derive(Debug)]
pub struct AdapterSpec {
    /// Name on the command line, in reports, and the `provision.sh` argument.
    pub name: &'static str,
    /// Installed by `provision.sh` (else built into `listsync`).
    pub provisioned: bool,
    /// Programs it needs on PATH, and what to install when one is missing.
    pub needs: &'static [&'static str],
    /// What to install when a program of `needs` is missing.
    pub install: &'static str,
    /// Eras it can be pinned to.
    pub eras: &'static [Era],
    /// Server variants worth a matrix row (the first is the default).
    pub server_variants: &'static [&'static str],
    /// Client variants worth a matrix row (the first is the default).
    pub client_variants: &'static [&'static str],
    /// Corpus traces its rows replay.
    pub corpus: Corpus,
}

/// The corpus traces the Go and Java rows replay: the stale-overwrite traces (clients) and the
/// torn-cursor and removed-tool traces (servers), which an SDK can follow to their end.
const CORE_TRACES: &[&str] = &[
    "naive.json",
    "request-id-guard.json",
    "offset-cursor.json",
    "stale-dispatch.json",
];

const BOTH: &[Era] = &Era::ALL;
const LEGACY: &[Era] = &[Era::V2025_11_25];

static SPECS: [AdapterSpec; 8] = [
    AdapterSpec {
        name: "reference",
        provisioned: false,
        needs: &[],
        install: "",
        eras: BOTH,
        server_variants: &["reference"],
        client_variants: &["reference"],
        corpus: Corpus::All,
    },
    AdapterSpec {
        name: "rmcp",
        provisioned: false,
        needs: &[],
        install: "",
        eras: BOTH,
        server_variants: &["router"],
        client_variants: &["list-all"],
        corpus: Corpus::All,
    },
    AdapterSpec {
        name: "ts-v1",
        provisioned: true,
        needs: &["node"],
        install: "Node.js >= 20 and npm",
        eras: LEGACY,
        server_variants: &["mcpserver", "mcpserver-coalesced", "lowlevel"],
        client_variants: &["listchanged", "listchanged-debounce0"],
        corpus: Corpus::All,
    },
    AdapterSpec {
        name: "ts-v2",
        provisioned: true,
        needs: &["node"],
        install: "Node.js >= 20 and npm",
        eras: BOTH,
        server_variants: &["mcpserver", "lowlevel"],
        client_variants: &["listchanged", "listchanged-debounce0"],
        corpus: Corpus::All,
    },
    AdapterSpec {
        name: "python",
        provisioned: true,
        needs: &["python3"],
        install: "Python >= 3.10 with venv",
        eras: BOTH,
        server_variants: &["mcpserver", "lowlevel"],
        client_variants: &["session", "client"],
        corpus: Corpus::All,
    },
    AdapterSpec {
        name: "go-sdk",
        provisioned: true,
        needs: &["go"],
        install: "Go >= 1.25",
        eras: BOTH,
        server_variants: &["addtool"],
        client_variants: &["handler", "channel"],
        corpus: Corpus::Only(CORE_TRACES),
    },
    AdapterSpec {
        name: "mcp-go",
        provisioned: true,
        needs: &["go"],
        install: "Go >= 1.25",
        eras: BOTH,
        server_variants: &["addtool", "settools"],
        client_variants: &["onnotification"],
        corpus: Corpus::Only(CORE_TRACES),
    },
    AdapterSpec {
        name: "java",
        provisioned: true,
        needs: &["java", "javac", "mvn"],
        install: "a JDK >= 17 and Maven",
        eras: LEGACY,
        server_variants: &["sync"],
        client_variants: &["sync", "async"],
        corpus: Corpus::Only(CORE_TRACES),
    },
];

impl Impl {
    /// Every implementation, in report order.
    pub const ALL: [Impl; 8] = [
        Impl::Reference,
        Impl::Rmcp,
        Impl::TsV1,
        Impl::TsV2,
        Impl::Python,
        Impl::GoSdk,
        Impl::McpGo,
        Impl::Java,
    ];

    /// The adapter's data (the one per-adapter table).
    pub fn spec(self) -> &'static AdapterSpec {
        &SPECS[self as usize]
    }

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        self.spec().name
    }

    /// Whether it is installed by `provision.sh`.
    pub fn provisioned(self) -> bool {
        self.spec().provisioned
    }

    /// Eras the implementation can be pinned to.
    pub fn eras(self) -> &'static [Era] {
        self.spec().eras
    }

    /// The adapter variants of a role worth a matrix row (the first is the default).
    pub fn variants(self, role: Role) -> &'static [&'static str] {
        match role {
            Role::Server => self.spec().server_variants,
            Role::Client => self.spec().client_variants,
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
                let names: Vec<&str> = Impl::ALL.iter().map(|i| i.as_str()).collect();
                format!("unknown implementation '{s}' ({})", names.join(", "))
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

/// Installs (once per process) a third-party adapter with `provision.sh`.
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
    let spec = imp.spec();
    if let Some(missing) = spec.needs.iter().find(|p| which(p).is_none()) {
        return Err(format!(
            "{imp} adapters need `{missing}` on PATH, and it is not installed: install {}, or set LISTSYNC_HARNESS_SKIP_SDKS=1 to skip the third-party SDK rows",
            spec.install
        ));
    }
    let cache = paths
        .cache
        .clone()
        .unwrap_or_else(|| paths.repo.join(".cache/adapters"))
        .join(imp.as_str());
    if !cache.join("launch.json").is_file() {
        tracing::warn!(
            "provisioning the {imp} adapter (first run: installs its pinned packages into {}; up to a minute)...",
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
    /// (reference) Walk versions the server keeps serving to their end (`serve
    /// --retain-versions`); `None`: its default.
    pub retain_versions: Option<u8>,
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
            if let Some(r) = s.retain_versions {
                a.push("--retain-versions".into());
                a.push(r.to_string());
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
    fn every_impl_has_its_own_spec() {
        for imp in Impl::ALL {
            let serde_name = serde_json::to_value(imp).unwrap();
            assert_eq!(serde_name, imp.as_str(), "SPECS is out of order at {imp:?}");
            assert_eq!(imp.as_str().parse::<Impl>().unwrap(), imp);
            assert!(
                !imp.variants(Role::Server).is_empty() && !imp.variants(Role::Client).is_empty()
            );
            assert_eq!(imp.provisioned(), !imp.spec().needs.is_empty());
        }
        assert!("go-sdk:client@channel".parse::<Subject>().is_ok());
        assert!("java:server@async".parse::<Subject>().is_err());
    }

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
