//! Planning a replay: which implementation plays the role under test, which strategies the
//! shadow world runs (substituted for `reference`, the trace's own against a third-party SDK),
//! the launch setups of both sides, and why a trace cannot be replayed (several clients, HTTP-only
//! features, cluster steps, an era the implementation does not speak).

use crate::adapters::{ClientSetup, Role, ServerSetup, Subject};
use crate::manifest;
use listsync_core::client::Pacing;
use listsync_core::scenario::Scenario;
use listsync_core::strategy::{ClientStrategy, ServerStrategy};
use listsync_core::trace::Trace;
use listsync_core::vocab::{Era, Kind, KindSet, Scope};
use listsync_core::world::Step;

/// A replay, resolved: who plays which role with which strategy.
#[derive(Clone, Debug)]
pub struct ReplayPlan {
    /// The trace.
    pub trace: Trace,
    /// Trace file name (for reports).
    pub trace_name: String,
    /// Implementation under test, with its role resolved.
    pub subject: Subject,
    /// Role under test.
    pub role: Role,
    /// The shadow world's scenario (strategies substituted).
    pub scenario: Scenario,
    /// Server side.
    pub server: ServerSetup,
    /// Client side.
    pub client: ClientSetup,
    /// Why it cannot run, if it cannot.
    pub unsupported: Option<String>,
}

/// The role a trace is about: the side whose strategy is not the reference.
pub fn trace_role(scn: &Scenario) -> Option<Role> {
    let server_bad = scn.server.strategy != ServerStrategy::Reference;
    let client_bad = scn.client_strategy() != ClientStrategy::Reference;
    match (server_bad, client_bad) {
        (true, false) => Some(Role::Server),
        (false, true) => Some(Role::Client),
        _ => None,
    }
}

/// Why the harness could not replay `trace` against our runtime running the trace's own
/// strategies (one server process, one client, stdio), or None if it can.
pub fn why_not_replayable(trace: &Trace) -> Option<String> {
    let subject = Subject::reference(None, Some("trace"));
    match plan(trace, "sim", &subject, None) {
        Ok(plan) => plan.unsupported,
        Err(e) => Some(e),
    }
}

/// Whether `subject` is listsync's own machine following the trace's strategy step by step.
pub(super) fn follows_exactly_in(subject: &Subject) -> bool {
    subject.adapter.runs_core && subject.variant.as_deref() == Some("trace")
}

/// Resolves a replay of `trace` against `subject`.
pub fn plan(
    trace: &Trace,
    trace_name: &str,
    subject: &Subject,
    era: Option<Era>,
) -> Result<ReplayPlan, String> {
    // A trace whose own strategies cannot take its steps is malformed, whatever is replayed.
    trace
        .replay()
        .map_err(|e| format!("the trace cannot be replayed: {e}"))?;
    let role = subject
        .role
        .or_else(|| trace_role(&trace.scenario))
        .unwrap_or(Role::Client);
    let scenario = shadow_scenario(trace, subject, role)?;
    let unsupported = why_not_against(trace, subject, role, era, &scenario);
    let (server, client) = setups(subject, role, &scenario);
    Ok(ReplayPlan {
        trace: trace.clone(),
        trace_name: trace_name.to_owned(),
        subject: Subject {
            adapter: subject.adapter.clone(),
            role: Some(role),
            variant: subject.variant.clone(),
        },
        role,
        server,
        client,
        scenario,
        unsupported,
    })
}

/// The shadow world's scenario: the trace's, with the strategies of the role under test
/// substituted when `subject` runs core's machines (`reference` for no variant, the variant's
/// strategy otherwise, the trace's own for `trace`), and every client walking at once.
fn shadow_scenario(trace: &Trace, subject: &Subject, role: Role) -> Result<Scenario, String> {
    let mut scenario = trace.scenario.clone();
    if subject.adapter.runs_core {
        match subject.variant.as_deref() {
            Some("trace") => {}
            None | Some("reference") => match role {
                Role::Server => scenario.server.strategy = ServerStrategy::Reference,
                Role::Client => {
                    for c in &mut scenario.clients {
                        c.strategy = ClientStrategy::Reference;
                    }
                }
            },
            Some(v) => match role {
                Role::Server => scenario.server.strategy = v.parse()?,
                Role::Client => {
                    let s: ClientStrategy = v.parse()?;
                    for c in &mut scenario.clients {
                        c.strategy = s;
                    }
                }
            },
        }
    }
    // The clients the harness runs walk at once on a change signal (ours with `--pacing off`):
    // so does the shadow. A trace with a pacing timer step is not replayed (below), so until its
    // end no walk of the trace was held and the prefix is the same; a walk the trace leaves held
    // at its end is the one the real client has already started when the harness drains.
    for c in &mut scenario.clients {
        c.pacing = Pacing::OFF;
    }
    Ok(scenario)
}

/// Why `trace` cannot be replayed against `subject` in `role` (and in `era`, if given), the
/// first reason found; `scenario` is the shadow world's.
fn why_not_against(
    trace: &Trace,
    subject: &Subject,
    role: Role,
    era: Option<Era>,
    scenario: &Scenario,
) -> Option<String> {
    let mut unsupported = unsupported(&trace.scenario, &trace.steps);
    if let Some(m) = &trace.machine
        && follows_exactly_in(subject)
    {
        unsupported.get_or_insert(format!(
            "the trace's client ran {m}, a machine built outside listsync that its own client \
             cannot run step by step: replay it against an implementation (its adversary is \
             posed adaptively)"
        ));
    }
    if let Some(p) = trace
        .shows
        .filter(|p| !crate::outcome::judges(&trace.scenario, *p))
    {
        unsupported.get_or_insert(format!(
            "the trace shows {p}, which the harness does not judge"
        ));
    }
    if let Some(e) = era
        && e != scenario.era
    {
        unsupported.get_or_insert(format!(
            "the trace is a {} run; it cannot be replayed as {e}",
            scenario.era
        ));
    }
    let name = &subject.adapter.name;
    if !subject.adapter.eras.contains(&scenario.era) {
        unsupported.get_or_insert(format!("{name} does not speak {}", scenario.era));
    }
    if !subject.adapter.plays(role) {
        unsupported.get_or_insert(format!("{name} does not play the {role} role"));
    }
    if let Some(about) = trace_role(&trace.scenario)
        && about != role
        && !follows_exactly_in(subject)
    {
        let bad = match about {
            Role::Server => trace.scenario.server.strategy.as_str().to_owned(),
            Role::Client => trace.scenario.client_strategy().as_str().to_owned(),
        };
        unsupported.get_or_insert(format!(
            "the trace shows a {about}'s bug ({bad}); it is replayed against {about}s"
        ));
    }
    if let Some(why) = beyond_adapter(subject, role, scenario) {
        unsupported.get_or_insert(why);
    }
    unsupported
}

/// Why the scenario needs what `subject`'s adapter lacks: a kind of list its client does not
/// keep, or (as the server) a kind of item its server cannot change on command.
fn beyond_adapter(subject: &Subject, role: Role, scenario: &Scenario) -> Option<String> {
    let name = &subject.adapter.name;
    let kinds = subject.adapter.kinds;
    if let Some(k) = scenario
        .clients
        .iter()
        .flat_map(|c| c.kinds.iter())
        .find(|k| !kinds.contains(*k))
    {
        let has: Vec<&str> = kinds.iter().map(Kind::as_str).collect();
        return Some(format!(
            "the trace's client keeps {k}; the {name} adapter has {} only",
            has.join(", ")
        ));
    }
    if role == Role::Server
        && let Some(k) = scenario
            .initial
            .iter()
            .chain(scenario.script.iter().flatten())
            .filter_map(listsync_core::vocab::Op::kind)
            .find(|k| !subject.adapter.mutates.contains(*k))
    {
        return Some(fixed_catalog(name, k));
    }
    None
}

/// The launch setups of both sides: `subject` plays `role`, our reference runtime the other
/// (a side that runs core's machines runs the scenario's strategy as its variant).
fn setups(subject: &Subject, role: Role, scenario: &Scenario) -> (ServerSetup, ClientSetup) {
    let (server_adapter, client_adapter) = match role {
        Role::Server => (subject.adapter.clone(), manifest::reference()),
        Role::Client => (manifest::reference(), subject.adapter.clone()),
    };
    let server_variant = if server_adapter.runs_core {
        scenario.server.strategy.as_str().to_owned()
    } else {
        subject
            .variant
            .clone()
            .unwrap_or_else(|| server_adapter.default_variant(Role::Server))
    };
    let client_variant = if client_adapter.runs_core {
        scenario.client_strategy().as_str().to_owned()
    } else {
        subject
            .variant
            .clone()
            .unwrap_or_else(|| client_adapter.default_variant(Role::Client))
    };
    let kinds = scenario
        .clients
        .first()
        .map(|c| c.kinds)
        .unwrap_or_else(|| KindSet::only(Kind::Tools));
    let server = ServerSetup {
        adapter: server_adapter,
        variant: server_variant,
        era: scenario.era,
        page_size: scenario.server.page_size,
        initial: scenario.initial.clone(),
        ttl_ms: scenario.server.ttl_ms,
        // The trace's server keeps the walk versions it states: the shadow world's does.
        retain_versions: Some(scenario.server.retain_versions),
    };
    let client = ClientSetup {
        adapter: client_adapter,
        variant: client_variant,
        era: scenario.era,
        kinds,
    };
    (server, client)
}

/// Why a run that changes `kind` is not applicable to a server whose manifest says it cannot
/// (`[server] mutates`).
pub fn fixed_catalog(name: &str, kind: Kind) -> String {
    format!(
        "not applicable: the {name} server cannot change its {k} on command (its manifest's [server] mutates leaves {k} out)",
        k = kind.as_str()
    )
}

fn unsupported(scn: &Scenario, steps: &[Step]) -> Option<String> {
    if scn.cluster.is_some() {
        return Some(
            "cluster scenarios (several server nodes) are out of the harness's scope".into(),
        );
    }
    if scn.aggregate.is_some() {
        return Some(
            "an application with several servers is out of the harness's scope: it runs one \
             client against one server per run"
                .into(),
        );
    }
    if scn.clients.len() != 1 {
        return Some(format!(
            "{} clients: the harness runs one client per run",
            scn.clients.len()
        ));
    }
    if scn.clients.iter().any(|c| !c.watch.is_empty()) {
        return Some("resource content subscriptions are not replayed".into());
    }
    if scn.clients.iter().any(|c| c.ask_approval) || !scn.approvals.is_empty() {
        return Some(
            "user approvals are not replayed: the SDKs' clients have no approval gate".into(),
        );
    }
    if scn.clients.iter().any(|c| !c.known.is_empty()) {
        return Some(
            "preloaded (known) tools are not replayed: the harness does not see a client's router"
                .into(),
        );
    }
    let scoped = scn
        .initial
        .iter()
        .chain(scn.script.iter().flatten())
        .any(|o| {
            matches!(
                o,
                listsync_core::vocab::Op::Add {
                    scope: Scope::Only(_),
                    ..
                }
            )
        });
    if scoped || !scn.auth_changes.is_empty() {
        return Some("authorization contexts need HTTP; the harness runs stdio".into());
    }
    steps.iter().find_map(|s| match s {
        Step::Disconnect { .. } | Step::Reconnect { .. } => {
            Some("disconnects are not replayed (the harness keeps one connection)".into())
        }
        Step::Retry { .. } => {
            Some("retry timers fire by themselves in real clients: not replayed".into())
        }
        Step::WalkDue { .. } => {
            Some("pacing timers fire by themselves in real clients: not replayed".into())
        }
        Step::SetAuth { .. } => Some("authorization changes need HTTP".into()),
        Step::FailCall { .. } => {
            Some("failed calls are not injected: the harness's proxy answers no request".into())
        }
        Step::FailList { .. } => Some(
            "failed list requests are not injected: the harness's proxy answers no request".into(),
        ),
        Step::BusDeliver { .. }
        | Step::BusDuplicate { .. }
        | Step::BusDrop { .. }
        | Step::Poll { .. }
        | Step::Load { .. }
        | Step::Migrate { .. } => Some("cluster steps are out of the harness's scope".into()),
        _ => None,
    })
}
