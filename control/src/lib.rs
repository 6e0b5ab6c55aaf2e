//! The harness control protocol's one codec (`docs/harness-protocol.md`, version 1): JSON lines
//! over a Unix socket. The harness listens and sends commands (`{"type":"cmd","id":N,"cmd":...}`);
//! an adapter connects, sends events (`{"type":"event","event":...}`) and exactly one reply per
//! command (`{"type":"reply","id":N,"ok":...}`).
//!
//! * [`read_line`]: one line, read no further than a cap (a peer that never sends a newline costs
//!   bounded memory);
//! * [`command`], [`reply`], [`event`]: the three messages, encoded; [`Incoming`]: a line
//!   decoded, whichever side reads it;
//! * [`Channel`] and [`Outbox`]: the adapter side — commands each run in their own task (so a
//!   command parked at a gate does not block the `release` that frees it), malformed lines get a
//!   reply with `ok:false` (and the id they carried, if any), nothing on the channel ends it but
//!   the socket closing or `shutdown`.

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

/// Longest line an adapter accepts on its control channel (bytes, newline excluded).
pub const MAX_LINE: usize = 1 << 20;

/// One line read from a control channel.
#[derive(Debug, PartialEq, Eq)]
pub enum Line {
    /// A line of text (without its newline).
    Text(String),
    /// Longer than the cap: this many bytes were discarded.
    TooLong(usize),
    /// Not UTF-8: discarded.
    NotUtf8,
}

/// Reads one `\n`-terminated line of at most `max` bytes: never buffers more than `max` (a
/// longer line is consumed and discarded up to its newline). None at the end of the stream; a
/// last line without a newline counts as a line.
pub async fn read_line<R: AsyncBufRead + Unpin>(
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

/// A failed command: what went wrong, and the JSON-RPC code if an MCP request failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Failure {
    /// Message.
    pub error: String,
    /// JSON-RPC error code.
    pub code: Option<i64>,
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

/// The fields of `fields` if it is an object (anything else adds none).
fn object(fields: Value) -> Map<String, Value> {
    match fields {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// A command: `{"type":"cmd","id":id,"cmd":cmd, ...fields}`.
pub fn command(id: u64, cmd: &str, fields: Value) -> Value {
    let mut m = object(fields);
    m.insert("type".into(), json!("cmd"));
    m.insert("id".into(), json!(id));
    m.insert("cmd".into(), json!(cmd));
    Value::Object(m)
}

/// An event: `{"type":"event","event":name, ...fields}`.
pub fn event(name: &str, fields: Value) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("event"));
    m.insert("event".into(), json!(name));
    m.extend(object(fields));
    Value::Object(m)
}

/// The reply to the command `id`: `{"type":"reply","id":id,"ok":true, ...fields}`, or
/// `"ok":false` with `error` (and `code`).
pub fn reply(id: Value, result: Result<Value, Failure>) -> Value {
    let mut m = Map::new();
    m.insert("type".into(), json!("reply"));
    m.insert("id".into(), id);
    match result {
        Ok(fields) => {
            m.insert("ok".into(), json!(true));
            m.extend(object(fields));
        }
        Err(f) => {
            m.insert("ok".into(), json!(false));
            m.insert("error".into(), json!(f.error));
            if let Some(code) = f.code {
                m.insert("code".into(), json!(code));
            }
        }
    }
    Value::Object(m)
}

/// One control line, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Incoming {
    /// A command (what an adapter reads): its id (`null` if it carried none), name, and the
    /// whole object.
    Command {
        /// The id to reply with.
        id: Value,
        /// The command's name.
        cmd: String,
        /// The whole command.
        body: Value,
    },
    /// A reply (what the harness reads): the command's id if it is a number, and the whole
    /// object.
    Reply {
        /// The id of the command answered.
        id: Option<u64>,
        /// The whole reply.
        body: Value,
    },
    /// An event (what the harness reads): the whole object.
    Event {
        /// The event's name.
        name: String,
        /// The whole event.
        body: Value,
    },
}

/// Why a line is not a control message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Malformed {
    /// The text is not JSON.
    NotJson(String),
    /// JSON, but of no known message type (the id it carried, or `null`).
    Unknown(Value),
}

impl Incoming {
    /// Decodes one line (`text` without its newline).
    pub fn decode(text: &str) -> Result<Incoming, Malformed> {
        let v: Value = serde_json::from_str(text).map_err(|e| Malformed::NotJson(e.to_string()))?;
        Incoming::of(v)
    }

    /// Classifies one decoded JSON value.
    pub fn of(v: Value) -> Result<Incoming, Malformed> {
        match v.get("type").and_then(Value::as_str) {
            Some("cmd") => match v.get("cmd") {
                Some(Value::String(c)) => Ok(Incoming::Command {
                    id: v.get("id").cloned().unwrap_or(Value::Null),
                    cmd: c.clone(),
                    body: v,
                }),
                _ => Err(Malformed::Unknown(
                    v.get("id").cloned().unwrap_or(Value::Null),
                )),
            },
            Some("reply") => Ok(Incoming::Reply {
                id: v.get("id").and_then(Value::as_u64),
                body: v,
            }),
            Some("event") => match v.get("event").and_then(Value::as_str) {
                Some(name) => Ok(Incoming::Event {
                    name: name.to_owned(),
                    body: v,
                }),
                None => Err(Malformed::Unknown(
                    v.get("id").cloned().unwrap_or(Value::Null),
                )),
            },
            _ => Err(Malformed::Unknown(
                v.get("id").cloned().unwrap_or(Value::Null),
            )),
        }
    }
}

/// A string field of a command.
pub fn str_field<'a>(v: &'a Value, name: &str) -> Result<&'a str, Failure> {
    v.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| Failure::new(format!("missing string field '{name}'")))
}

enum Out {
    Line(Value),
    Flush(oneshot::Sender<()>),
}

/// Sends events and replies on an adapter's control channel (cheap to clone).
#[derive(Clone)]
pub struct Outbox {
    tx: mpsc::UnboundedSender<Out>,
}

impl Outbox {
    /// An event: `{"type":"event","event":name, ...fields}`.
    pub fn event(&self, name: &str, fields: Value) {
        let _ = self.tx.send(Out::Line(event(name, fields)));
    }

    /// A `log` event.
    pub fn log(&self, message: impl Into<String>) {
        self.event("log", json!({ "message": message.into() }));
    }

    /// The reply to the command `id`.
    pub fn reply(&self, id: Value, result: Result<Value, Failure>) {
        let _ = self.tx.send(Out::Line(reply(id, result)));
    }

    /// Waits until everything sent so far was written (or the socket is gone).
    pub async fn flush(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Out::Flush(done)).is_ok() {
            let _ = rx.await;
        }
    }
}

/// What a command handler returns: the reply's extra fields, or a failure.
pub type CommandReply = Pin<Box<dyn Future<Output = Result<Value, Failure>> + Send>>;

/// Handles one command (`cmd` name, the whole command object).
pub type CommandHandler = Arc<dyn Fn(String, Value) -> CommandReply + Send + Sync>;

/// An adapter's open control channel: events can be sent at once; [`Channel::serve`] runs the
/// commands.
pub struct Channel {
    outbox: Outbox,
    reader: OwnedReadHalf,
}

impl Channel {
    /// Connects to the harness's socket at `path`.
    pub async fn connect(path: &Path) -> std::io::Result<Channel> {
        Ok(Channel::from_stream(UnixStream::connect(path).await?))
    }

    /// A channel on a connected stream (the harness's socket, or a connection accepted on a
    /// socket of the adapter's own).
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

    /// Reads commands until the socket closes or `stop` is cancelled, running each with
    /// `handler` in its own task. After replying to `shutdown` (and flushing) it cancels `stop`;
    /// so does the socket closing.
    pub async fn serve(self, handler: CommandHandler, stop: CancellationToken) {
        let mut reader = BufReader::new(self.reader);
        let mut buf = Vec::new();
        loop {
            let got = tokio::select! {
                got = read_line(&mut reader, &mut buf, MAX_LINE) => got,
                _ = stop.cancelled() => break,
            };
            let line = match got {
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
            let (id, cmd, body) = match Incoming::decode(&line) {
                Ok(Incoming::Command { id, cmd, body }) => (id, cmd, body),
                Err(Malformed::NotJson(e)) => {
                    outbox.reply(Value::Null, Err(Failure::new(format!("not JSON: {e}"))));
                    continue;
                }
                Ok(Incoming::Reply { body, .. } | Incoming::Event { body, .. }) => {
                    let id = body.get("id").cloned().unwrap_or(Value::Null);
                    outbox.reply(id, Err(not_a_command()));
                    continue;
                }
                Err(Malformed::Unknown(id)) => {
                    outbox.reply(id, Err(not_a_command()));
                    continue;
                }
            };
            let shutdown = cmd == "shutdown";
            let fut = handler(cmd, body);
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
        self.outbox.flush().await;
        stop.cancel();
    }
}

fn not_a_command() -> Failure {
    Failure::new("not a command (type \"cmd\" with a \"cmd\" name)")
}

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

    #[test]
    fn what_is_encoded_decodes_to_the_same_message() {
        let c = command(7, "mutate", json!({"ops": []}));
        assert_eq!(
            Incoming::decode(&c.to_string()),
            Ok(Incoming::Command {
                id: json!(7),
                cmd: "mutate".into(),
                body: c.clone()
            })
        );
        let r = reply(
            json!(7),
            Err(Failure {
                error: "no".into(),
                code: Some(-32602),
            }),
        );
        assert_eq!(
            r,
            json!({"type":"reply","id":7,"ok":false,"error":"no","code":-32602})
        );
        assert!(matches!(
            Incoming::of(r),
            Ok(Incoming::Reply { id: Some(7), .. })
        ));
        let ok = reply(json!(8), Ok(json!({"version": 3})));
        assert_eq!(ok, json!({"type":"reply","id":8,"ok":true,"version":3}));
        let e = event("ready", json!({"role": "server"}));
        assert_eq!(e, json!({"type":"event","event":"ready","role":"server"}));
        assert!(matches!(Incoming::of(e), Ok(Incoming::Event { name, .. }) if name == "ready"));
    }

    #[test]
    fn malformed_lines_are_told_apart() {
        assert!(matches!(
            Incoming::decode("{nope"),
            Err(Malformed::NotJson(_))
        ));
        assert_eq!(
            Incoming::decode(r#"{"type":"cmd","id":4}"#),
            Err(Malformed::Unknown(json!(4)))
        );
        assert_eq!(
            Incoming::decode(r#"{"type":"event"}"#),
            Err(Malformed::Unknown(Value::Null))
        );
        assert_eq!(
            Incoming::decode("[1]"),
            Err(Malformed::Unknown(Value::Null))
        );
    }
}
