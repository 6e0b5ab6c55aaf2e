//! A violated property's evidence as a sequence diagram (the SVG renderer of counterexample
//! traces, `listsync_render::diagram`): lanes client, link and server; one row per log entry
//! around the evidence, of the evidence's connections only (at most [`MAX_ROWS`]); each message
//! an arrow through the link lane;
//! the evidence rows highlighted, the first one carrying the explanation.

use crate::audit::AuditVerdict;
use crate::log::{LogDir, SessionLog, What, line_of};
use listsync_observe::jsonrpc::{Frame, classify, summary};
use listsync_render::diagram::{
    Band, Diagram, DiagramLane, DiagramRow, LaneKind, MsgKind, Tone, Track, render,
};

/// Most rows drawn; the rows nearest the evidence are kept.
pub const MAX_ROWS: usize = 80;

/// The SVG of one violated property's evidence in `log` (`title`: the log's name).
pub fn svg(log: &SessionLog, v: &AuditVerdict, title: &str) -> String {
    let lines: Vec<u64> = v.evidence.clone();
    let lo = lines.first().copied().unwrap_or(2).saturating_sub(4).max(2);
    let hi = lines.last().copied().unwrap_or(2) + 2;
    // The connections of the evidence: other sessions' entries in between are left out.
    let conns: std::collections::BTreeSet<u32> = log
        .entries
        .iter()
        .filter(|e| lines.contains(&line_of(e.seq)))
        .map(|e| e.conn)
        .collect();
    let mut picked: Vec<usize> = log
        .entries
        .iter()
        .enumerate()
        .filter(|(_, e)| (lo..=hi).contains(&line_of(e.seq)))
        .filter(|(_, e)| conns.is_empty() || conns.contains(&e.conn))
        .map(|(i, _)| i)
        .collect();
    if picked.len() > MAX_ROWS {
        // Keep the evidence rows, then the rows nearest to them.
        let dist = |i: &usize| {
            let l = line_of(log.entries[*i].seq);
            lines.iter().map(|e| e.abs_diff(l)).min().unwrap_or(0)
        };
        picked.sort_by_key(dist);
        picked.truncate(MAX_ROWS);
        picked.sort();
    }
    let mut d = Diagram {
        title: format!("{title}: {} violated", v.property),
        subtitle: format!(
            "session log {title}, lines {lo}–{hi}; evidence: lines {}",
            lines
                .iter()
                .map(u64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        detail: Some(v.detail.clone()),
        lanes: vec![
            lane(LaneKind::Client(0), "client", "as recorded"),
            lane(LaneKind::Network, "link", "the recording proxy"),
            lane(LaneKind::Server(0), "server", "as recorded"),
        ],
        rows: Vec::new(),
        tracks: Vec::new(),
        first_violation: None,
    };
    let mut flagged = false;
    for i in picked {
        let e = &log.entries[i];
        let line = line_of(e.seq);
        let mut row = DiagramRow {
            step: Some(usize::try_from(line).unwrap_or(usize::MAX)),
            label: format!("line {line}"),
            lines: Vec::new(),
            violation: None,
        };
        match &e.what {
            What::Msg { dir, json } => {
                let kind = match (dir, classify(json)) {
                    (LogDir::ClientToServer, _) => MsgKind::Request,
                    (LogDir::ServerToClient, Frame::Response { .. }) => MsgKind::Response,
                    _ => MsgKind::Notification,
                };
                let (from, to) = match dir {
                    LogDir::ClientToServer => (0, 2),
                    LogDir::ServerToClient => (2, 0),
                };
                let text = summary(json);
                let r = d.rows.len();
                d.tracks.push(Track {
                    lane: 1,
                    party: 0,
                    kind,
                    start: (r, 0),
                    end: Some((r, 1)),
                    lost: false,
                    slot: 0,
                });
                let t = Some(d.tracks.len() - 1);
                row.lines.push(Band::Send {
                    from,
                    track: t,
                    text: text.clone(),
                });
                row.lines.push(Band::Deliver { to, track: t, text });
            }
            What::Invalid { dir, why, .. } => row.lines.push(Band::Note {
                lane: if *dir == LogDir::ClientToServer { 0 } else { 2 },
                text: format!("not a message: {why}"),
                tone: Tone::Warn,
            }),
            What::Open { detail } => row.lines.push(Band::Note {
                lane: 1,
                text: format!("connection {} opens {detail}", e.conn),
                tone: Tone::Plain,
            }),
            What::Close { detail } => row.lines.push(Band::Note {
                lane: 1,
                text: format!("connection {} closes {detail}", e.conn),
                tone: Tone::Plain,
            }),
        }
        if lines.contains(&line) {
            row.lines.push(Band::Violation {
                property: v.property,
                text: if flagged {
                    "evidence".into()
                } else {
                    v.detail.clone()
                },
                primary: !flagged,
            });
            if !flagged {
                row.violation = Some(v.property);
                d.first_violation = row.step;
                flagged = true;
            }
        }
        d.rows.push(row);
    }
    render(&d)
}

fn lane(kind: LaneKind, name: &str, about: &str) -> DiagramLane {
    DiagramLane {
        kind,
        name: name.into(),
        about: about.into(),
    }
}
