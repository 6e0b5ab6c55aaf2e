//! `listsync adapter check FILE`: starts an adapter in each role and era its manifest claims
//! (default variant, our reference runtime on the other end of the link) and checks the control
//! protocol of `docs/harness-protocol.md` — not the adapter's list behaviour, which is what
//! `replay` and `matrix` judge. Each failure is one line naming the rule it breaks; the rules are
//! listed under "Rules `listsync adapter check` applies" in the protocol document.

use crate::adapters::{
    ClientSetup, Paths, Role, ServerSetup, client_launch, server_launch, version_of,
};
use crate::control::{self, CmdError};
use crate::manifest::{self, Manifest};
use crate::proxy::{Policy, control_items};
use crate::run::{Bounds, Run, RunConfig};
use crate::timeline::{Body, Record, Side};
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;

/// A rule of the control protocol (its id in `docs/harness-protocol.md`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule(pub &'static str);

/// Every rule the check applies, with what it says.
pub const RULES: &[(&str, &str)] = &[
    ("start", "the launch argv starts a process"),
    (
        "connect",
        "the adapter connects to LISTSYNC_CONTROL at start-up",
    ),
    (
        "ready",
        "the adapter sends a ready event (server: registry populated and transport started; client: after the MCP handshake)",
    ),
    (
        "ready-fields",
        "ready carries role and era_requested as given, sdk and sdk_version",
    ),
    (
        "negotiated",
        "a client sends negotiated with protocol_version",
    ),
    (
        "initial-list",
        "a client reports published for every kind it lists, after its first list",
    ),
    (
        "catalog",
        "a server answers catalog with the items of LISTSYNC_INITIAL, in list order (a fixed-catalog server, [server] mutates without tools, starts with an empty LISTSYNC_INITIAL and answers with its own items)",
    ),
    (
        "mutate",
        "a server applies a valid batch (catalog shows it) and refuses an invalid one whole (a fixed-catalog server refuses adding a tool, and the tool does not appear)",
    ),
    ("snapshot", "a client answers snapshot with its items"),
    (
        "one-reply",
        "every command gets exactly one reply, carrying its id",
    ),
    (
        "unknown-command",
        "an unknown command gets ok:false with an error, and the adapter goes on",
    ),
    (
        "framing",
        "every control line is a JSON object: a reply or an event with a name",
    ),
    (
        "stdout-json-rpc",
        "stdout carries JSON-RPC messages only (logs go to stderr)",
    ),
    (
        "clean-exit",
        "after shutdown the adapter replies, then exits with status 0",
    ),
];

/// One broken rule.
#[derive(Clone, Debug)]
pub struct RuleFailure {
    /// Rule id.
    pub rule: &'static str,
    /// What happened.
    pub message: String,
}

/// One session: the adapter in one role and era.
#[derive(Clone, Debug)]
pub struct Session {
    /// Role.
    pub role: Role,
    /// Era.
    pub era: Era,
    /// Variant started.
    pub variant: String,
    /// Rules broken.
    pub failures: Vec<RuleFailure>,
    /// Rules checked and kept.
    pub passed: Vec<&'static str>,
}

impl Session {
    /// `client 2025-11-25 (default)`.
    pub fn label(&self) -> String {
        format!("{} {} ({})", self.role, self.era, self.variant)
    }
}

/// What the check found.
#[derive(Clone, Debug)]
pub struct Checked {
    /// The adapter's name.
    pub adapter: String,
    /// Its version (or why none).
    pub version: Result<String, String>,
    /// One per role and era.
    pub sessions: Vec<Session>,
}

impl Checked {
    /// Whether every rule held in every session (and the version is known).
    pub fn ok(&self) -> bool {
        self.version.is_ok() && self.sessions.iter().all(|s| s.failures.is_empty())
    }

    /// One line per broken rule (and one per session that kept every rule).
    pub fn lines(&self) -> Vec<String> {
        let mut out = Vec::new();
        match &self.version {
            Ok(v) => out.push(format!("{} {v}", self.adapter)),
            Err(e) => out.push(format!("FAIL {}: [version] {e}", self.adapter)),
        }
        for s in &self.sessions {
            if s.failures.is_empty() {
                out.push(format!(
                    "ok   {} {}: {} rules kept",
                    self.adapter,
                    s.label(),
                    s.passed.len()
                ));
            }
            for f in &s.failures {
                out.push(format!(
                    "FAIL {} {}: [{}] {} (docs/harness-protocol.md, rule {})",
                    self.adapter,
                    s.label(),
                    f.rule,
                    f.message,
                    f.rule
                ));
            }
        }
        out
    }
}

/// Checks an adapter in every role and era its manifest claims; `starting` hears each session
/// (role, era) before it starts, so a caller can say what it waits on.
pub async fn check(
    paths: &Paths,
    m: Arc<Manifest>,
    bounds: Bounds,
    starting: &mut dyn FnMut(Role, Era),
) -> Checked {
    let version = version_of(paths, &m);
    let mut sessions = Vec::new();
    if version.is_ok() {
        for role in [Role::Server, Role::Client] {
            if !m.plays(role) {
                continue;
            }
            for era in m.eras.clone() {
                starting(role, era);
                sessions.push(session(paths, &m, role, era, bounds).await);
            }
        }
    }
    Checked {
        adapter: m.name.clone(),
        version,
        sessions,
    }
}

struct Book {
    failures: Vec<RuleFailure>,
    passed: Vec<&'static str>,
}

impl Book {
    fn fail(&mut self, rule: &'static str, message: impl Into<String>) {
        if !self.failures.iter().any(|f| f.rule == rule) {
            self.failures.push(RuleFailure {
                rule,
                message: message.into(),
            });
        }
    }

    fn pass(&mut self, rule: &'static str) {
        if !self.passed.contains(&rule) && !self.failures.iter().any(|f| f.rule == rule) {
            self.passed.push(rule);
        }
    }

    fn rule(&mut self, rule: &'static str, r: Result<(), String>) {
        match r {
            Ok(()) => self.pass(rule),
            Err(e) => self.fail(rule, e),
        }
    }
}

fn tools(names: &[(&str, &str)]) -> Vec<Op> {
    names
        .iter()
        .map(|(n, d)| Op::add(Kind::Tools, n, d))
        .collect()
}

async fn session(
    paths: &Paths,
    m: &Arc<Manifest>,
    role: Role,
    era: Era,
    bounds: Bounds,
) -> Session {
    let variant = m.default_variant(role);
    let mut book = Book {
        failures: Vec::new(),
        passed: Vec::new(),
    };
    // A server with a fixed catalog (`[server] mutates` without tools) starts with its own.
    let fixed = role == Role::Server && !m.mutates.contains(Kind::Tools);
    let initial = if fixed {
        Vec::new()
    } else {
        tools(&[("a", "a1"), ("b", "b1")])
    };
    let kinds = KindSet::only(Kind::Tools);
    let under = |r: Role| {
        if r == role {
            m.clone()
        } else {
            manifest::reference()
        }
    };
    let variant_of = |r: Role| {
        if r == role {
            variant.clone()
        } else {
            "reference".to_owned()
        }
    };
    let server = ServerSetup {
        adapter: under(Role::Server),
        variant: variant_of(Role::Server),
        era,
        page_size: 0,
        initial: initial.clone(),
        ttl_ms: None,
        retain_versions: None,
    };
    let client = ClientSetup {
        adapter: under(Role::Client),
        variant: variant_of(Role::Client),
        era,
        kinds,
    };
    let side = match role {
        Role::Server => Side::Server,
        Role::Client => Side::Client,
    };
    let done = |book: Book| Session {
        role,
        era,
        variant: variant.clone(),
        failures: book.failures,
        passed: book.passed,
    };
    let launches =
        server_launch(paths, &server).and_then(|s| Ok((s, client_launch(paths, &client)?)));
    let (sl, cl) = match launches {
        Ok(l) => l,
        Err(e) => {
            book.fail("start", e);
            return done(book);
        }
    };
    let run = match Run::start(RunConfig {
        server: sl,
        client: cl,
        policy: Policy::pass_all(),
        probe_kinds: KindSet::EMPTY,
        kinds,
        bounds,
    })
    .await
    {
        Ok(r) => r,
        Err(e) => {
            let rule = if e.contains("cannot start") {
                "start"
            } else if e.contains("did not connect") {
                "connect"
            } else {
                "ready"
            };
            book.fail(rule, one_line(&e));
            return done(book);
        }
    };
    book.pass("start");
    book.pass("connect");
    if !run.wait_ready(side, bounds.startup).await {
        book.fail(
            "ready",
            format!(
                "no ready event within {:?}; stderr: {}",
                bounds.startup,
                one_line(&run.stderr_tail(side, 300))
            ),
        );
    } else {
        book.pass("ready");
        let ready = control::events(&run.hub.lock(), side, "ready")
            .next()
            .map(|(_, e)| e.clone())
            .unwrap_or_default();
        book.rule("ready-fields", ready_fields(&ready, role, era));
        match role {
            Role::Server if fixed => fixed_server_commands(&run, &mut book).await,
            Role::Server => server_commands(&run, &mut book).await,
            Role::Client => client_commands(&run, &mut book).await,
        }
        let ctl = match side {
            Side::Server => &run.server,
            Side::Client => &run.client,
        };
        let unknown = ctl.cmd("no_such_command", json!({}), bounds.command).await;
        book.rule(
            "unknown-command",
            match unknown {
                Err(CmdError::Failed { error, .. })
                    if !error.is_empty() && error != "(no message)" =>
                {
                    Ok(())
                }
                Err(CmdError::Failed { .. }) => {
                    Err("no_such_command was refused without an error message".into())
                }
                Ok(_) => Err("no_such_command was answered ok:true".into()),
                Err(e) => Err(format!("no_such_command: {e}")),
            },
        );
    }
    let records = run.finish().await;
    after_exit(&records, side, &mut book);
    done(book)
}

fn one_line(s: &str) -> String {
    let s = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match s.char_indices().nth(300) {
        Some((i, _)) => format!("{}…", &s[..i]),
        None => s,
    }
}

fn ready_fields(ready: &Value, role: Role, era: Era) -> Result<(), String> {
    let field = |k: &str| ready.get(k).and_then(Value::as_str);
    if field("role") != Some(role.as_str()) {
        return Err(format!(
            "ready says role {:?}; LISTSYNC_ROLE was {role}",
            field("role")
        ));
    }
    if field("era_requested") != Some(era.as_str()) {
        return Err(format!(
            "ready says era_requested {:?}; LISTSYNC_ERA was {era}",
            field("era_requested")
        ));
    }
    for k in ["sdk", "sdk_version"] {
        if field(k).is_none_or(str::is_empty) {
            return Err(format!("ready has no {k} string"));
        }
    }
    Ok(())
}

fn names(v: &Value) -> Option<Vec<(String, String)>> {
    control_items(v).map(|items| items.into_iter().map(|i| (i.name, i.description)).collect())
}

/// A `catalog tools` reply's items.
fn catalog_items(reply: Result<Value, CmdError>) -> Result<Vec<(String, String)>, String> {
    let reply = reply.map_err(|e| format!("catalog tools: {e}"))?;
    reply
        .get("items")
        .and_then(names)
        .ok_or_else(|| "the catalog reply has no items array of {name, description}".into())
}

/// A server whose manifest says it cannot change its tools (`[server] mutates`): it answers
/// `catalog` with its own items, and refuses a batch adding a tool whole: the tool does not
/// appear. The rest of its catalog is its own to change (a server may add tools by itself, e.g.
/// after the client's `initialized`), so only the refused op is looked for.
async fn fixed_server_commands(run: &Run, book: &mut Book) {
    let bound = run.bounds.command;
    let read = || run.server.cmd("catalog", json!({"kind": "tools"}), bound);
    let first = catalog_items(read().await);
    book.rule("catalog", first.as_ref().map(|_| ()).map_err(Clone::clone));
    let add = json!({"ops": [{"op": "add", "kind": "tools", "name": "c", "description": "c1"}]});
    let mutate = match (first, run.server.cmd("mutate", add, bound).await) {
        (_, Ok(_)) => Err(
            "adding tool c was answered ok:true, but the manifest says the server cannot change its tools ([server] mutates)".into(),
        ),
        (Ok(_), Err(CmdError::Failed { .. })) => match catalog_items(read().await) {
            Ok(after) if !after.iter().any(|(name, _)| name == "c") => Ok(()),
            Ok(after) => Err(format!(
                "a refused batch added tool c all the same: the catalog is now {after:?}"
            )),
            Err(e) => Err(e),
        },
        (Err(e), Err(CmdError::Failed { .. })) => Err(e),
        (_, Err(e)) => Err(format!("a mutate the server cannot apply: {e}")),
    };
    book.rule("mutate", mutate);
}

async fn server_commands(run: &Run, book: &mut Book) {
    let bound = run.bounds.command;
    let catalog = catalog_items;
    let want = vec![
        ("a".to_owned(), "a1".to_owned()),
        ("b".to_owned(), "b1".to_owned()),
    ];
    let first = catalog(
        run.server
            .cmd("catalog", json!({"kind": "tools"}), bound)
            .await,
    );
    book.rule(
        "catalog",
        match &first {
            Ok(items) if *items == want => Ok(()),
            Ok(items) => Err(format!(
                "catalog tools is {items:?}; LISTSYNC_INITIAL had {want:?}"
            )),
            Err(e) => Err(e.clone()),
        },
    );
    let add = json!({"ops": [{"op": "add", "kind": "tools", "name": "c", "description": "c1"}]});
    let mutate = match run.server.cmd("mutate", add, bound).await {
        Err(e) => Err(format!("a valid mutate (add tool c): {e}")),
        Ok(_) => match catalog(
            run.server
                .cmd("catalog", json!({"kind": "tools"}), bound)
                .await,
        ) {
            Ok(items) if items.iter().any(|(n, d)| n == "c" && d == "c1") => {
                let bad = json!({"ops": [
                    {"op": "add", "kind": "tools", "name": "d", "description": "d1"},
                    {"op": "remove", "kind": "tools", "name": "no-such-tool"}
                ]});
                match run.server.cmd("mutate", bad, bound).await {
                    Ok(_) => Err("a batch removing a missing tool was answered ok:true".into()),
                    Err(CmdError::Failed { .. }) => {
                        match catalog(
                            run.server
                                .cmd("catalog", json!({"kind": "tools"}), bound)
                                .await,
                        ) {
                            Ok(after) if after == items => Ok(()),
                            Ok(after) => Err(format!(
                                "a refused batch changed the catalog: {items:?} became {after:?}"
                            )),
                            Err(e) => Err(e),
                        }
                    }
                    Err(e) => Err(format!("an invalid mutate: {e}")),
                }
            }
            Ok(items) => Err(format!("after adding tool c the catalog is {items:?}")),
            Err(e) => Err(e),
        },
    };
    book.rule("mutate", mutate);
}

async fn client_commands(run: &Run, book: &mut Book) {
    let bound = run.bounds.command;
    let negotiated = run
        .hub
        .wait_until(bound, |st| {
            control::events(st, Side::Client, "negotiated")
                .next()
                .map(|(_, e)| {
                    e.get("protocol_version")
                        .and_then(Value::as_str)
                        .map(str::to_owned)
                })
        })
        .await;
    book.rule(
        "negotiated",
        match negotiated {
            Some(Some(_)) => Ok(()),
            Some(None) => Err("negotiated has no protocol_version string".into()),
            None => Err(format!("no negotiated event within {bound:?} of ready")),
        },
    );
    let published = run
        .hub
        .wait_until(run.bounds.startup, |st| {
            control::events(st, Side::Client, "published")
                .find(|(_, e)| e.get("kind").and_then(Value::as_str) == Some("tools"))
                .map(|(_, e)| e.get("items").and_then(names))
        })
        .await;
    let want = vec![
        ("a".to_owned(), "a1".to_owned()),
        ("b".to_owned(), "b1".to_owned()),
    ];
    book.rule(
        "initial-list",
        match published {
            Some(Some(items)) if items == want => Ok(()),
            Some(Some(items)) => Err(format!(
                "the first published tools list is {items:?}; the server has {want:?}"
            )),
            Some(None) => Err("published has no items array of {name, description}".into()),
            None => Err(format!(
                "no published event for tools within {:?}",
                run.bounds.startup
            )),
        },
    );
    let snap = run
        .client
        .cmd("snapshot", json!({"kind": "tools"}), bound)
        .await;
    book.rule(
        "snapshot",
        match snap {
            Ok(v)
                if v.get("items")
                    .is_some_and(|i| i.is_null() || names(i).is_some()) =>
            {
                Ok(())
            }
            Ok(_) => Err(
                "the snapshot reply has no items (an array of {name, description}, or null)".into(),
            ),
            Err(e) => Err(format!("snapshot tools: {e}")),
        },
    );
}

/// The rules judged on the whole timeline once the adapter was stopped.
fn after_exit(records: &[Record], side: Side, book: &mut Book) {
    let control_from = format!("control {}", side.as_str());
    let stdout_from = match side {
        Side::Server => "mcp from server",
        Side::Client => "mcp from client",
    };
    let process = format!("process {}", side.as_str());
    let mut replies: BTreeMap<u64, usize> = BTreeMap::new();
    let mut commands: Vec<(u64, String)> = Vec::new();
    let mut exit = Ok(());
    for r in records {
        match &r.body {
            Body::Command { to, cmd } if *to == side => {
                if let Some(id) = cmd.get("id").and_then(Value::as_u64) {
                    let name = cmd.get("cmd").and_then(Value::as_str).unwrap_or("?");
                    commands.push((id, name.to_owned()));
                }
            }
            Body::Reply { from, reply } if *from == side => {
                if let Some(id) = reply.get("id").and_then(Value::as_u64) {
                    *replies.entry(id).or_default() += 1;
                }
            }
            Body::Bad { from, what } if *from == control_from => {
                if what.starts_with("a reply to no pending command") {
                    book.fail("one-reply", what.clone());
                } else {
                    book.fail("framing", what.clone());
                }
            }
            Body::Bad { from, what } if from == stdout_from => {
                book.fail("stdout-json-rpc", what.clone())
            }
            Body::Bad { from, what } if *from == process => exit = Err(what.clone()),
            Body::Note { text }
                if text.starts_with(&format!("{} adapter did not exit", side.as_str())) =>
            {
                exit = Err(text.clone());
            }
            _ => {}
        }
    }
    for (id, name) in &commands {
        match replies.get(id).copied().unwrap_or(0) {
            1 => {}
            0 if name == "shutdown" => book.fail(
                "clean-exit",
                "shutdown got no reply before the adapter exited",
            ),
            0 => book.fail("one-reply", format!("command {id} ({name}) got no reply")),
            n => book.fail(
                "one-reply",
                format!("command {id} ({name}) got {n} replies"),
            ),
        }
    }
    book.rule("clean-exit", exit);
    for rule in ["one-reply", "framing", "stdout-json-rpc"] {
        if !book.failures.iter().any(|f| f.rule == rule) {
            book.pass(rule);
        }
    }
}
