//! The "Reduction soundness" section of reports/model-check.md, from
//! `model-check-reduction.json` (written by `listsync check --reduction`): each configuration
//! with interchangeable clients explored with and without symmetry reduction, the state counts
//! side by side, and whether the verdicts, the situations reached, the progress verdict and the
//! counterexamples' replays agree. Also the same comparison as terminal text.

use crate::md::cell_escape;
use listsync_model::reduction::{Comparison, ReductionReport};
use std::fmt::Write as _;

/// One line of what differs, or "none".
fn differences(c: &Comparison) -> String {
    let mut d = Vec::new();
    if !c.verdicts_differ.is_empty() {
        let ps: Vec<String> = c.verdicts_differ.iter().map(ToString::to_string).collect();
        d.push(format!("verdicts of {}", ps.join(", ")));
    }
    if !c.within_bound() {
        d.push(format!(
            "more than {}× fewer states with it: it merges states that are not renumberings",
            c.bound
        ));
    }
    if !c.situations_lost.is_empty() {
        d.push(format!("situations lost: {}", c.situations_lost.join(", ")));
    }
    if !c.progress_agrees {
        d.push("progress verdict".into());
    }
    if c.replayed.0 != c.replayed.1 {
        d.push(format!(
            "{} of {} counterexamples do not replay",
            c.replayed.1 - c.replayed.0,
            c.replayed.1
        ));
    }
    if d.is_empty() {
        "none".into()
    } else {
        d.join("; ")
    }
}

fn ratio(c: &Comparison) -> String {
    if c.states.0 == 0 {
        "–".into()
    } else {
        format!("{:.2}×", c.states.1 as f64 / c.states.0 as f64)
    }
}

/// The section, Markdown.
pub fn render(r: &ReductionReport) -> String {
    let rows = r.compare();
    let sound = rows.iter().filter(|c| c.sound()).count();
    let mut s = String::new();
    let _ = writeln!(s, "\n## Reduction soundness\n");
    let _ = writeln!(
        s,
        "**Symmetry reduction ({}): sound in {sound} of {} configurations.** Written by `listsync check --reduction \
         --update-reports`, run by hand: every configuration of the default suite whose clients \
         are interchangeable (two or more clients of one configuration, one server, nothing \
         scripted for one client), and every single-client known-bad one given a second client \
         just like it (`NAME×2`, so that the reduction is judged where properties fail too), \
         explored depth-first with the reduction and without it. Sound \
         means the same verdict for every property, every situation the plain run reaches \
         reached, the same progress verdict, and every counterexample of the reduced run \
         replaying through core's world (which knows nothing of the reduction) to its violation; \
         only the state counts may differ, and by at most the clients' renumberings (n! for n \
         clients: dividing by more would merge states that are not renumberings of each other). Why the reduction is sound: \
         [docs/design.md](../docs/design.md#symmetry-reduction).\n",
        cell_escape(&r.reduction),
        rows.len()
    );
    let _ = writeln!(
        s,
        "| configuration | states with | states without | without / with | at most (n!) | counterexamples replayed | differences |"
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---:|---:|---|");
    for c in &rows {
        let _ = writeln!(
            s,
            "| `{}` | {} | {} | {} | {} | {} of {} | {} |",
            c.config,
            c.states.0,
            c.states.1,
            ratio(c),
            c.bound,
            c.replayed.0,
            c.replayed.1,
            cell_escape(&differences(c))
        );
    }
    s
}

/// The comparison as terminal text, one configuration per line.
pub fn text_table(r: &ReductionReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{:<34} {:>12} {:>12} {:>8}  {:<11} differences",
        "configuration", "with", "without", "ratio", "replayed"
    );
    for c in r.compare() {
        let _ = writeln!(
            s,
            "{:<34} {:>12} {:>12} {:>8}  {:<11} {}",
            c.config,
            c.states.0,
            c.states.1,
            ratio(&c),
            format!("{} of {}", c.replayed.0, c.replayed.1),
            differences(&c)
        );
    }
    s
}
