//! The trace schema: a versioned JSON document holding one scenario, the ordered steps of one
//! run of it, and the expected verdict of every property at the end. The model exports every
//! counterexample as a trace, the simulator exports its shrunk failures as traces, and the
//! harness replays traces against real implementations. See `docs/trace-format.md`.
//!
//! Reading a trace never panics: malformed JSON, an unknown format or version, an invalid
//! scenario or a step that is impossible where it stands all come back as a [`TraceError`]
//! that says what and where.

use crate::client::CatalogClient;
use crate::history::ClientId;
use crate::machine::ClientMachine;
use crate::monitor::Monitor;
use crate::property::{Property, Verdict, Verdicts};
use crate::record::Log;
use crate::scenario::Scenario;
use crate::shared::Shared;
use crate::tape::{ClientTape, Taped, TapedClient};
use crate::vocab::{AuthCtx, Kind};
use crate::world::{Step, World};
use serde::{Deserialize, Serialize};
use std::any::{TypeId, type_name};
use std::fmt::Write as _;
use std::sync::Arc;

/// The `format` field of every trace.
pub const TRACE_FORMAT: &str = "listsync-trace";
/// The trace schema version this code writes.
pub const TRACE_VERSION: u32 = 1;
/// Largest trace file accepted (bytes).
pub const MAX_TRACE_BYTES: usize = 64 << 20;
/// Most steps accepted in one trace.
pub const MAX_TRACE_STEPS: usize = 1_000_000;

/// A trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Trace {
    /// Always [`TRACE_FORMAT`].
    pub format: String,
    /// Schema version.
    pub version: u32,
    /// What produced it: `model`, `sim`, or a person.
    pub source: String,
    /// The world.
    pub scenario: Scenario,
    /// The run (at most [`MAX_TRACE_STEPS`], enforced while reading).
    #[serde(deserialize_with = "bounded_steps")]
    pub steps: Vec<Step>,
    /// Verdict of every property at the end of the run.
    pub expected: Verdicts,
    /// The property this trace is a counterexample of, if it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shows: Option<Property>,
    /// Human explanation of the violation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// Human-readable account of the run (informational; regenerated on replay).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub log: Vec<String>,
    /// The client machine that ran, when it is not listsync's own ([`CatalogClient`], the
    /// strategy the scenario names): the Rust type name of a [`ClientMachine`] written
    /// outside listsync. Its decisions are then in [`Trace::tapes`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// (with [`Trace::machine`]) What each client did, one tape per client in the order of
    /// the scenario's: replaying the trace plays them back ([`crate::tape`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tapes: Vec<ClientTape>,
}

/// Why a trace cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TraceError {
    /// Not JSON, or not a trace's shape.
    #[error("not a valid trace: {0}")]
    Json(String),
    /// Too large to be a trace.
    #[error("trace is {0} bytes; the limit is {MAX_TRACE_BYTES}")]
    TooLarge(u64),
    /// More steps than [`MAX_TRACE_STEPS`] (found while reading; the rest was not read).
    #[error("trace has more than {MAX_TRACE_STEPS} steps (the limit)")]
    TooManySteps,
    /// `format` is not `listsync-trace`.
    #[error("not a listsync trace (format is '{0}', expected '{TRACE_FORMAT}')")]
    Format(String),
    /// A schema version this code cannot read.
    #[error("trace schema version {0} is not supported (this build reads version {TRACE_VERSION})")]
    Version(u32),
    /// The scenario is inconsistent.
    #[error("invalid scenario: {0}")]
    Scenario(String),
    /// The trace was written by another client machine than the one asked to replay it, or
    /// names a machine outside listsync without the tapes to play it back.
    #[error("{0}")]
    Machine(String),
    /// A step cannot happen where it stands.
    #[error("step {index} ({step}) is not possible at that point of the run: {reason}")]
    Unreachable {
        /// Index of the step.
        index: usize,
        /// The step, as text.
        step: String,
        /// Why not.
        reason: String,
    },
    /// The replay's verdicts differ from the trace's expected verdicts.
    #[error("replay verdicts differ from the expected ones: {0}")]
    Mismatch(String),
}

/// The result of replaying a trace through the world.
#[derive(Debug)]
pub struct Replay {
    /// The property checker's state at the end.
    pub monitor: Shared<Monitor>,
    /// Whether the world ended quiescent.
    pub quiescent: bool,
    /// The (client, kind, auth) lists expected to equal the server's at the end.
    pub expectations: Vec<(ClientId, Kind, AuthCtx)>,
    /// What happened, step by step: (step index, or None before the first step; line).
    pub log: Vec<(Option<usize>, String)>,
    /// Every history event, in order.
    pub events: Vec<crate::history::Event>,
    /// Verdicts at the end.
    pub verdicts: Verdicts,
    /// Index of the first step after which each violated property was violated.
    pub first_violation: Vec<(Property, usize)>,
}

impl Trace {
    /// A new trace of `steps` in `scenario` run by listsync's own client machine, with
    /// verdicts computed by replaying it.
    pub fn record(
        source: &str,
        scenario: Scenario,
        steps: Vec<Step>,
        shows: Option<Property>,
    ) -> Result<Trace, TraceError> {
        Self::record_with::<CatalogClient>(source, scenario, steps, shows)
    }

    /// A new trace of `steps` in `scenario` run by client machine `C`, with verdicts computed
    /// by replaying it. For a machine other than listsync's own, the trace names it and holds
    /// its clients' tapes, so that it can be checked and replayed without `C`.
    pub fn record_with<C: ClientMachine>(
        source: &str,
        scenario: Scenario,
        steps: Vec<Step>,
        shows: Option<Property>,
    ) -> Result<Trace, TraceError> {
        let own = TypeId::of::<C>() == TypeId::of::<CatalogClient>();
        let mut t = Trace {
            format: TRACE_FORMAT.into(),
            version: TRACE_VERSION,
            source: source.into(),
            scenario,
            steps,
            expected: Verdicts::new(),
            shows,
            detail: None,
            log: Vec::new(),
            machine: None,
            tapes: Vec::new(),
        };
        let r = if own {
            t.replay()?
        } else {
            t.scenario.validate().map_err(TraceError::Scenario)?;
            let mut log = Log::default();
            let world = World::<Taped<C>>::start_recorded(&t.scenario, &mut log);
            let (r, world) = t.run(world, log, |_, _| None)?;
            t.machine = Some(type_name::<C>().to_owned());
            t.tapes = world.clients.iter().map(|c| c.tape()).collect();
            r
        };
        t.expected = r.verdicts.clone();
        t.detail = shows
            .and_then(|p| r.monitor.first_violation(p).map(str::to_owned))
            .or_else(|| {
                shows.and_then(|p| {
                    r.monitor
                        .check_quiescent(&r.expectations)
                        .into_iter()
                        .find(|(q, _)| *q == p)
                        .map(|(_, d)| d)
                })
            });
        t.log = r
            .log
            .iter()
            .map(|(i, l)| match i {
                Some(i) => format!("{i:>3} {l}"),
                None => format!("  - {l}"),
            })
            .collect();
        Ok(t)
    }

    /// Parses a trace, checking its format and version. The limits hold while reading: a text
    /// over [`MAX_TRACE_BYTES`] is refused before parsing, and parsing stops at the first step
    /// past [`MAX_TRACE_STEPS`]; no intermediate JSON tree is built.
    pub fn from_json(text: &str) -> Result<Trace, TraceError> {
        if text.len() > MAX_TRACE_BYTES {
            return Err(TraceError::TooLarge(text.len() as u64));
        }
        // Format and version first, so that another document or a future schema gets its own
        // error; the rest of the text is skipped without being stored.
        #[derive(Deserialize)]
        struct Header {
            #[serde(default)]
            format: Option<String>,
            #[serde(default)]
            version: Option<u64>,
        }
        let header: Header = match serde_json::from_str(text) {
            Ok(h) => h,
            Err(e) if e.classify() == serde_json::error::Category::Data => Header {
                format: None,
                version: None,
            },
            Err(e) => return Err(TraceError::Json(e.to_string())),
        };
        let format = header.format.unwrap_or_default();
        if format != TRACE_FORMAT {
            return Err(TraceError::Format(format));
        }
        match header.version.unwrap_or(0) {
            1 => {}
            v => return Err(TraceError::Version(u32::try_from(v).unwrap_or(u32::MAX))),
        }
        let t: Trace = serde_json::from_str(text).map_err(|e| {
            if e.to_string().starts_with(TOO_MANY_STEPS) {
                TraceError::TooManySteps
            } else {
                TraceError::Json(e.to_string())
            }
        })?;
        t.scenario.validate().map_err(TraceError::Scenario)?;
        Ok(t)
    }

    /// Serializes as pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a trace always serializes")
    }

    /// Replays the steps through the world, failing on the first impossible step. The clients
    /// run listsync's own machine, or, for a trace of a machine written outside listsync, play
    /// back their tapes ([`crate::tape`]; an input a tape does not hold next is an impossible
    /// step).
    pub fn replay(&self) -> Result<Replay, TraceError> {
        self.scenario.validate().map_err(TraceError::Scenario)?;
        let mut log = Log::default();
        match &self.machine {
            None => {
                let world = World::new_recorded(&self.scenario, &mut log);
                Ok(self.run(world, log, |_, _| None)?.0)
            }
            Some(_) => {
                let world = self.taped_world(&mut log)?;
                let diverged = |w: &World<TapedClient>, end: bool| {
                    w.clients.iter().find_map(|c| {
                        c.divergence()
                            .or_else(|| end.then(|| c.unplayed()).flatten())
                    })
                };
                Ok(self.run(world, log, diverged)?.0)
            }
        }
    }

    /// The initial world of a trace with tapes, each client playing its own.
    pub fn taped_world(&self, log: &mut Log) -> Result<World<TapedClient>, TraceError> {
        let name = self.machine.as_deref().unwrap_or("listsync's own");
        if self.tapes.len() != self.scenario.clients.len() {
            return Err(TraceError::Machine(format!(
                "the trace's clients ran machine {name}, built outside listsync, and it holds {} \
                 client tapes for {} clients: it cannot be replayed without that machine",
                self.tapes.len(),
                self.scenario.clients.len()
            )));
        }
        let tapes: Vec<Arc<ClientTape>> = self.tapes.iter().cloned().map(Arc::new).collect();
        Ok(World::start_with(&self.scenario, log, |id, cfg| {
            TapedClient::playing(id, cfg, tapes[id as usize].clone())
        }))
    }

    /// Replays the steps through client machine `C` itself (the crate that defines a machine
    /// checks its own traces this way): the trace must have been written by `C`.
    pub fn replay_with<C: ClientMachine>(&self) -> Result<Replay, TraceError> {
        let own = TypeId::of::<C>() == TypeId::of::<CatalogClient>();
        let wrote = self.machine.as_deref();
        if own != wrote.is_none() || wrote.is_some_and(|m| m != type_name::<C>()) {
            return Err(TraceError::Machine(format!(
                "the trace was written by client machine {}, not {}",
                wrote.unwrap_or("listsync's own (CatalogClient)"),
                type_name::<C>()
            )));
        }
        self.scenario.validate().map_err(TraceError::Scenario)?;
        let mut log = Log::default();
        let world = World::<C>::start_recorded(&self.scenario, &mut log);
        Ok(self.run(world, log, |_, _| None)?.0)
    }

    /// [`Trace::check`] through client machine `C` itself.
    pub fn check_with<C: ClientMachine>(&self) -> Result<Replay, TraceError> {
        let r = self.replay_with::<C>()?;
        self.compare(r)
    }

    /// Runs the steps from `world` (its start recorded in `log`), failing on the first
    /// impossible step or the first divergence `diverged` reports (asked after the start, after
    /// each step, and with `true` at the end).
    fn run<C: ClientMachine>(
        &self,
        mut world: World<C>,
        mut log: Log,
        diverged: impl Fn(&World<C>, bool) -> Option<String>,
    ) -> Result<(Replay, World<C>), TraceError> {
        if let Some(why) = diverged(&world, false) {
            return Err(TraceError::Machine(format!("at the start: {why}")));
        }
        let mut lines: Vec<(Option<usize>, String)> =
            log.lines.drain(..).map(|l| (None, l)).collect();
        let mut events = std::mem::take(&mut log.events);
        let mut first_violation: Vec<(Property, usize)> = Vec::new();
        for (index, step) in self.steps.iter().enumerate() {
            world
                .apply(&self.scenario, step, &mut log)
                .and_then(|()| {
                    let end = index + 1 == self.steps.len();
                    diverged(&world, end).map_or(Ok(()), Err)
                })
                .map_err(|reason| TraceError::Unreachable {
                    index,
                    step: step.to_string(),
                    reason,
                })?;
            lines.extend(log.lines.drain(..).map(|l| (Some(index), l)));
            events.append(&mut log.events);
            for p in Property::ALL {
                if !world.holds(p) && !first_violation.iter().any(|(q, _)| *q == p) {
                    first_violation.push((p, index));
                }
            }
        }
        if self.steps.is_empty()
            && let Some(why) = diverged(&world, true)
        {
            return Err(TraceError::Machine(format!("at the end: {why}")));
        }
        let verdicts = world.verdicts(&self.scenario);
        let replay = Replay {
            monitor: world.monitor.clone(),
            quiescent: world.quiescent(),
            expectations: world.expectations(),
            log: lines,
            events,
            verdicts,
            first_violation,
        };
        Ok((replay, world))
    }

    /// Replays and checks that the verdicts equal the expected ones. A property the trace names
    /// no verdict for (the trace was written before the property existed) is not compared: the
    /// trace says nothing about it.
    pub fn check(&self) -> Result<Replay, TraceError> {
        let r = self.replay()?;
        self.compare(r)
    }

    /// `r` if its verdicts equal the expected ones.
    fn compare(&self, r: Replay) -> Result<Replay, TraceError> {
        let mut diff = String::new();
        for p in Property::ALL {
            let Some(want) = self.expected.get(&p).copied() else {
                continue;
            };
            let got = r
                .verdicts
                .get(&p)
                .copied()
                .unwrap_or(Verdict::NotApplicable);
            if want != got {
                let _ = write!(
                    diff,
                    "{}{p}: expected {want}, replay gives {got}",
                    if diff.is_empty() { "" } else { "; " }
                );
            }
        }
        if diff.is_empty() {
            Ok(r)
        } else {
            Err(TraceError::Mismatch(diff))
        }
    }
}

/// The start of the deserializer's error for a trace with too many steps.
const TOO_MANY_STEPS: &str = "too many steps";

/// Deserializes the steps, failing at the first one past [`MAX_TRACE_STEPS`] (the rest of the
/// document is not read).
fn bounded_steps<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<Step>, D::Error> {
    struct Steps;
    impl<'de> serde::de::Visitor<'de> for Steps {
        type Value = Vec<Step>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            write!(f, "an array of at most {MAX_TRACE_STEPS} steps")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> Result<Vec<Step>, A::Error> {
            let mut steps = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
            while let Some(step) = seq.next_element::<Step>()? {
                if steps.len() == MAX_TRACE_STEPS {
                    return Err(serde::de::Error::custom(format!(
                        "{TOO_MANY_STEPS}: more than {MAX_TRACE_STEPS}"
                    )));
                }
                steps.push(step);
            }
            Ok(steps)
        }
    }
    d.deserialize_seq(Steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_rejected_with_a_reason() {
        assert!(matches!(Trace::from_json("{"), Err(TraceError::Json(_))));
        assert!(matches!(Trace::from_json("[]"), Err(TraceError::Format(_))));
        assert!(matches!(
            Trace::from_json(r#"{"format":"listsync-trace","version":99}"#),
            Err(TraceError::Version(99))
        ));
        assert!(matches!(
            Trace::from_json(r#"{"format":"listsync-trace","version":1,"steps":"x"}"#),
            Err(TraceError::Json(_))
        ));
    }

    #[test]
    fn a_client_config_written_before_pacing_existed_means_no_pacing() {
        use crate::client::{ClientConfig, Pacing};
        use crate::strategy::ClientStrategy;
        use crate::vocab::Era;
        let paced = ClientConfig {
            pacing: Pacing::default(),
            ..ClientConfig::tools(ClientStrategy::Reference, Era::V2025_11_25)
        };
        let mut json = serde_json::to_value(&paced).unwrap();
        json.as_object_mut().unwrap().remove("pacing");
        let old: ClientConfig = serde_json::from_value(json).unwrap();
        assert_eq!(old.pacing, Pacing::OFF);
        assert_eq!(
            ClientConfig {
                pacing: Pacing::default(),
                ..old
            },
            paced
        );
    }
}
