//! When a quiescence property's violation became certain.
//!
//! `converges`, `no_lost_wakeup` and `listen_then_list` are judged when the world comes to
//! rest, so a counterexample's last step is where they are *seen* to fail, rarely where the
//! harm was done (the step that lost the wake-up or let the stale page in). This module finds
//! that earlier step: a state is **doomed** for a property when every way the world can come
//! to rest from it, by delivering what is in flight, committing what is staged and letting
//! the clients' timers fire (no further change to the catalog, no call or approval, no fault),
//! ends with the property violated. The step where the violation became certain is the first
//! step of the trace after which every state is doomed.
//!
//! The search explores every settling continuation (breadth-first, each state once) up to a
//! bound on the states it visits; past the bound the state counts as not doomed, so the answer
//! errs towards a later step, never an earlier one.

use crate::machine::ClientMachine;
use crate::property::Property;
use crate::scenario::Scenario;
use crate::trace::{Trace, TraceError};
use crate::world::{Step, World};
use std::collections::HashSet;

/// States one doom search visits at most before it gives up (and says "not doomed").
pub const MAX_SETTLE_STATES: usize = 50_000;

/// Whether `step` lets the world settle: it moves what is already under way (a delivery, a
/// staged commit, a node catching up, a timer firing, a cut connection coming back) without
/// changing the catalog, acting for a user, or injecting a fault.
pub fn settles(step: &Step) -> bool {
    matches!(
        step,
        Step::Commit
            | Step::Deliver { .. }
            | Step::Retry { .. }
            | Step::WalkDue { .. }
            | Step::TtlExpire { .. }
            | Step::Reconnect { .. }
            | Step::BusDeliver { .. }
            | Step::Poll { .. }
            | Step::Load { .. }
    )
}

/// Whether `p` fails in every state of rest `world` can settle into (see the module doc).
/// `None` when the search passed [`MAX_SETTLE_STATES`], or when no state of rest can be
/// reached by settling steps alone (the world stalls: that is the progress pass's to judge).
pub fn doomed<C: ClientMachine>(scn: &Scenario, world: &World<C>, p: Property) -> Option<bool> {
    let mut seen: HashSet<World<C>> = HashSet::new();
    let mut queue = vec![world.clone()];
    let mut steps = Vec::new();
    let mut rested = false;
    seen.insert(world.clone());
    while let Some(w) = queue.pop() {
        if w.quiescent() {
            if w.holds(p) {
                return Some(false);
            }
            rested = true;
        }
        steps.clear();
        w.enabled(scn, &mut steps);
        for step in steps.iter().filter(|s| settles(s)) {
            let mut next = w.clone();
            if next.apply(scn, step, &mut ()).is_err() {
                continue;
            }
            if seen.insert(next.clone()) {
                if seen.len() > MAX_SETTLE_STATES {
                    return None;
                }
                queue.push(next);
            }
        }
    }
    rested.then_some(true)
}

/// The index of the trace's step after which `p`'s violation was certain (every later state
/// doomed, see the module doc), for a quiescence property the trace violates at its end.
/// `None` for an event property (its first violation is its own step), for a property the
/// trace does not violate, for a trace of a machine written outside listsync (its clients
/// play back tapes, which hold no input beyond the trace's own), or when no step qualifies
/// within the search's bound.
pub fn became_certain(trace: &Trace, p: Property) -> Result<Option<usize>, TraceError> {
    if !p.judged_at_rest() || trace.machine.is_some() {
        return Ok(None);
    }
    let scn = &trace.scenario;
    scn.validate().map_err(TraceError::Scenario)?;
    let mut world = World::new(scn);
    let mut states = Vec::with_capacity(trace.steps.len());
    for (index, step) in trace.steps.iter().enumerate() {
        world
            .apply(scn, step, &mut ())
            .map_err(|reason| TraceError::Unreachable {
                index,
                step: step.to_string(),
                reason,
            })?;
        states.push(world.clone());
    }
    let mut first = None;
    for (i, w) in states.iter().enumerate().rev() {
        if doomed(scn, w, p) != Some(true) {
            break;
        }
        first = Some(i);
    }
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_progress_settles() {
        assert!(settles(&Step::Commit));
        assert!(!settles(&Step::Mutate { batch: 0 }));
        assert!(!settles(&Step::Disconnect { client: 0 }));
        assert!(!settles(&Step::Call { call: 0 }));
    }
}
