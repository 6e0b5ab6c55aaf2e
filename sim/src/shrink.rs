//! Shrinking a failing run to a short trace, in two stages.
//!
//! 1. **Shape** (proptest): the run's shape is a proptest value tree; it is simplified knob by
//!    knob (fewer clients, batches, items, calls, faults; one page; stdio; 2025-11-25) with the
//!    seed fixed, keeping each simplification under which the property is still violated —
//!    proptest's own simplify/complicate loop.
//! 2. **Trace** (delta debugging): the smallest run's steps, cut right after the violation, are
//!    minimized by removing chunks and then single steps while the trace still replays through
//!    core's world and still violates the property; then the scenario itself loses what the
//!    trace no longer needs (clients, batches, ops, initial items, calls, authorization switches,
//!    item scopes, fault budgets; an add that replaces an item becomes an update), steps
//!    renumbered to match.
//!
//! The result is a [`Trace`] in the model's format, recorded by replay (`Trace::record`), so
//! `Trace::check` reproduces its verdicts.

use crate::case::{Params, Shape, ShapeTree};
use crate::engine::RunOpts;
use crate::{Case, plan::FaultPlan};
use listsync_core::client::CatalogClient;
use listsync_core::history::ClientId;
use listsync_core::machine::ClientMachine;
use listsync_core::property::Property;
use listsync_core::scenario::Scenario;
use listsync_core::trace::{Trace, TraceError};
use listsync_core::vocab::{Kind, Name, Op, Scope};
use listsync_core::world::{Step, World};
use proptest::strategy::ValueTree;
use std::marker::PhantomData;

/// Limits on shrinking work.
#[derive(Clone, Copy, Debug)]
pub struct ShrinkLimits {
    /// Most runs while shrinking the shape.
    pub shape_runs: u32,
    /// Most replays while minimizing the trace.
    pub replays: u32,
}

impl Default for ShrinkLimits {
    fn default() -> Self {
        ShrinkLimits {
            shape_runs: 400,
            replays: 20_000,
        }
    }
}

/// A shrunk failure.
#[derive(Clone, Debug)]
pub struct Shrunk {
    /// The property shown.
    pub property: Property,
    /// The seed that first showed it.
    pub seed: u64,
    /// The smallest shape found.
    pub shape: Shape,
    /// Steps of the original run up to the violation.
    pub original_steps: usize,
    /// The minimized trace.
    pub trace: Trace,
}

/// Whether running `shape` violates `p`.
fn shape_fails<C: ClientMachine>(shape: Shape, params: &Params, p: Property) -> bool {
    let case = Case::of(shape, params);
    case.run_machine::<C>(
        &params.plan,
        RunOpts {
            stop_on: Some(p),
            ..RunOpts::default()
        },
    )
    .violated(p)
}

/// Shrinks the failure of `p` seen with `seed`. None if the seed does not violate `p`.
pub fn shrink(seed: u64, params: &Params, p: Property, limits: ShrinkLimits) -> Option<Shrunk> {
    shrink_machine::<CatalogClient>(seed, params, p, limits)
}

/// [`shrink`] with the clients running machine `C`: the trace it writes names a machine built
/// outside listsync and holds its clients' tapes (`listsync_core::tape`).
pub fn shrink_machine<C: ClientMachine>(
    seed: u64,
    params: &Params,
    p: Property,
    limits: ShrinkLimits,
) -> Option<Shrunk> {
    let mut tree: ShapeTree = Shape::draw(seed, params);
    let first = tree.current();
    let original = Case::of(first, params);
    let out = original.run_machine::<C>(
        &params.plan,
        RunOpts {
            record: true,
            stop_on: Some(p),
            ..RunOpts::default()
        },
    );
    let found = out.found.iter().find(|f| f.property == p)?;
    let original_steps = found.after_steps as usize;

    // Stage 1: proptest shrinking of the shape.
    let mut best = first;
    let mut runs = 0;
    if tree.simplify() {
        loop {
            runs += 1;
            if runs > limits.shape_runs {
                break;
            }
            let cur = tree.current();
            if shape_fails::<C>(cur, params, p) {
                best = cur;
                if !tree.simplify() {
                    break;
                }
            } else if !tree.complicate() {
                break;
            }
        }
    }

    // The smallest run's steps, up to the violation.
    let case = Case::of(best, params);
    let out = case.run_machine::<C>(
        &params.plan,
        RunOpts {
            record: true,
            stop_on: Some(p),
            ..RunOpts::default()
        },
    );
    let found = out.found.iter().find(|f| f.property == p)?;
    let mut steps = out.recording?.steps;
    steps.truncate(found.after_steps as usize);

    // Stage 2: minimize the trace and the scenario.
    let mut m = Minimizer::<C> {
        p,
        replays: 0,
        limit: limits.replays,
        machine: PhantomData,
    };
    let mut scn = case.scenario.clone();
    if m.attempt(&scn, &steps).is_none() {
        // Cannot happen: the run's own steps replay. Keep the unminimized trace.
        return record::<C>(p, seed, best, original_steps, scn, steps);
    }
    for _ in 0..4 {
        let before = (steps.len(), size(&scn));
        steps = m.shortest_prefix(&scn, steps);
        steps = m.ddmin(&scn, steps);
        (scn, steps) = m.reduce_scenario(scn, steps);
        if (steps.len(), size(&scn)) == before || m.exhausted() {
            break;
        }
    }
    scn.faults = used_faults::<C>(&scn, &steps);
    scn.name = format!("{}-{}", scn.name, p.as_str());
    record::<C>(p, seed, best, original_steps, scn, steps)
}

fn record<C: ClientMachine>(
    p: Property,
    seed: u64,
    shape: Shape,
    original_steps: usize,
    scn: Scenario,
    steps: Vec<Step>,
) -> Option<Shrunk> {
    let trace = Trace::record_with::<C>("sim", scn, steps, Some(p)).ok()?;
    Some(Shrunk {
        property: p,
        seed,
        shape,
        original_steps,
        trace,
    })
}

/// A rough size of a scenario, to see whether a round made progress.
fn size(s: &Scenario) -> usize {
    s.clients.len()
        + s.script.iter().map(|b| 1 + b.len()).sum::<usize>()
        + s.initial.len()
        + s.calls.len()
        + s.auth_changes.len()
}

/// The fault budgets a trace actually uses.
fn used_faults<C: ClientMachine>(
    scn: &Scenario,
    steps: &[Step],
) -> listsync_core::scenario::Faults {
    let mut w = World::<C>::start(scn);
    for s in steps {
        let _ = w.apply(scn, s, &mut ());
    }
    listsync_core::scenario::Faults {
        duplicate: w.used[0],
        drop: w.used[1],
        disconnect: w.used[2],
        call_error: w.used[3],
        list_error: w.used[4],
    }
}

struct Minimizer<C> {
    p: Property,
    replays: u32,
    limit: u32,
    machine: PhantomData<fn() -> C>,
}

impl<C: ClientMachine> Minimizer<C> {
    fn exhausted(&self) -> bool {
        self.replays >= self.limit
    }

    /// Whether `steps` (less those that became impossible) replay in `scn` and end with `p`
    /// violated — after completing them, for a quiescence property, with a canonical drain (deliver what is in flight, fire armed
    /// timers, reconnect cut clients) until the world is quiescent. Returns the completed steps.
    fn attempt(&mut self, scn: &Scenario, steps: &[Step]) -> Option<Vec<Step>> {
        self.replays += 1;
        scn.validate().ok()?;
        let mut w = World::<C>::start(scn);
        // Lenient: a step that removing others made impossible is skipped (a delivery of a
        // message that was never sent, say), so what is kept always replays.
        let mut done = Vec::with_capacity(steps.len());
        for s in steps {
            if w.apply(scn, s, &mut ()).is_ok() {
                done.push(s.clone());
            }
        }
        if !w.holds(self.p) {
            return Some(done);
        }
        if !self.p.judged_at_rest() {
            return None;
        }
        drain(scn, &mut w, &mut done, 4 * steps.len() + 64)?;
        (!w.holds(self.p)).then_some(done)
    }

    /// Tries `cand`; keeps it (completed) if it violates and is shorter than `steps`.
    fn improve(&mut self, scn: &Scenario, cand: &[Step], steps: &mut Vec<Step>) -> bool {
        match self.attempt(scn, cand) {
            Some(done) if done.len() < steps.len() => {
                *steps = done;
                true
            }
            _ => false,
        }
    }

    /// The shortest prefix that, completed, still violates.
    fn shortest_prefix(&mut self, scn: &Scenario, mut steps: Vec<Step>) -> Vec<Step> {
        let mut k = 0;
        while k < steps.len() && !self.exhausted() {
            let cand = steps[..k].to_vec();
            if self.improve(scn, &cand, &mut steps) {
                break;
            }
            k += 1;
        }
        steps
    }

    /// Delta debugging over the steps: remove chunks, halving their size, then single steps.
    fn ddmin(&mut self, scn: &Scenario, mut steps: Vec<Step>) -> Vec<Step> {
        let mut n = 2usize;
        while steps.len() >= 2 && !self.exhausted() {
            let chunk = steps.len().div_ceil(n);
            let mut removed = false;
            let mut start = 0;
            while start < steps.len() {
                let end = (start + chunk).min(steps.len());
                let mut cand = steps[..start].to_vec();
                cand.extend_from_slice(&steps[end..]);
                if self.improve(scn, &cand, &mut steps) {
                    removed = true;
                } else {
                    start = end;
                }
                if self.exhausted() {
                    return steps;
                }
            }
            if removed {
                n = n.saturating_sub(1).max(2);
            } else if chunk <= 1 {
                break;
            } else {
                n = (n * 2).min(steps.len());
            }
        }
        steps
    }

    /// Removes from the scenario what the steps do not need, renumbering steps to match.
    fn reduce_scenario(
        &mut self,
        mut scn: Scenario,
        mut steps: Vec<Step>,
    ) -> (Scenario, Vec<Step>) {
        // Batches.
        for b in (0..scn.script.len()).rev() {
            if self.exhausted() {
                break;
            }
            let (s2, st2) = without_batch(&scn, &steps, b);
            if let Some(done) = self.attempt(&s2, &st2) {
                scn = s2;
                steps = done;
            }
        }
        // Ops inside batches, and initial items.
        for b in 0..scn.script.len() {
            let mut i = 0;
            while i < scn.script[b].len() && !self.exhausted() {
                let mut s2 = scn.clone();
                s2.script[b].remove(i);
                if let Some(done) = self.attempt(&s2, &steps) {
                    scn = s2;
                    steps = done;
                } else {
                    i += 1;
                }
            }
        }
        let mut i = 0;
        while i < scn.initial.len() && !self.exhausted() {
            let mut s2 = scn.clone();
            s2.initial.remove(i);
            if let Some(done) = self.attempt(&s2, &steps) {
                scn = s2;
                steps = done;
            } else {
                i += 1;
            }
        }
        // Calls and authorization switches.
        for c in (0..scn.calls.len()).rev() {
            if self.exhausted() {
                break;
            }
            let (s2, st2) = without_call(&scn, &steps, c);
            if let Some(done) = self.attempt(&s2, &st2) {
                scn = s2;
                steps = done;
            }
        }
        for a in (0..scn.approvals.len()).rev() {
            if self.exhausted() {
                break;
            }
            let (s2, st2) = without_approval(&scn, &steps, a);
            if let Some(done) = self.attempt(&s2, &st2) {
                scn = s2;
                steps = done;
            }
        }
        for a in (0..scn.auth_changes.len()).rev() {
            if self.exhausted() {
                break;
            }
            let (s2, st2) = without_auth_change(&scn, &steps, a);
            if let Some(done) = self.attempt(&s2, &st2) {
                scn = s2;
                steps = done;
            }
        }
        // Scoped items made public: without authorization contexts a trace also replays in
        // the harness, which runs stdio.
        for b in 0..=scn.script.len() {
            let len = if b == 0 {
                scn.initial.len()
            } else {
                scn.script[b - 1].len()
            };
            for i in 0..len {
                if self.exhausted() {
                    break;
                }
                let mut s2 = scn.clone();
                let op = if b == 0 {
                    &mut s2.initial[i]
                } else {
                    &mut s2.script[b - 1][i]
                };
                let Op::Add { scope, .. } = op else {
                    continue;
                };
                if *scope == Scope::Public {
                    continue;
                }
                *scope = Scope::Public;
                if let Some(done) = self.attempt(&s2, &steps) {
                    scn = s2;
                    steps = done;
                }
            }
        }
        // An add that replaces an item becomes an update: the same change, in the words a
        // server's administration interface (the harness's control channel) accepts.
        for b in 0..scn.script.len() {
            for i in 0..scn.script[b].len() {
                if self.exhausted() {
                    break;
                }
                let Op::Add {
                    kind,
                    name,
                    def,
                    scope: Scope::Public,
                } = &scn.script[b][i]
                else {
                    continue;
                };
                if !present_before(&scn, b, i, *kind, name) {
                    continue;
                }
                let mut s2 = scn.clone();
                s2.script[b][i] = Op::Update {
                    kind: *kind,
                    name: name.clone(),
                    def: def.clone(),
                };
                if let Some(done) = self.attempt(&s2, &steps) {
                    scn = s2;
                    steps = done;
                }
            }
        }
        // Clients (highest first, so ids below stay put).
        for k in (0..scn.clients.len()).rev() {
            if scn.clients.len() <= 1 || self.exhausted() {
                break;
            }
            if let Some((s2, st2)) = without_client(&scn, &steps, k as ClientId)
                && let Some(done) = self.attempt(&s2, &st2)
            {
                scn = s2;
                steps = done;
            }
        }
        // Watched resources and simpler pages.
        for c in 0..scn.clients.len() {
            if !scn.clients[c].watch.is_empty() {
                let mut s2 = scn.clone();
                s2.clients[c].watch.clear();
                if let Some(done) = self.attempt(&s2, &steps) {
                    scn = s2;
                    steps = done;
                }
            }
        }
        (scn, steps)
    }
}

/// Whether item `name` of `kind` exists when op `i` of batch `b` is applied.
fn present_before(scn: &Scenario, b: usize, i: usize, kind: Kind, name: &Name) -> bool {
    let ops = scn
        .initial
        .iter()
        .chain(scn.script[..b].iter().flatten())
        .chain(&scn.script[b][..i]);
    let mut present = false;
    for op in ops {
        match op {
            Op::Add {
                kind: k, name: n, ..
            } if *k == kind && n == name => present = true,
            Op::Remove { kind: k, name: n } if *k == kind && n == name => present = false,
            _ => {}
        }
    }
    present
}

/// The client a step concerns, if any.
fn step_client(s: &Step) -> Option<ClientId> {
    match s {
        Step::Deliver { client, .. }
        | Step::Duplicate { client, .. }
        | Step::Drop { client, .. }
        | Step::Retry { client, .. }
        | Step::WalkDue { client, .. }
        | Step::Disconnect { client }
        | Step::Reconnect { client } => Some(*client),
        _ => None,
    }
}

fn with_client(s: &Step, c: ClientId) -> Step {
    let mut s = s.clone();
    match &mut s {
        Step::Deliver { client, .. }
        | Step::Duplicate { client, .. }
        | Step::Drop { client, .. }
        | Step::Retry { client, .. }
        | Step::WalkDue { client, .. }
        | Step::Disconnect { client }
        | Step::Reconnect { client } => *client = c,
        _ => {}
    }
    s
}

/// The scenario and steps without client `k` (its steps removed, higher ids shifted down).
/// None while a scripted call, approval or authorization switch belongs to `k` (those go
/// first).
fn without_client(scn: &Scenario, steps: &[Step], k: ClientId) -> Option<(Scenario, Vec<Step>)> {
    if scn.calls.iter().any(|(c, _)| *c == k)
        || scn.approvals.iter().any(|(c, _)| *c == k)
        || scn.auth_changes.iter().any(|(c, _)| *c == k)
    {
        return None;
    }
    let shift = |c: ClientId| if c > k { c - 1 } else { c };
    let mut s2 = scn.clone();
    s2.clients.remove(k as usize);
    if let Some(a) = s2.aggregate.as_mut() {
        a.members.remove(k as usize);
    }
    for (c, _) in s2.calls.iter_mut().chain(s2.approvals.iter_mut()) {
        *c = shift(*c);
    }
    for (c, _) in s2.auth_changes.iter_mut() {
        *c = shift(*c);
    }
    let out = steps
        .iter()
        .filter_map(|s| match step_client(s) {
            Some(c) if c == k => None,
            Some(c) => Some(with_client(s, shift(c))),
            None => Some(s.clone()),
        })
        .collect();
    Some((s2, out))
}

/// The scenario and steps without batch `b` (its step removed, later batches renumbered).
fn without_batch(scn: &Scenario, steps: &[Step], b: usize) -> (Scenario, Vec<Step>) {
    let mut s2 = scn.clone();
    s2.script.remove(b);
    let out = steps
        .iter()
        .filter_map(|s| match s {
            Step::Mutate { batch } if usize::from(*batch) == b => None,
            Step::Mutate { batch } if usize::from(*batch) > b => {
                Some(Step::Mutate { batch: batch - 1 })
            }
            other => Some(other.clone()),
        })
        .collect();
    (s2, out)
}

fn without_call(scn: &Scenario, steps: &[Step], i: usize) -> (Scenario, Vec<Step>) {
    let mut s2 = scn.clone();
    s2.calls.remove(i);
    let out = steps
        .iter()
        .filter_map(|s| match s {
            Step::Call { call } if usize::from(*call) == i => None,
            Step::Call { call } if usize::from(*call) > i => Some(Step::Call { call: call - 1 }),
            other => Some(other.clone()),
        })
        .collect();
    (s2, out)
}

fn without_approval(scn: &Scenario, steps: &[Step], i: usize) -> (Scenario, Vec<Step>) {
    let mut s2 = scn.clone();
    s2.approvals.remove(i);
    let out = steps
        .iter()
        .filter_map(|s| match s {
            Step::Approve { approval } if usize::from(*approval) == i => None,
            Step::Approve { approval } if usize::from(*approval) > i => Some(Step::Approve {
                approval: approval - 1,
            }),
            other => Some(other.clone()),
        })
        .collect();
    (s2, out)
}

fn without_auth_change(scn: &Scenario, steps: &[Step], i: usize) -> (Scenario, Vec<Step>) {
    let mut s2 = scn.clone();
    s2.auth_changes.remove(i);
    let out = steps
        .iter()
        .filter_map(|s| match s {
            Step::SetAuth { change } if usize::from(*change) == i => None,
            Step::SetAuth { change } if usize::from(*change) > i => {
                Some(Step::SetAuth { change: change - 1 })
            }
            other => Some(other.clone()),
        })
        .collect();
    (s2, out)
}

/// Replays a shrunk trace the way the model does and says whether it shows its property.
pub fn replays_in_model(t: &Trace) -> Result<bool, TraceError> {
    let r = t.check()?;
    Ok(t.shows
        .is_some_and(|p| r.verdicts.get(&p) == Some(&listsync_core::property::Verdict::Violated)))
}

/// Convenience for callers that hold a plan separately from parameters.
pub fn params_with(params: &Params, plan: &FaultPlan) -> Params {
    Params {
        plan: plan.clone(),
        ..params.clone()
    }
}

/// Completes a run: applies the first enabled step that is not the environment's choice (a
/// delivery, a staged commit, an armed retry, a reconnection) until the world is quiescent.
/// None if it is not quiescent within `limit` steps.
fn drain<C: ClientMachine>(
    scn: &Scenario,
    w: &mut World<C>,
    out: &mut Vec<Step>,
    limit: usize,
) -> Option<()> {
    let mut enabled = Vec::new();
    for _ in 0..limit {
        if w.quiescent() {
            return Some(());
        }
        enabled.clear();
        w.enabled(scn, &mut enabled);
        let step = enabled.iter().find(|s| {
            matches!(
                s,
                Step::Commit
                    | Step::Deliver { .. }
                    | Step::Retry { .. }
                    | Step::WalkDue { .. }
                    | Step::Reconnect { .. }
            )
        })?;
        w.apply(scn, step, &mut ()).ok()?;
        out.push(step.clone());
    }
    w.quiescent().then_some(())
}
