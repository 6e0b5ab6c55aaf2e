//! The strategy × property table of reports/model-check.md: for every known-bad strategy, which
//! properties the model finds it breaking in its small world (`model-check.json`), in a world as
//! big as `reference-large` (`model-check-at-size.json`, written by `listsync check --at-size`),
//! and which the simulator's campaign of it breaks (`reports/sim/*.json`, machine level), side by
//! side, with every disagreement between them said in words: which side sees the violation and
//! what the other side's world lacks.

use crate::md::cell_escape;
use crate::sim::SimSummary;
use listsync_core::property::{Property, Verdict};
use listsync_model::suite::{ConfigReport, SuiteReport};
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The file `listsync check --at-size` writes.
pub const AT_SIZE_FILE: &str = "model-check-at-size.json";

/// The suffix of an enlarged configuration's name.
const AT_SIZE: &str = "@large";

fn violated(c: &ConfigReport) -> BTreeSet<Property> {
    c.properties
        .iter()
        .filter(|(_, r)| r.verdict == Verdict::Violated)
        .map(|(p, _)| *p)
        .collect()
}

/// The known-bad configurations that, enlarged, no longer violate a property they were expected
/// to violate (their small world's verdict): each as one line.
pub fn escaped(at_size: &SuiteReport) -> Vec<String> {
    at_size
        .configs
        .iter()
        .flat_map(|c| {
            let found = violated(c);
            c.expected
                .iter()
                .filter(|(p, v)| **v == Verdict::Violated && !found.contains(p))
                .map(|(p, _)| {
                    format!(
                        "{}: {p} not violated among {} states (its small world violates it)",
                        c.name, c.unique_states
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// What `listsync check --at-size` prints: one line per enlarged world.
pub fn text_table(at_size: &SuiteReport) -> String {
    let mut s = String::new();
    for c in &at_size.configs {
        let v: Vec<String> = violated(c).iter().map(ToString::to_string).collect();
        let _ = writeln!(
            s,
            "{:34} {:>9} states {:>6.1}s {}  violated: {}",
            c.name,
            c.unique_states,
            c.seconds,
            if c.exhaustive {
                "explored: all"
            } else {
                "bounded"
            },
            if v.is_empty() {
                "none".into()
            } else {
                v.join(", ")
            }
        );
    }
    s
}

/// One strategy's three sources.
struct Row<'a> {
    name: &'a str,
    small: &'a ConfigReport,
    large: Option<&'a ConfigReport>,
    sim: Option<&'a SimSummary>,
}

/// Renders the section: `small` is the default suite's document, `at_size` the enlarged worlds'
/// (if `check --at-size` has written it), `sims` the simulator's summaries.
pub fn render(small: &SuiteReport, at_size: Option<&SuiteReport>, sims: &[SimSummary]) -> String {
    let rows: Vec<Row> = small
        .configs
        .iter()
        .filter(|c| c.expected.values().any(|v| *v == Verdict::Violated))
        .map(|c| Row {
            name: &c.name,
            small: c,
            large: at_size.and_then(|a| {
                a.configs
                    .iter()
                    .find(|l| l.name == format!("{}{AT_SIZE}", c.name))
            }),
            sim: sims.iter().find(|s| {
                s.strategy == c.name
                    && s.level == listsync_sim::summary::Level::Machine
                    && s.burst.is_none()
            }),
        })
        .collect();
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\n## Known-bad strategies: model and simulator side by side\n"
    );
    let _ = writeln!(
        s,
        "For each known-bad strategy, the properties it is seen breaking: **M** by the model in \
         its small world (the table above), **L** by the model in its world enlarged to the size \
         of `reference-large` (three tools one per page, four batches, a call, and in 2025-11-25 \
         a duplicated notification and a cut connection; `listsync check --at-size`: explored breadth-first and \
         depth-first, each bounded, so a blank L means none among the states explored), **S** by the simulator's campaign of \
         it (machine level, 1–4 clients under its fault plan). A cell with only some of the \
         three is a disagreement, said in words below the table.\n"
    );
    let props: Vec<Property> = Property::ALL
        .into_iter()
        .filter(|p| {
            rows.iter().any(|r| {
                violated(r.small).contains(p)
                    || r.large.is_some_and(|l| violated(l).contains(p))
                    || r.sim.is_some_and(|x| x.violations.contains_key(p))
            })
        })
        .collect();
    let _ = write!(s, "| strategy | L states |");
    for p in &props {
        let _ = write!(s, " {} |", crate::properties::property(*p));
    }
    let _ = write!(s, "\n|---|---:|");
    for _ in &props {
        let _ = write!(s, "---|");
    }
    s.push('\n');
    let mut notes = Vec::new();
    for r in &rows {
        let small = violated(r.small);
        let large = r.large.map(violated);
        let _ = write!(
            s,
            "| `{}` | {} |",
            r.name,
            r.large.map_or("not run".into(), |l| format!(
                "{}{}",
                l.unique_states,
                if l.exhaustive { " (all)" } else { "" }
            ))
        );
        for p in &props {
            let m = small.contains(p);
            let l = large.as_ref().map(|v| v.contains(p));
            let x = r.sim.map(|x| x.violations.contains_key(p));
            let mut marks = Vec::new();
            if m {
                marks.push("M");
            }
            if l == Some(true) {
                marks.push("L");
            }
            if x == Some(true) {
                marks.push("S");
            }
            let applies =
                r.small.properties.get(p).map(|x| x.verdict) != Some(Verdict::NotApplicable);
            let cell = if marks.is_empty() {
                if applies {
                    "·".to_owned()
                } else {
                    "n/a".to_owned()
                }
            } else {
                marks.join(" ")
            };
            let _ = write!(s, " {} |", cell_escape(&cell));
            if let Some(why) = disagreement(r, m, l, x) {
                notes.push(format!("- `{}` × {p}: {why}", r.name));
            }
        }
        s.push('\n');
    }
    if notes.is_empty() {
        let _ = writeln!(
            s,
            "\nNo disagreement: each strategy breaks the same properties in all three."
        );
    } else {
        let _ = writeln!(s, "\nDisagreements:\n");
        if let Some(x) = rows.iter().find_map(|r| r.sim) {
            let _ = writeln!(
                s,
                "Where only the simulator sees a violation, it needs what only the simulator's \
                 world has, or lies beyond the enlarged world's bound: the simulator runs {} \
                 clients under the `{}` fault plan ({}), while the enlarged model world has its \
                 own clients, four batches, and at most one duplicated notification and one cut \
                 connection.\n",
                x.clients, x.faults, x.faults_about
            );
        }
        for n in notes {
            let _ = writeln!(s, "{n}");
        }
    }
    s
}

/// Why the three sources disagree on a property for this strategy (seen by its small world: `m`,
/// its enlarged world: `l`, the simulator: `x`), or None if they agree (or one is
/// missing: then the table says "not run").
fn disagreement(r: &Row, m: bool, l: Option<bool>, x: Option<bool>) -> Option<String> {
    let (Some(l), Some(x)) = (l, x) else {
        return None;
    };
    if m == l && l == x {
        return None;
    }
    let sim = r.sim.map_or(String::new(), |s| {
        format!(
            "{} runs of {} clients under the `{}` fault plan",
            s.runs, s.clients, s.faults
        )
    });
    let large = r.large.map_or(0, |c| c.unique_states);
    Some(match (m, l, x) {
        (false, true, true) => "needs a larger world than its small one (more batches, pages, a duplicate or a cut): the enlarged world and the simulator reach it".into(),
        (false, true, false) => format!("needs a larger world than its small one; the simulator's {sim} did not draw an interleaving that shows it"),
        (false, false, true) => format!("seen only by the simulator ({sim}); none among the enlarged world's {large} states"),
        (true, true, false) | (true, false, false) => format!("the model shows it; the simulator's {sim} did not draw an interleaving that shows it"),
        (true, false, true) if r.large.is_some_and(|c| c.exhaustive) => format!("its small world and the simulator show it; the enlarged world, explored to its end ({large} states), holds it: its larger pages or faults change the race"),
        (true, false, true) => format!("its small world and the simulator show it; the enlarged world, explored depth-first to {large} states (bounded), did not come upon it"),
        (false, false, false) | (true, true, true) => return None,
    })
}
