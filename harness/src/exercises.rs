//! Generated scenarios: runs driven by proxy policies instead of a trace, for implementations
//! that do not follow the model's strategies step by step (debounce, first page only,
//! concurrent handlers). Each scenario starts a third-party implementation in one role against
//! our reference runtime in the other, provokes one race with holds and releases, lets the run
//! settle, and judges the history with core's checkers.
//!
//! [`Exercise::about`] says what the proxy does in each (`reports/properties.md` lists them).

use crate::adapters::{
    ClientSetup, Paths, Role, ServerSetup, Subject, client_launch, server_launch,
};
use crate::control;
use crate::jsonrpc::{self, Frame};
use crate::manifest::{self, Manifest};
use crate::outcome::{RunReport, RunStatus, Target};
use crate::proxy::{Policy, listed_kind};
use crate::run::{Bounds, Run, RunConfig};
use crate::timeline::{Action, Body, Dir, Fact, HubState, Side};
use listsync_core::property::Property;
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use serde_json::{Value, json};
use std::sync::Arc;

/// A generated scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Exercise {
    /// Stale overwrite and bounded refresh under a burst, responses released newest first.
    StaleRace,
    /// A mutation between page 1 and page 2 of a client's walk.
    MidWalk,
    /// A mutation between the client's listen request and its acknowledgement.
    ListenRace,
    /// Does the server notify, once per batch, after commit?
    Notify,
    /// As `Notify`, with the SDK's explicit notify API after each mutation.
    NotifyExplicit,
    /// As `NotifyExplicit`, through Python's session (legacy) send.
    NotifyExplicitSession,
    /// A call in flight while its tool is removed, then a call to the removed tool.
    CallRemoval,
    /// A mutation between page 1 and page 2 of the reference client's walk.
    MidWalkServer,
    /// `NotifyExplicitSession` between the Python server and Python's `mcp.Client` (not a
    /// matrix row's run: both ends are the SDK).
    SessionSendToPythonClient,
}

/// A pair run: the subject (server side), the SDK client (manifest, variant) that replaces our
/// runtime on the other end, and the era.
pub type Pair = (Subject, (std::sync::Arc<Manifest>, &'static str), Era);

impl Exercise {
    /// Every scenario.
    pub const ALL: [Exercise; 9] = [
        Exercise::StaleRace,
        Exercise::MidWalk,
        Exercise::ListenRace,
        Exercise::Notify,
        Exercise::NotifyExplicit,
        Exercise::NotifyExplicitSession,
        Exercise::CallRemoval,
        Exercise::MidWalkServer,
        Exercise::SessionSendToPythonClient,
    ];

    /// Name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Exercise::StaleRace => "stale-race",
            Exercise::MidWalk => "mid-walk",
            Exercise::ListenRace => "listen-race",
            Exercise::Notify => "notify",
            Exercise::NotifyExplicit => "notify-explicit",
            Exercise::NotifyExplicitSession => "notify-explicit-session",
            Exercise::CallRemoval => "call-removal",
            Exercise::MidWalkServer => "mid-walk-server",
            Exercise::SessionSendToPythonClient => "session-send-to-python-client",
        }
    }

    /// What the proxy does, in a sentence or two (reports print it).
    pub fn about(self) -> &'static str {
        match self {
            Exercise::StaleRace => {
                "holds every `tools/list` response; a mutation starts a refresh, two more mutations land while it is in flight (a burst of 3; the third is issued once the server's notification of the second reached the proxy, so each notification is dated by its own batch); the held responses are released newest first, each once the client has acted on the one before"
            }
            Exercise::MidWalk => {
                "page size 1: a mutation starts a walk; page 1's response is held while a second mutation commits (its notification held too), then released: page 2 is asked with a cursor of the old version"
            }
            Exercise::ListenRace => {
                "(2026-07-28) the client's `subscriptions/listen` is held while a mutation commits, then released: a client that listed before the acknowledgement and never again stays stale"
            }
            Exercise::Notify => {
                "add, remove, then a two-op batch, settling in between: does the server notify, once per batch, after the change is visible?"
            }
            Exercise::NotifyExplicit => {
                "as `notify`, with the SDK's explicit notify API called after each mutation (for SDKs that send nothing by themselves)"
            }
            Exercise::NotifyExplicitSession => {
                "(2026-07-28) as `notify-explicit`, through Python's session (legacy) send on the era's connection"
            }
            Exercise::CallRemoval => {
                "a call parks inside the tool handler, the tool is removed, the call is released; then (its `list_changed` held back, so the client still lists it) the tool is called again"
            }
            Exercise::MidWalkServer => {
                "page size 1: the reference client walks, page 1's response is held while the first item is removed (notification held), then page 2 is asked: does the cursor see the old or the new list?"
            }
            Exercise::SessionSendToPythonClient => {
                "a pair run outside the matrix rows (2026-07-28): `notify-explicit-session` with Python's own `mcp.Client` as the client instead of our runtime, to see whether that client ever learns of the changes"
            }
        }
    }

    /// The role it tests.
    pub fn role(self) -> Role {
        match self {
            Exercise::StaleRace | Exercise::MidWalk | Exercise::ListenRace => Role::Client,
            _ => Role::Server,
        }
    }

    /// Whether it applies to an adapter in `era`: the scenarios for SDKs that do not notify by
    /// themselves run where the manifest opts into them (`[server] scenarios = [...]`).
    pub fn applies(self, adapter: &Manifest, era: Era) -> bool {
        match self {
            Exercise::ListenRace => era == Era::V2026_07_28,
            Exercise::NotifyExplicit => adapter.opts_into(Role::Server, self.name()),
            Exercise::NotifyExplicitSession => {
                adapter.opts_into(Role::Server, self.name()) && era == Era::V2026_07_28
            }
            // A pair run, scheduled on its own (see [`Exercise::pair`]).
            Exercise::SessionSendToPythonClient => false,
            _ => true,
        }
    }

    /// For a pair run: the subject (server side) and the SDK client that replaces our runtime
    /// on the other end, in its era.
    pub fn pair(self) -> Option<Pair> {
        match self {
            Exercise::SessionSendToPythonClient => {
                let python = manifest::find("python").ok()?;
                Some((
                    Subject {
                        adapter: python.clone(),
                        role: Some(Role::Server),
                        variant: Some("mcpserver".into()),
                    },
                    (python, "client"),
                    Era::V2026_07_28,
                ))
            }
            _ => None,
        }
    }

    fn page_size(self) -> u16 {
        match self {
            Exercise::MidWalk | Exercise::MidWalkServer => 1,
            _ => 0,
        }
    }

    /// Which properties the scenario can judge: none the harness never sees
    /// ([`crate::outcome::not_judged`]: their verdict is n/a, never "holds"), and of the others
    /// those the scenario poses.
    pub fn judges(self, p: Property, era: Era) -> bool {
        if crate::outcome::not_judged(p).is_some() {
            return false;
        }
        match p {
            Property::AuthIsolation => false,
            Property::ListenThenList => era == Era::V2026_07_28,
            Property::NoCallToRemoved => self == Exercise::CallRemoval,
            Property::NoNameCollision => false,
            _ => true,
        }
    }
}

fn tools(names: &[(&str, &str)]) -> Vec<Op> {
    names
        .iter()
        .map(|(n, d)| Op::add(Kind::Tools, n, d))
        .collect()
}

fn is_first_page_list(v: &Value) -> bool {
    v.get("method")
        .and_then(Value::as_str)
        .and_then(listed_kind)
        == Some(Kind::Tools)
        && !jsonrpc::has_cursor(v)
}

fn is_tools_list(v: &Value) -> bool {
    v.get("method").and_then(Value::as_str) == Some("tools/list")
}

fn is_list_changed(v: &Value) -> bool {
    v.get("method").and_then(Value::as_str) == Some("notifications/tools/list_changed")
}

fn policy(
    hold_request: fn(&Value) -> bool,
    hold_response: fn(&Value) -> bool,
    hold_notification: fn(&Value) -> bool,
) -> Policy {
    Policy {
        hold_request: Arc::new(hold_request),
        hold_response: Arc::new(hold_response),
        hold_notification: Arc::new(hold_notification),
    }
}

fn no(_: &Value) -> bool {
    false
}

fn published_tools(st: &HubState) -> usize {
    control::events(st, Side::Client, "published")
        .filter(|(_, e)| e.get("kind").and_then(Value::as_str) == Some("tools"))
        .count()
}

/// `tools/list_changed` notifications that reached the proxy from the server.
fn list_changed_from_server(st: &HubState) -> usize {
    st.records
        .iter()
        .filter(|r| {
            matches!(&r.body, Body::Msg { dir: Dir::Down, json: Some(v), .. } if is_list_changed(v))
        })
        .count()
}

fn held_where(st: &HubState, f: impl Fn(Dir, &Value) -> bool) -> Vec<u64> {
    st.held
        .iter()
        .filter(|h| f(h.dir, &h.json))
        .map(|h| h.seq)
        .collect()
}

fn is_response(v: &Value) -> bool {
    matches!(jsonrpc::classify(v), Frame::Response { .. })
}

struct Ctx {
    run: Run,
}

/// The end both mid-walk exercises share: with page 1 of the walk held, `a` is removed, then page
/// 1 (of the version before the removal) is released and the run settles.
async fn remove_under_page_1(ctx: &mut Ctx) -> Result<(), String> {
    let p1 = ctx
        .wait_held("page-1 responses", 1, |d, v| {
            d == Dir::Down && is_response(v)
        })
        .await;
    ctx.mutate(vec![Op::remove(Kind::Tools, "a")]).await?;
    ctx.run.proxy.set_policy(policy(no, no, is_list_changed));
    ctx.run
        .note("releasing page 1 (of the version before the removal)");
    ctx.release(&p1);
    ctx.quiet().await;
    ctx.finish().await;
    Ok(())
}

impl Ctx {
    /// Waits for the client's first tools snapshot, then for the link to settle.
    async fn initial(&self) -> Result<(), String> {
        let b = self.run.bounds.startup;
        if self
            .run
            .hub
            .wait_until(b, |st| (published_tools(st) > 0).then_some(()))
            .await
            .is_none()
        {
            self.run
                .note("the client published no tools snapshot at start-up");
        }
        self.run.settle().await;
        Ok(())
    }

    async fn wait_held(&self, what: &str, n: usize, f: impl Fn(Dir, &Value) -> bool) -> Vec<u64> {
        let got = self
            .run
            .hub
            .wait_until(self.run.bounds.step, |st| {
                let h = held_where(st, &f);
                (h.len() >= n).then_some(h)
            })
            .await;
        match got {
            Some(h) => h,
            None => {
                let h = held_where(&self.run.hub.lock(), &f);
                self.run.note(format!(
                    "expected {n} held {what} within {:?}; have {}",
                    self.run.bounds.step,
                    h.len()
                ));
                h
            }
        }
    }

    /// Waits until nothing happens for the quiet period (a third-party client may still be
    /// about to send requests after a debounce).
    async fn quiet(&self) {
        let b = self.run.bounds;
        self.run.hub.wait_quiet(b.quiet, b.settle, |_| true).await;
    }

    /// Releases held responses one at a time, each once the client has acted on the one
    /// before (published a snapshot, or reported a failed refresh): the order in which the
    /// client handles them is then the order of release, not the luck of how its runtime reads
    /// lines that arrive together.
    async fn release_one_by_one(&self, seqs: &[u64]) {
        let acted = |st: &HubState| {
            published_tools(st)
                + control::events(st, Side::Client, "refresh_failed").count()
                + control::events(st, Side::Client, "refresh_discarded").count()
        };
        for s in seqs {
            let before = acted(&self.run.hub.lock());
            self.run.proxy.act(*s, Action::Deliver);
            let b = self.run.bounds.step;
            if self
                .run
                .hub
                .wait_until(b, |st| (acted(st) > before).then_some(()))
                .await
                .is_none()
            {
                self.run.note(format!(
                    "the client did not publish or fail a refresh within {b:?} of release #{s}"
                ));
            }
        }
    }

    fn release(&self, seqs: &[u64]) {
        for s in seqs {
            self.run.proxy.act(*s, Action::Deliver);
        }
    }

    async fn finish(&self) {
        self.run.proxy.set_policy(Policy::pass_all());
        self.run.proxy.release_all();
        if self.run.settle().await {
            self.run.fact(Fact::Quiescent {
                kinds: vec![Kind::Tools],
            });
        } else {
            self.run
                .note("the run did not settle within the bound: no quiescence is declared");
        }
    }

    async fn mutate(&mut self, ops: Vec<Op>) -> Result<(), String> {
        if let Some(refused) = self.run.mutate(&ops).await? {
            self.run
                .note(format!("the server adapter refused the batch: {refused}"));
        }
        Ok(())
    }

    /// Mutates, then waits (bounded) until the server's `list_changed` for the batch reached the
    /// proxy, so the next batch cannot be issued before it: the history dates a notification's
    /// announced version by the last batch issued before it arrived.
    async fn mutate_notified(&mut self, ops: Vec<Op>) -> Result<(), String> {
        let before = list_changed_from_server(&self.run.hub.lock());
        self.mutate(ops).await?;
        let seen = self
            .run
            .hub
            .wait_until(self.run.bounds.step, |st| {
                (list_changed_from_server(st) > before).then_some(())
            })
            .await;
        if seen.is_none() {
            self.run.note(format!(
                "no tools list_changed from the server within {:?} of the batch",
                self.run.bounds.step
            ));
        }
        Ok(())
    }
}

/// Drives exercise `s` against the run's two ends (`via`: the server's explicit notify path, for
/// the explicit-notify exercises).
async fn script(s: Exercise, ctx: &mut Ctx, via: Option<&str>) -> Result<(), String> {
    match s {
        Exercise::StaleRace => stale_race(ctx).await,
        Exercise::MidWalk => mid_walk(ctx).await,
        Exercise::ListenRace => listen_race(ctx).await,
        Exercise::Notify
        | Exercise::NotifyExplicit
        | Exercise::NotifyExplicitSession
        | Exercise::SessionSendToPythonClient => notify(s, ctx, via).await,
        Exercise::CallRemoval => call_removal(ctx).await,
        Exercise::MidWalkServer => mid_walk_server(ctx).await,
    }
}

/// [`Exercise::StaleRace`]: three batches while the tools/list responses are held, then the
/// held responses released one by one, newest first.
async fn stale_race(ctx: &mut Ctx) -> Result<(), String> {
    ctx.initial().await?;
    ctx.run.proxy.set_policy(policy(no, is_tools_list, no));
    ctx.mutate(vec![Op::add(Kind::Tools, "c", "c1")]).await?;
    ctx.wait_held("tools/list responses", 1, |d, v| {
        d == Dir::Down && is_response(v)
    })
    .await;
    ctx.mutate_notified(vec![Op::remove(Kind::Tools, "a")])
        .await?;
    ctx.mutate(vec![Op::update(Kind::Tools, "b", "b2")]).await?;
    ctx.quiet().await;
    let mut held = held_where(&ctx.run.hub.lock(), |d, v| d == Dir::Down && is_response(v));
    held.reverse();
    ctx.run.note(format!(
        "releasing {} held list responses, newest first",
        held.len()
    ));
    ctx.run.proxy.set_policy(Policy::pass_all());
    ctx.release_one_by_one(&held).await;
    ctx.finish().await;
    Ok(())
}

/// [`Exercise::MidWalk`]: the first list_changed reaches the client, the page-1 response of
/// its walk is held, a removal is committed, then page 1 (of the version before it) is released.
async fn mid_walk(ctx: &mut Ctx) -> Result<(), String> {
    ctx.initial().await?;
    ctx.run
        .proxy
        .set_policy(policy(no, is_first_page_list, is_list_changed));
    ctx.mutate(vec![Op::add(Kind::Tools, "c", "c1")]).await?;
    // The first notification goes to the client; later ones wait.
    let n = ctx
        .wait_held("list_changed", 1, |d, v| {
            d == Dir::Down && is_list_changed(v)
        })
        .await;
    ctx.release(&n);
    remove_under_page_1(ctx).await
}

/// [`Exercise::ListenRace`]: the client's listen request is held, a change is committed, then
/// the request is released.
async fn listen_race(ctx: &mut Ctx) -> Result<(), String> {
    let held = ctx
        .wait_held_startup("subscriptions/listen requests", |d, v| {
            d == Dir::Up && v.get("method").and_then(Value::as_str) == Some("subscriptions/listen")
        })
        .await;
    // Give a client that lists before its acknowledgement the time to do so.
    ctx.quiet().await;
    ctx.mutate(vec![Op::add(Kind::Tools, "c", "c1")]).await?;
    ctx.run
        .note("releasing the listen request (the change is already committed)");
    ctx.run.proxy.set_policy(Policy::pass_all());
    ctx.release(&held);
    ctx.finish().await;
    Ok(())
}

/// [`Exercise::Notify`] and its explicit variants: three batches (add, remove, a two-operation
/// batch), each followed, but for `Notify`, by the SDK's explicit notify (through `via`).
async fn notify(s: Exercise, ctx: &mut Ctx, via: Option<&str>) -> Result<(), String> {
    ctx.initial().await?;
    let batches = vec![
        vec![Op::add(Kind::Tools, "c", "c1")],
        vec![Op::remove(Kind::Tools, "a")],
        vec![
            Op::add(Kind::Tools, "d", "d1"),
            Op::update(Kind::Tools, "b", "b2"),
        ],
    ];
    for b in batches {
        ctx.mutate(b).await?;
        if s != Exercise::Notify {
            let mut fields = json!({"kind": "tools"});
            if let Some(v) = via {
                fields["via"] = json!(v);
            }
            if let Err(e) = ctx
                .run
                .server
                .cmd("notify", fields, ctx.run.bounds.command)
                .await
            {
                ctx.run.note(format!("explicit notify failed: {e}"));
            }
        }
        ctx.run.settle().await;
    }
    ctx.finish().await;
    Ok(())
}

/// [`Exercise::CallRemoval`]: a call parked at its gate while its tool is removed (its
/// list_changed held back), released, then a call of the removed tool.
async fn call_removal(ctx: &mut Ctx) -> Result<(), String> {
    ctx.initial().await?;
    let bound = ctx.run.bounds.command;
    let gate = ctx
        .run
        .server
        .cmd("gate_call", json!({"tool": "a"}), bound)
        .await
        .map_err(|e| format!("gate_call: {e}"))?;
    let gate = gate.get("gate").cloned().unwrap_or(Value::Null);
    ctx.run
        .send(Side::Client, "call", json!({"tool": "a"}))
        .await
        .map_err(|e| format!("call: {e}"))?;
    let parked = ctx
        .run
        .hub
        .wait_until(ctx.run.bounds.step, |st| {
            control::events(st, Side::Server, "call_parked")
                .next()
                .map(|_| ())
        })
        .await;
    if parked.is_none() {
        ctx.run.note("the call did not park at its gate");
    }
    ctx.run.proxy.set_policy(policy(no, no, is_list_changed));
    ctx.mutate(vec![Op::remove(Kind::Tools, "a")]).await?;
    ctx.run.probes_taken().await;
    let _ = ctx
        .run
        .server
        .cmd("release", json!({ "gate": gate }), bound)
        .await;
    ctx.wait_replies(1).await;
    ctx.run
        .note("calling the removed tool (its list_changed is held back)");
    ctx.run
        .send(Side::Client, "call", json!({"tool": "a"}))
        .await
        .map_err(|e| format!("call: {e}"))?;
    ctx.wait_replies(2).await;
    ctx.finish().await;
    Ok(())
}

/// [`Exercise::MidWalkServer`]: the reference client refreshes, its page-1 response is held, a
/// removal is committed, then page 1 (of the version before it) is released.
async fn mid_walk_server(ctx: &mut Ctx) -> Result<(), String> {
    ctx.initial().await?;
    ctx.run
        .proxy
        .set_policy(policy(no, is_first_page_list, is_list_changed));
    ctx.run
        .send(Side::Client, "refresh", json!({"kind": "tools"}))
        .await
        .map_err(|e| format!("refresh: {e}"))?;
    remove_under_page_1(ctx).await
}

impl Ctx {
    async fn wait_held_startup(&self, what: &str, f: impl Fn(Dir, &Value) -> bool) -> Vec<u64> {
        let got = self
            .run
            .hub
            .wait_until(self.run.bounds.startup, |st| {
                let h = held_where(st, &f);
                (!h.is_empty()).then_some(h)
            })
            .await;
        got.unwrap_or_else(|| {
            self.run.note(format!("no {what} was held"));
            Vec::new()
        })
    }

    /// Waits until the client answered `n` `call` commands.
    async fn wait_replies(&self, n: usize) {
        let b = self.run.bounds.step;
        let got = self
            .run
            .hub
            .wait_until(b, |st| {
                let calls: Vec<u64> = st
                    .records
                    .iter()
                    .filter_map(|r| match &r.body {
                        Body::Command { to: Side::Client, cmd }
                            if cmd.get("cmd").and_then(Value::as_str) == Some("call") =>
                        {
                            cmd.get("id").and_then(Value::as_u64)
                        }
                        _ => None,
                    })
                    .collect();
                let answered = st
                    .records
                    .iter()
                    .filter(|r| matches!(&r.body, Body::Reply { from: Side::Client, reply }
                        if reply.get("id").and_then(Value::as_u64).is_some_and(|i| calls.contains(&i))))
                    .count();
                (answered >= n).then_some(())
            })
            .await;
        if got.is_none() {
            self.run
                .note(format!("call {n} was not answered within {b:?}"));
        }
    }
}

/// Runs one scenario against `subject` (its role is the scenario's) in `era`.
pub async fn run(
    s: Exercise,
    subject: &Subject,
    era: Era,
    paths: &Paths,
    bounds: Bounds,
) -> RunReport {
    let started = std::time::Instant::now();
    let role = s.role();
    let variant = subject
        .variant
        .clone()
        .unwrap_or_else(|| subject.adapter.default_variant(role));
    let subject = Subject {
        adapter: subject.adapter.clone(),
        role: Some(role),
        variant: Some(variant.clone()),
    };
    let mut report = RunReport::new(
        Target::Exercise {
            name: s.name().into(),
        },
        &subject,
        role,
        era,
    );
    if !subject.adapter.eras.contains(&era) {
        report.status = RunStatus::Unsupported;
        report.detail = Some(format!("{} does not speak {era}", subject.adapter.name));
        return report;
    }
    if role == Role::Server && !subject.adapter.mutates.contains(Kind::Tools) {
        report.status = RunStatus::Unsupported;
        report.detail = Some(crate::replay::fixed_catalog(
            &subject.adapter.name,
            Kind::Tools,
        ));
        return report;
    }
    let initial = tools(&[("a", "a1"), ("b", "b1")]);
    let kinds = KindSet::only(Kind::Tools);
    let reference_variant = |r: Role| {
        if r == role {
            variant.clone()
        } else {
            "reference".into()
        }
    };
    let server = ServerSetup {
        adapter: if role == Role::Server {
            subject.adapter.clone()
        } else {
            manifest::reference()
        },
        variant: reference_variant(Role::Server),
        era,
        page_size: s.page_size(),
        initial,
        ttl_ms: None,
        retain_versions: None,
    };
    let mut client = ClientSetup {
        adapter: if role == Role::Client {
            subject.adapter.clone()
        } else {
            manifest::reference()
        },
        variant: reference_variant(Role::Client),
        era,
        kinds,
    };
    if let Some((_, (adapter, v), _)) = s.pair() {
        client.adapter = adapter;
        client.variant = v.into();
    }
    report.server = format!("{} ({})", server.adapter.name, server.variant);
    report.client = format!("{} ({})", client.adapter.name, client.variant);
    let launches =
        server_launch(paths, &server).and_then(|sl| Ok((sl, client_launch(paths, &client)?)));
    let (sl, cl) = match launches {
        Ok(l) => l,
        Err(e) => return report.failed(e, started),
    };
    let first_policy = if s == Exercise::ListenRace {
        policy(
            |v| v.get("method").and_then(Value::as_str) == Some("subscriptions/listen"),
            no,
            no,
        )
    } else {
        Policy::pass_all()
    };
    let run = match Run::start(RunConfig {
        server: sl,
        client: cl,
        policy: first_policy,
        probe_kinds: kinds,
        kinds,
        bounds,
    })
    .await
    {
        Ok(r) => r,
        Err(e) => return report.failed(e, started),
    };
    let mut ctx = Ctx { run };
    let result = match ctx.run.read_catalog("initial", None).await {
        Ok(_) => {
            let via = matches!(
                s,
                Exercise::NotifyExplicitSession | Exercise::SessionSendToPythonClient
            )
            .then_some("session");
            script(s, &mut ctx, via).await
        }
        Err(e) => Err(e),
    };
    report.status = match &result {
        Ok(()) => RunStatus::Completed,
        Err(_) => RunStatus::Failed,
    };
    report.detail = result.err();
    let records = ctx.run.finish().await;
    report.attach(records, kinds);
    report.mask_with(|p| s.judges(p, era));
    report.duration_ms = started.elapsed().as_millis() as u64;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A property the harness never sees is n/a in every scenario's verdicts, never "holds"
    /// (before: `judges` answered true for errors_not_changes, consumers_agree,
    /// approval_not_inherited and no_stale_arguments, and conformance.json said they held).
    #[test]
    fn no_scenario_judges_what_the_harness_never_sees() {
        for e in Exercise::ALL {
            for era in Era::ALL {
                for p in Property::ALL {
                    if crate::outcome::not_judged(p).is_some() {
                        assert!(!e.judges(p, era), "{e:?} {era} judges {p}");
                    }
                }
            }
        }
    }
}
