//! The interposing proxy: it reads every line the client adapter writes on its stdout and the
//! server adapter writes on its stdout, records it on the timeline, and either forwards it to the
//! other side at once or holds it until the harness releases, drops or duplicates it. What is
//! held is decided by a [`Policy`] (requests and notifications by their content; a response is
//! held when its request's policy said so). Lines that are not JSON are recorded, reported and
//! forwarded unchanged (the peer would have seen them on a direct link); lines longer than
//! [`MAX_LINE_BYTES`] are dropped and reported. Nothing an adapter writes can crash the proxy.
//!
//! The proxy can also *probe* the server: when a `list_changed` for a watched kind reaches it,
//! it injects its own list request (ids `"listsync-probe-N"`, every page) and keeps the response
//! to itself, to learn which catalog a list request saw right after the notification was sent.

use crate::jsonrpc::{self, Frame, MAX_LINE_BYTES};
use crate::timeline::{Action, Body, Dir, Fact, Held, Hub, LineFate, NamedItem, Pending};
use listsync_core::vocab::{Kind, KindSet};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, oneshot};

/// A predicate over one parsed message.
pub type Pred = Arc<dyn Fn(&Value) -> bool + Send + Sync>;

/// What the proxy holds.
#[derive(Clone)]
pub struct Policy {
    /// Client-to-server requests to hold (given the request).
    pub hold_request: Pred,
    /// Responses to hold (given the *request* they answer).
    pub hold_response: Pred,
    /// Server-to-client notifications to hold.
    pub hold_notification: Pred,
}

impl Policy {
    /// Forward everything at once.
    pub fn pass_all() -> Policy {
        let no: Pred = Arc::new(|_| false);
        Policy {
            hold_request: no.clone(),
            hold_response: no.clone(),
            hold_notification: no,
        }
    }
}

/// The prefix of the harness's own request ids.
pub const PROBE_PREFIX: &str = "listsync-probe-";
/// How long a probe waits for each page.
pub const PROBE_BOUND: Duration = Duration::from_secs(5);

/// What the proxy tasks share.
pub struct Proxy {
    hub: Arc<Hub>,
    policy: Mutex<Policy>,
    to_server: mpsc::UnboundedSender<Arc<[u8]>>,
    to_client: mpsc::UnboundedSender<Arc<[u8]>>,
    probe_kinds: KindSet,
    probe_tx: mpsc::UnboundedSender<(u64, Kind)>,
    probe_waiters: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_probe: std::sync::atomic::AtomicU64,
    /// Probes asked for and not yet recorded, and a signal each time one is.
    probes_pending: std::sync::atomic::AtomicUsize,
    probe_recorded: tokio::sync::Notify,
}

/// What a message says about the lists (listsync-observe's, shared by every reader of the wire).
pub use listsync_observe::items::{control_items, listed_kind, notified_kind, page_items};

impl Proxy {
    /// Starts the proxy between a client adapter (`client_out` → `server_in`) and a server
    /// adapter (`server_out` → `client_in`). Probes the server after each `list_changed` of a
    /// kind in `probe_kinds`.
    pub fn start(
        hub: Arc<Hub>,
        policy: Policy,
        client_out: impl AsyncRead + Unpin + Send + 'static,
        client_in: impl AsyncWrite + Unpin + Send + 'static,
        server_out: impl AsyncRead + Unpin + Send + 'static,
        server_in: impl AsyncWrite + Unpin + Send + 'static,
        probe_kinds: KindSet,
    ) -> Arc<Proxy> {
        let (to_server, rx_s) = mpsc::unbounded_channel();
        let (to_client, rx_c) = mpsc::unbounded_channel();
        let (probe_tx, probe_rx) = mpsc::unbounded_channel();
        let proxy = Arc::new(Proxy {
            hub: hub.clone(),
            policy: Mutex::new(policy),
            to_server,
            to_client,
            probe_kinds,
            probe_tx,
            probe_waiters: Mutex::new(HashMap::new()),
            next_probe: std::sync::atomic::AtomicU64::new(1),
            probes_pending: std::sync::atomic::AtomicUsize::new(0),
            probe_recorded: tokio::sync::Notify::new(),
        });
        tokio::spawn(writer(server_in, rx_s, hub.clone(), "mcp to server"));
        tokio::spawn(writer(client_in, rx_c, hub.clone(), "mcp to client"));
        tokio::spawn(pump(client_out, Dir::Up, proxy.clone()));
        tokio::spawn(pump(server_out, Dir::Down, proxy.clone()));
        tokio::spawn(probe_loop(proxy.clone(), probe_rx));
        proxy
    }

    /// The hub.
    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    /// Replaces the policy (for lines arriving from now on).
    pub fn set_policy(&self, p: Policy) {
        *self.policy.lock().unwrap_or_else(|e| e.into_inner()) = p;
    }

    fn policy(&self) -> Policy {
        self.policy
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    fn send(&self, dir: Dir, raw: Arc<[u8]>) {
        let _ = match dir {
            Dir::Up => self.to_server.send(raw),
            Dir::Down => self.to_client.send(raw),
        };
    }

    fn arrive(&self, dir: Dir, line: Vec<u8>) {
        let len = line.len();
        let parsed: Option<Value> = serde_json::from_slice(&line).ok();
        let raw: Arc<[u8]> = line.into();
        let policy = self.policy();
        let mut probe: Option<Kind> = None;
        let mut intercepted: Option<(String, Value)> = None;
        {
            let mut st = self.hub.lock();
            let Some(v) = parsed else {
                let text = String::from_utf8_lossy(&raw[..raw.len().min(512)]).into_owned();
                let start: String = text.trim_end().chars().take(120).collect();
                st.push(Body::Msg {
                    dir,
                    len,
                    json: None,
                    text: Some(text),
                    fate: LineFate::Passed,
                });
                st.push(Body::Bad {
                    from: format!("mcp {}", dir_name(dir)),
                    what: format!(
                        "a line of {len} bytes that is not JSON (forwarded unchanged): {start:?}"
                    ),
                });
                drop(st);
                self.send(dir, raw);
                self.hub.changed();
                return;
            };
            let fate = match (dir, jsonrpc::classify(&v)) {
                (Dir::Up, Frame::Request { id, method }) => {
                    let held = (policy.hold_request)(&v);
                    let hold_response = (policy.hold_response)(&v);
                    if let Some(meta) = protocol_meta(&v) {
                        st.last_client_meta = Some(meta);
                    }
                    let seq = st.records.len() as u64 + st.lost_records;
                    st.requests.insert(
                        (Dir::Up, id),
                        Pending {
                            seq,
                            method: method.to_owned(),
                            hold_response,
                            answered: false,
                        },
                    );
                    if held {
                        LineFate::Held
                    } else {
                        LineFate::Passed
                    }
                }
                (Dir::Down, Frame::Response { id, .. }) if is_probe_id(&id) => {
                    intercepted = Some((id, v.clone()));
                    LineFate::Intercepted
                }
                (Dir::Down, Frame::Response { id, .. }) => {
                    match st.requests.get_mut(&(Dir::Up, id)) {
                        Some(p) => {
                            p.answered = true;
                            if p.hold_response {
                                LineFate::Held
                            } else {
                                LineFate::Passed
                            }
                        }
                        None => LineFate::Passed,
                    }
                }
                (Dir::Down, Frame::Notification { method }) => {
                    if let Some(k) = notified_kind(method)
                        && self.probe_kinds.contains(k)
                    {
                        probe = Some(k);
                    }
                    if (policy.hold_notification)(&v) {
                        LineFate::Held
                    } else {
                        LineFate::Passed
                    }
                }
                (Dir::Down, Frame::Request { id, method }) => {
                    let seq = st.records.len() as u64 + st.lost_records;
                    st.requests.insert(
                        (Dir::Down, id),
                        Pending {
                            seq,
                            method: method.to_owned(),
                            hold_response: false,
                            answered: false,
                        },
                    );
                    LineFate::Passed
                }
                (Dir::Up, Frame::Response { id, .. }) => {
                    if let Some(p) = st.requests.get_mut(&(Dir::Down, id)) {
                        p.answered = true;
                    }
                    LineFate::Passed
                }
                (_, Frame::Invalid(why)) => {
                    st.push(Body::Bad {
                        from: format!("mcp {}", dir_name(dir)),
                        what: format!("not a JSON-RPC message ({why}); forwarded unchanged"),
                    });
                    LineFate::Passed
                }
                (Dir::Up, Frame::Notification { .. }) => LineFate::Passed,
            };
            let seq = st.push(Body::Msg {
                dir,
                len,
                json: Some(v.clone()),
                text: None,
                fate,
            });
            match fate {
                LineFate::Held => st.held.push(Held {
                    seq,
                    dir,
                    raw: raw.clone(),
                    json: v,
                }),
                LineFate::Passed => self.send(dir, raw.clone()),
                LineFate::Intercepted | LineFate::Discarded => {}
            }
            if let Some(k) = probe {
                self.probes_pending
                    .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = self.probe_tx.send((seq, k));
            }
        }
        if let Some((id, v)) = intercepted {
            let waiter = self
                .probe_waiters
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
            if let Some(w) = waiter {
                let _ = w.send(v);
            }
        }
        self.hub.changed();
    }

    /// Forwards, drops or duplicates the held line `seq`. Returns false if it is not held.
    pub fn act(&self, seq: u64, action: Action) -> bool {
        let mut st = self.hub.lock();
        let Some(pos) = st.held.iter().position(|h| h.seq == seq) else {
            return false;
        };
        match action {
            Action::Deliver => {
                let h = st.held.remove(pos);
                st.push(Body::Release {
                    of: seq,
                    action,
                    note: None,
                });
                self.send(h.dir, h.raw);
            }
            Action::Drop => {
                st.held.remove(pos);
                st.push(Body::Release {
                    of: seq,
                    action,
                    note: None,
                });
            }
            Action::Duplicate => {
                let h = st.held[pos].clone();
                let copy = st.push(Body::Release {
                    of: seq,
                    action,
                    note: Some("this record's sequence number names the held copy".into()),
                });
                st.held.insert(pos + 1, Held { seq: copy, ..h });
            }
        }
        drop(st);
        self.hub.changed();
        true
    }

    /// Forwards every held line, in arrival order.
    pub fn release_all(&self) {
        let seqs: Vec<u64> = self.hub.lock().held.iter().map(|h| h.seq).collect();
        for s in seqs {
            self.act(s, Action::Deliver);
        }
    }

    /// Injects a request to the server and waits for its (intercepted) response.
    async fn request(&self, method: &str, mut params: Value) -> Result<Value, String> {
        let n = self
            .next_probe
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = format!("{PROBE_PREFIX}{n}");
        if let Some(meta) = self.hub.lock().last_client_meta.clone()
            && let Some(o) = params.as_object_mut()
        {
            o.insert("_meta".into(), meta);
        }
        let msg = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (tx, rx) = oneshot::channel();
        self.probe_waiters
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(jsonrpc::id_key(&json!(id)), tx);
        self.hub.record(Body::Inject {
            dir: Dir::Up,
            json: msg.clone(),
        });
        let line: Arc<[u8]> = msg.to_string().into_bytes().into();
        self.send(Dir::Up, line);
        match tokio::time::timeout(PROBE_BOUND, rx).await {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(_)) => Err("probe abandoned".into()),
            Err(_) => Err(format!(
                "no answer to {method} probe within {PROBE_BOUND:?}"
            )),
        }
    }

    /// Waits (at most `bound`) until every probe asked for so far is recorded: the harness
    /// calls it before it changes the server (a batch, a parked commit's release), so that a
    /// probe sees the list of the moment its notification arrived and not a later one, however
    /// the tasks are scheduled. Whether they all were.
    pub async fn probes_recorded(&self, bound: std::time::Duration) -> bool {
        let pending = || {
            self.probes_pending
                .load(std::sync::atomic::Ordering::SeqCst)
                > 0
        };
        let wait = async {
            while pending() {
                let recorded = self.probe_recorded.notified();
                tokio::pin!(recorded);
                recorded.as_mut().enable();
                if !pending() {
                    break;
                }
                recorded.await;
            }
        };
        tokio::time::timeout(bound, wait).await.is_ok()
    }

    /// Lists every page of `kind` on the server (harness-owned requests).
    pub async fn probe_list(&self, kind: Kind) -> Result<Vec<NamedItem>, String> {
        let mut items = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..100 {
            let params = match &cursor {
                Some(c) => json!({ "cursor": c }),
                None => json!({}),
            };
            let v = self.request(kind.list_method(), params).await?;
            if let Some(e) = v.get("error") {
                return Err(format!("server answered the probe with an error: {e}"));
            }
            let r = jsonrpc::result(&v);
            items.extend(page_items(kind, r).ok_or("probe result has no item list")?);
            match r.get("nextCursor").filter(|c| !c.is_null()) {
                Some(c) => cursor = Some(c.clone()),
                None => return Ok(items),
            }
        }
        Err("probe gave up after 100 pages".into())
    }
}

fn is_probe_id(id: &str) -> bool {
    id.starts_with(&format!("\"{PROBE_PREFIX}"))
}

fn dir_name(d: Dir) -> &'static str {
    match d {
        Dir::Up => "from client",
        Dir::Down => "from server",
    }
}

async fn probe_loop(proxy: Arc<Proxy>, mut rx: mpsc::UnboundedReceiver<(u64, Kind)>) {
    while let Some((seq, kind)) = rx.recv().await {
        let r = proxy.probe_list(kind).await;
        let (items, error) = match r {
            Ok(i) => (Some(i), None),
            Err(e) => (None, Some(e)),
        };
        proxy.hub.record(Body::Fact(Fact::Probe {
            notification: seq,
            kind,
            items,
            error,
        }));
        proxy
            .probes_pending
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        proxy.probe_recorded.notify_waiters();
    }
}

/// One line read from an adapter.
pub(crate) enum Line {
    /// A line (without its newline).
    Data(Vec<u8>),
    /// A line over the limit, skipped (its length).
    TooLong(usize),
    /// End of input.
    Eof,
}

/// Reads one `\n`-terminated line of at most `max` bytes; longer lines are skipped whole.
pub(crate) async fn read_line(
    r: &mut (impl AsyncBufReadExt + Unpin),
    max: usize,
) -> std::io::Result<Line> {
    let mut buf = Vec::new();
    let mut skipped = 0usize;
    loop {
        let chunk = r.fill_buf().await?;
        if chunk.is_empty() {
            return Ok(if skipped > 0 {
                Line::TooLong(skipped)
            } else if buf.is_empty() {
                Line::Eof
            } else {
                Line::Data(buf)
            });
        }
        let (take, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let body = if done { &chunk[..take - 1] } else { chunk };
        if skipped > 0 || buf.len() + body.len() > max {
            skipped += buf.len() + body.len();
            buf.clear();
        } else {
            buf.extend_from_slice(body);
        }
        r.consume(take);
        if done {
            return Ok(if skipped > 0 {
                Line::TooLong(skipped)
            } else {
                Line::Data(buf)
            });
        }
    }
}

async fn pump(out: impl AsyncRead + Unpin, dir: Dir, proxy: Arc<Proxy>) {
    let mut r = BufReader::new(out);
    loop {
        match read_line(&mut r, MAX_LINE_BYTES).await {
            Ok(Line::Data(mut line)) => {
                if line.last() == Some(&b'\r') {
                    line.pop();
                }
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                proxy.arrive(dir, line);
            }
            Ok(Line::TooLong(n)) => {
                proxy.hub.record(Body::Bad {
                    from: format!("mcp {}", dir_name(dir)),
                    what: format!(
                        "a line of {n} bytes, over the {MAX_LINE_BYTES}-byte limit: dropped"
                    ),
                });
            }
            Ok(Line::Eof) | Err(_) => break,
        }
    }
    {
        let mut st = proxy.hub.lock();
        st.eof[match dir {
            Dir::Up => 0,
            Dir::Down => 1,
        }] = true;
        st.push(Body::Note {
            text: format!(
                "{} adapter's stdout closed",
                match dir {
                    Dir::Up => "client",
                    Dir::Down => "server",
                }
            ),
        });
    }
    proxy.hub.changed();
}

async fn writer(
    mut w: impl AsyncWrite + Unpin,
    mut rx: mpsc::UnboundedReceiver<Arc<[u8]>>,
    hub: Arc<Hub>,
    what: &'static str,
) {
    let mut ok = true;
    while let Some(line) = rx.recv().await {
        if !ok {
            continue;
        }
        let r = async {
            w.write_all(&line).await?;
            w.write_all(b"\n").await?;
            w.flush().await
        }
        .await;
        if let Err(e) = r {
            ok = false;
            hub.record(Body::Bad {
                from: what.into(),
                what: format!("write failed ({e}); later lines are discarded"),
            });
        }
    }
    let _ = w.shutdown().await;
}

/// The protocol metadata a 2026-07-28 request carries (every request needs it), without the
/// request's own progress token: what a probe copies.
fn protocol_meta(v: &Value) -> Option<Value> {
    let meta = jsonrpc::params(v).get("_meta")?;
    meta.get("io.modelcontextprotocol/protocolVersion")?;
    let mut meta = meta.clone();
    if let Some(o) = meta.as_object_mut() {
        o.remove("progressToken");
    }
    Some(meta)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn long_lines_are_skipped_and_reading_goes_on() {
        let data = format!("{}\nok\n{}", "x".repeat(100), "tail");
        let mut r = BufReader::with_capacity(8, data.as_bytes());
        assert!(matches!(
            read_line(&mut r, 10).await.unwrap(),
            Line::TooLong(100)
        ));
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::Data(l) if l == b"ok"));
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::Data(l) if l == b"tail"));
        assert!(matches!(read_line(&mut r, 10).await.unwrap(), Line::Eof));
    }

    #[tokio::test]
    async fn holds_releases_and_intercepts() {
        let hub = Hub::new();
        let (client_out_w, client_out_r) = tokio::io::duplex(1 << 16);
        let (server_in_w, mut server_in_r) = tokio::io::duplex(1 << 16);
        let (server_out_w, server_out_r) = tokio::io::duplex(1 << 16);
        let (client_in_w, _client_in_r) = tokio::io::duplex(1 << 16);
        let policy = Policy {
            hold_request: Arc::new(|v| v["method"] == "tools/list"),
            hold_response: Arc::new(|_| true),
            hold_notification: Arc::new(|_| false),
        };
        let proxy = Proxy::start(
            hub.clone(),
            policy,
            client_out_r,
            client_in_w,
            server_out_r,
            server_in_w,
            KindSet::EMPTY,
        );
        let mut cw = client_out_w;
        cw.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\nnot json\n")
            .await
            .unwrap();
        let held = hub
            .wait_until(Duration::from_secs(5), |st| st.held.first().map(|h| h.seq))
            .await
            .expect("held");
        // The garbage line went through; the request did not.
        let mut r = BufReader::new(&mut server_in_r);
        let mut line = String::new();
        r.read_line(&mut line).await.unwrap();
        assert_eq!(line, "not json\n");
        assert!(proxy.act(held, Action::Deliver));
        line.clear();
        r.read_line(&mut line).await.unwrap();
        assert!(line.contains("tools/list"));
        assert!(!proxy.act(held, Action::Deliver), "already released");
        let _ = server_out_w;
    }
}
