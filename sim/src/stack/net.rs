//! The stack level's simulated network: in-memory byte-stream connections between the
//! runtime's clients and server, carried by a seeded scheduler instead of a socket.
//!
//! Each connection is two one-way links of newline-delimited JSON-RPC (what rmcp writes on stdio
//! and `tokio::io::duplex`). A writer hands every complete line to the network, which decides
//! when it arrives — now + a latency drawn from the fault plan, never before the line ahead of it
//! on the same link, since a byte stream keeps its order — and whether the fault plan acts on it:
//!
//! - a `list_changed` notification may arrive twice, or be lost: silently (the `lossy` plan) or,
//!   otherwise, by breaking the connection with it (both ends see the stream end, everything in
//!   flight is lost, and the client reconnects by itself);
//! - a list request may fail (the network answers it with a JSON-RPC internal error in the
//!   server's place) or time out (it is swallowed and the client's request timeout fires);
//! - any message may be slow.
//!
//! Nothing here is random but the link's own stream, seeded from the run's seed and the
//! connection's number, so a line's fate does not depend on what other connections did in the
//! same instant. Links are ordered in the scheduler's queue by (due time, connection, direction):
//! the order of deliveries never depends on the order in which tasks happened to write.

use crate::case::{roll, stream, streams, uniform};
use crate::plan::{FaultPlan, Micros};
use crate::stack::seen::Seen;
use listsync_core::history::ClientId;
use listsync_core::vocab::AuthCtx;
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio::time::Instant;

/// One direction of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum NetDir {
    /// Client to server.
    Up = 0,
    /// Server to client.
    Down = 1,
}

impl NetDir {
    fn index(self) -> usize {
        self as usize
    }

    fn as_str(self) -> &'static str {
        match self {
            NetDir::Up => "up",
            NetDir::Down => "down",
        }
    }
}

/// What travels on a link: bytes (one whole line), the end of the stream, or the
/// point where the stream breaks (a notification was lost with it).
#[derive(Debug)]
enum Chunk {
    Bytes(Vec<u8>),
    Eof,
    Break,
}

/// Bytes in flight on one link, due in order.
#[derive(Debug, Default)]
struct Link {
    queue: VecDeque<(Micros, Chunk)>,
    /// Due time of the head's entry in the scheduler's queue, if it has one.
    scheduled: Option<Micros>,
    /// The writer closed: nothing more is accepted.
    closed: bool,
}

/// The receiving end of a link: delivered bytes not yet read.
#[derive(Debug, Default)]
struct Inbox {
    buf: VecDeque<u8>,
    eof: bool,
    /// The reader is gone: what arrives is dropped.
    gone: bool,
    waker: Option<Waker>,
}

impl Inbox {
    fn wake(&mut self) {
        if let Some(w) = self.waker.take() {
            w.wake();
        }
    }
}

#[derive(Debug)]
struct Conn {
    client: ClientId,
    alive: bool,
    links: [Link; 2],
    inboxes: [Inbox; 2],
    rng: ChaCha8Rng,
}

/// Fault budgets of one run (how many times each fault may happen).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetBudget {
    /// Duplicated notifications.
    pub dups: u32,
    /// Lost notifications (silent, or breaking the connection).
    pub drops: u32,
    /// Failed or timed-out list requests.
    pub request_faults: u32,
    /// Tool calls that may fail with an internal error in the server's place.
    pub call_errors: u32,
    /// Whether some messages are slow.
    pub slow: bool,
}

/// Counts of what the network did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NetCounts {
    /// Lines delivered.
    pub delivered: u64,
    /// Notifications duplicated.
    pub duplicated: u32,
    /// Notifications lost silently.
    pub lost: u32,
    /// Connections broken with a notification.
    pub broken: u32,
    /// List requests answered with an error by the network.
    pub failed: u32,
    /// List requests swallowed.
    pub swallowed: u32,
    /// Tool calls answered with an internal error by the network.
    pub calls_failed: u32,
    /// Connections cut by the environment (disconnects, crashes).
    pub cut: u32,
    /// Connections opened.
    pub opened: u32,
    /// Connections refused (server down).
    pub refused: u32,
}

impl NetCounts {
    /// Adds another run's counts (a campaign's totals).
    pub fn add(&mut self, o: &NetCounts) {
        self.delivered = self.delivered.saturating_add(o.delivered);
        for (a, b) in [
            (&mut self.duplicated, o.duplicated),
            (&mut self.lost, o.lost),
            (&mut self.broken, o.broken),
            (&mut self.failed, o.failed),
            (&mut self.swallowed, o.swallowed),
            (&mut self.calls_failed, o.calls_failed),
            (&mut self.cut, o.cut),
            (&mut self.opened, o.opened),
            (&mut self.refused, o.refused),
        ] {
            *a = a.saturating_add(b);
        }
    }
}

struct State {
    plan: FaultPlan,
    seed: u64,
    budget: NetBudget,
    counts: NetCounts,
    conns: Vec<Conn>,
    /// (due, connection, direction) of each link head.
    queue: BinaryHeap<Reverse<(Micros, u32, u8)>>,
    /// Bytes queued on links and not yet delivered, plus bytes delivered and not yet read.
    pending_bytes: u64,
    /// No connection is accepted before this time (a crashed server restarting).
    down_until: Micros,
    log: Option<Vec<String>>,
    /// The situations the lines show.
    seen: Seen,
    /// Which tool calls fail (a stream of its own, so that the other draws stay as they were).
    calls: ChaCha8Rng,
}

/// The network of one run (cheap to clone).
#[derive(Clone)]
pub struct Net {
    state: Arc<Mutex<State>>,
    /// Wakes the scheduler when something new is in flight.
    pub wake: Arc<Notify>,
    base: Instant,
}

/// Whether a line is a `list_changed` notification.
fn is_list_changed(line: &[u8]) -> bool {
    contains(line, b"list_changed\"") && contains(line, b"\"method\"")
}

/// Whether a line is a list request (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`).
fn is_list_request(line: &[u8]) -> bool {
    contains(line, b"\"id\"") && contains(line, b"/list\"")
}

/// Whether a line is a `tools/call` request.
fn is_call_request(line: &[u8]) -> bool {
    contains(line, b"\"id\"") && contains(line, b"\"tools/call\"")
}

/// The JSON-RPC id of a request line.
fn request_id(line: &[u8]) -> Option<serde_json::Value> {
    serde_json::from_slice::<serde_json::Value>(line)
        .ok()
        .and_then(|v| v.get("id").cloned())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Rounds up to whole milliseconds (tokio's timer resolution), so that every scheduled time is
/// one the paused clock stops at.
pub fn ms_ceil(t: Micros) -> Micros {
    t.div_ceil(1_000) * 1_000
}

impl State {
    /// Answers request `id` on connection `conn` with an internal error in the server's place.
    fn answer_error(&mut self, now: Micros, conn: u32, id: serde_json::Value, message: &str) {
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": -32603, "message": message},
        });
        let mut bytes = serde_json::to_vec(&reply).expect("plain JSON");
        bytes.push(b'\n');
        let d = self.latency(conn) * 2;
        self.enqueue(now, conn, NetDir::Down, Chunk::Bytes(bytes), d);
    }

    fn log(&mut self, now: Micros, text: impl FnOnce() -> String) {
        if let Some(l) = self.log.as_mut() {
            l.push(format!("{:>9.3} ms net {}", now as f64 / 1000.0, text()));
        }
    }

    fn latency(&mut self, conn: u32) -> Micros {
        let plan = &self.plan;
        let slow = self.budget.slow;
        let c = &mut self.conns[conn as usize];
        let mut d = uniform(&mut c.rng, plan.latency);
        if slow && roll(&mut c.rng, plan.slow_permille) {
            d += uniform(&mut c.rng, plan.slow);
        }
        ms_ceil(d.max(1))
    }

    /// Puts a chunk on a link, due `d` from now but not before the chunk ahead of it.
    fn enqueue(&mut self, now: Micros, conn: u32, dir: NetDir, chunk: Chunk, d: Micros) {
        let link = &mut self.conns[conn as usize].links[dir.index()];
        let due = link
            .queue
            .back()
            .map_or(now + d, |(last, _)| (now + d).max(*last));
        if let Chunk::Bytes(b) = &chunk {
            self.pending_bytes += b.len() as u64;
        }
        // One line per delivery, even when several are due together: each arrives in a pass
        // of the runtime of its own, so two requests never reach a server at once (rmcp would
        // then answer them from concurrent tasks, in no fixed order).
        link.queue.push_back((due, chunk));
        if link.scheduled.is_none() {
            let head = link.queue.front().map_or(due, |(t, _)| *t);
            link.scheduled = Some(head);
            self.queue.push(Reverse((head, conn, dir as u8)));
        }
    }

    /// Cuts a connection: everything in flight is lost and both ends see the stream end.
    fn cut(&mut self, conn: u32) {
        let c = &mut self.conns[conn as usize];
        if !c.alive {
            return;
        }
        c.alive = false;
        self.seen.cut(conn);
        let c = &mut self.conns[conn as usize];
        let mut lost = 0u64;
        for l in c.links.iter_mut() {
            for (_, chunk) in l.queue.drain(..) {
                if let Chunk::Bytes(b) = chunk {
                    lost += b.len() as u64;
                }
            }
            l.closed = true;
            l.scheduled = None;
        }
        for i in c.inboxes.iter_mut() {
            lost += i.buf.len() as u64;
            i.buf.clear();
            i.eof = true;
            i.wake();
        }
        self.pending_bytes -= lost;
    }
}

impl Net {
    /// The network of a run whose scheduler started at `base`.
    pub fn new(plan: &FaultPlan, seed: u64, budget: NetBudget, record: bool, base: Instant) -> Net {
        Net {
            state: Arc::new(Mutex::new(State {
                plan: plan.clone(),
                seed,
                budget,
                counts: NetCounts::default(),
                conns: Vec::new(),
                queue: BinaryHeap::new(),
                pending_bytes: 0,
                down_until: 0,
                log: record.then(Vec::new),
                seen: Seen::default(),
                calls: crate::case::stream(seed, crate::case::streams::CALL_FAIL),
            })),
            wake: Arc::new(Notify::new()),
            base,
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Simulated time now.
    pub fn now(&self) -> Micros {
        Instant::now()
            .saturating_duration_since(self.base)
            .as_micros() as Micros
    }

    /// Opens a connection for `client`: (client's reader, client's writer, server's reader,
    /// server's writer). Refused while the server is down.
    pub fn open(&self, client: ClientId, auth: AuthCtx) -> io::Result<[Half; 4]> {
        let now = self.now();
        let mut s = self.lock();
        if now < s.down_until {
            s.counts.refused += 1;
            s.log(now, || {
                format!("c{client} connection refused (server down)")
            });
            return Err(io::Error::new(
                io::ErrorKind::ConnectionRefused,
                "server is restarting",
            ));
        }
        let id = s.conns.len() as u32;
        // Each connection's fate is its own random stream (the run's seed, the connection's
        // number), so what happens on one never shifts the draws of another.
        let rng = stream(
            s.seed ^ (u64::from(id) + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
            streams::LINKS,
        );
        s.conns.push(Conn {
            client,
            alive: true,
            links: Default::default(),
            inboxes: Default::default(),
            rng,
        });
        s.counts.opened += 1;
        s.log(now, || format!("#{id} opened for c{client} ({auth})"));
        drop(s);
        let e = |dir, write| Half {
            net: self.clone(),
            conn: id,
            dir,
            write,
            partial: Vec::new(),
        };
        Ok([
            e(NetDir::Down, false),
            e(NetDir::Up, true),
            e(NetDir::Up, false),
            e(NetDir::Down, true),
        ])
    }

    /// Cuts every live connection of `client` (the environment's disconnect). Returns whether
    /// one was cut.
    pub fn disconnect(&self, client: ClientId) -> bool {
        let now = self.now();
        let mut s = self.lock();
        let ids: Vec<u32> = (0..s.conns.len() as u32)
            .filter(|&i| s.conns[i as usize].alive && s.conns[i as usize].client == client)
            .collect();
        for &i in &ids {
            s.cut(i);
            s.counts.cut += 1;
            s.log(now, || format!("#{i} of c{client} cut"));
        }
        !ids.is_empty()
    }

    /// The server crashes: every connection is cut, and none is accepted until `restart_at`.
    pub fn crash(&self, restart_at: Micros) {
        let now = self.now();
        let mut s = self.lock();
        s.down_until = s.down_until.max(restart_at);
        for i in 0..s.conns.len() as u32 {
            if s.conns[i as usize].alive {
                s.cut(i);
                s.counts.cut += 1;
            }
        }
        s.log(now, || {
            format!(
                "server crashes; restarts at {:.3} ms",
                restart_at as f64 / 1000.0
            )
        });
    }

    /// The due time of the next delivery, if any.
    pub fn next_due(&self) -> Option<Micros> {
        self.lock().queue.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Delivers the first link head due at or before `now`, in (time, connection, direction)
    /// order. Returns whether one was delivered.
    pub fn deliver_one(&self, now: Micros) -> bool {
        let mut s = self.lock();
        while let Some(&Reverse((due, conn, dir))) = s.queue.peek() {
            if due > now {
                return false;
            }
            s.queue.pop();
            let dir = if dir == 0 { NetDir::Up } else { NetDir::Down };
            let st = &mut *s;
            let c = &mut st.conns[conn as usize];
            let link = &mut c.links[dir.index()];
            if link.scheduled != Some(due) {
                continue; // a cut connection's stale entry
            }
            link.scheduled = None;
            let Some((_, chunk)) = link.queue.pop_front() else {
                continue;
            };
            if let Some(&(next, _)) = link.queue.front() {
                let next = next.max(now);
                link.scheduled = Some(next);
                st.queue.push(Reverse((next, conn, dir as u8)));
            }
            let client = c.client;
            let inbox = &mut c.inboxes[dir.index()];
            match chunk {
                Chunk::Bytes(b) => {
                    for line in b.split(|&x| x == b'\n').filter(|l| !l.is_empty()) {
                        st.seen.delivered(conn, dir == NetDir::Up, line);
                    }
                    let lines = b.iter().filter(|&&x| x == b'\n').count() as u64;
                    st.counts.delivered += lines;
                    if inbox.gone {
                        st.pending_bytes -= b.len() as u64;
                    } else {
                        inbox.buf.extend(b.iter().copied());
                        inbox.wake();
                    }
                    if let Some(l) = st.log.as_mut() {
                        for line in b.split(|&x| x == b'\n').filter(|l| !l.is_empty()) {
                            l.push(format!(
                                "{:>9.3} ms net #{conn} c{client} {} {}",
                                now as f64 / 1000.0,
                                dir.as_str(),
                                String::from_utf8_lossy(line)
                            ));
                        }
                    }
                }
                Chunk::Eof => {
                    inbox.eof = true;
                    inbox.wake();
                    st.log(now, || format!("#{conn} c{client} {} closed", dir.as_str()));
                }
                Chunk::Break => {
                    st.log(now, || {
                        format!("#{conn} c{client} stream breaks with a notification on it")
                    });
                    st.cut(conn);
                }
            }
            return true;
        }
        false
    }

    /// Whether nothing is in flight or unread.
    pub fn idle(&self) -> bool {
        let s = self.lock();
        s.queue.is_empty() && s.pending_bytes == 0
    }

    /// Adds a line to the log (with recording on).
    pub fn note(&self, now: Micros, text: impl FnOnce() -> String) {
        if self.lock().log.is_none() {
            return;
        }
        // Built before locking: the text may look at the network itself.
        let line = format!("{:>9.3} ms {}", now as f64 / 1000.0, text());
        if let Some(l) = self.lock().log.as_mut() {
            l.push(line);
        }
    }

    /// What the network did so far.
    pub fn counts(&self) -> NetCounts {
        self.lock().counts
    }

    /// The situations the network's lines showed so far (see [`crate::stack::seen`]).
    pub fn situations(&self) -> std::collections::BTreeSet<listsync_core::situation::Situation> {
        self.lock().seen.reached.clone()
    }

    /// The network's log (with recording on).
    pub fn take_log(&self) -> Vec<String> {
        self.lock().log.take().unwrap_or_default()
    }

    /// A complete line written by one end.
    fn send(&self, conn: u32, dir: NetDir, line: Vec<u8>) -> io::Result<()> {
        let now = self.now();
        let mut s = self.lock();
        let st = &mut *s;
        if !st.conns[conn as usize].alive || st.conns[conn as usize].links[dir.index()].closed {
            return Err(io::Error::new(io::ErrorKind::BrokenPipe, "connection cut"));
        }
        let client = st.conns[conn as usize].client;
        let plan = st.plan.clone();
        st.seen.sent(conn, dir == NetDir::Up, &line);
        if dir == NetDir::Down && is_list_changed(&line) {
            let c = &mut st.conns[conn as usize];
            if st.counts.duplicated < st.budget.dups && roll(&mut c.rng, plan.dup_permille) {
                st.counts.duplicated += 1;
                st.seen.duplicated();
                st.log(now, || format!("#{conn} c{client} notification duplicated"));
                let d = st.latency(conn);
                st.enqueue(now, conn, dir, Chunk::Bytes(line.clone()), d);
            } else if st.counts.lost + st.counts.broken < st.budget.drops
                && roll(&mut c.rng, plan.drop_permille)
            {
                if plan.silent_drops {
                    st.counts.lost += 1;
                    st.log(now, || format!("#{conn} c{client} notification lost"));
                } else {
                    // The stream breaks while the notification is on it: when it would have
                    // arrived, the connection is cut. (Its own event, not part of the write:
                    // the writer's send completes as any other.)
                    st.counts.broken += 1;
                    let d = st.latency(conn);
                    st.enqueue(now, conn, dir, Chunk::Break, d);
                }
                drop(s);
                self.wake.notify_one();
                return Ok(());
            }
        }
        if dir == NetDir::Up
            && st.counts.calls_failed < st.budget.call_errors
            && is_call_request(&line)
            && roll(&mut st.calls, plan.call_fail_permille)
            && let Some(id) = request_id(&line)
        {
            st.counts.calls_failed += 1;
            st.log(now, || format!("#{conn} c{client} tool call {id} fails"));
            st.answer_error(now, conn, id, "simulated: tool call failed");
            drop(s);
            self.wake.notify_one();
            return Ok(());
        }
        if dir == NetDir::Up && st.counts.failed + st.counts.swallowed < st.budget.request_faults {
            let c = &mut st.conns[conn as usize];
            let fail = roll(&mut c.rng, plan.fail_permille);
            let swallow = !fail && roll(&mut c.rng, plan.timeout_permille);
            if (fail || swallow)
                && is_list_request(&line)
                && let Some(id) = request_id(&line)
            {
                if fail {
                    st.counts.failed += 1;
                    st.log(now, || format!("#{conn} c{client} list request {id} fails"));
                    st.answer_error(now, conn, id, "simulated: list request failed");
                } else {
                    st.counts.swallowed += 1;
                    st.log(now, || {
                        format!("#{conn} c{client} list request {id} is never answered")
                    });
                }
                drop(s);
                self.wake.notify_one();
                return Ok(());
            }
        }
        let d = st.latency(conn);
        st.enqueue(now, conn, dir, Chunk::Bytes(line), d);
        drop(s);
        self.wake.notify_one();
        Ok(())
    }

    /// One end closed its writing half: the other end sees the stream end after what is in
    /// flight.
    fn close(&self, conn: u32, dir: NetDir) {
        let now = self.now();
        let mut s = self.lock();
        let c = &mut s.conns[conn as usize];
        if !c.alive || c.links[dir.index()].closed {
            return;
        }
        c.links[dir.index()].closed = true;
        let d = s.latency(conn);
        s.enqueue(now, conn, dir, Chunk::Eof, d);
        drop(s);
        self.wake.notify_one();
    }
}

/// One end of one direction of a connection: a reader or a writer of newline-delimited
/// JSON-RPC.
pub struct Half {
    net: Net,
    conn: u32,
    dir: NetDir,
    write: bool,
    partial: Vec<u8>,
}

impl AsyncRead for Half {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        debug_assert!(!self.write, "reading a writing end");
        let mut s = self.net.lock();
        let st = &mut *s;
        let inbox = &mut st.conns[self.conn as usize].inboxes[self.dir.index()];
        if inbox.buf.is_empty() {
            if inbox.eof {
                return Poll::Ready(Ok(()));
            }
            inbox.waker = Some(cx.waker().clone());
            return Poll::Pending;
        }
        let n = buf.remaining().min(inbox.buf.len());
        let (a, b) = inbox.buf.as_slices();
        let from_a = n.min(a.len());
        buf.put_slice(&a[..from_a]);
        buf.put_slice(&b[..n - from_a]);
        inbox.buf.drain(..n);
        st.pending_bytes -= n as u64;
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for Half {
    fn poll_write(
        mut self: Pin<&mut Self>,
        _cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        debug_assert!(self.write, "writing a reading end");
        let this = &mut *self;
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            if b == b'\n' {
                let mut line = std::mem::take(&mut this.partial);
                line.extend_from_slice(&buf[start..=i]);
                start = i + 1;
                if let Err(e) = this.net.send(this.conn, this.dir, line) {
                    return Poll::Ready(Err(e));
                }
            }
        }
        this.partial.extend_from_slice(&buf[start..]);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.net.close(self.conn, self.dir);
        Poll::Ready(Ok(()))
    }
}

impl Drop for Half {
    fn drop(&mut self) {
        if self.write {
            self.net.close(self.conn, self.dir);
        } else {
            // Nobody reads any more: what arrives is dropped on the floor.
            let mut s = self.net.lock();
            let st = &mut *s;
            let inbox = &mut st.conns[self.conn as usize].inboxes[self.dir.index()];
            let n = inbox.buf.len() as u64;
            inbox.buf.clear();
            inbox.eof = true;
            inbox.gone = true;
            st.pending_bytes -= n;
        }
    }
}
