//! Trace replay against real implementations, in lockstep with a *shadow* [`World`] of the
//! trace's scenario.
//!
//! The shadow world says, before each `deliver` step, which abstract message is meant (which
//! request of the walk, which response, which notification); the harness finds the real held
//! message of the same shape (method, cursor or not, tool name; a response through the
//! real-id ↔ abstract-id map built as requests are released; a notification by method) and
//! releases it. `mutate` becomes a control `mutate` to the server adapter, `call` a client
//! `call`, `duplicate` / `drop` act on the held notification, `commit` releases the parked
//! commit of our `notify-before-commit` server (other servers commit by themselves).
//!
//! After every step the harness waits (bounded) until every message the shadow world has in
//! flight has a real counterpart, and until the client published (and the server dispatched)
//! as often as the shadow world did. A real message of a tracked shape that the shadow world
//! does not have in flight, or a predicted one that never comes, is a **divergence**: reported
//! with the message log; the run then continues freely (everything released) and its history
//! is still judged.
//!
//! Messages the model does not track pass straight through: the `initialize` handshake's
//! `notifications/initialized`, `ping`, logging, `server/discover`, `notifications/cancelled`,
//! lists and notifications of kinds the scenario's client does not keep, and requests from the
//! server to the client. Tracked: `initialize`, `subscriptions/listen`, `tools/call`, list
//! requests of kept kinds and every response to them, `list_changed` of kept kinds and
//! `notifications/subscriptions/acknowledged`.
//!
//! After the trace's last step the harness *drains*: it delivers what is still in flight, head
//! first (and commits a staged batch), until the shadow world is quiescent, then declares the
//! run quiescent. The verdicts to compare with are the shadow world's after the same drained
//! schedule (equal to the trace's own when the drain has nothing to do).
//!
//! Strategy substitution: against `reference`, the shadow world runs the reference strategy in
//! the role under test (or the variant asked for: `reference@naive:client`; `reference@trace`
//! keeps the trace's strategies), and a trace step that is impossible for it is skipped with a
//! note. Against a third-party SDK the shadow world keeps the trace's strategies: the question
//! is whether the SDK takes the same path.
//!
//! Files: [`planning`] resolves who plays which role with which strategy; [`matching`] says which
//! real held message is which of the shadow world's in-flight messages; [`progress`] counts what
//! each side did (publications, tool calls, client steps); [`lockstep`] carries out one step on
//! both sides and waits for the real side to catch up; this file drives a whole replay.

pub mod adversary;
mod lockstep;
mod matching;
mod planning;
mod pose;
mod progress;

pub use matching::tracked_policy;
pub use planning::{ReplayPlan, fixed_catalog, plan, trace_role, why_not_replayable};

use crate::adapters::{Paths, client_launch, server_launch};
use crate::jsonrpc;
use crate::outcome::{Outcome, RunReport, RunStatus, Target};
use crate::run::{Bounds, Run, RunConfig};
use crate::timeline::Fact;
use listsync_core::property::{Property, Verdicts};
use listsync_core::record::Log;
use listsync_core::world::World;
use lockstep::{Lockstep, Wait};
use std::collections::HashMap;
use std::time::Duration;

/// Replays a planned trace. Never panics; failures become a `failed` report.
pub async fn replay(plan: &ReplayPlan, paths: &Paths, bounds: Bounds) -> RunReport {
    let started = std::time::Instant::now();
    let mut report = RunReport::new(
        Target::Trace {
            name: plan.trace_name.clone(),
            shows: plan.trace.shows,
        },
        &plan.subject,
        plan.role,
        plan.scenario.era,
    );
    report.expected = Some(crate::outcome::as_judged(
        &plan.scenario,
        &plan.trace.expected,
    ));
    report.server = format!("{} ({})", plan.server.adapter.name, plan.server.variant);
    report.client = format!("{} ({})", plan.client.adapter.name, plan.client.variant);
    if let Some(why) = &plan.unsupported {
        report.status = RunStatus::Unsupported;
        report.detail = Some(why.clone());
        return report;
    }
    let adaptive = if follows_exactly(plan) {
        None
    } else {
        match adversary::schedule(&plan.trace) {
            Ok(s) => Some(s),
            Err(e) => {
                return report.failed(
                    format!("the trace cannot be posed adaptively: {e}"),
                    started,
                );
            }
        }
    };
    let launches = server_launch(paths, &plan.server)
        .and_then(|s| Ok((s, client_launch(paths, &plan.client)?)));
    let (server, client) = match launches {
        Ok(l) => l,
        Err(e) => return report.failed(e, started),
    };
    let kinds = plan.client.kinds;
    let cfg = RunConfig {
        server,
        client,
        policy: tracked_policy(kinds),
        probe_kinds: kinds,
        kinds,
        bounds,
    };
    let run = match Run::start(cfg).await {
        Ok(r) => r,
        Err(e) => return report.failed(e, started),
    };
    if let Err(e) = run.read_catalog("initial", None).await {
        let records = run.finish().await;
        report.attach(records, kinds);
        return report.failed(e, started);
    }
    let mut log = Log::default();
    let world = World::new_recorded(&plan.scenario, &mut log);
    run.fact(Fact::Step {
        index: None,
        step: "start".into(),
        model: log.lines.clone(),
    });
    let ls = Lockstep {
        plan,
        run,
        world,
        model_events: log.events,
        ids: HashMap::new(),
        kinds,
        commit_gate: None,
        exact: plan.client.adapter.runs_core && plan.server.adapter.runs_core,
        notifications_delivered: 0,
    };
    match adaptive {
        Some(schedule) => adapt(ls, &schedule, report, started).await,
        None => lockstep(ls, report, started).await,
    }
}

/// Whether a replay follows the trace's own steps exactly (our runtime running the trace's own
/// strategies: `reference@trace`, the matrix's validation runs) rather than posing the trace's
/// adversary to an implementation that makes its own choices.
pub fn follows_exactly(plan: &ReplayPlan) -> bool {
    planning::follows_exactly_in(&plan.subject)
}

/// An adaptive replay: the trace's adversary posed to the implementation ([`adversary`]).
async fn adapt(
    mut ls: Lockstep<'_>,
    schedule: &adversary::Schedule,
    mut report: RunReport,
    started: std::time::Instant,
) -> RunReport {
    let bounds = ls.run.bounds;
    let kinds = ls.kinds;
    // Start-up: the client process gets the start-up bound to show life.
    let alive = ls.client_alive().await;
    let posed = if alive {
        ls.pose(schedule).await
    } else {
        Err(format!(
            "the client sent nothing within {:?}",
            bounds.startup
        ))
    };
    // Then everything still held goes, oldest first, and the run settles.
    if posed.is_ok() {
        ls.drain().await;
    }
    if !ls.release_everything().await {
        ls.run
            .note("the run did not fall quiet within the settle bound");
    }
    match posed {
        Ok(p) => {
            report.status = RunStatus::Completed;
            report.notes.extend(p.skipped);
            report.race = Some(p.race);
        }
        Err(e) => {
            report.status = RunStatus::Failed;
            report.detail = Some(e);
        }
    }
    let Lockstep { run, plan, .. } = ls;
    let records = run.finish().await;
    report.attach(records, kinds);
    report.mask(&plan.scenario);
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// A lockstep replay: our runtime follows the trace's own steps; leaving them is an error.
async fn lockstep(
    mut ls: Lockstep<'_>,
    mut report: RunReport,
    started: std::time::Instant,
) -> RunReport {
    let plan = ls.plan;
    let bounds = ls.run.bounds;
    let kinds = ls.kinds;
    let mut diverged: Option<(Option<usize>, String)> = None;
    // Start-up: the client process gets the start-up bound to show life (its first message);
    // from then on a predicted message gets the usual step bound, so a client that takes
    // another path at start-up is reported as quickly as one that does so later.
    let alive = ls.client_alive().await;
    let first = if alive { bounds.step } else { Duration::ZERO };
    if let Wait::Diverged(e) = ls.sync(first).await {
        let e = if alive {
            e
        } else {
            format!("the client sent nothing within {:?}; {e}", bounds.startup)
        };
        diverged = Some((None, format!("at start-up: {e}")));
    }
    let mut skipped = Vec::new();
    if diverged.is_none() {
        for (i, step) in plan.trace.steps.iter().enumerate() {
            // A step impossible for a substituted strategy is skipped (checked on a copy).
            let mut probe = ls.world.clone();
            if let Err(reason) = probe.apply(&plan.scenario, step, &mut ()) {
                ls.run.fact(Fact::Skipped {
                    index: i,
                    step: step.to_string(),
                    reason: reason.clone(),
                });
                skipped.push(format!("step {i} ({step}): {reason}"));
                continue;
            }
            if let Err(e) = ls.step(Some(i), step).await {
                diverged = Some((Some(i), e));
                break;
            }
            if let Wait::Diverged(e) = ls.sync(bounds.step).await {
                diverged = Some((Some(i), e));
                break;
            }
        }
    }
    if diverged.is_none() {
        for _ in 0..64 {
            let Some(step) = ls.drain_step() else { break };
            if let Err(e) = ls.step(None, &step).await {
                diverged = Some((None, format!("draining: {e}")));
                break;
            }
            if let Wait::Diverged(e) = ls.sync(bounds.step).await {
                diverged = Some((None, format!("draining: {e}")));
                break;
            }
        }
    }
    let model_quiescent = ls.world.quiescent();
    if diverged.is_none() && !ls.exact {
        // A third-party implementation may still act on its own (timers): give it a
        // quiet period to show an unpredicted message.
        let settled = ls.run.settle().await;
        let extra = {
            let st = ls.run.hub.lock();
            st.held.first().map(|h| (h.seq, jsonrpc::summary(&h.json)))
        };
        if let Some((seq, s)) = extra {
            diverged = Some((
                None,
                format!("after the last step the implementation sent {s} (record {seq})"),
            ));
        } else if !settled {
            ls.run
                .note("the run did not fall quiet within the settle bound");
        }
    }
    if let Some((step, reason)) = &diverged {
        ls.run.fact(Fact::Divergence {
            step: *step,
            reason: reason.clone(),
        });
        // Continue freely: release everything, let it settle, judge what happened.
        ls.release_everything().await;
        report.status = RunStatus::Diverged;
        report.detail = Some(match step {
            Some(i) => format!("step {i}: {reason}"),
            None => reason.clone(),
        });
    } else {
        if model_quiescent {
            ls.run.fact(Fact::Quiescent {
                kinds: kinds.iter().collect(),
            });
        }
        report.status = RunStatus::Completed;
    }
    report.model = Some(crate::outcome::as_judged(
        &plan.scenario,
        &ls.world.verdicts(&plan.scenario),
    ));
    report.notes.extend(skipped);
    let Lockstep { run, .. } = ls;
    let records = run.finish().await;
    report.attach(records, kinds);
    report.mask(&plan.scenario);
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

/// Whether the judged verdicts equal the shadow world's (applicable properties only).
pub fn agrees(judged: &Verdicts, model: &Verdicts) -> bool {
    Property::ALL.iter().all(|p| judged.get(p) == model.get(p))
}

/// What `listsync replay` prints for one run that ran: the outcome (with the situations that
/// posed the race, the violated properties, or why the race was not posed), per property the
/// judged verdict beside the trace's, then each violation and note.
pub fn summary(report: &RunReport) -> Vec<String> {
    let cell = |v: Option<&listsync_core::property::Verdict>| {
        v.map(ToString::to_string).unwrap_or_else(|| "-".into())
    };
    let mut out = vec![format!("  {}", headline(report))];
    out.push(format!(
        "  {:<22} {:<9} {:<9}",
        "property", "judged", "trace"
    ));
    for prop in Property::ALL {
        out.push(format!(
            "  {:<22} {:<9} {:<9}",
            prop.as_str(),
            cell(report.judged.get(&prop)),
            cell(report.expected.as_ref().and_then(|m| m.get(&prop))),
        ));
    }
    for f in &report.violations {
        out.push(format!(
            "  violation {} (record {}): {}",
            f.property, f.record, f.detail
        ));
    }
    out.extend(report.notes.iter().map(|n| format!("  note: {n}")));
    out
}

/// One line: the outcome and what it rests on.
pub fn headline(report: &RunReport) -> String {
    let names = |s: &[listsync_core::situation::Situation]| {
        s.iter().map(|x| x.as_str()).collect::<Vec<_>>().join(", ")
    };
    let outcome = report.outcome();
    match outcome {
        Outcome::Violated => {
            let props: Vec<&str> = report
                .judged
                .iter()
                .filter(|(_, v)| **v == listsync_core::property::Verdict::Violated)
                .map(|(p, _)| p.as_str())
                .collect();
            format!("violated: {}", props.join(", "))
        }
        Outcome::Holds => match &report.race {
            Some(r) if !r.reached.is_empty() => {
                format!(
                    "holds: race posed ({}), every property held",
                    names(&r.reached)
                )
            }
            Some(_) => "holds: every adversary move carried out, every property held".into(),
            None => "holds: the trace followed exactly, every property held".into(),
        },
        Outcome::RaceNotPosed => format!(
            "race not posed: {}",
            report
                .race
                .as_ref()
                .and_then(|r| r.why.clone())
                .unwrap_or_default()
        ),
        Outcome::Error => format!(
            "error: {}",
            report
                .detail
                .clone()
                .unwrap_or_else(|| "the run failed".into())
        ),
        Outcome::NotApplicable => format!(
            "not applicable: {}",
            report.detail.clone().unwrap_or_default()
        ),
    }
}

/// The exit status of one replay: 1 when it violated a property or erred, 0 when it held or
/// cannot apply here; a race not posed is 0 (and said), or 1 with `require_race`.
pub fn exit_code(report: &RunReport, require_race: bool) -> u8 {
    match report.outcome() {
        Outcome::Holds | Outcome::NotApplicable => 0,
        Outcome::RaceNotPosed => u8::from(require_race),
        Outcome::Violated | Outcome::Error => 1,
    }
}
