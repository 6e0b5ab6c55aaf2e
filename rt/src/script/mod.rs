//! Scripts: a timed schedule of batches a running server applies to itself
//! (`listsync serve --script FILE|PRESET`), so that anyone's client can be watched against lists
//! that change — at a time, every interval, in bursts, while one of the client's list requests
//! is held at the server, or while one of its tool calls runs — and named presets for the known
//! races (`stale-race`, `mid-walk`, `burst`, `call-removal`, `schema-change`; `presets/*.toml`).
//!
//! The format (TOML) is documented in docs/test-your-client.md. Ops are the control protocol's
//! (the shorthand of [`crate::admin::op_arg`], or JSON ops as inline tables), checked
//! when the script is read: a malformed script is refused in one line naming the line and column.
//! Holding a request or a call uses the server's gates ([`crate::gate`]), as the harness does.

use crate::admin::op_arg;
use crate::admin::parse_op;
use crate::gate::{GateTarget, Phase};
use crate::server::{Server, ServerNotice};
use listsync_core::history::Event;
use listsync_core::vocab::{Kind, Op};
use serde::Deserialize;
use serde_json::Value;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// The named presets: name and TOML text.
pub const PRESETS: &[(&str, &str)] = &[
    ("stale-race", include_str!("presets/stale-race.toml")),
    ("mid-walk", include_str!("presets/mid-walk.toml")),
    ("burst", include_str!("presets/burst.toml")),
    ("call-removal", include_str!("presets/call-removal.toml")),
    ("schema-change", include_str!("presets/schema-change.toml")),
];

/// Largest script file read.
pub const MAX_SCRIPT_BYTES: u64 = 1 << 20;

/// How long a `release = "answered"` hold waits for another answer before it lets go anyway.
pub const ANSWER_WAIT: Duration = Duration::from_secs(1);

/// After the other answer was served, how long before the held one goes (so the other one is
/// written first).
const SETTLE: Duration = Duration::from_millis(100);

/// When the script's clock starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// When the server starts.
    Now,
    /// When the server has served its first list page (a client connected and listed).
    FirstList,
}

/// What a step holds while it commits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    /// The `nth` next request of `method`, parked before it is served or after its answer was
    /// computed.
    Request {
        /// JSON-RPC method (`tools/list`...).
        method: String,
        /// Which of the next requests (1 = the next).
        nth: u32,
        /// Where it is parked.
        phase: Phase,
    },
    /// The next call of a tool, parked inside its handler after dispatch.
    Call {
        /// Tool name.
        tool: String,
    },
}

/// When a held request or call goes on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Release {
    /// When another request of the same list has been served (at most [`ANSWER_WAIT`] later).
    Answered,
    /// This long after the step's batches were committed.
    After(Duration),
}

/// One op of a script, as written: `{n}` in its strings is the number of the step's commit.
#[derive(Clone, Debug)]
pub struct OpTemplate(Value);

impl OpTemplate {
    /// The op for commit number `n`.
    pub fn op(&self, n: u64) -> Result<Op, String> {
        parse_op(&fill(&self.0, n)).map_err(|f| f.error)
    }
}

fn fill(v: &Value, n: u64) -> Value {
    match v {
        Value::String(s) => Value::String(s.replace("{n}", &n.to_string())),
        Value::Array(a) => Value::Array(a.iter().map(|x| fill(x, n)).collect()),
        Value::Object(m) => Value::Object(m.iter().map(|(k, x)| (k.clone(), fill(x, n))).collect()),
        other => other.clone(),
    }
}

/// One step of a schedule.
#[derive(Clone, Debug)]
pub struct ScheduleStep {
    /// Name (for the lines the schedule reports).
    pub name: String,
    /// First occurrence, from the script's start.
    pub at: Duration,
    /// Period of the later occurrences, if it repeats.
    pub every: Option<Duration>,
    /// Occurrences (None: until the server stops, when it repeats; else 1).
    pub times: Option<u32>,
    /// Commits per occurrence.
    pub burst: u32,
    /// Between two commits of a burst.
    pub gap: Duration,
    /// What is held while the batches commit.
    pub hold: Option<Hold>,
    /// Committed before waiting for the hold (to make the client send what is held).
    pub trigger: Vec<OpTemplate>,
    /// The batch (committed `burst` times per occurrence).
    pub ops: Vec<OpTemplate>,
    /// Applied instead of `ops` on every second occurrence (toggling), if given.
    pub undo: Vec<OpTemplate>,
    /// When the held request or call goes on.
    pub release: Release,
    /// Longest wait for the hold to catch its request or call.
    pub timeout: Duration,
}

/// A parsed script.
#[derive(Clone, Debug)]
pub struct Script {
    /// Where it came from (`preset NAME` or the file).
    pub origin: String,
    /// What it does.
    pub description: String,
    /// What a correct client does under it (presets).
    pub correct: String,
    /// The property a wrong client breaks (core's name; presets).
    pub property: Option<String>,
    /// A known-bad client strategy that breaks it, as observed on the wire (presets).
    pub wrong: Option<String>,
    /// The race it makes (core's situation name; presets).
    pub situation: Option<String>,
    /// When the clock starts.
    pub start: Start,
    /// Page size to serve at, unless `--page-size` says otherwise.
    pub page_size: Option<u16>,
    /// The steps, each on its own clock from the start.
    pub steps: Vec<ScheduleStep>,
}

/// A script refused: one line naming where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

/// A duration written as `250ms`, `2s`, `1.5s` or `1m`.
#[derive(Clone, Copy, Debug)]
struct Dur(Duration);

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        parse_duration(&s)
            .map(Dur)
            .map_err(serde::de::Error::custom)
    }
}

/// `250ms`, `2s`, `1.5s`, `1m`.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let (num, unit) = match t.find(|c: char| !(c.is_ascii_digit() || c == '.')) {
        Some(i) => t.split_at(i),
        None => (t, ""),
    };
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        _ => {
            return Err(format!(
                "duration '{s}': expected a number and ms, s or m (e.g. 250ms)"
            ));
        }
    };
    let n: f64 = num
        .parse()
        .map_err(|_| format!("duration '{s}': expected a number and ms, s or m (e.g. 250ms)"))?;
    let secs = n * scale;
    if !(0.0..=86_400.0).contains(&secs) {
        return Err(format!("duration '{s}': at most a day"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawScript {
    description: Option<String>,
    correct: Option<String>,
    property: Option<toml::Spanned<String>>,
    wrong: Option<toml::Spanned<String>>,
    situation: Option<toml::Spanned<String>>,
    start: Option<toml::Spanned<String>>,
    page_size: Option<u16>,
    #[serde(default)]
    step: Vec<toml::Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    name: Option<String>,
    at: Option<Dur>,
    every: Option<Dur>,
    times: Option<u32>,
    burst: Option<u32>,
    gap: Option<Dur>,
    during: Option<String>,
    nth: Option<u32>,
    phase: Option<toml::Spanned<String>>,
    during_call: Option<String>,
    #[serde(default)]
    trigger: Vec<toml::Spanned<Value>>,
    ops: Vec<toml::Spanned<Value>>,
    #[serde(default)]
    undo: Vec<toml::Spanned<Value>>,
    release: Option<toml::Spanned<String>>,
    timeout: Option<Dur>,
}

/// Line and column (1-based) of byte `at` in `text`.
fn line_col(text: &str, at: usize) -> (usize, usize) {
    let before = &text[..at.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

impl Script {
    /// A preset by name, or the script file at `arg`.
    pub fn load(arg: &str) -> Result<Script, ScriptError> {
        if let Some((name, text)) = PRESETS.iter().find(|(n, _)| *n == arg) {
            return Script::parse(text, &format!("preset {name}"));
        }
        let path = Path::new(arg);
        if !path.exists() && !arg.contains(['/', '.']) {
            let names: Vec<&str> = PRESETS.iter().map(|(n, _)| *n).collect();
            return Err(ScriptError(format!(
                "{arg}: no such preset ({}) or file",
                names.join(", ")
            )));
        }
        let text = read_limited(path).map_err(|e| ScriptError(format!("{arg}: {e}")))?;
        Script::parse(&text, arg)
    }

    /// Parses a script's text; `origin` names it in errors (`ORIGIN:LINE:COLUMN: what`).
    pub fn parse(text: &str, origin: &str) -> Result<Script, ScriptError> {
        let at = |span: Range<usize>, msg: &str| {
            let (l, c) = line_col(text, span.start);
            ScriptError(format!("{origin}:{l}:{c}: {}", msg.trim()))
        };
        let raw: RawScript = toml::from_str(text).map_err(|e| {
            let msg = e.message().replace('\n', " ");
            match e.span() {
                Some(span) => at(span, &msg),
                None => ScriptError(format!("{origin}: {msg}")),
            }
        })?;
        let start = match &raw.start {
            None => Start::FirstList,
            Some(s) => match s.get_ref().as_str() {
                "first-list" => Start::FirstList,
                "now" => Start::Now,
                other => {
                    return Err(at(
                        s.span(),
                        &format!("start '{other}': expected \"first-list\" or \"now\""),
                    ));
                }
            },
        };
        if let Some(p) = &raw.property
            && p.get_ref()
                .parse::<listsync_core::property::Property>()
                .is_err()
        {
            return Err(at(p.span(), &format!("unknown property '{}'", p.get_ref())));
        }
        if let Some(w) = &raw.wrong
            && let Err(e) = w
                .get_ref()
                .parse::<listsync_core::strategy::ClientStrategy>()
        {
            return Err(at(w.span(), &e));
        }
        if let Some(s) = &raw.situation
            && s.get_ref()
                .parse::<listsync_core::situation::Situation>()
                .is_err()
        {
            return Err(at(
                s.span(),
                &format!("unknown situation '{}'", s.get_ref()),
            ));
        }
        let mut steps = Vec::with_capacity(raw.step.len());
        for (i, spanned) in raw.step.iter().enumerate() {
            let span = spanned.span();
            let s = spanned.get_ref();
            let name = s.name.clone().unwrap_or_else(|| format!("step {}", i + 1));
            let ops = |list: &[toml::Spanned<Value>], field: &str| {
                list.iter()
                    .enumerate()
                    .map(|(j, o)| {
                        let v = match o.get_ref() {
                            Value::String(arg) => op_arg(arg),
                            v @ Value::Object(_) => parse_op(&fill(v, 1))
                                .map(|_| v.clone())
                                .map_err(|f| f.error),
                            _ => Err("an op is a string (add:tool:NAME=TEXT...) or a table".into()),
                        };
                        v.map(OpTemplate).map_err(|e| {
                            at(o.span(), &format!("{name}: {field} op {}: {e}", j + 1))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            };
            let hold = match (&s.during, &s.during_call) {
                (Some(_), Some(_)) => {
                    return Err(at(
                        span,
                        &format!("{name}: `during` and `during_call` exclude each other"),
                    ));
                }
                (Some(method), None) => Some(Hold::Request {
                    method: method.clone(),
                    nth: s.nth.unwrap_or(1).max(1),
                    phase: match s.phase.as_ref().map(|p| (p.get_ref().as_str(), p.span())) {
                        None | Some(("after", _)) => Phase::After,
                        Some(("before", _)) => Phase::Before,
                        Some((other, sp)) => {
                            return Err(at(
                                sp,
                                &format!(
                                    "{name}: phase '{other}': expected \"before\" or \"after\""
                                ),
                            ));
                        }
                    },
                }),
                (None, Some(tool)) => Some(Hold::Call { tool: tool.clone() }),
                (None, None) => None,
            };
            if hold.is_none()
                && let Some(field) = [
                    ("trigger", !s.trigger.is_empty()),
                    ("release", s.release.is_some()),
                    ("nth", s.nth.is_some()),
                    ("phase", s.phase.is_some()),
                ]
                .iter()
                .find_map(|(f, set)| set.then_some(*f))
            {
                return Err(at(
                    span,
                    &format!("{name}: `{field}` needs `during` or `during_call`"),
                ));
            }
            if matches!(hold, Some(Hold::Call { .. })) && s.nth.is_some() {
                return Err(at(span, &format!("{name}: `nth` goes with `during`")));
            }
            let release =
                match &s.release {
                    None => match hold {
                        Some(Hold::Call { .. }) => Release::After(Duration::ZERO),
                        _ => Release::Answered,
                    },
                    Some(r) if r.get_ref() == "answered" => Release::Answered,
                    Some(r) => Release::After(parse_duration(r.get_ref()).map_err(|e| {
                        at(r.span(), &format!("{name}: release: {e} or \"answered\""))
                    })?),
                };
            let burst = s.burst.unwrap_or(1);
            if burst == 0 {
                return Err(at(span, &format!("{name}: burst must be at least 1")));
            }
            if s.times == Some(0) {
                return Err(at(span, &format!("{name}: times must be at least 1")));
            }
            if s.times.is_some_and(|t| t > 1) && s.every.is_none() {
                return Err(at(span, &format!("{name}: `times` above 1 needs `every`")));
            }
            if s.every.is_some_and(|e| e.0.is_zero()) {
                return Err(at(span, &format!("{name}: `every` must be above 0")));
            }
            let op_list = ops(&s.ops, "ops")?;
            if op_list.is_empty() {
                return Err(at(span, &format!("{name}: `ops` is empty")));
            }
            let trigger = ops(&s.trigger, "trigger")?;
            let undo = ops(&s.undo, "undo")?;
            steps.push(ScheduleStep {
                name,
                at: s.at.map_or(Duration::ZERO, |d| d.0),
                every: s.every.map(|d| d.0),
                times: match (s.times, s.every) {
                    (Some(t), _) => Some(t),
                    (None, Some(_)) => None,
                    (None, None) => Some(1),
                },
                burst,
                gap: s.gap.map_or(Duration::ZERO, |d| d.0),
                hold,
                trigger,
                ops: op_list,
                undo,
                release,
                timeout: s.timeout.map_or(Duration::from_secs(5), |d| d.0),
            });
        }
        if steps.is_empty() {
            return Err(ScriptError(format!(
                "{origin}: no steps (add a [[step]] with `ops`)"
            )));
        }
        Ok(Script {
            origin: origin.to_owned(),
            description: raw.description.unwrap_or_default().trim().to_owned(),
            correct: raw.correct.unwrap_or_default().trim().to_owned(),
            property: raw.property.map(|p| p.into_inner()),
            wrong: raw.wrong.map(|w| w.into_inner()),
            situation: raw.situation.map(|s| s.into_inner()),
            start,
            page_size: raw.page_size,
            steps,
        })
    }
}

fn read_limited(path: &Path) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let file = std::fs::File::open(path)?;
    if file.metadata()?.is_dir() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "a directory, not a file",
        ));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCRIPT_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("more than {MAX_SCRIPT_BYTES} bytes (the limit)"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::InvalidData, "not UTF-8 text"))
}

/// The list kind a `X/list` method serves, if it is one.
fn list_kind(method: &str) -> Option<Kind> {
    Some(match method {
        "tools/list" => Kind::Tools,
        "prompts/list" => Kind::Prompts,
        "resources/list" => Kind::Resources,
        "resources/templates/list" => Kind::ResourceTemplates,
        _ => return None,
    })
}

/// Something the schedule did, said as one line (`listsync serve` prints them on stderr).
pub type Report = mpsc::UnboundedSender<String>;

/// Runs `script` against `server` until every step is done or `stop` is cancelled; each commit,
/// hold, release and refusal is reported as a line. A batch the server refuses is reported and
/// the schedule goes on.
pub async fn run(server: Server, script: Arc<Script>, report: Report, stop: CancellationToken) {
    let run = async {
        if script.start == Start::FirstList {
            let (tx, mut rx) = mpsc::unbounded_channel();
            server.observe(tx);
            let _ = report.send("waiting for a client's first list".into());
            while let Some(n) = rx.recv().await {
                if matches!(n, ServerNotice::Event(Event::Served { .. })) {
                    break;
                }
            }
        }
        let _ = report.send(format!("started ({})", script.origin));
        // Dropped with the schedule (on `stop`), the set ends every step still running.
        let mut steps = tokio::task::JoinSet::new();
        for step in script.steps.iter().cloned() {
            steps.spawn(run_step(server.clone(), step, report.clone()));
        }
        while steps.join_next().await.is_some() {}
        let _ = report.send("finished".into());
    };
    tokio::select! {
        _ = run => {}
        _ = stop.cancelled() => {}
    }
}

/// Releases its gate when dropped (a step stopped midway leaves nothing parked).
struct Held<'a> {
    server: &'a Server,
    gate: u64,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.server.gates().release(self.gate);
    }
}

async fn run_step(server: Server, step: ScheduleStep, report: Report) {
    tokio::time::sleep(step.at).await;
    let mut commits = 0u64;
    let mut occurrence = 0u32;
    let mut next = tokio::time::Instant::now();
    loop {
        occurrence += 1;
        let ops = if occurrence.is_multiple_of(2) && !step.undo.is_empty() {
            &step.undo
        } else {
            &step.ops
        };
        occur(&server, &step, ops, occurrence, &mut commits, &report).await;
        if step.times.is_some_and(|t| occurrence >= t) {
            break;
        }
        let Some(every) = step.every else { break };
        next += every;
        tokio::time::sleep_until(next).await;
    }
}

/// Commits one batch of `ops` as commit number `n`.
async fn commit(server: &Server, step: &ScheduleStep, ops: &[OpTemplate], n: u64, report: &Report) {
    let batch: Result<Vec<Op>, String> = ops.iter().map(|o| o.op(n)).collect();
    let said = match batch {
        Err(e) => format!("{}: commit {n}: {e}", step.name),
        Ok(batch) => match server.apply_checked(&batch).await {
            Ok(a) => format!(
                "{}: commit {n}: version {} ({} notification(s))",
                step.name, a.version, a.notified
            ),
            Err(e) => format!("{}: commit {n} refused (nothing changed): {e}", step.name),
        },
    };
    let _ = report.send(said);
}

async fn occur(
    server: &Server,
    step: &ScheduleStep,
    ops: &[OpTemplate],
    occurrence: u32,
    commits: &mut u64,
    report: &Report,
) {
    let burst = |commits: &mut u64| {
        let first = *commits + 1;
        *commits += u64::from(step.burst);
        async move {
            for i in 0..u64::from(step.burst) {
                if i > 0 {
                    tokio::time::sleep(step.gap).await;
                }
                commit(server, step, ops, first + i, report).await;
            }
        }
    };
    let Some(hold) = &step.hold else {
        burst(commits).await;
        return;
    };
    let (target, nth) = match hold {
        Hold::Request { method, nth, phase } => (
            GateTarget::Request {
                method: method.clone(),
                phase: *phase,
            },
            *nth,
        ),
        Hold::Call { tool } => (GateTarget::Call { tool: tool.clone() }, 1),
    };
    // Served pages are watched from before the hold, so none is missed.
    let (tx, mut served) = mpsc::unbounded_channel();
    if step.release == Release::Answered {
        server.observe(tx);
    }
    let held = Held {
        server,
        gate: server.gates().arm(target.clone(), nth),
    };
    let what = match hold {
        Hold::Request { method, nth, .. } if *nth > 1 => format!("request {nth} of {method}"),
        Hold::Request { method, .. } => format!("the next {method}"),
        Hold::Call { tool } => format!("the next call of {tool}"),
    };
    let _ = report.send(format!("{}: waiting for {what}", step.name));
    if !step.trigger.is_empty() {
        *commits += 1;
        commit(server, step, &step.trigger, *commits, report).await;
    }
    let parked = tokio::time::timeout(step.timeout, server.gates().parked(held.gate)).await;
    if parked != Ok(true) {
        let _ = report.send(format!(
            "{}: occurrence {occurrence}: {what} did not come within {:?}; skipped",
            step.name, step.timeout
        ));
        return;
    }
    let _ = report.send(format!("{}: holding {what}", step.name));
    // Pages served before the batch are not the answer waited for.
    while served.try_recv().is_ok() {}
    burst(commits).await;
    match step.release {
        Release::After(d) => tokio::time::sleep(d).await,
        Release::Answered => {
            let kind = match hold {
                Hold::Request { method, .. } => list_kind(method),
                Hold::Call { .. } => None,
            };
            let answered = async {
                while let Some(n) = served.recv().await {
                    if let ServerNotice::Event(Event::Served { kind: k, .. }) = n
                        && Some(k) == kind
                    {
                        return;
                    }
                }
                std::future::pending::<()>().await;
            };
            if tokio::time::timeout(ANSWER_WAIT, answered).await.is_ok() {
                tokio::time::sleep(SETTLE).await;
            }
        }
    }
    drop(held);
    let _ = report.send(format!("{}: released {what}", step.name));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_parses_and_says_what_it_is_for() {
        for (name, text) in PRESETS {
            let s = Script::parse(text, name).unwrap_or_else(|e| panic!("{e}"));
            assert!(!s.description.is_empty(), "{name}");
            assert!(!s.correct.is_empty(), "{name}");
            assert!(s.property.is_some(), "{name}");
            assert!(s.situation.is_some(), "{name}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("fast").is_err());
        assert!(parse_duration("2d").is_err());
    }

    #[test]
    fn malformed_scripts_are_refused_with_line_and_column() {
        for (text, want) in [
            (
                "[[step]]\nat = \"1s\"\nops = [\"add:tool:a\"]\n",
                "x.toml:3:8: step 1: ops op 1: add needs a description",
            ),
            (
                "[[step]]\nat = \"soon\"\nops = [\"remove:tool:a\"]\n",
                "x.toml:2:6: duration 'soon'",
            ),
            (
                "[[step]]\nops = [\"remove:tool:a\"]\nwhen = 1\n",
                "x.toml:3:1: unknown field `when`",
            ),
            ("[[step]\n", "x.toml:1:8: unclosed array table"),
            (
                "start = \"later\"\n[[step]]\nops = [\"remove:tool:a\"]\n",
                "x.toml:1:9: start 'later'",
            ),
            (
                "[[step]]\nrelease = \"1s\"\nops = [\"remove:tool:a\"]\n",
                "x.toml:1:1: step 1: `release` needs `during`",
            ),
            (
                "[[step]]\nops = [{op = \"add\", kind = \"tools\"}]\n",
                "x.toml:2:8: step 1: ops op 1: missing string field 'name'",
            ),
            ("description = \"nothing\"\n", "x.toml: no steps"),
            (
                "wrong = \"sloppy\"\n[[step]]\nops = [\"remove:tool:a\"]\n",
                "x.toml:1:9: unknown strategy 'sloppy'",
            ),
        ] {
            let e = Script::parse(text, "x.toml").unwrap_err().0;
            assert!(e.starts_with(want), "{text:?}\n got: {e}\nwant: {want}");
            assert!(!e.contains('\n'), "{e}");
        }
    }

    #[test]
    fn schema_change_gives_echo_an_input_schema() {
        let s = Script::load("schema-change").unwrap();
        let demo = crate::fixtures::Fixtures::Demo.catalog();
        let mut catalog = listsync_core::vocab::Catalog::default();
        for op in &demo {
            catalog.apply(&crate::items::normalize(op, &catalog));
        }
        let op = crate::items::normalize(&s.steps[0].ops[0].op(1).unwrap(), &catalog);
        let Op::Update { def, .. } = op else {
            panic!("{op:?}")
        };
        let def: Value = serde_json::from_str(&def).unwrap();
        assert_eq!(
            def["inputSchema"]["required"],
            serde_json::json!(["message"]),
            "{def}"
        );
        assert_eq!(def["description"], "Returns its message", "{def}");
    }

    #[test]
    fn ops_fill_in_the_commit_number() {
        let s = Script::parse(
            "[[step]]\nburst = 3\nops = [\"update:tool:echo=rev {n}\"]\n",
            "x",
        )
        .unwrap();
        let op = s.steps[0].ops[0].op(2).unwrap();
        assert_eq!(
            op,
            Op::Update {
                kind: Kind::Tools,
                name: "echo".into(),
                def: "rev 2".into()
            }
        );
    }
}
