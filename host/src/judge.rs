//! Judges a host from observation: its MCP side as `listsync audit` reads it (the session log's
//! walks and calls, [`listsync_session::wire::observe`], which reads each connection with
//! [`listsync_observe::ConnObserver`] as the replay and the audit do) and its model side as the scripted model
//! server recorded it (the offered list of every model turn, the calls the model made, the tool
//! results passed back). Times of both are wall-clock microseconds (the log's start plus each
//! entry's offset).
//!
//! The host's list at a moment is the last complete `tools/list` walk on the wire that ended
//! before it ("its re-list returned"). A tool is removed when an earlier complete walk had it
//! and the host's list at that moment does not. Properties (docs/design.md, "Hosts"):
//!
//! - `offered_catches_up`: after each walk, the offered list equals the walk's list within `N`
//!   model turns (the lag is the number of turns, while that walk is the latest, that offered
//!   something else before one offered it; `N` is 0 unless asked);
//! - `no_offer_of_removed`: no turn offers a tool removed from the host's list at that moment;
//! - `no_call_to_removed` (core's name, read for a host): no `tools/call` reaches the server
//!   naming a tool removed from the host's list when the call was sent;
//! - `consumers_agree` (core's name): a tool the model called is dispatched to the server if
//!   and only if that turn offered it (unless a re-list that changed it returned in between);
//! - `clear_result_for_removed`: a call of a removed tool is answered to the model with a tool
//!   result marked `is_error`.

use listsync_core::vocab::Kind;
use listsync_harness::hosts::model_server::{ModelRequest, Recording, Reply};
use listsync_observe::WalkFate;
use listsync_session::audit::Status;
use listsync_session::log::SessionLog;
use listsync_session::wire::Wire;
use serde::Serialize;
use std::collections::BTreeSet;

/// A property of a host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HostProperty {
    /// The offered list catches up with the host's re-list within N turns.
    OfferedCatchesUp,
    /// No turn offers a tool the host's last re-list no longer had.
    NoOfferOfRemoved,
    /// No call of a removed tool is forwarded to the server (core's `no_call_to_removed`).
    NoCallToRemoved,
    /// What is offered is what is dispatched (core's `consumers_agree`).
    ConsumersAgree,
    /// A call of a removed tool gets an error result.
    ClearResultForRemoved,
}

impl HostProperty {
    /// All, in report order.
    pub const ALL: [HostProperty; 5] = [
        HostProperty::OfferedCatchesUp,
        HostProperty::NoOfferOfRemoved,
        HostProperty::NoCallToRemoved,
        HostProperty::ConsumersAgree,
        HostProperty::ClearResultForRemoved,
    ];

    /// Its name; core's where core has the property.
    pub fn as_str(self) -> &'static str {
        use listsync_core::property::Property;
        match self {
            HostProperty::OfferedCatchesUp => "offered_catches_up",
            HostProperty::NoOfferOfRemoved => "no_offer_of_removed",
            HostProperty::NoCallToRemoved => Property::NoCallToRemoved.as_str(),
            HostProperty::ConsumersAgree => Property::ConsumersAgree.as_str(),
            HostProperty::ClearResultForRemoved => "clear_result_for_removed",
        }
    }
}

/// One host property's verdict in one run.
#[derive(Clone, Debug, Serialize)]
pub struct HostVerdict {
    /// The property.
    pub property: HostProperty,
    /// Violated, holds as observed, or not observed.
    pub status: Status,
    /// Why: the first violation, or what was observed.
    pub detail: String,
}

/// What the host's side showed at one model turn (the evidence).
#[derive(Clone, Debug, Serialize)]
pub struct TurnView {
    /// The model turn.
    pub turn: usize,
    /// Milliseconds since the log's start.
    pub at_ms: f64,
    /// The offered list.
    pub offered: Vec<String>,
    /// The host's list then (its last complete walk), if it had listed.
    pub listed: Option<Vec<String>>,
    /// What the model did: `call NAME` or `end`.
    pub model: String,
    /// Whether the call reached the server (`None` for `end`).
    pub forwarded: Option<bool>,
    /// The tool result passed back at the next turn: error flag and text.
    pub result: Option<(bool, String)>,
}

/// The judged run.
#[derive(Clone, Debug, Serialize)]
pub struct HostJudgement {
    /// One verdict per host property.
    pub verdicts: Vec<HostVerdict>,
    /// The turns, as evidence.
    pub turns: Vec<TurnView>,
    /// The longest catch-up lag seen: turns, and whether the offered list never caught up
    /// (then the turns it lasted); `None` if no turn followed a re-list.
    pub max_lag: Option<(usize, bool)>,
}

/// A complete tools walk: when it ended, its names.
struct Listed {
    end_us: u64,
    names: Vec<String>,
}

fn walks(log: &SessionLog, wire: &Wire) -> Vec<Listed> {
    let t0 = log.header.start_us();
    let mut out: Vec<Listed> = wire
        .walks
        .iter()
        .filter(|w| w.kind == Kind::Tools && w.fate == WalkFate::Complete)
        .filter_map(|w| {
            let end = w.ended_at?;
            let e = log.entries.get(usize::try_from(end).ok()?)?;
            Some(Listed {
                end_us: t0 + e.t_us,
                names: w.items().into_iter().map(|i| i.name).collect(),
            })
        })
        .collect();
    out.sort_by_key(|l| l.end_us);
    out
}

fn set(v: &[String]) -> BTreeSet<&str> {
    v.iter().map(String::as_str).collect()
}

/// The judging of one run: the host's complete tools walks, the calls on the wire, the model
/// turns, and what each property showed so far.
struct Judging<'a> {
    t0: u64,
    listed: Vec<Listed>,
    calls_on_wire: Vec<(u64, &'a str)>,
    turns: Vec<&'a ModelRequest>,
    /// Per property (in [`HostProperty::ALL`] order): its first violation.
    fail: Vec<Option<String>>,
    /// Per property: whether what it is about was observed.
    seen: [bool; 5],
}

fn idx(p: HostProperty) -> usize {
    HostProperty::ALL.iter().position(|q| *q == p).unwrap_or(0)
}

/// Judges one run.
pub fn judge(log: &SessionLog, wire: &Wire, rec: &Recording, bound: usize) -> HostJudgement {
    let t0 = log.header.start_us();
    let calls_on_wire = wire
        .calls
        .iter()
        .filter_map(|c| {
            let e = log.entries.get(usize::try_from(c.request).ok()?)?;
            Some((t0 + e.t_us, c.tool.as_str()))
        })
        .collect();
    let mut j = Judging {
        t0,
        listed: walks(log, wire),
        calls_on_wire,
        turns: rec.turns().collect(),
        fail: vec![None; HostProperty::ALL.len()],
        seen: [false; 5],
    };
    let views = (0..j.turns.len()).map(|k| j.turn(k)).collect();
    j.calls();
    let max_lag = j.catch_up(bound);
    let verdicts = HostProperty::ALL
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (status, detail) = match &j.fail[i] {
                Some(why) => (Status::Violated, why.clone()),
                None if j.seen[i] => (Status::HoldsAsObserved, observed_text(*p, max_lag)),
                None => (Status::NotObserved, unobserved_text(*p)),
            };
            HostVerdict {
                property: *p,
                status,
                detail,
            }
        })
        .collect();
    HostJudgement {
        verdicts,
        turns: views,
        max_lag,
    }
}

impl Judging<'_> {
    fn flag(&mut self, p: HostProperty, why: String) {
        let slot = &mut self.fail[idx(p)];
        if slot.is_none() {
            *slot = Some(why);
        }
    }

    /// The host's list at a moment, and the index of that walk.
    fn at(&self, t: u64) -> Option<(usize, &Listed)> {
        self.listed
            .iter()
            .enumerate()
            .rev()
            .find(|(_, l)| l.end_us <= t)
    }

    /// Removed at a moment: in an earlier complete walk, not in the latest.
    fn removed_at(&self, tool: &str, t: u64) -> bool {
        match self.at(t) {
            Some((i, l)) => {
                !l.names.iter().any(|n| n == tool)
                    && self.listed[..i]
                        .iter()
                        .any(|e| e.names.iter().any(|n| n == tool))
            }
            None => false,
        }
    }

    /// Model turn `k`: what it offered against the host's list, and what became of its call.
    fn turn(&mut self, k: usize) -> TurnView {
        let r = self.turns[k];
        let t = r.t_unix_us;
        let host = self.at(t).map(|(i, h)| (i, h.end_us, h.names.clone()));
        let turn = r.turn.unwrap_or(k + 1);
        // no_offer_of_removed
        for o in &r.offered {
            if self.removed_at(o, t) {
                let why = format!(
                    "turn {turn} offered {o}, which the host's re-list that returned {:.0} ms before no longer had",
                    (t - host.as_ref().map_or(t, |h| h.1)) as f64 / 1000.0
                );
                self.flag(HostProperty::NoOfferOfRemoved, why);
            }
        }
        if let Some((i, _, _)) = host
            && i > 0
        {
            self.seen[idx(HostProperty::NoOfferOfRemoved)] |= self.listed[..i]
                .iter()
                .flat_map(|e| e.names.iter())
                .any(|n| self.removed_at(n, t));
        }
        let (model, forwarded, result) = match &r.reply {
            Reply::End => ("end".to_owned(), None, None),
            Reply::Call { tool, id, .. } => {
                let (fwd, result) = self.call(k, turn, tool, id);
                (format!("call {tool}"), Some(fwd), result)
            }
        };
        TurnView {
            turn,
            at_ms: t.saturating_sub(self.t0) as f64 / 1000.0,
            offered: r.offered.clone(),
            listed: host.map(|h| h.2),
            model,
            forwarded,
            result,
        }
    }

    /// The model's call of `tool` at turn `k`: whether it reached the server before the next
    /// turn, and the tool result passed back at the next turn.
    fn call(
        &mut self,
        k: usize,
        turn: usize,
        tool: &str,
        id: &str,
    ) -> (bool, Option<(bool, String)>) {
        let r = self.turns[k];
        let t = r.t_unix_us;
        let next_t = self.turns.get(k + 1).map_or(u64::MAX, |n| n.t_unix_us);
        let fwd = self
            .calls_on_wire
            .iter()
            .any(|(ct, name)| *ct >= r.replied_unix_us && *ct < next_t && *name == tool);
        let result = self.turns.get(k + 1).and_then(|n| {
            n.results
                .iter()
                .find(|x| x.tool_use_id == id)
                .map(|x| (x.is_error, x.text.clone()))
        });
        let offered = r.offered.iter().any(|o| o == tool);
        let gone = self.removed_at(tool, t);
        // consumers_agree, unless a re-list that changed this tool returned between the
        // turn and the next.
        let relisted_between = self.listed.iter().any(|l| {
            l.end_us > t && l.end_us < next_t && l.names.iter().any(|n| n == tool) != offered
        });
        if !relisted_between {
            self.seen[idx(HostProperty::ConsumersAgree)] = true;
            if offered != fwd {
                let why = if offered {
                    format!(
                        "turn {turn} offered {tool} and the model called it; the host did not dispatch it to the server"
                    )
                } else {
                    format!(
                        "turn {turn} did not offer {tool}; the model called it and the host dispatched it to the server"
                    )
                };
                self.flag(HostProperty::ConsumersAgree, why);
            }
        }
        if gone {
            self.removed_call(k, turn, tool, &result);
        }
        (fwd, result)
    }

    /// A call of a removed tool: observed when a result came back, or a next turn came
    /// without one; a host whose loop ended with the call (an exception) shows nothing.
    fn removed_call(&mut self, k: usize, turn: usize, tool: &str, result: &Option<(bool, String)>) {
        let next = k + 1 < self.turns.len();
        self.seen[idx(HostProperty::NoCallToRemoved)] = true;
        self.seen[idx(HostProperty::ClearResultForRemoved)] |= result.is_some() || next;
        match result {
            Some((true, _)) => {}
            Some((false, text)) => self.flag(
                HostProperty::ClearResultForRemoved,
                format!(
                    "turn {turn}: the call of the removed {tool} came back to the model as a success: {text:?}"
                ),
            ),
            None if next => self.flag(
                HostProperty::ClearResultForRemoved,
                format!(
                    "turn {turn}: the call of the removed {tool} got no tool result at the next turn"
                ),
            ),
            None => {}
        }
    }

    /// no_call_to_removed: every call on the wire, against the host's list when it was sent.
    fn calls(&mut self) {
        for i in 0..self.calls_on_wire.len() {
            let (ct, name) = self.calls_on_wire[i];
            if self.removed_at(name, ct) {
                self.seen[idx(HostProperty::NoCallToRemoved)] = true;
                let host = self.at(ct).map_or(0, |h| h.1.end_us);
                let why = format!(
                    "a tools/call of {name} reached the server {:.0} ms after the host's re-list without {name} had returned",
                    (ct - host) as f64 / 1000.0
                );
                self.flag(HostProperty::NoCallToRemoved, why);
            }
        }
    }

    /// offered_catches_up: per walk, the turns while it is the latest. Returns the longest lag.
    fn catch_up(&mut self, bound: usize) -> Option<(usize, bool)> {
        let mut max_lag: Option<(usize, bool)> = None;
        for i in 0..self.listed.len() {
            let l = &self.listed[i];
            let until = self.listed.get(i + 1).map_or(u64::MAX, |n| n.end_us);
            let during: Vec<&ModelRequest> = self
                .turns
                .iter()
                .copied()
                .filter(|r| r.t_unix_us >= l.end_us && r.t_unix_us < until)
                .collect();
            if during.is_empty() {
                continue;
            }
            let changed = i > 0 && set(&self.listed[i - 1].names) != set(&l.names);
            let want = set(&l.names);
            let lag = during
                .iter()
                .position(|r| set(&r.offered) == want)
                .map_or((during.len(), true), |p| (p, false));
            if changed || lag.0 > 0 {
                self.seen[idx(HostProperty::OfferedCatchesUp)] = true;
            }
            if max_lag.is_none_or(|m| (lag.1, lag.0) > (m.1, m.0)) {
                max_lag = Some(lag);
            }
            if lag.0 > bound {
                let why = format!(
                    "the host's re-list returned [{}] at {:.0} ms; {} turn(s) after it offered [{}]{}",
                    l.names.join(", "),
                    l.end_us.saturating_sub(self.t0) as f64 / 1000.0,
                    lag.0,
                    during[0].offered.join(", "),
                    if lag.1 {
                        " and none offered it before the next re-list or the end"
                    } else {
                        " before one offered it"
                    }
                );
                self.flag(HostProperty::OfferedCatchesUp, why);
            }
        }
        max_lag
    }
}

fn observed_text(p: HostProperty, lag: Option<(usize, bool)>) -> String {
    match p {
        HostProperty::OfferedCatchesUp => format!(
            "the offered list followed every re-list (longest lag {} turn(s))",
            lag.map_or(0, |l| l.0)
        ),
        HostProperty::NoOfferOfRemoved => {
            "no turn offered a tool its last re-list no longer had".into()
        }
        HostProperty::NoCallToRemoved => {
            "no call of a tool removed from the host's list reached the server".into()
        }
        HostProperty::ConsumersAgree => {
            "every tool the model called was dispatched exactly when it had been offered".into()
        }
        HostProperty::ClearResultForRemoved => {
            "every call of a removed tool came back to the model as an error".into()
        }
    }
}

fn unobserved_text(p: HostProperty) -> String {
    match p {
        HostProperty::OfferedCatchesUp => {
            "no model turn came after a re-list that changed the list".into()
        }
        HostProperty::NoOfferOfRemoved => {
            "no model turn came after a re-list that removed a tool".into()
        }
        HostProperty::ClearResultForRemoved => {
            "no call of a removed tool was answered to the model (none made, or the host's loop ended with it)".into()
        }
        HostProperty::NoCallToRemoved => {
            "the model called no tool removed from the host's list".into()
        }
        HostProperty::ConsumersAgree => "the model called no tool".into(),
    }
}
