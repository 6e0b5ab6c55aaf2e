//! The run's timeline: one totally ordered record of everything the harness saw and did — every
//! JSON-RPC line on the link (with its fate: held, passed, released, dropped), every control
//! event, command and reply, and the facts the harness established (ground-truth catalogs, probe
//! results, replay steps, divergences, quiescence). Each record gets a sequence number and a
//! monotonic timestamp. The timeline is the message log written under `reports/`, and the input
//! from which [`crate::history`] reconstructs the history that core's checkers judge.
//!
//! The [`Hub`] owns the timeline and the proxy's state behind one mutex, and wakes waiters when
//! anything changes (a watch counter: no lost wake-ups, no polling).

use listsync_core::vocab::{Kind, Op};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Direction on the MCP link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Dir {
    /// Client adapter's stdout to the server adapter's stdin.
    Up,
    /// Server adapter's stdout to the client adapter's stdin.
    Down,
}

/// Who a control record concerns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    /// The server adapter.
    Server,
    /// The client adapter.
    Client,
}

impl Side {
    /// `server` / `client`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Server => "server",
            Side::Client => "client",
        }
    }
}

/// What the proxy did with a line when it arrived.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LineFate {
    /// Held until the harness releases, drops or duplicates it.
    Held,
    /// Forwarded at once (the policy does not hold it).
    Passed,
    /// A response to a harness probe: kept by the harness, never forwarded.
    Intercepted,
    /// Not forwarded: oversized, or the peer is gone.
    Discarded,
}

/// What the harness did with a held line.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    /// Forwarded to its destination.
    Deliver,
    /// Never forwarded (a lost notification).
    Drop,
    /// A second copy, held as its own entry (the `of` record is the original).
    Duplicate,
}

/// One list item as the harness compares them across SDKs (listsync-observe's).
pub use listsync_observe::NamedItem;

/// Something the harness established (not a raw observation).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "fact", rename_all = "snake_case")]
pub enum Fact {
    /// The harness sends the administrator's batch `batch` to the server adapter.
    MutateIssued {
        /// Index of the batch in this run.
        batch: usize,
        /// The ops (core vocabulary; `def` is the description).
        ops: Vec<Op>,
    },
    /// Ground truth read from the server adapter (`catalog`), per tracked kind.
    Catalog {
        /// Why it was read (`initial`, `mutate 2`, ...).
        after: String,
        /// Sequence number of the harness action that may have changed it (the mutation, or
        /// the release of a parked commit): a change is dated there. None: the run's start.
        #[serde(default)]
        since: Option<u64>,
        /// Items per kind, in the server's order.
        kinds: BTreeMap<Kind, Vec<NamedItem>>,
    },
    /// The harness listed `kind` on the server right after the `list_changed` at record
    /// `notification` reached the proxy (to learn what a list request saw at that moment).
    Probe {
        /// Sequence number of the notification.
        notification: u64,
        /// Kind listed.
        kind: Kind,
        /// Items (all pages), or None if the probe failed.
        items: Option<Vec<NamedItem>>,
        /// Why it failed.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
    },
    /// A replay step was carried out.
    Step {
        /// Index in the trace (None for drain steps).
        index: Option<usize>,
        /// The step, as text.
        step: String,
        /// What the shadow world did (its log lines for this step).
        model: Vec<String>,
    },
    /// A trace step was skipped: impossible in the shadow world of the substituted strategy.
    Skipped {
        /// Index in the trace.
        index: usize,
        /// The step.
        step: String,
        /// Why.
        reason: String,
    },
    /// The implementation left the trace.
    Divergence {
        /// Index of the step (None: during start-up or drain).
        step: Option<usize>,
        /// What differed.
        reason: String,
    },
    /// Everything was released and the run settled: the snapshots must equal the server's.
    Quiescent {
        /// Tracked kinds.
        kinds: Vec<Kind>,
    },
}

/// A record's contents.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Body {
    /// A JSON-RPC line arrived at the proxy.
    Msg {
        /// Direction.
        dir: Dir,
        /// Byte length of the line.
        len: usize,
        /// The parsed line (None if it was not JSON or too large to keep).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        json: Option<Value>,
        /// A lossy preview of a line that is not JSON.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        /// What the proxy did with it.
        fate: LineFate,
    },
    /// The harness released, dropped or duplicated a held line.
    Release {
        /// Sequence number of the `Msg`.
        of: u64,
        /// What.
        action: Action,
        /// For a duplicate: the sequence number of the new held copy's record is this one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// The harness injected a line of its own (a probe).
    Inject {
        /// Direction.
        dir: Dir,
        /// The line.
        json: Value,
    },
    /// A control event from an adapter.
    Event {
        /// Which adapter.
        from: Side,
        /// The event object.
        event: Value,
    },
    /// A control command the harness sent.
    Command {
        /// To which adapter.
        to: Side,
        /// The command object.
        cmd: Value,
    },
    /// A control reply.
    Reply {
        /// From which adapter.
        from: Side,
        /// The reply object.
        reply: Value,
    },
    /// Something the harness established.
    Fact(Fact),
    /// A malformed or oversized line, an adapter exit, anything worth reporting.
    Bad {
        /// Where (`mcp up`, `mcp down`, `control server`, `process client`...).
        from: String,
        /// What.
        what: String,
    },
    /// A free-form note.
    Note {
        /// Text.
        text: String,
    },
}

/// One timeline record.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Sequence number (position in the timeline).
    pub seq: u64,
    /// Microseconds since the run started (monotonic clock).
    pub micros: u64,
    /// What happened.
    #[serde(flatten)]
    pub body: Body,
}

/// Largest number of records kept per run; later ones are counted, not stored.
pub const MAX_RECORDS: usize = 200_000;
/// Largest total size of stored JSON payloads per run; beyond it payloads are dropped.
pub const MAX_PAYLOAD_BYTES: usize = 256 << 20;

/// A held line waiting for the harness.
#[derive(Clone, Debug)]
pub struct Held {
    /// Sequence number of its `Msg` record.
    pub seq: u64,
    /// Direction.
    pub dir: Dir,
    /// The raw line (without the newline).
    pub raw: Arc<[u8]>,
    /// The parsed line.
    pub json: Value,
}

/// A request seen on the link.
#[derive(Clone, Debug)]
pub struct Pending {
    /// Sequence number of the request's record.
    pub seq: u64,
    /// Method.
    pub method: String,
    /// Whether its response is to be held.
    pub hold_response: bool,
    /// Whether the response has arrived.
    pub answered: bool,
}

/// Everything behind the hub's lock.
pub struct HubState {
    started: Instant,
    /// The records, in order.
    pub records: Vec<Record>,
    /// Records not stored because of [`MAX_RECORDS`].
    pub lost_records: u64,
    payload_bytes: usize,
    /// Held lines, in arrival order.
    pub held: Vec<Held>,
    /// Requests by (direction they travel, id).
    pub requests: BTreeMap<(Dir, String), Pending>,
    /// Whether each adapter's stdout reached EOF (index: Dir::Up = client, Dir::Down = server).
    pub eof: [bool; 2],
    /// `params._meta` of the client's latest request (2026-07-28 probes copy it).
    pub last_client_meta: Option<Value>,
}

impl HubState {
    /// Appends a record; returns its sequence number.
    pub fn push(&mut self, mut body: Body) -> u64 {
        let seq = self.records.len() as u64 + self.lost_records;
        if let Body::Msg { json: Some(v), .. } = &body {
            let size = v.to_string().len();
            if self.payload_bytes + size > MAX_PAYLOAD_BYTES {
                if let Body::Msg { json, text, .. } = &mut body {
                    *json = None;
                    *text = Some("(payload not kept: run log size limit)".into());
                }
            } else {
                self.payload_bytes += size;
            }
        }
        if self.records.len() >= MAX_RECORDS {
            self.lost_records += 1;
            return seq;
        }
        let micros = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.records.push(Record { seq, micros, body });
        seq
    }

    /// The record with sequence number `seq`, if stored.
    pub fn record(&self, seq: u64) -> Option<&Record> {
        let i = usize::try_from(seq).ok()?;
        self.records.get(i).filter(|r| r.seq == seq)
    }

    /// Time since the run started.
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// The shared state of one run, with change notification.
pub struct Hub {
    state: Mutex<HubState>,
    tick: watch::Sender<u64>,
}

impl Hub {
    /// A new, empty hub.
    pub fn new() -> Arc<Hub> {
        Arc::new(Hub {
            state: Mutex::new(HubState {
                started: Instant::now(),
                records: Vec::new(),
                lost_records: 0,
                payload_bytes: 0,
                held: Vec::new(),
                requests: BTreeMap::new(),
                eof: [false; 2],
                last_client_meta: None,
            }),
            tick: watch::channel(0).0,
        })
    }

    /// Locks the state. A poisoned lock (a panic elsewhere) still yields the state: the
    /// timeline stays readable for the report.
    pub fn lock(&self) -> MutexGuard<'_, HubState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Wakes every waiter (call after changing the state).
    pub fn changed(&self) {
        self.tick.send_modify(|t| *t = t.wrapping_add(1));
    }

    /// Appends a record and wakes waiters.
    pub fn record(&self, body: Body) -> u64 {
        let seq = self.lock().push(body);
        self.changed();
        seq
    }

    /// Waits until `f` returns Some (checked now and after every change), at most `bound`.
    pub async fn wait_until<T>(
        &self,
        bound: Duration,
        mut f: impl FnMut(&HubState) -> Option<T>,
    ) -> Option<T> {
        let mut rx = self.tick.subscribe();
        let deadline = tokio::time::Instant::now() + bound;
        loop {
            rx.borrow_and_update();
            if let Some(t) = f(&self.lock()) {
                return Some(t);
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                Ok(Err(_)) | Err(_) => return f(&self.lock()),
            }
        }
    }

    /// Waits until `idle` holds and nothing changed for `quiet`, at most `bound`. Returns
    /// whether it settled. Used only to decide that a third-party implementation is done
    /// reacting (debounce timers), never to order anything.
    pub async fn wait_quiet(
        &self,
        quiet: Duration,
        bound: Duration,
        mut idle: impl FnMut(&HubState) -> bool,
    ) -> bool {
        let deadline = tokio::time::Instant::now() + bound;
        let mut rx = self.tick.subscribe();
        loop {
            rx.borrow_and_update();
            let ok = idle(&self.lock());
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return ok;
            }
            let until = if ok {
                (now + quiet).min(deadline)
            } else {
                deadline
            };
            match tokio::time::timeout_at(until, rx.changed()).await {
                Err(_) => return ok,
                Ok(Ok(())) => {}
                Ok(Err(_)) => return ok,
            }
        }
    }
}
