//! The adaptive replay's engine: poses a trace's [`Schedule`] to the run, move by move, and
//! says which moves the implementation's own path left without their message and which of the
//! trace's situations the wire showed ([`adversary`](super::adversary) says what a move and a
//! situation are).

use super::adversary::{Id, Move, OBSERVABLE, Reaction, Schedule, WireLabels, observed};
use super::lockstep::Lockstep;
use super::progress::count_real;
use crate::adapters::Role;
use crate::jsonrpc::{self, Frame};
use crate::outcome::Race;
use crate::proxy::notified_kind;
use crate::timeline::{Action, Body, Dir, Fact, HubState};
use listsync_core::situation::Situation;
use std::collections::{BTreeSet, HashSet};
use std::time::Duration;
use tokio::time::Instant;

/// How long the run must stay quiet for the client to count as done with a message.
const DIGEST: Duration = Duration::from_millis(150);
/// Most messages the drain hands on one by one.
const DRAIN: usize = 64;

/// What posing a schedule came to.
pub(super) struct Posed {
    /// Moves whose message never came, each with why.
    pub(super) skipped: Vec<String>,
    /// The race, as far as the wire showed it.
    pub(super) race: Race,
}

/// How the wait for a move's message ended.
enum Found {
    Held(u64),
    Absent(String),
}

impl Lockstep<'_> {
    /// Waits until the message `id` is held, or until it cannot come: already handed on, an
    /// answer to a request the implementation did not send, or the run fell quiet (nothing new
    /// for the quiet bound) or the step bound ran out without it.
    async fn wait_for(&self, id: &Id, unsent: &HashSet<Id>) -> Found {
        let bounds = self.run.bounds;
        let deadline = Instant::now() + bounds.step;
        loop {
            let seen = {
                let st = self.run.hub.lock();
                let wire = WireLabels::of(&st);
                if let Some(seq) = wire.held(&st, id) {
                    return Found::Held(seq);
                }
                if wire.gone(id) {
                    return Found::Absent("it was already handed on".into());
                }
                if let Some(r) = id.request()
                    && unsent.contains(r)
                    && !wire.sent.contains(r)
                {
                    return Found::Absent(format!("the implementation did not send {r}"));
                }
                st.records.len()
            };
            let now = Instant::now();
            if now >= deadline {
                return Found::Absent(format!("it did not come within {:?}", bounds.step));
            }
            let wait = bounds.quiet.min(deadline - now);
            let moved = self
                .run
                .hub
                .wait_until(wait, |st| (st.records.len() != seen).then_some(()))
                .await;
            if moved.is_none() {
                return Found::Absent(format!(
                    "the implementation took another path: nothing came for {:?}",
                    bounds.quiet
                ));
            }
        }
    }

    /// Poses `schedule` to the run. Err: the harness could not carry out a move that is its
    /// own to make (a batch, a commit, a call).
    pub(super) async fn pose(&mut self, schedule: &Schedule) -> Result<Posed, String> {
        let mut skipped = Vec::new();
        let mut adversary_skipped = Vec::new();
        let mut unsent: HashSet<Id> = HashSet::new();
        let mut seen: BTreeSet<Situation> = BTreeSet::new();
        let look = |ls: &Lockstep<'_>, seen: &mut BTreeSet<Situation>| {
            let st = ls.run.hub.lock();
            let wire = WireLabels::of(&st);
            seen.extend(observed(&st, &wire));
        };
        for (i, mv, reaction) in &schedule.moves {
            look(self, &mut seen);
            let (id, action) = match mv {
                Move::Act(step) => {
                    self.run.fact(Fact::Step {
                        index: Some(*i),
                        step: mv.to_string(),
                        model: Vec::new(),
                    });
                    let notified = self.notifications();
                    self.act(step).await.map_err(|e| format!("step {i}: {e}"))?;
                    self.await_notifications(notified + reaction.notifications)
                        .await;
                    self.react(reaction, &mut unsent).await;
                    continue;
                }
                Move::Release(id) => (id, Action::Deliver),
                Move::Duplicate(id) => (id, Action::Duplicate),
                Move::Drop(id) => (id, Action::Drop),
            };
            match self.wait_for(id, &unsent).await {
                Found::Held(seq) => {
                    self.run.fact(Fact::Step {
                        index: Some(*i),
                        step: mv.to_string(),
                        model: Vec::new(),
                    });
                    self.run.proxy.act(seq, action);
                    if action == Action::Deliver {
                        self.after_notification(id).await;
                        self.after_request(id).await;
                    }
                    self.react(reaction, &mut unsent).await;
                    if !matches!(id, Id::Request { .. }) {
                        self.digest().await;
                    }
                }
                Found::Absent(why) => {
                    if let Id::Request { .. } = id {
                        unsent.insert(id.clone());
                    }
                    if matches!(id, Id::Notification { .. }) || action != Action::Deliver {
                        adversary_skipped.push(format!("step {i} ({mv})"));
                    }
                    self.run.fact(Fact::Skipped {
                        index: *i,
                        step: mv.to_string(),
                        reason: why.clone(),
                    });
                    skipped.push(format!("step {i} ({mv}) skipped: {why}"));
                }
            }
        }
        look(self, &mut seen);
        // A client under test is posed the trace's situations; a server under test is posed
        // the adversary's batches and calls and our client's requests, and the situations it
        // then leads to (a notification in flight during a walk...) are its own doing.
        let wanted: Vec<Situation> = schedule
            .situations
            .iter()
            .copied()
            .filter(|s| OBSERVABLE.contains(s) && self.plan.role == Role::Client)
            .collect();
        if self.plan.role == Role::Server {
            adversary_skipped.clear();
        }
        let reached: Vec<Situation> = wanted
            .iter()
            .copied()
            .filter(|s| seen.contains(s))
            .collect();
        let race = if wanted.is_empty() {
            Race {
                posed: adversary_skipped.is_empty(),
                wanted,
                reached,
                why: (!adversary_skipped.is_empty()).then(|| {
                    format!(
                        "the trace's race is not one the wire shows, and these moves of the adversary found no message: {}",
                        adversary_skipped.join("; ")
                    )
                }),
            }
        } else if reached.is_empty() {
            let names: Vec<&str> = wanted.iter().map(|s| s.as_str()).collect();
            Race {
                posed: false,
                why: Some(format!(
                    "the run never reached {} (the trace's race){}",
                    names.join(" or "),
                    if skipped.is_empty() {
                        String::new()
                    } else {
                        format!("; the implementation's path left {}", skipped.join("; "))
                    }
                )),
                wanted,
                reached,
            }
        } else {
            Race {
                posed: true,
                wanted,
                reached,
                why: None,
            }
        };
        Ok(Posed { skipped, race })
    }

    /// The server's notifications the proxy has seen so far (held or passed).
    fn notifications(&self) -> usize {
        count_notifications(&self.run.hub.lock())
    }

    /// After a batch or a commit: wait (the quiet bound at most: a server that does not notify
    /// costs the replay no more) until the proxy has seen
    /// `total` server notifications, the ones the trace's server sent in reply having come in.
    /// Without it, a notification that reaches the proxy a moment after the next move (the
    /// release of an answer, say) is no longer held while the walk it should overlap runs,
    /// and the race is not posed on a correct client only because of timing.
    async fn await_notifications(&mut self, total: usize) {
        if self.notifications() >= total {
            return;
        }
        let bound = self.run.bounds.quiet;
        self.run
            .hub
            .wait_until(bound, |st| (count_notifications(st) >= total).then_some(()))
            .await;
    }

    /// After a move: wait until the implementation did what the trace's client did in reply
    /// (sent the same requests, published), or went quiet without it (nothing new for the
    /// quiet bound; the step bound at most). The requests it did not send are `unsent`: a
    /// later move about them is skipped without waiting again.
    async fn react(&mut self, reaction: &Reaction, unsent: &mut HashSet<Id>) {
        if reaction.requests.is_empty() && !reaction.publishes {
            return;
        }
        let (published, _) = count_real(&self.run.hub.lock(), self.kinds);
        let kinds = self.kinds;
        let done = |st: &HubState| {
            let wire = WireLabels::of(st);
            reaction.requests.iter().all(|r| wire.sent.contains(r))
                && (!reaction.publishes || count_real(st, kinds).0 > published)
        };
        let bounds = self.run.bounds;
        let deadline = Instant::now() + bounds.step;
        loop {
            let seen = {
                let st = self.run.hub.lock();
                if done(&st) {
                    return;
                }
                st.records.len()
            };
            let now = Instant::now();
            let moved = if now < deadline {
                self.run
                    .hub
                    .wait_until(bounds.quiet.min(deadline - now), |st| {
                        (st.records.len() != seen).then_some(())
                    })
                    .await
            } else {
                None
            };
            if moved.is_none() {
                break;
            }
        }
        let wire = WireLabels::of(&self.run.hub.lock());
        for r in &reaction.requests {
            if !wire.sent.contains(r) {
                unsent.insert(r.clone());
            }
        }
    }

    /// After a message reached the client: wait until the run is quiet for [`DIGEST`] (the
    /// step bound at most), so that the client has acted on it before the next move, as the
    /// trace's client did at once. Without a prediction of what an implementation does, its
    /// falling quiet is the only sign that it is done.
    pub(super) async fn digest(&self) {
        let bound = self.run.bounds.step;
        self.run.hub.wait_quiet(DIGEST, bound, |_| true).await;
    }

    /// The drain after the last move: the oldest held message goes, the run digests it, and so
    /// on (at most [`DRAIN`] messages; whatever is left then goes at once).
    pub(super) async fn drain(&self) {
        for _ in 0..DRAIN {
            let Some(seq) = self.run.hub.lock().held.first().map(|h| h.seq) else {
                return;
            };
            self.run.proxy.act(seq, Action::Deliver);
            self.digest().await;
        }
    }

    /// After a request reached the server: wait (bounded) until its answer is in, as in the
    /// trace's world, where the server answers as it receives; a batch that follows cannot
    /// then change what the answer lists.
    async fn after_request(&mut self, id: &Id) {
        if !matches!(id, Id::Request { .. }) {
            return;
        }
        let answer = Id::Response {
            to: Box::new(id.clone()),
        };
        let bound = self.run.bounds.step;
        let answered = self
            .run
            .hub
            .wait_until(bound, |st| {
                WireLabels::of(st)
                    .ids
                    .values()
                    .any(|x| *x == answer)
                    .then_some(())
            })
            .await;
        if answered.is_none() {
            self.run
                .note(format!("the server did not answer {id} within {bound:?}"));
        }
    }

    /// After a `list_changed` of a kept kind reached the client: wait (bounded) until the
    /// client reports handling it, so that the next move cannot overtake it inside the client.
    /// A client that reports nothing costs the step bound once per notification, no more.
    async fn after_notification(&mut self, id: &Id) {
        let Id::Notification { method, .. } = id else {
            return;
        };
        let kept = notified_kind(method).is_some_and(|k| {
            k.notification_group()
                .iter()
                .any(|g| self.kinds.contains(*g))
        });
        if !kept {
            return;
        }
        if let Err(e) = self.wait_handled(method).await {
            self.run.note(e);
        }
    }
}

/// The server-to-client notifications among the proxy's records.
fn count_notifications(st: &HubState) -> usize {
    st.records
        .iter()
        .filter(|r| {
            matches!(
                &r.body,
                Body::Msg { dir: Dir::Down, json: Some(v), .. }
                    if matches!(jsonrpc::classify(v), Frame::Notification { .. })
            )
        })
        .count()
}
