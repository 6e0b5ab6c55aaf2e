//! Which log connection (`conn`) an HTTP exchange belongs to: one per MCP session, by its
//! `Mcp-Session-Id`, numbered 0, 1, 2... in the order they open, with their `open` and `close`
//! entries; and one shared connection for the exchanges of a server that assigns no session id
//! (a stateless server), opened at its first such exchange. The table holds open sessions only
//! and at most [`MAX_OPEN_SESSIONS`] of them: beyond, the least recently used one is closed in
//! the log (a client inventing session ids cannot grow it without bound).

use crate::log::{What, Writer};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Most sessions the recorder follows at once.
pub const MAX_OPEN_SESSIONS: usize = 4096;

/// The connection table.
pub struct Conns {
    log: Arc<Writer>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    next: u32,
    tick: u64,
    /// Open sessions: session id → (conn, last use).
    sessions: HashMap<String, (u32, u64)>,
    /// The sessionless connection, while open.
    sessionless: Option<u32>,
}

impl Conns {
    /// An empty table logging to `log`.
    pub fn new(log: Arc<Writer>) -> Self {
        Conns {
            log,
            state: Mutex::new(State::default()),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The connection of session `id`, opened (an `open` entry) if it is not open; `new` is the
    /// open entry's note on how it was first seen.
    pub fn session(&self, id: &str, new: &str) -> u32 {
        let mut s = self.state();
        s.tick += 1;
        let tick = s.tick;
        if let Some((conn, used)) = s.sessions.get_mut(id) {
            *used = tick;
            return *conn;
        }
        if s.sessions.len() >= MAX_OPEN_SESSIONS {
            let oldest = s
                .sessions
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest
                && let Some((conn, _)) = s.sessions.remove(&k)
            {
                self.log.append(
                    conn,
                    What::Close {
                        detail: format!(
                            "closed by the recorder: more than {MAX_OPEN_SESSIONS} sessions open, this one the least recently used"
                        ),
                    },
                );
            }
        }
        let conn = s.next;
        s.next += 1;
        s.sessions.insert(id.to_owned(), (conn, tick));
        // Appended under the lock: no entry of this conn can precede its open entry.
        self.log.append(
            conn,
            What::Open {
                detail: format!("session {id} ({new})"),
            },
        );
        conn
    }

    /// The connection of the exchanges without a session id, opened at the first.
    pub fn sessionless(&self) -> u32 {
        let mut s = self.state();
        if let Some(c) = s.sessionless {
            return c;
        }
        let conn = s.next;
        s.next += 1;
        s.sessionless = Some(conn);
        self.log.append(
            conn,
            What::Open {
                detail: "exchanges without a session id".into(),
            },
        );
        conn
    }

    /// Closes `conn` (a `close` entry) if it is open; later exchanges of its session open a
    /// new connection.
    pub fn close(&self, conn: u32, detail: &str) {
        let mut s = self.state();
        let before = s.sessions.len();
        s.sessions.retain(|_, (c, _)| *c != conn);
        let was_sessionless = s.sessionless == Some(conn);
        if was_sessionless {
            s.sessionless = None;
        }
        if before != s.sessions.len() || was_sessionless {
            self.log.append(
                conn,
                What::Close {
                    detail: detail.to_owned(),
                },
            );
        }
    }

    /// Closes every open connection (the recording stops).
    pub fn close_all(&self, detail: &str) {
        let mut s = self.state();
        let mut open: Vec<u32> = s.sessions.values().map(|(c, _)| *c).collect();
        open.extend(s.sessionless.take());
        s.sessions.clear();
        open.sort_unstable();
        for conn in open {
            self.log.append(
                conn,
                What::Close {
                    detail: detail.to_owned(),
                },
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::tests::Shared;
    use crate::log::{RecordTransport, read_from};

    #[test]
    fn one_conn_per_session_opened_and_closed_once() {
        let buf = Shared::default();
        let w = Writer::new(
            Box::new(buf.clone()),
            RecordTransport::Http,
            vec!["u".into()],
        )
        .unwrap();
        let c = Conns::new(Arc::new(w));
        assert_eq!(c.session("a", "assigned"), 0);
        assert_eq!(c.sessionless(), 1);
        assert_eq!(c.session("b", "assigned"), 2);
        assert_eq!(c.session("a", "assigned"), 0);
        assert_eq!(c.sessionless(), 1);
        c.close(0, "DELETE");
        c.close(0, "DELETE again");
        assert_eq!(
            c.session("a", "seen again"),
            3,
            "a closed session reopens anew"
        );
        c.close_all("stopped");
        let bytes = buf.0.lock().unwrap().clone();
        let log = read_from("log", &mut std::io::Cursor::new(bytes)).unwrap();
        let got: Vec<(u32, &str)> = log
            .entries
            .iter()
            .map(|e| {
                (
                    e.conn,
                    match e.what {
                        What::Open { .. } => "open",
                        What::Close { .. } => "close",
                        _ => "other",
                    },
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (0, "open"),
                (1, "open"),
                (2, "open"),
                (0, "close"),
                (3, "open"),
                (1, "close"),
                (2, "close"),
                (3, "close")
            ]
        );
    }
}
