//! The readable form of a checked trace (what `listsync trace show` prints): its scenario, the
//! world's log step by step, and the verdict of every property with the step after which it was
//! first violated.

use crate::property::{Property, Verdict, Verdicts};
use crate::trace::{Replay, Trace};
use std::fmt::Write as _;

/// The violated properties, comma-separated, or `no violation`.
pub fn violated_list(v: &Verdicts) -> String {
    let list: Vec<_> = v
        .iter()
        .filter(|(_, v)| **v == Verdict::Violated)
        .map(|(p, _)| p.as_str())
        .collect();
    if list.is_empty() {
        "no violation".into()
    } else {
        list.join(", ")
    }
}

/// The trace `name` as a step list, from the replay [`Trace::check`] gave.
pub fn show(name: &str, t: &Trace, replay: &Replay) -> String {
    let s = &t.scenario;
    let mut o = String::new();
    let ops = |ops: &[crate::vocab::Op]| {
        ops.iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    };
    let _ = writeln!(o, "trace {name} (schema v{}, from {})", t.version, t.source);
    let _ = writeln!(
        o,
        "scenario '{}': era {}, {:?}, server {} (page size {}), {} client(s) {}",
        s.name,
        s.era,
        s.transport,
        s.server.strategy,
        s.server.page_size,
        s.clients.len(),
        s.client_strategy()
    );
    let _ = writeln!(o, "initial catalog: {}", ops(&s.initial));
    for (i, b) in s.script.iter().enumerate() {
        let _ = writeln!(o, "batch {i}: {}", ops(b));
    }
    let _ = writeln!(o);
    let mut last: Option<Option<usize>> = None;
    for (i, line) in &replay.log {
        if last != Some(*i) {
            let _ = match i {
                None => writeln!(o, "start:"),
                Some(i) => writeln!(o, "step {i:>3}: {}", t.steps[*i]),
            };
            last = Some(*i);
        }
        let _ = writeln!(o, "          {line}");
    }
    let _ = writeln!(o);
    for p in Property::ALL {
        let v = replay
            .verdicts
            .get(&p)
            .copied()
            .unwrap_or(Verdict::NotApplicable);
        let at = replay
            .first_violation
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, i)| format!(" (after step {i})"))
            .unwrap_or_default();
        let _ = writeln!(o, "{:22} {v}{at}", p.as_str());
    }
    if let Some(d) = &t.detail {
        let _ = writeln!(o, "\n{d}");
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn violated_properties_are_listed_by_name() {
        let mut v = Verdicts::new();
        v.insert(Property::Converges, Verdict::Holds);
        assert_eq!(violated_list(&v), "no violation");
        v.insert(Property::NoStaleOverwrite, Verdict::Violated);
        v.insert(Property::NoLostWakeup, Verdict::Violated);
        assert_eq!(violated_list(&v), "no_stale_overwrite, no_lost_wakeup");
    }
}
