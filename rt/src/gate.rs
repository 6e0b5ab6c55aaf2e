//! Gates: park a chosen reply (or a tool call) until someone releases it.
//!
//! A gate matches the `nth` next occurrence of a target — a request method such as
//! `tools/list`, parked either *before* the server serves it or *after* the reply was computed
//! (so the reply reflects the catalog as it was when served, and leaves only on release); the
//! handler of one tool, parked after dispatch; an outgoing notification, parked after its batch
//! committed; or the staged commit of the `notify-before-commit` variant. Tests and the harness use gates to put a mutation
//! between two pages, or a removal under a running call, without sleeping: they wait for
//! [`Gates::parked`] and then [`Gates::release`].
//!
//! Gates are plain synchronous bookkeeping plus one `watch` channel per gate; nothing is held
//! across an `.await`.

use std::collections::BTreeMap;
use std::sync::Mutex;
use tokio::sync::{mpsc, watch};

/// A gate's number (unique per gate set).
pub type GateId = u64;

/// Where in a request a gate parks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Before the request is served (the server has not looked at the catalog yet).
    Before,
    /// After the reply was computed, before it is sent.
    After,
}

/// What a gate waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GateTarget {
    /// A request of this JSON-RPC method (`tools/list`, `tools/call`, ...).
    Request {
        /// Method name.
        method: String,
        /// Where to park.
        phase: Phase,
    },
    /// A call of this tool, parked inside its handler after dispatch.
    Call {
        /// Tool name.
        tool: String,
    },
    /// A notification of this method (`notifications/tools/list_changed`...), parked before it
    /// is handed to a transport (the batch is already committed).
    Notification {
        /// Method name.
        method: String,
    },
    /// The late commit of the `notify-before-commit` known-bad server, parked after its
    /// notifications went out.
    Commit,
}

/// A gate's life.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateState {
    /// Waiting for its occurrence.
    Armed,
    /// Holding its occurrence.
    Parked,
    /// Released (before or after parking).
    Released,
}

/// Reported when a gate parks something.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parked {
    /// Gate.
    pub gate: GateId,
    /// What it holds.
    pub target: GateTarget,
}

struct Rule {
    target: GateTarget,
    /// Matching occurrences still to let through before parking.
    skip: u32,
    state: watch::Sender<GateState>,
}

/// A set of gates (one per server).
#[derive(Default)]
pub struct Gates {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    next: GateId,
    rules: BTreeMap<GateId, Rule>,
    observers: Vec<mpsc::UnboundedSender<Parked>>,
}

impl Gates {
    /// No gates.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Arms a gate on the `nth` (1-based) next occurrence of `target`.
    pub fn arm(&self, target: GateTarget, nth: u32) -> GateId {
        let mut inner = self.lock();
        inner.next += 1;
        let id = inner.next;
        let (state, _) = watch::channel(GateState::Armed);
        inner.rules.insert(
            id,
            Rule {
                target,
                skip: nth.saturating_sub(1),
                state,
            },
        );
        id
    }

    /// Lets a gate's occurrence go (or disarms it if nothing is parked yet). Returns whether the
    /// gate existed.
    pub fn release(&self, id: GateId) -> bool {
        match self.lock().rules.remove(&id) {
            Some(rule) => {
                rule.state.send_replace(GateState::Released);
                true
            }
            None => false,
        }
    }

    /// Releases every gate.
    pub fn release_all(&self) {
        let rules = std::mem::take(&mut self.lock().rules);
        for rule in rules.into_values() {
            rule.state.send_replace(GateState::Released);
        }
    }

    /// Reports every future parking to `tx`.
    pub fn observe(&self, tx: mpsc::UnboundedSender<Parked>) {
        self.lock().observers.push(tx);
    }

    /// Waits until gate `id` holds its occurrence (returns `false` if it was released or never
    /// existed). Put a timeout around it in tests.
    pub async fn parked(&self, id: GateId) -> bool {
        let rx = self.lock().rules.get(&id).map(|r| r.state.subscribe());
        let Some(mut rx) = rx else {
            return false;
        };
        matches!(
            rx.wait_for(|s| *s != GateState::Armed).await.as_deref(),
            Ok(GateState::Parked)
        )
    }

    /// Passes an occurrence of `target` through the gates: returns at once unless a gate picks
    /// this occurrence, in which case it returns once that gate is released.
    pub async fn checkpoint(&self, target: &GateTarget) {
        let waiting = {
            let mut inner = self.lock();
            let hit = inner.rules.iter_mut().find_map(|(id, rule)| {
                if rule.target != *target || *rule.state.borrow() != GateState::Armed {
                    return None;
                }
                if rule.skip > 0 {
                    rule.skip -= 1;
                    return None;
                }
                rule.state.send_replace(GateState::Parked);
                Some((*id, rule.state.subscribe()))
            });
            if let Some((gate, _)) = &hit {
                let note = Parked {
                    gate: *gate,
                    target: target.clone(),
                };
                inner.observers.retain(|o| o.send(note.clone()).is_ok());
            }
            hit
        };
        if let Some((_, mut rx)) = waiting {
            // A dropped sender (the gate set went away) also lets the occurrence go.
            let _ = rx.wait_for(|s| *s == GateState::Released).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    fn list() -> GateTarget {
        GateTarget::Request {
            method: "tools/list".into(),
            phase: Phase::After,
        }
    }

    #[tokio::test]
    async fn parks_the_nth_occurrence_until_released() {
        let gates = Arc::new(Gates::new());
        let id = gates.arm(list(), 2);
        gates.checkpoint(&list()).await; // first passes
        let g = gates.clone();
        let held = tokio::spawn(async move { g.checkpoint(&list()).await });
        assert!(
            tokio::time::timeout(Duration::from_secs(10), gates.parked(id))
                .await
                .unwrap()
        );
        assert!(!held.is_finished());
        assert!(gates.release(id));
        tokio::time::timeout(Duration::from_secs(10), held)
            .await
            .unwrap()
            .unwrap();
        gates.checkpoint(&list()).await; // released gates are gone
        assert!(!gates.release(id));
    }
}
