//! What a session log shows on the wire, before any judging: its entries per connection, read
//! by the observer every judge of the wire shares ([`listsync_observe::ConnObserver`]: the
//! replay's reconstruction and the host judge read the same), gathered over the log: the list
//! walks, the `tools/call`s and how they were answered, the notifications the client received,
//! the connections that listened, where each ended and what it left unanswered.

use crate::log::{LogDir, LogEntry, What, line_of};
use listsync_observe::{ConnObserver, ListWalk, Received, ToolCall, Toward};
use std::collections::HashMap;

/// Everything the audit reads off the wire.
#[derive(Clone, Debug, Default)]
pub struct Wire {
    /// Walks, by first-page request order.
    pub walks: Vec<ListWalk>,
    /// Tool calls, by request order.
    pub calls: Vec<ToolCall>,
    /// Server notifications delivered to a client, in order.
    pub delivered: Vec<Received>,
    /// Connections that sent `subscriptions/listen` (2026-07-28).
    pub listened: Vec<u32>,
    /// Per connection: the entry seq it closed at, if it did.
    pub closed: HashMap<u32, u64>,
    /// Per connection: requests unanswered at the end of the log.
    pub unanswered: HashMap<u32, usize>,
    /// Connections in order of their first entry.
    pub conns: Vec<u32>,
    /// Caveats (entries that are not JSON-RPC, cursor requests of no walk...).
    pub notes: Vec<String>,
}

/// Reads the wire out of a log's entries.
pub fn observe(entries: &[LogEntry]) -> Wire {
    let mut w = Wire::default();
    let mut observers: HashMap<u32, ConnObserver> = HashMap::new();
    let mut notes: Vec<(u64, String)> = Vec::new();
    let mut listened: Vec<(u64, u32)> = Vec::new();
    for e in entries {
        if !w.conns.contains(&e.conn) {
            w.conns.push(e.conn);
        }
        match &e.what {
            What::Msg { dir, json } => {
                let toward = match dir {
                    LogDir::ClientToServer => Toward::Server,
                    LogDir::ServerToClient => Toward::Client,
                };
                let o = observers
                    .entry(e.conn)
                    .or_insert_with(|| ConnObserver::new(e.conn));
                let before = o.observed().listened;
                o.see(e.seq, toward, json);
                if !before && o.observed().listened {
                    listened.push((e.seq, e.conn));
                }
            }
            What::Close { .. } => {
                w.closed.insert(e.conn, e.seq);
            }
            What::Invalid { why, .. } => {
                notes.push((e.seq, format!("not a message ({why})")));
            }
            What::Open { .. } => {}
        }
    }
    for (conn, o) in observers {
        let seen = o.finish();
        w.walks.extend(seen.walks);
        w.calls.extend(seen.calls);
        w.delivered.extend(seen.received);
        notes.extend(seen.notes);
        if seen.unanswered > 0 {
            w.unanswered.insert(conn, seen.unanswered);
        }
    }
    // Back in the log's order across connections.
    w.walks.sort_by_key(ListWalk::start);
    w.calls.sort_by_key(|c| c.request);
    w.delivered.sort_by_key(|d| d.seq);
    notes.sort_by_key(|(seq, _)| *seq);
    w.notes = notes
        .into_iter()
        .map(|(seq, n)| format!("line {}: {n}", line_of(seq)))
        .collect();
    w.listened = listened.into_iter().map(|(_, c)| c).collect();
    w
}
