//! Folding away the lanes a violation does not need.
//!
//! A counterexample of several clients often needs only one of them: the violation's
//! explanation names the client whose snapshot went wrong, and the others' messages only make
//! the picture taller. [`fold`] removes the lanes of the clients the explanation does not name,
//! the nodes of a cluster that serve none of the named clients, every message to or from them,
//! and the rows left empty, and says so in the subtitle. Nothing is folded when the explanation
//! names every client or none, or when a client migrates between nodes (its node is then not one
//! lane).

use super::{Band, Diagram, LaneKind};
use listsync_core::history::ClientId;
use listsync_core::trace::Trace;
use listsync_core::world::Step;
use std::collections::BTreeSet;

/// The clients `text` names (`c0`, `c1's`...).
pub fn named_clients(text: &str) -> BTreeSet<ClientId> {
    let b = text.as_bytes();
    let mut out = BTreeSet::new();
    for (i, _) in text.match_indices('c') {
        if i > 0 && (b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_') {
            continue;
        }
        let digits: String = text[i + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let after = b.get(i + 1 + digits.len()).copied();
        if digits.is_empty() || after.is_some_and(|a| a.is_ascii_alphanumeric() || a == b'_') {
            continue;
        }
        if let Ok(c) = digits.parse() {
            out.insert(c);
        }
    }
    out
}

/// Removes from `d`, a diagram of `trace`, what the violation does not need (see the module doc).
pub fn fold(d: &mut Diagram, trace: &Trace) {
    let Some(detail) = trace.detail.as_deref() else {
        return;
    };
    let scn = &trace.scenario;
    let named = named_clients(detail);
    let n = scn.clients.len();
    if named.is_empty()
        || named.len() >= n
        || named.iter().any(|&c| c as usize >= n)
        || trace
            .steps
            .iter()
            .any(|s| matches!(s, Step::Migrate { .. }))
    {
        return;
    }
    let node_of = |c: ClientId| {
        scn.cluster
            .as_ref()
            .map_or(0, |cl| cl.node_of_client(c as usize))
    };
    let folded_lane: Vec<bool> = d
        .lanes
        .iter()
        .map(|l| match l.kind {
            LaneKind::Client(c) => !named.contains(&c),
            LaneKind::Server(k) => scn.cluster.is_some() && !named.iter().any(|&c| node_of(c) == k),
            _ => false,
        })
        .collect();
    let folded_track: Vec<bool> = d.tracks.iter().map(|t| folded_lane[t.party]).collect();
    let names_only_folded = |text: &str| {
        let said = named_clients(text);
        !said.is_empty() && said.is_disjoint(&named)
    };
    let keeps = |line: &Band| match line {
        Band::Note { lane, text, .. } => !folded_lane[*lane] && !names_only_folded(text),
        Band::Send {
            from: lane, track, ..
        }
        | Band::Deliver {
            to: lane, track, ..
        } => !folded_lane[*lane] && !track.is_some_and(|t| folded_track[t]),
        Band::Lost { track } | Band::Copy { track, .. } => !folded_track[*track],
        Band::Violation { .. } => true,
    };

    // Rows and lines kept, and where each kept (row, line) went.
    let mut moved = std::collections::HashMap::new();
    let mut rows = Vec::new();
    let mut omitted = 0usize;
    for (ri, row) in std::mem::take(&mut d.rows).into_iter().enumerate() {
        let had = !row.lines.is_empty();
        let mut kept = row.clone();
        kept.lines.clear();
        for (li, line) in row.lines.into_iter().enumerate() {
            if keeps(&line) {
                moved.insert((ri, li), (rows.len(), kept.lines.len()));
                kept.lines.push(line);
            }
        }
        if had && kept.lines.is_empty() && kept.step.is_some() && kept.violation.is_none() {
            omitted += 1;
            continue;
        }
        rows.push(kept);
    }

    // Tracks and lanes renumbered.
    let mut track_at = vec![None; d.tracks.len()];
    let mut tracks = Vec::new();
    for (ti, t) in std::mem::take(&mut d.tracks).into_iter().enumerate() {
        let Some(&start) = moved.get(&t.start).filter(|_| !folded_track[ti]) else {
            continue;
        };
        let mut t = t;
        t.start = start;
        t.end = t.end.and_then(|e| moved.get(&e).copied());
        track_at[ti] = Some(tracks.len());
        tracks.push(t);
    }
    let mut lane_at = vec![0; d.lanes.len()];
    let mut lanes = Vec::new();
    let mut gone = Vec::new();
    for (li, lane) in std::mem::take(&mut d.lanes).into_iter().enumerate() {
        if folded_lane[li] {
            gone.push(lane.name);
        } else {
            lane_at[li] = lanes.len();
            lanes.push(lane);
        }
    }
    for t in &mut tracks {
        t.lane = lane_at[t.lane];
        t.party = lane_at[t.party];
    }
    for row in &mut rows {
        for line in &mut row.lines {
            match line {
                Band::Note { lane, .. } => *lane = lane_at[*lane],
                Band::Send {
                    from: lane, track, ..
                }
                | Band::Deliver {
                    to: lane, track, ..
                } => {
                    *lane = lane_at[*lane];
                    *track = track.and_then(|t| track_at[t]);
                }
                Band::Lost { track } => *track = track_at[*track].unwrap_or(*track),
                Band::Copy { track, of } => {
                    *track = track_at[*track].unwrap_or(*track);
                    *of = of.and_then(|t| track_at[t]);
                }
                Band::Violation { .. } => {}
            }
        }
    }
    let kept: Vec<String> = named.iter().map(|c| format!("c{c}")).collect();
    d.subtitle.push_str(&format!(
        " · folded away: {} (the violation names {} only; {omitted} step{} not drawn)",
        gone.join(", "),
        kept.join(", "),
        if omitted == 1 { "" } else { "s" }
    ));
    d.rows = rows;
    d.tracks = tracks;
    d.lanes = lanes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_are_named_as_whole_words() {
        let said = named_clients("v3 was committed after c1's last refresh; c0, not sc2 or c3x");
        assert_eq!(said.into_iter().collect::<Vec<_>>(), vec![0, 1]);
    }
}
