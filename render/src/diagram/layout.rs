//! Where a diagram's lanes, rows, bands and message tracks go.

use super::{Band, Diagram, LaneKind};
use crate::svg::{CHAR_PX, text_width, wrap};

pub(super) const MARGIN: f64 = 16.0;
pub(super) const BAND: f64 = 22.0;
pub(super) const ROW_PAD: f64 = 5.0;
pub(super) const LANE_HEAD: f64 = 40.0;
pub(super) const SLOT: f64 = 13.0;
/// Least and most room between a track lane's edge and its outermost track.
pub(super) const TRACK_PAD_MIN: f64 = 20.0;
pub(super) const TRACK_PAD_MAX: f64 = 260.0;

/// Computed geometry.
pub(super) struct Layout {
    pub(super) label_w: f64,
    pub(super) lane_x: Vec<f64>,
    pub(super) lane_w: Vec<f64>,
    /// Track lanes: from the lane's left edge to its first track.
    pub(super) pad_left: Vec<f64>,
    pub(super) width: f64,
    /// Characters that fit in a note box of each lane.
    pub(super) lane_chars: Vec<usize>,
}

pub(super) fn is_track_lane(k: LaneKind) -> bool {
    matches!(k, LaneKind::Network | LaneKind::Bus)
}

/// Assigns each track a column in its lane (greedy interval colouring by start), so tracks
/// alive at the same time never share one. Returns the number of columns per lane.
pub(super) fn assign_slots(d: &mut Diagram) -> Vec<usize> {
    let mut cols = vec![0usize; d.lanes.len()];
    let n_rows = d.rows.len();
    let mut order: Vec<usize> = (0..d.tracks.len()).collect();
    order.sort_by_key(|&t| d.tracks[t].start);
    // busy[lane][slot] = (row, line) until which the slot is taken.
    let mut busy: Vec<Vec<(usize, usize)>> = vec![Vec::new(); d.lanes.len()];
    for t in order {
        let (lane, start) = (d.tracks[t].lane, d.tracks[t].start);
        let end = d.tracks[t].end.unwrap_or((n_rows, 0));
        let slots = &mut busy[lane];
        let slot = match slots.iter().position(|until| *until < start) {
            Some(s) => {
                slots[s] = end;
                s
            }
            None => {
                slots.push(end);
                slots.len() - 1
            }
        };
        d.tracks[t].slot = slot;
        cols[lane] = cols[lane].max(slot + 1);
    }
    cols
}

pub(super) fn layout(d: &Diagram, cols: &[usize]) -> Layout {
    let longest_label = d
        .rows
        .iter()
        .map(|r| r.label.chars().count() + 4)
        .max()
        .unwrap_or(10);
    let label_w = (longest_label as f64 * CHAR_PX + 12.0).clamp(150.0, 250.0);
    // Participant lanes: as wide as their notes and header.
    let mut lane_w: Vec<f64> = d
        .lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            if is_track_lane(lane.kind) {
                return 0.0;
            }
            let longest = d
                .rows
                .iter()
                .flat_map(|r| &r.lines)
                .filter_map(|l| match l {
                    Band::Note { lane, text, .. } if *lane == i => Some(text_width(text)),
                    _ => None,
                })
                .fold(text_width(&lane.about), f64::max);
            (longest + 28.0).clamp(150.0, 270.0)
        })
        .collect();
    // Track lanes: room on each side of their tracks for the labels of the arrows between
    // them and the participants, so that a label does not run across a track.
    let n = d.lanes.len();
    let mut pad_left = vec![TRACK_PAD_MIN; n];
    let mut pad_right = vec![TRACK_PAD_MIN; n];
    for line in d.rows.iter().flat_map(|r| &r.lines) {
        let (lane, t, text) = match line {
            Band::Send {
                from,
                track: Some(t),
                text,
            } => (*from, *t, text),
            Band::Deliver {
                to,
                track: Some(t),
                text,
            } => (*to, *t, text),
            _ => continue,
        };
        let tl = d.tracks[t].lane;
        let need = text_width(text) + 16.0;
        if lane < tl {
            let dist = lane_w[lane] / 2.0 + lane_w[lane + 1..tl].iter().sum::<f64>();
            pad_left[tl] = pad_left[tl].max(need - dist);
        } else if lane > tl {
            let dist = lane_w[lane] / 2.0 + lane_w[tl + 1..lane].iter().sum::<f64>();
            pad_right[tl] = pad_right[tl].max(need - dist);
        }
    }
    for (i, lane) in d.lanes.iter().enumerate() {
        if is_track_lane(lane.kind) {
            pad_left[i] = pad_left[i].min(TRACK_PAD_MAX);
            pad_right[i] = pad_right[i].min(TRACK_PAD_MAX);
            let tracks = cols[i].saturating_sub(1) as f64 * SLOT;
            lane_w[i] = (pad_left[i] + tracks + pad_right[i]).max(150.0);
        }
    }
    let mut lane_x = Vec::new();
    let mut x = MARGIN + label_w;
    for w in &lane_w {
        lane_x.push(x + w / 2.0);
        x += w;
    }
    let lane_chars = lane_w
        .iter()
        .map(|w| ((w - 20.0) / CHAR_PX).floor().max(8.0) as usize)
        .collect();
    Layout {
        label_w,
        lane_x,
        lane_w,
        pad_left,
        width: (x + MARGIN).max(640.0),
        lane_chars,
    }
}

/// Bands a line takes.
pub(super) fn bands(line: &Band, lay: &Layout) -> usize {
    match line {
        Band::Note { lane, text, .. } => wrap(text, lay.lane_chars[*lane]).len(),
        Band::Violation { property, text, .. } => {
            let chars = ((lay.width - MARGIN * 2.0 - lay.label_w - 24.0) / CHAR_PX) as usize;
            wrap(&format!("✗ {property} violated: {text}"), chars).len()
        }
        _ => 1,
    }
}

/// A lane's second header line, without its `role: ` prefix when the whole does not fit.
pub(super) fn header_about(about: &str, chars: usize) -> &str {
    if about.chars().count() <= chars {
        return about;
    }
    about.split_once(": ").map_or(about, |(_, rest)| rest)
}

pub(super) fn track_x(d: &Diagram, lay: &Layout, t: usize) -> f64 {
    let tr = &d.tracks[t];
    let left = lay.lane_x[tr.lane] - lay.lane_w[tr.lane] / 2.0;
    left + lay.pad_left[tr.lane] + tr.slot as f64 * SLOT
}
