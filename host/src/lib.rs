//! listsync hosts under test (`listsync host`): runs a host — Claude Code, our own `stale` and
//! `careful` hosts, any program with a host manifest (docs/hosts.md) — against the scripted
//! model server ([`listsync_harness::hosts::model_server`]) following a host plan, with our
//! reference server (`listsync serve`, the plan's changes placed between model turns through
//! its admin socket and inside tool calls by a server script) recorded by `listsync record`.
//! Each run is judged twice from observation: by `listsync audit` (the MCP side) and by the host
//! properties of [`judge`] (the wire together with the offered lists).
//!
//! A crate of its own because it stands on the harness (model server, plans, manifests), the
//! session crate (log, wire reading, audit) and the runtime (the admin socket's client).

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod judge;
pub mod keep;
mod run;

use judge::{HostJudgement, HostProperty};
use listsync_harness::hosts::manifest::HostManifest;
use listsync_harness::hosts::plan::Plan;
use listsync_session::audit::{Audit, Status};
use serde::Serialize;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use run::run_once;

/// A host named on the command line, with its manifest.
#[derive(Clone, Debug)]
pub struct HostRef {
    /// The manifest.
    pub manifest: HostManifest,
    /// The manifest's file.
    pub file: PathBuf,
    /// The version to run (`{version}`), empty when the manifest pins none.
    pub version: String,
}

impl HostRef {
    /// `NAME[@VERSION]` (a directory of `hosts_dir` holding `host.toml`) or a manifest's path.
    pub fn find(spec: &str, hosts_dir: &Path) -> Result<HostRef, String> {
        let (name, version) = match spec.rsplit_once('@') {
            Some((n, v)) if !n.is_empty() => (n, Some(v.to_owned())),
            _ => (spec, None),
        };
        let file = if name.ends_with(".toml") {
            PathBuf::from(name)
        } else {
            hosts_dir.join(name).join("host.toml")
        };
        if !file.exists() {
            let mut known: Vec<String> = std::fs::read_dir(hosts_dir)
                .map(|d| {
                    d.filter_map(Result::ok)
                        .filter(|e| e.path().join("host.toml").exists())
                        .map(|e| e.file_name().to_string_lossy().into_owned())
                        .collect()
                })
                .unwrap_or_default();
            known.sort();
            return Err(format!(
                "{spec}: no host manifest {} (known hosts: {})",
                file.display(),
                known.join(", ")
            ));
        }
        let manifest = HostManifest::read(&file)?;
        let version = match version {
            Some(v) if manifest.versions.contains(&v) => v,
            Some(_) if manifest.versions.is_empty() => {
                return Err(format!(
                    "{spec}: {} pins no version (run it as {})",
                    file.display(),
                    manifest.name
                ));
            }
            Some(v) => {
                return Err(format!(
                    "{spec}: version {v} is not pinned in {} (pinned: {})",
                    file.display(),
                    manifest.versions.join(", ")
                ));
            }
            None => manifest.versions.first().cloned().unwrap_or_default(),
        };
        Ok(HostRef {
            manifest,
            file,
            version,
        })
    }

    /// `name@version` (or the name alone).
    pub fn label(&self) -> String {
        if self.version.is_empty() {
            self.manifest.name.clone()
        } else {
            format!("{}@{}", self.manifest.name, self.version)
        }
    }
}

/// Settings of `listsync host`.
#[derive(Clone, Debug)]
pub struct HostOptions {
    /// The listsync binary (`record`, `serve`, `own-host`).
    pub listsync: PathBuf,
    /// The hosts' directory (`harness/hosts`).
    pub hosts_dir: PathBuf,
    /// Where hosts are provisioned (`{cache}`).
    pub cache: PathBuf,
    /// Protocol era of the server.
    pub era: String,
    /// Runs per plan.
    pub repeat: usize,
    /// The offered list's allowed lag after a re-list, in model turns.
    pub catch_up: usize,
    /// Where each run's files go (`DIR/HOST/PLAN/N/`).
    pub out: PathBuf,
}

/// Why a host could not be run.
#[derive(Debug)]
pub enum HostError {
    /// A program it needs is missing: the run is skipped.
    Skipped(String),
    /// Provisioning or starting it failed.
    Failed(String),
}

impl std::error::Error for HostError {}

impl std::fmt::Display for HostError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostError::Skipped(s) => write!(f, "skipped: {s}"),
            HostError::Failed(s) => f.write_str(s),
        }
    }
}

/// One run of a host under a plan.
#[derive(Clone, Debug, Serialize)]
pub struct HostRun {
    /// 1-based.
    pub index: usize,
    /// Its files: session log, the model's recording, the host's output.
    pub dir: PathBuf,
    /// How the host ended.
    pub host_exit: String,
    /// Seconds it took.
    pub seconds: f64,
    /// The audit of the session log (the MCP side).
    pub audit: Audit,
    /// The host properties.
    pub judgement: HostJudgement,
    /// Requests to the model server that were no model turn (count).
    pub side_requests: usize,
    /// Paths the model server does not serve that the host asked for.
    pub other_paths: Vec<String>,
}

/// Every run of one host under one plan.
#[derive(Clone, Debug, Serialize)]
pub struct HostReport {
    /// `name@version`.
    pub host: String,
    /// The plan's name.
    pub plan: String,
    /// Its description.
    pub plan_description: String,
    /// The runs.
    pub runs: Vec<HostRun>,
}

/// How often each verdict came, over the runs.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq, Eq)]
pub struct Tally {
    /// Runs where it was violated.
    pub violated: usize,
    /// Runs where it held as observed.
    pub holds: usize,
    /// Runs where it was not observed (or the wire cannot show it).
    pub not_observed: usize,
}

impl Tally {
    /// `violated` if any run violated it, `holds` if any held, else `not observed`.
    pub fn status(&self) -> Status {
        if self.violated > 0 {
            Status::Violated
        } else if self.holds > 0 {
            Status::HoldsAsObserved
        } else {
            Status::NotObserved
        }
    }

    fn add(&mut self, s: Status) {
        match s {
            Status::Violated => self.violated += 1,
            Status::HoldsAsObserved => self.holds += 1,
            Status::NotObserved | Status::NotApplicable => self.not_observed += 1,
        }
    }
}

impl HostReport {
    /// The tally of a host property.
    pub fn tally(&self, p: HostProperty) -> Tally {
        let mut t = Tally::default();
        for r in &self.runs {
            if let Some(v) = r.judgement.verdicts.iter().find(|v| v.property == p) {
                t.add(v.status);
            }
        }
        t
    }

    /// The tally of an audit property (by core's name).
    pub fn audit_tally(&self, p: listsync_core::property::Property) -> Tally {
        let mut t = Tally::default();
        for r in &self.runs {
            t.add(r.audit.status(p));
        }
        t
    }

    /// Whether some run violated a host property or an audit property.
    pub fn violated(&self) -> bool {
        self.runs.iter().any(|r| {
            r.audit.violated()
                || r.judgement
                    .verdicts
                    .iter()
                    .any(|v| v.status == Status::Violated)
        })
    }
}

/// Runs `host` under `plan` `opts.repeat` times (provisioning it first).
pub fn run_host(host: &HostRef, plan: &Plan, opts: &HostOptions) -> Result<HostReport, HostError> {
    let provisioned = run::provision(host, opts)?;
    let mut runs = Vec::new();
    for i in 1..=opts.repeat.max(1) {
        let dir = opts
            .out
            .join(host.label().replace('@', "-"))
            .join(&plan.name)
            .join(i.to_string());
        runs.push(run_once(host, plan, opts, &provisioned, i, &dir)?);
    }
    Ok(HostReport {
        host: host.label(),
        plan: plan.name.clone(),
        plan_description: plan.description.clone(),
        runs,
    })
}

/// The report as text: per property the verdict and how often each came, the first
/// violation's detail, and the offered list per turn of a violating (else the first) run.
pub fn render(r: &HostReport) -> String {
    let mut s = String::new();
    let n = r.runs.len();
    let _ = writeln!(s, "host {} under plan {} ({n} run(s))", r.host, r.plan);
    let line = |s: &mut String, name: &str, t: Tally, detail: &str| {
        let _ = writeln!(
            s,
            "  {name:<26} {:<17} (violated {}/{n}, holds {}/{n}, not observed {}/{n}) {detail}",
            t.status().as_str(),
            t.violated,
            t.holds,
            t.not_observed
        );
    };
    for p in HostProperty::ALL {
        let t = r.tally(p);
        let detail = r
            .runs
            .iter()
            .filter_map(|x| x.judgement.verdicts.iter().find(|v| v.property == p))
            .find(|v| v.status == t.status())
            .map(|v| v.detail.clone())
            .unwrap_or_default();
        line(&mut s, p.as_str(), t, &detail);
    }
    let _ = writeln!(s, "  audit of the MCP side (listsync audit):");
    for p in listsync_core::property::Property::ALL {
        let t = r.audit_tally(p);
        if t.violated + t.holds == 0 {
            continue;
        }
        let detail = r
            .runs
            .iter()
            .flat_map(|x| x.audit.verdicts.iter())
            .find(|v| v.property == p && v.status == t.status())
            .map(|v| v.detail.clone())
            .unwrap_or_default();
        line(&mut s, p.as_str(), t, &detail);
    }
    let shown = r
        .runs
        .iter()
        .find(|x| {
            x.judgement
                .verdicts
                .iter()
                .any(|v| v.status == Status::Violated)
        })
        .or(r.runs.first());
    if let Some(x) = shown {
        let _ = writeln!(
            s,
            "  evidence, run {} ({}; host {}, {:.1} s):",
            x.index,
            x.dir.display(),
            x.host_exit,
            x.seconds
        );
        for t in &x.judgement.turns {
            let fwd = match t.forwarded {
                Some(true) => " -> forwarded",
                Some(false) => " -> not forwarded",
                None => "",
            };
            let res = t
                .result
                .as_ref()
                .map(|(e, text)| {
                    format!(
                        ", result {}{:?}",
                        if *e { "error " } else { "" },
                        text.chars().take(60).collect::<String>()
                    )
                })
                .unwrap_or_default();
            let _ = writeln!(
                s,
                "    turn {:>2} at {:>7.0} ms offered [{}] host's list [{}]: {}{fwd}{res}",
                t.turn,
                t.at_ms,
                t.offered.join(", "),
                t.listed
                    .as_ref()
                    .map(|l| l.join(", "))
                    .unwrap_or_else(|| "-".into()),
                t.model
            );
        }
        if x.side_requests > 0 || !x.other_paths.is_empty() {
            let _ = writeln!(
                s,
                "    side requests to the model: {}; other paths: {}",
                x.side_requests,
                if x.other_paths.is_empty() {
                    "none".into()
                } else {
                    x.other_paths.join(", ")
                }
            );
        }
    }
    s
}

/// One JUnit testcase per host × plan × property (audit properties the runs observed
/// included); failed when some run violated it, with how often.
pub fn junit(reports: &[HostReport]) -> listsync_render::junit::Suite {
    use listsync_render::junit::{Suite, TestCase, TestOutcome};
    let mut cases = Vec::new();
    for r in reports {
        let class = format!("host.{}.{}", r.host, r.plan);
        let mut push = |name: &str, t: Tally, detail: String| {
            let n = r.runs.len();
            let outcome = match t.status() {
                Status::Violated => TestOutcome::Failed {
                    message: format!("{name} violated in {}/{n} run(s)", t.violated),
                    detail,
                },
                Status::HoldsAsObserved => TestOutcome::Passed,
                _ => TestOutcome::Skipped {
                    message: format!("{name}: not observed in {n} run(s)"),
                },
            };
            cases.push(TestCase {
                class: class.clone(),
                name: name.to_owned(),
                seconds: 0.0,
                outcome,
            });
        };
        for p in HostProperty::ALL {
            let detail = r
                .runs
                .iter()
                .flat_map(|x| x.judgement.verdicts.iter())
                .find(|v| v.property == p && v.status == Status::Violated)
                .map(|v| v.detail.clone())
                .unwrap_or_default();
            push(p.as_str(), r.tally(p), detail);
        }
        for p in listsync_core::property::Property::ALL {
            let t = r.audit_tally(p);
            if t.violated + t.holds > 0 {
                push(&format!("audit.{}", p.as_str()), t, String::new());
            }
        }
    }
    Suite {
        name: "listsync host".into(),
        cases,
    }
}
