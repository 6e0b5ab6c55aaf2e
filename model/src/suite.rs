//! A model-check run over named configurations, and its document: [`SuiteReport`] is what
//! `listsync check` writes as `model-check.json` and what `listsync report` renders, one typed
//! schema for both. Also the counterexample files a run leaves behind (one trace per violated
//! property), the generated table of `model/README.md`, and the committed corpus of shortest
//! counterexamples (`traces/`).

use crate::configs::{self, Config};
use crate::progress::Progress;
use crate::{CheckResult, Search, check_bounded};
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::situation::Situation;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Instant;

/// The document of one `listsync check` run (`model-check.json`).
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SuiteReport {
    /// Tool and version that wrote it.
    pub tool: String,
    /// One entry per configuration, in run order.
    pub configs: Vec<ConfigReport>,
    /// Sum of unique states.
    pub total_unique_states: u64,
    /// Wall time of the whole run.
    pub total_seconds: f64,
    /// Whether every verdict was the expected one.
    pub all_as_expected: bool,
}

/// One configuration's result.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ConfigReport {
    /// Name.
    pub name: String,
    /// What it shows.
    pub about: String,
    /// Protocol era.
    pub era: String,
    /// Client and server strategy names.
    pub strategies: crate::StrategyNames,
    /// Search used.
    pub search: Search,
    /// Unique states.
    pub unique_states: u64,
    /// Deepest path.
    pub max_depth: u64,
    /// Wall time.
    pub seconds: f64,
    /// Unique states per second of wall time.
    pub states_per_second: f64,
    /// Peak resident memory of the process while this configuration was checked, progress pass
    /// included (Linux only; see [`crate::memory`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_memory_bytes: Option<u64>,
    /// Whether the whole state space was explored (false: `--max-states` stopped it; then
    /// "holds" means no violation among the states explored, and progress was not judged).
    pub exhaustive: bool,
    /// What stopped it, when not `--max-states`: `--max-memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    /// Per property: verdict and counterexample.
    pub properties: BTreeMap<Property, PropertyReport>,
    /// Expected verdicts.
    pub expected: Verdicts,
    /// The situations it must reach, how many unique states were in each, and the depth of the
    /// first.
    #[serde(default)]
    pub situations: BTreeMap<Situation, SituationReport>,
    /// The progress check: whether quiescence stays reachable from every state.
    #[serde(default)]
    pub progress: Progress,
    /// Whether the verdicts were the expected ones, every situation was reached and quiescence
    /// stays reachable from every state (where judged: not in a bounded exploration).
    pub as_expected: bool,
}

/// How a required situation was reached.
#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
pub struct SituationReport {
    /// Unique states in it (0: unreached, which fails the configuration).
    pub states: u64,
    /// Steps to the first state found in it (breadth-first: a shallowest one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
}

impl ConfigReport {
    /// The required situations no state reached.
    pub fn unreached(&self) -> Vec<Situation> {
        self.situations
            .iter()
            .filter(|(_, r)| r.states == 0)
            .map(|(s, _)| *s)
            .collect()
    }
}

impl ConfigReport {
    /// Whether both strategies are `reference`.
    pub fn is_reference(&self) -> bool {
        self.strategies.client == "reference" && self.strategies.server == "reference"
    }
}

/// One property's verdict.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PropertyReport {
    /// Verdict.
    pub verdict: Verdict,
    /// Counterexample length, when violated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// Counterexample trace file name (in the run's `traces/` directory), when violated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
}

impl SuiteReport {
    /// Every violation: (config, property, trace file name).
    pub fn violations(&self) -> Vec<(String, Property, String)> {
        let mut v = Vec::new();
        for c in &self.configs {
            for (p, r) in &c.properties {
                if r.verdict == Verdict::Violated
                    && let Some(f) = &r.trace
                {
                    v.push((c.name.clone(), *p, f.clone()));
                }
            }
        }
        v
    }
}

/// `earlier` with the configurations of `run` in place of its entries of the same name (new
/// ones appended), the totals summed again; `run` alone if there is nothing earlier.
pub fn merge(earlier: Option<SuiteReport>, run: SuiteReport) -> SuiteReport {
    let Some(mut m) = earlier else {
        return run;
    };
    for c in run.configs {
        match m.configs.iter_mut().find(|x| x.name == c.name) {
            Some(x) => *x = c,
            None => m.configs.push(c),
        }
    }
    m.tool = run.tool;
    m.total_unique_states = m.configs.iter().map(|c| c.unique_states).sum();
    m.total_seconds = m
        .configs
        .iter()
        .map(|c| c.seconds + c.progress.seconds)
        .sum();
    m.all_as_expected = m.configs.iter().all(|c| c.as_expected);
    m
}

/// The configurations named, or why not. With no name, the default suite, or with `deep` the
/// deep suite; a name is looked up in both.
pub fn select(names: &[String], deep: bool) -> Result<Vec<Config>, String> {
    if names.is_empty() {
        return Ok(if deep {
            configs::deep()
        } else {
            configs::all()
        });
    }
    let all: Vec<Config> = configs::all().into_iter().chain(configs::deep()).collect();
    names
        .iter()
        .map(|name| {
            all.iter()
                .find(|c| c.name() == name)
                .cloned()
                .ok_or_else(|| {
                    let known: Vec<_> = all.iter().map(|c| c.name().to_owned()).collect();
                    format!(
                        "unknown configuration '{name}'; known: {}",
                        known.join(", ")
                    )
                })
        })
        .collect()
}

/// A finished run: the document and each configuration's full result (with its traces).
pub struct SuiteRun {
    /// The configurations run.
    pub configs: Vec<Config>,
    /// Their results, in the same order.
    pub results: Vec<CheckResult>,
    /// The document.
    pub report: SuiteReport,
}

/// Checks every configuration of `selected` with `threads` checker threads, each exhaustively
/// or, with `max_states`, until it has generated that many states ([`crate::check_bounded`]).
/// `progress` hears (configuration, unique states so far, seconds so far) while each one runs.
pub fn run(
    selected: Vec<Config>,
    threads: usize,
    max_states: Option<usize>,
    progress: &mut dyn FnMut(&str, usize, f64),
) -> SuiteRun {
    let started = Instant::now();
    let mut results = Vec::new();
    let mut peaks = Vec::new();
    for c in &selected {
        let name = c.name().to_owned();
        crate::memory::reset_peak();
        results.push(check_bounded(
            &c.scenario,
            c.search,
            c.situations,
            threads,
            max_states,
            &mut |states, secs| progress(&name, states, secs),
        ));
        peaks.push(crate::memory::peak_bytes());
    }
    let total_seconds = started.elapsed().as_secs_f64();
    let configs: Vec<ConfigReport> = selected
        .iter()
        .zip(&results)
        .zip(peaks)
        .map(|((c, r), peak)| config_report(c, r, peak))
        .collect();
    let report = SuiteReport {
        tool: concat!("listsync ", env!("CARGO_PKG_VERSION")).into(),
        total_unique_states: results.iter().map(|r| r.unique_states as u64).sum(),
        total_seconds,
        all_as_expected: configs.iter().all(|c| c.as_expected),
        configs,
    };
    SuiteRun {
        configs: selected,
        results,
        report,
    }
}

/// The trace file name of a configuration's counterexample of `p`.
pub fn trace_file(config: &str, p: Property) -> String {
    format!("{config}.{p}.json")
}

fn config_report(c: &Config, r: &CheckResult, peak_memory_bytes: Option<u64>) -> ConfigReport {
    let properties = r
        .verdicts
        .iter()
        .map(|(p, v)| {
            let cx = r
                .counterexamples
                .iter()
                .find(|x| x.property == *p)
                .filter(|_| *v == Verdict::Violated);
            (
                *p,
                PropertyReport {
                    verdict: *v,
                    depth: cx.map(|x| x.depth as u64),
                    trace: cx.map(|_| trace_file(c.name(), *p)),
                },
            )
        })
        .collect();
    let situations: BTreeMap<Situation, SituationReport> = r
        .situations
        .iter()
        .map(|x| {
            (
                x.situation,
                SituationReport {
                    states: x.states,
                    depth: x.depth.map(|d| d as u64),
                },
            )
        })
        .collect();
    let reached = situations.values().all(|x| x.states > 0);
    ConfigReport {
        situations,
        progress: r.progress.clone(),
        name: c.name().to_owned(),
        about: c.about.to_owned(),
        era: r.era.clone(),
        strategies: r.strategies.clone(),
        search: r.search,
        unique_states: r.unique_states as u64,
        max_depth: r.max_depth as u64,
        seconds: r.seconds,
        states_per_second: r.unique_states as f64 / r.seconds.max(1e-9),
        peak_memory_bytes,
        exhaustive: r.exhaustive,
        stopped: r.stopped.clone(),
        properties,
        expected: c.expected(),
        as_expected: r.verdicts == c.expected() && reached && r.progress.holds(),
    }
}

impl SuiteRun {
    /// Writes every counterexample under `dir` (named by [`trace_file`]), after removing the
    /// traces a previous run of these configurations left there.
    pub fn write_traces(&self, dir: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(dir)?;
        for c in &self.configs {
            let prefix = format!("{}.", c.name());
            for entry in std::fs::read_dir(dir)?.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if name.starts_with(&prefix) && name.ends_with(".json") {
                    std::fs::remove_file(entry.path())?;
                }
            }
        }
        for (c, r) in self.configs.iter().zip(&self.results) {
            for x in &r.counterexamples {
                if r.verdicts.get(&x.property) == Some(&Verdict::Violated) {
                    let path = dir.join(trace_file(c.name(), x.property));
                    std::fs::write(&path, x.trace.to_json() + "\n")?;
                }
            }
        }
        Ok(())
    }

    /// Writes the shortest counterexample of each known-bad configuration (of its first
    /// expected violation) to `dir/<config>.json`: the committed corpus.
    pub fn write_corpus(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        for (c, r) in self.configs.iter().zip(&self.results) {
            let Some(primary) = c.violates.first() else {
                continue;
            };
            let Some(cx) = r.counterexamples.iter().find(|x| x.property == *primary) else {
                return Err(format!(
                    "{}: expected a counterexample of {primary}, found none",
                    c.name()
                ));
            };
            let path = dir.join(format!("{}.json", c.name()));
            std::fs::write(&path, cx.trace.to_json() + "\n")
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
        Ok(())
    }
}

const BEGIN: &str = "<!-- BEGIN GENERATED BY listsync check -->";
const END: &str = "<!-- END GENERATED BY listsync check -->";

/// Rewrites the table between the markers of the model README (if it has them) from a run of
/// the whole suite. Only what every run reproduces goes in (states and depth, not times), so an
/// unchanged model leaves the file byte for byte as it was. Returns whether it changed.
pub fn update_readme(path: &Path, r: &SuiteReport) -> std::io::Result<bool> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(false);
    };
    let (Some(b), Some(e)) = (text.find(BEGIN), text.find(END)) else {
        return Ok(false);
    };
    if e < b {
        return Ok(false);
    }
    let mut t = String::new();
    let _ = writeln!(
        t,
        "| config | era | client | server | what it shows | unique states | depth | expected violations |"
    );
    let _ = writeln!(t, "|---|---|---|---|---|---:|---:|---|");
    for c in &r.configs {
        let violated: Vec<_> = c
            .expected
            .iter()
            .filter(|(_, v)| **v == Verdict::Violated)
            .map(|(p, _)| format!("`{p}`"))
            .collect();
        let _ = writeln!(
            t,
            "| `{}` | {} | {} | {} | {} | {} | {} | {} |",
            c.name,
            c.era,
            c.strategies.client,
            c.strategies.server,
            c.about,
            c.unique_states,
            c.max_depth,
            if violated.is_empty() {
                "none: every applicable property holds".into()
            } else {
                violated.join(", ")
            }
        );
    }
    let new = format!("{}{BEGIN}\n{t}{}", &text[..b], &text[e..]);
    if new == text {
        return Ok(false);
    }
    std::fs::write(path, new)?;
    Ok(true)
}
