//! The harness control channel (`docs/harness-protocol.md`, version 1): JSON lines over a Unix
//! socket the harness listens on. The adapter connects, sends `ready`, and serves commands —
//! each in its own task, so a command parked at a gate does not block the `release` that frees
//! it — replying exactly once per command; events go out unsolicited. Malformed lines get a reply
//! with `ok:false` (and the id they carried, if any): JSON that is not a command, text that is not
//! JSON, bytes that are not UTF-8, and lines longer than [`MAX_LINE`] (read no further than the
//! cap and discarded up to their newline, so a peer that never sends one costs bounded memory).
//! Nothing on the channel can crash the adapter or end it but the socket closing or `shutdown`.

pub mod admin;
mod client_role;
mod server_role;

pub use client_role::{connect as connect_client, run_client};
pub use server_role::{parse_op, parse_ops, run_server};

use serde_json::{Map, Value, json};
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;
use tokio::net::unix::OwnedReadHalf;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

enum Out {
    Line(Value),
    Flush(oneshot::Sender<()>),
}

/// Sends events and replies on the control channel (cheap to clone).
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
}

impl Outbox {
    /// An event: `{"type":"event","event":name, ...fields}`.
    pub fn event(&self, name: &str, fields: Value) {
        let mut m = Map::new();
        m.insert("type".into(), json!("event"));
        m.insert("event".into(), json!(name));
        if let Value::Object(f) = fields {
            m.extend(f);
        }
        let _ = self.tx.send(Out::Line(Value::Object(m)));
    }

    /// Waits until everything sent so far was written (or the socket is gone).
    pub async fn flush(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Out::Flush(done)).is_ok() {
            let _ = rx.await;
        }
    }

    /// A `log` event.
    pub fn log(&self, message: impl Into<String>) {
        self.event("log", json!({ "message": message.into() }));
    }

    fn reply(&self, id: Value, result: Result<Value, Failure>) {
        let mut m = Map::new();
        m.insert("type".into(), json!("reply"));
        m.insert("id".into(), id);
        match result {
            Ok(fields) => {
                m.insert("ok".into(), json!(true));
                if let Value::Object(f) = fields {
                    m.extend(f);
                }
            }
            Err(f) => {
                m.insert("ok".into(), json!(false));
                m.insert("error".into(), json!(f.error));
                if let Some(code) = f.code {
                    m.insert("code".into(), json!(code));
                }
            }
        }
        let _ = self.tx.send(Out::Line(Value::Object(m)));
    }
}

/// A failed command: what went wrong, and the JSON-RPC code if an MCP request failed.
#[derive(Clone, Debug)]
pub struct Failure {
    /// Message.
    pub error: String,
    /// JSON-RPC error code.
    pub code: Option<i32>,
}

impl Failure {
    /// A failure without a code.
    pub fn new(error: impl Into<String>) -> Self {
        Failure {
            error: error.into(),
            code: None,
        }
    }
}

impl<E: std::fmt::Display> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure::new(e.to_string())
    }
}

/// What a command handler returns: the reply's extra fields, or a failure.
pub type Reply = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send>>;

/// Handles one command (`cmd` name, the whole command object).
pub type Handler = Arc<dyn Fn(String, Value) -> Reply + Send + Sync>;

/// An open control channel: events can be sent at once; [`Channel::serve`] runs the commands.
pub struct Channel {
    outbox: Outbox,
    reader: OwnedReadHalf,
}

impl Channel {
    /// Connects to the harness's socket at `path`.
    pub async fn connect(path: &Path) -> std::io::Result<Channel> {
        Ok(Channel::from_stream(UnixStream::connect(path).await?))
    }

    /// A channel on a connected stream (the harness's socket, or a connection accepted on the
    /// admin socket, [`admin::listen`]).
    pub fn from_stream(stream: UnixStream) -> Channel {
        let (reader, mut writer) = stream.into_split();
        let (tx, mut rx) = mpsc::unbounded_channel::<Out>();
        tokio::spawn(async move {
            let mut open = true;
            while let Some(out) = rx.recv().await {
                match out {
                    Out::Line(v) if open => {
                        let mut line = v.to_string();
                        line.push('\n');
                        open = writer.write_all(line.as_bytes()).await.is_ok()
                            && writer.flush().await.is_ok();
                    }
                    Out::Line(_) => {}
                    Out::Flush(done) => {
                        let _ = done.send(());
                    }
                }
            }
        });
        Channel {
            outbox: Outbox { tx },
            reader,
        }
    }

    /// The sending side.
    pub fn outbox(&self) -> Outbox {
        self.outbox.clone()
    }

    /// Reads commands until the socket closes, running each with `handler` in its own task.
    /// After replying to `shutdown` it cancels `stop`; so does the socket closing.
    pub async fn serve(self, handler: Handler, stop: CancellationToken) {
        let mut reader = BufReader::new(self.reader);
        let mut buf = Vec::new();
        loop {
            let line = match read_line(&mut reader, &mut buf, MAX_LINE).await {
                Ok(Some(Line::Text(line))) => line,
                Ok(Some(Line::TooLong(n))) => {
                    tracing::warn!("control channel: a line of {n} bytes was discarded");
                    self.outbox.reply(
                        Value::Null,
                        Err(Failure::new(format!(
                            "line too long ({n} bytes; the limit is {MAX_LINE}); discarded"
                        ))),
                    );
                    continue;
                }
                Ok(Some(Line::NotUtf8)) => {
                    tracing::warn!("control channel: a line that is not UTF-8 was refused");
                    self.outbox
                        .reply(Value::Null, Err(Failure::new("line is not UTF-8 text")));
                    continue;
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::warn!("control channel: read failed: {e}");
                    break;
                }
            };
            if line.trim().is_empty() {
                continue;
            }
            let outbox = self.outbox.clone();
            let v: Value = match serde_json::from_str(&line) {
                Ok(v) => v,
                Err(e) => {
                    outbox.reply(Value::Null, Err(Failure::new(format!("not JSON: {e}"))));
                    continue;
                }
            };
            let id = v.get("id").cloned().unwrap_or(Value::Null);
            let cmd = match (v.get("type").and_then(Value::as_str), v.get("cmd")) {
                (Some("cmd"), Some(Value::String(c))) => c.clone(),
                _ => {
                    outbox.reply(
                        id,
                        Err(Failure::new(
                            "not a command (type \"cmd\" with a \"cmd\" name)",
                        )),
                    );
                    continue;
                }
            };
            let shutdown = cmd == "shutdown";
            let fut = handler(cmd, v);
            let stop = stop.clone();
            tokio::spawn(async move {
                let result = fut.await;
                outbox.reply(id, result);
                if shutdown {
                    outbox.flush().await;
                    stop.cancel();
                }
            });
        }
        stop.cancel();
    }
}

/// Longest line accepted on the control channel (bytes, newline excluded).
pub const MAX_LINE: usize = 1 << 20;

/// One line read from the control channel.
#[derive(Debug, PartialEq, Eq)]
enum Line {
    Text(String),
    /// Longer than the cap: this many bytes were discarded.
    TooLong(usize),
    NotUtf8,
}

/// Reads one `\n`-terminated line of at most `max` bytes: never buffers more than `max` (a
/// longer line is consumed and discarded up to its newline). None at the end of the stream; a
/// last line without a newline counts as a line.
async fn read_line<R: AsyncBufRead + Unpin>(
    r: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<Option<Line>> {
    buf.clear();
    let mut seen = 0usize;
    let mut ended = false;
    loop {
        let avail = r.fill_buf().await?;
        if avail.is_empty() {
            if seen == 0 {
                return Ok(None);
            }
            break;
        }
        let (chunk, used) = match avail.iter().position(|b| *b == b'\n') {
            Some(i) => {
                ended = true;
                (&avail[..i], i + 1)
            }
            None => (avail, avail.len()),
        };
        seen += chunk.len();
        if seen <= max {
            buf.extend_from_slice(chunk);
        } else {
            buf.clear();
        }
        r.consume(used);
        if ended {
            break;
        }
    }
    if seen > max {
        return Ok(Some(Line::TooLong(seen)));
    }
    match String::from_utf8(std::mem::take(buf)) {
        Ok(text) => Ok(Some(Line::Text(text))),
        Err(_) => Ok(Some(Line::NotUtf8)),
    }
}

/// A string field of a command.
pub(crate) fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, Failure> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::new(format!("missing string field '{name}'")))
}

/// An item as the control protocol shows it: name, description, and the full definition.
pub(crate) fn item_json(item: &listsync_core::vocab::Item) -> Value {
    json!({
        "name": &*item.name,
        "description": crate::items::description_of(&item.def),
        "def": &*item.def,
    })
}

/// The information every `ready` event carries.
#[derive(Clone, Debug)]
pub struct ReadyInfo {
    /// `server` or `client`.
    pub role: &'static str,
    /// Protocol era asked for.
    pub era: listsync_core::vocab::Era,
    /// Strategy (the adapter's variant).
    pub variant: String,
    /// More fields (page size, transport, URL...).
    pub extra: Value,
}

impl ReadyInfo {
    fn fields(&self) -> Value {
        let mut m = match json!({
            "impl": "listsync-rt",
            "role": self.role,
            "sdk": "rmcp",
            "sdk_version": RMCP_VERSION,
            "era_requested": self.era.as_str(),
            "variant": self.variant,
        }) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Value::Object(extra) = &self.extra {
            m.extend(extra.clone());
        }
        Value::Object(m)
    }
}

/// The rmcp version this runtime is built against (pinned in Cargo.toml).
pub const RMCP_VERSION: &str = "3.11.0";

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_capped_checked_and_the_reader_goes_on() {
        let mut input: Vec<u8> = Vec::new();
        input.extend_from_slice(b"{\"a\":1}\n");
        input.extend(std::iter::repeat_n(b'x', 5000));
        input.push(b'\n');
        input.extend_from_slice(b"\xff\xfe\n");
        input.extend_from_slice(b"last");
        // A tiny read buffer, so that lines span many reads.
        let mut r = BufReader::with_capacity(7, &input[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(l) = read_line(&mut r, &mut buf, 1000).await.unwrap() {
            assert!(buf.capacity() <= 2000, "buffered {}", buf.capacity());
            got.push(l);
        }
        assert_eq!(
            got,
            [
                Line::Text("{\"a\":1}".into()),
                Line::TooLong(5000),
                Line::NotUtf8,
                Line::Text("last".into()),
            ]
        );
    }
}
