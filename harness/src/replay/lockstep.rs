//! The lockstep engine: one trace step carried out on the shadow world and on the real run
//! (deliver the matched held message, duplicate or drop a notification, mutate, park and release
//! a commit, call a tool), the bounded wait until the real side has a counterpart for everything
//! the shadow world has in flight (or a divergence, with what is missing), and the drain steps
//! after the trace's last.

use super::matching::match_links;
use super::planning::ReplayPlan;
use super::progress::{
    count_model, count_model_client_steps, count_real, count_real_client_steps,
    count_real_notifications,
};
use crate::control;
use crate::jsonrpc;
use crate::proxy::Policy;
use crate::run::Run;
use crate::timeline::{Action, Body, Dir, Fact, HubState, Side};
use listsync_core::history::Event;
use listsync_core::record::Log;
use listsync_core::vocab::KindSet;
use listsync_core::wire::{ClientMsg, Notification, ReqId, ServerMsg};
use listsync_core::world::{Link, Step, World};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::time::Duration;

/// The lockstep state.
pub(super) struct Lockstep<'a> {
    pub(super) plan: &'a ReplayPlan,
    pub(super) run: Run,
    pub(super) world: World,
    pub(super) model_events: Vec<Event>,
    pub(super) ids: HashMap<ReqId, String>,
    pub(super) kinds: KindSet,
    pub(super) commit_gate: Option<(u64, tokio::sync::oneshot::Receiver<Value>)>,
    pub(super) exact: bool,
    /// `list_changed` notifications delivered to the client by trace steps.
    pub(super) notifications_delivered: usize,
}

/// How waiting for the real side ended.
pub(super) enum Wait {
    Ok,
    Diverged(String),
}

impl Lockstep<'_> {
    /// Waits until the real side caught up with the shadow world (or diverged).
    pub(super) async fn sync(&self, bound: Duration) -> Wait {
        let want = count_model(&self.model_events, self.kinds);
        let kinds = self.kinds;
        let steps_wanted = self
            .plan
            .client
            .adapter
            .runs_core
            .then(|| count_model_client_steps(&self.model_events));
        let check = |st: &HubState| -> Option<Result<(), String>> {
            let m = match_links(&self.world, st, &self.ids);
            if let Some((seq, s)) = m.unpredicted.first() {
                return Some(Err(format!(
                    "the implementation sent {s} (record {seq}), which the trace does not have in flight"
                )));
            }
            let got = count_real(st, kinds);
            if got.0 > want.0 {
                return Some(Err(format!(
                    "the client published {} snapshots; the trace predicts {}",
                    got.0, want.0
                )));
            }
            if got.1 > want.1 {
                return Some(Err(format!(
                    "the server ran {} tool calls; the trace predicts {}",
                    got.1, want.1
                )));
            }
            let steps_done = steps_wanted.is_none_or(|w| count_real_client_steps(st) >= w);
            if m.missing.is_empty() && got == want && steps_done {
                Some(Ok(()))
            } else {
                None
            }
        };
        match self.run.hub.wait_until(bound, check).await {
            Some(Ok(())) => Wait::Ok,
            Some(Err(e)) => Wait::Diverged(e),
            None => {
                let st = self.run.hub.lock();
                let m = match_links(&self.world, &st, &self.ids);
                let got = count_real(&st, kinds);
                let mut why = Vec::new();
                for s in &m.missing {
                    why.push(format!("never sent {}", s.describe()));
                }
                if got.0 < want.0 {
                    why.push(format!(
                        "the client published {} snapshots, the trace predicts {}",
                        got.0, want.0
                    ));
                }
                if got.1 < want.1 {
                    why.push(format!(
                        "the server ran {} tool calls, the trace predicts {}",
                        got.1, want.1
                    ));
                }
                if let Some(w) = steps_wanted {
                    let done = count_real_client_steps(&st);
                    if done < w {
                        why.push(format!(
                            "the client's machine woke or ended a refresh {done} times, the trace predicts {w}"
                        ));
                    }
                }
                // What the implementation sent that the trace's next step still holds back:
                // often what it is waiting on instead (a response, an acknowledgement).
                let held: Vec<String> = st
                    .held
                    .iter()
                    .map(|h| format!("{} (record {})", jsonrpc::summary(&h.json), h.seq))
                    .collect();
                if !held.is_empty() {
                    why.push(format!(
                        "held, as the trace prescribes: {}",
                        held.join(", ")
                    ));
                }
                Wait::Diverged(format!("within {bound:?}: {}", why.join("; ")))
            }
        }
    }

    fn apply_model(&mut self, step: &Step) -> Result<Vec<String>, String> {
        let mut log = Log::default();
        self.world.apply(&self.plan.scenario, step, &mut log)?;
        self.model_events.extend(log.events);
        Ok(log.lines)
    }

    /// Carries out one step on both sides. Err: a divergence (or a harness failure).
    pub(super) async fn step(&mut self, index: Option<usize>, step: &Step) -> Result<(), String> {
        // The real counterpart of the message a delivery or fault concerns.
        let target = match step {
            Step::Deliver {
                client: 0,
                link,
                index,
            } => Some((*link, usize::from(*index))),
            Step::Duplicate { client: 0, link } | Step::Drop { client: 0, link } => {
                Some((*link, 0))
            }
            _ => None,
        };
        let real = match target {
            Some(key) => {
                let st = self.run.hub.lock();
                let m = match_links(&self.world, &st, &self.ids);
                m.pairs.get(&key).copied()
            }
            None => None,
        };
        let before_up: Option<ClientMsg> = match step {
            Step::Deliver {
                client: 0,
                link: Link::Up,
                index,
            } => self.world.links[0].up.get(usize::from(*index)).cloned(),
            _ => None,
        };
        // A list_changed of a kept kind delivered to the client: wait below until the client
        // reports handling it, so the next delivery cannot overtake it inside the client.
        let notification = match step {
            Step::Deliver {
                client: 0,
                link: link @ (Link::Down | Link::Stream),
                index,
            } => {
                let l = &self.world.links[0];
                let q = if *link == Link::Down {
                    &l.down
                } else {
                    &l.stream
                };
                match q.get(usize::from(*index)) {
                    Some(ServerMsg::Notification(Notification::ListChanged { kind, .. }))
                        if kind
                            .notification_group()
                            .iter()
                            .any(|g| self.kinds.contains(*g)) =>
                    {
                        Some(kind.list_changed_method())
                    }
                    _ => None,
                }
            }
            _ => None,
        };
        let lines = self.apply_model(step)?;
        self.run.fact(Fact::Step {
            index,
            step: step.to_string(),
            model: lines,
        });
        match step {
            Step::Deliver { .. } => {
                let seq = real.ok_or("the message to deliver has no real counterpart")?;
                if let Some(m) = before_up {
                    let id = self
                        .run
                        .hub
                        .lock()
                        .held
                        .iter()
                        .find(|h| h.seq == seq)
                        .and_then(|h| h.json.get("id").map(jsonrpc::id_key));
                    if let Some(id) = id {
                        self.ids.insert(m.id, id);
                    }
                }
                self.run.proxy.act(seq, Action::Deliver);
                if let Some(method) = notification {
                    self.wait_handled(method).await?;
                }
            }
            Step::Duplicate { .. } | Step::Drop { .. } => {
                let seq = real.ok_or("the notification has no real counterpart")?;
                let action = if matches!(step, Step::Drop { .. }) {
                    Action::Drop
                } else {
                    Action::Duplicate
                };
                self.run.proxy.act(seq, action);
            }
            Step::Mutate { .. } | Step::Commit | Step::Call { .. } => self.act(step).await?,
            other => return Err(format!("step '{other}' is not supported by the harness")),
        }
        Ok(())
    }

    /// Carries out on the real side a step that moves no message: a batch, the release of a
    /// parked commit, a tool call.
    pub(super) async fn act(&mut self, step: &Step) -> Result<(), String> {
        match step {
            Step::Mutate { batch } => {
                let ops = self
                    .plan
                    .scenario
                    .script
                    .get(usize::from(*batch))
                    .cloned()
                    .unwrap_or_default();
                if self.plan.server.adapter.runs_core
                    && self.plan.scenario.server.strategy.commits_after_notifying()
                {
                    self.mutate_parked(&ops).await?;
                } else {
                    self.run.mutate(&ops).await?;
                }
            }
            Step::Commit => self.release_commit().await?,
            Step::Call { call } => {
                let tool = self
                    .plan
                    .scenario
                    .calls
                    .get(usize::from(*call))
                    .map(|(_, t)| t.to_string())
                    .unwrap_or_default();
                self.run
                    .send(Side::Client, "call", json!({ "tool": tool }))
                    .await
                    .map_err(|e| format!("call: {e}"))?;
            }
            other => return Err(format!("step '{other}' is not supported by the harness")),
        }
        Ok(())
    }

    /// `notify-before-commit` on our runtime: park the late commit, mutate, wait for the park.
    async fn mutate_parked(&mut self, ops: &[listsync_core::vocab::Op]) -> Result<(), String> {
        let bound = self.run.bounds.command;
        let gate = self
            .run
            .server
            .cmd("gate_commit", json!({}), bound)
            .await
            .map_err(|e| format!("gate_commit: {e}"))?;
        let gate = gate
            .get("gate")
            .and_then(Value::as_u64)
            .ok_or("gate_commit gave no gate")?;
        self.run.probes_taken().await;
        let issued = self.run.hub.record(Body::Fact(Fact::MutateIssued {
            batch: 0,
            ops: ops.to_vec(),
        }));
        let ops_json: Vec<Value> = ops.iter().map(crate::adapters::op_json).collect();
        let reply = self
            .run
            .server
            .send("mutate", json!({ "ops": ops_json }))
            .await
            .map_err(|e| format!("mutate: {e}"))?;
        let parked = self
            .run
            .hub
            .wait_until(bound, |st| {
                control::events(st, Side::Server, "commit_parked")
                    .next()
                    .map(|_| ())
            })
            .await;
        if parked.is_none() {
            return Err("the server did not park its commit".into());
        }
        self.run
            .read_catalog("mutate (commit parked)", Some(issued))
            .await?;
        self.commit_gate = Some((gate, reply));
        Ok(())
    }

    async fn release_commit(&mut self) -> Result<(), String> {
        let Some((gate, reply)) = self.commit_gate.take() else {
            // Servers that commit by themselves: nothing to do.
            self.run.note("commit step: the server commits by itself");
            return Ok(());
        };
        let bound = self.run.bounds.command;
        self.run.probes_taken().await;
        let at = self.run.hub.record(Body::Note {
            text: format!("releasing the parked commit (gate {gate})"),
        });
        self.run
            .server
            .cmd("release", json!({ "gate": gate }), bound)
            .await
            .map_err(|e| format!("release commit: {e}"))?;
        let _ = tokio::time::timeout(bound, reply).await;
        self.run.read_catalog("commit released", Some(at)).await?;
        Ok(())
    }

    /// Waits until the client has started, i.e. sent its first message (at most the start-up
    /// bound). Whether it did.
    pub(super) async fn client_alive(&self) -> bool {
        self.run
            .hub
            .wait_until(self.run.bounds.startup, |st| {
                st.records
                    .iter()
                    .any(|r| matches!(r.body, Body::Msg { dir: Dir::Up, .. }))
                    .then_some(())
            })
            .await
            .is_some()
    }

    /// After a `list_changed` (`method`) of a kept kind reached the client: waits (the step
    /// bound at most) until the client reports handling it, so that the next delivery cannot
    /// overtake it inside the client. Err: it did not report it in time.
    pub(super) async fn wait_handled(&mut self, method: &str) -> Result<(), String> {
        self.notifications_delivered += 1;
        let want = self.notifications_delivered;
        let kinds = self.kinds;
        let bound = self.run.bounds.step;
        let handled = self
            .run
            .hub
            .wait_until(bound, |st| {
                (count_real_notifications(st, kinds) >= want).then_some(())
            })
            .await;
        match handled {
            Some(()) => Ok(()),
            None => Err(format!(
                "the client did not report handling the delivered {method} within {bound:?}"
            )),
        }
    }

    /// Lets the run go free: everything held is released (and a parked commit), and the run
    /// settles; a settled run is declared quiescent. Whether it settled.
    pub(super) async fn release_everything(&mut self) -> bool {
        self.run.proxy.set_policy(Policy::pass_all());
        self.run.proxy.release_all();
        if let Some((gate, _)) = self.commit_gate.take() {
            let bound = self.run.bounds.command;
            let _ = self
                .run
                .server
                .cmd("release", json!({ "gate": gate }), bound)
                .await;
        }
        let settled = self.run.settle().await;
        if settled {
            self.run.fact(Fact::Quiescent {
                kinds: self.kinds.iter().collect(),
            });
        }
        settled
    }

    /// The next drain step: deliver the head of a link, or commit a staged batch.
    pub(super) fn drain_step(&self) -> Option<Step> {
        let l = &self.world.links[0];
        let deliver = |link| Step::Deliver {
            client: 0,
            link,
            index: 0,
        };
        if !l.up.is_empty() {
            Some(deliver(Link::Up))
        } else if !l.down.is_empty() {
            Some(deliver(Link::Down))
        } else if !l.stream.is_empty() {
            Some(deliver(Link::Stream))
        } else if self.world.server().has_staged() {
            Some(Step::Commit)
        } else {
            None
        }
    }
}
