//! The session log format (docs/session-log.md): JSON Lines, a [`Header`] first, then one
//! [`LogEntry`] per connection event or message. These types are the one schema: [`Writer`] writes
//! them, [`read`] reads them back, bounded ([`MAX_LINE_BYTES`], [`MAX_ENTRIES`],
//! [`MAX_LOG_BYTES`]: the memory a log costs is bounded by the last, whatever its lines) and refusing
//! anything else with the number of the offending line.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::io::{BufRead, Write};
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// The `format` field of the header.
pub const FORMAT: &str = "listsync-session-log";
/// The format version this build writes and reads.
pub const VERSION: u32 = 1;
/// Longest log line the reader accepts (a message is logged on one line).
pub const MAX_LINE_BYTES: usize = listsync_harness::jsonrpc::MAX_LINE_BYTES;
/// Most entries the reader accepts from one log.
pub const MAX_ENTRIES: usize = 200_000;
/// Most bytes of entries the reader accepts from one log (as much as the harness keeps of one
/// run's payloads): without it, [`MAX_ENTRIES`] lines of [`MAX_LINE_BYTES`] each would be
/// 1.6 TB.
pub const MAX_LOG_BYTES: usize = 256 << 20;
/// Longest preview of a line that is not JSON kept in the log.
pub const MAX_PREVIEW: usize = 1024;

/// How the session was recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordTransport {
    /// An interposed stdio link (`listsync record -- SERVER_COMMAND...`).
    Stdio,
    /// A Streamable HTTP reverse proxy (`listsync record --http ... --upstream URL`).
    Http,
}

/// The first line of a log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Header {
    /// Always [`FORMAT`].
    pub format: String,
    /// [`VERSION`] when written by this build.
    pub version: u32,
    /// How it was recorded.
    pub transport: RecordTransport,
    /// The server: its command line (stdio) or upstream URL (HTTP).
    pub server: Vec<String>,
    /// Wall-clock start, milliseconds since the Unix epoch (entries carry time since then).
    pub started_unix_ms: u64,
    /// The same start in microseconds (written since the host harness lines a log up with the
    /// scripted model's clock; absent in older logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_unix_us: Option<u64>,
}

impl Header {
    /// Wall-clock start in microseconds since the Unix epoch (`started_unix_us`, else from
    /// `started_unix_ms`).
    pub fn start_us(&self) -> u64 {
        self.started_unix_us
            .unwrap_or(self.started_unix_ms.saturating_mul(1000))
    }
}

/// Which way a message travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LogDir {
    /// Client to server.
    #[serde(rename = "c2s")]
    ClientToServer,
    /// Server to client.
    #[serde(rename = "s2c")]
    ServerToClient,
}

/// What an entry says.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum What {
    /// A connection opened (stdio: the server process started; HTTP: a session's first
    /// request).
    Open {
        /// A human note (the session id, the process id).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
    /// A connection ended.
    Close {
        /// Why (EOF from the client, server exit status...).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        detail: String,
    },
    /// A JSON-RPC message (or a JSON value that is not one: the audit classifies it).
    Msg {
        /// Direction.
        dir: LogDir,
        /// The message as sent.
        json: Value,
    },
    /// A line that was forwarded but is not JSON, or too long to keep.
    Invalid {
        /// Direction.
        dir: LogDir,
        /// Its length in bytes.
        len: usize,
        /// Why it is not logged as a message.
        why: String,
        /// A lossy preview of at most [`MAX_PREVIEW`] bytes.
        preview: String,
    },
}

/// One line after the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LogEntry {
    /// Position among the entries (0, 1, ...).
    pub seq: u64,
    /// Microseconds since the header's start.
    pub t_us: u64,
    /// Connection: 0 on stdio; one per HTTP session (or sessionless exchange).
    pub conn: u32,
    /// What happened.
    #[serde(flatten)]
    pub what: What,
}

/// A log read back.
#[derive(Clone, Debug)]
pub struct SessionLog {
    /// Its header.
    pub header: Header,
    /// Its entries; entry `i` is on line `i + 2` of the file.
    pub entries: Vec<LogEntry>,
}

/// The file line an entry is on (the header is line 1).
pub fn line_of(seq: u64) -> u64 {
    seq + 2
}

/// Why a log cannot be read: always with the line it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// An I/O failure.
    #[error("{path}: {err}")]
    Io {
        /// File.
        path: String,
        /// Error.
        err: std::io::Error,
    },
    /// A malformed, oversized or out-of-order line.
    #[error("{path}:{line}: {what}")]
    Line {
        /// File.
        path: String,
        /// 1-based line number.
        line: u64,
        /// What is wrong.
        what: String,
    },
}

/// What [`bounded_line`] found.
enum Line {
    /// The end of the input, no line.
    End,
    /// A line, now in the buffer (without its newline).
    Read,
    /// A line longer than the limit; nothing more was read.
    TooLong,
}

/// Reads one line of at most `max` bytes into `buf` (without its newline). A longer line is
/// [`Line::TooLong`] as soon as it passes `max`: nothing more is read, so an endless line
/// (`/dev/zero`, a pipe that never sends a newline) is refused after `max` bytes instead of
/// read to its end.
fn bounded_line(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<Line> {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = r.fill_buf()?;
        if chunk.is_empty() {
            return Ok(if any { Line::Read } else { Line::End });
        }
        any = true;
        let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        if buf.len() + part.len() > max {
            return Ok(Line::TooLong);
        }
        buf.extend_from_slice(part);
        let used = done.unwrap_or(part.len());
        r.consume(used);
        if done.is_some() {
            return Ok(Line::Read);
        }
    }
}

/// Reads and validates a log file.
pub fn read(path: &Path) -> Result<SessionLog, ReadError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|err| ReadError::Io {
        path: name.clone(),
        err,
    })?;
    read_from(&name, &mut std::io::BufReader::new(file))
}

/// The reader's bounds: [`MAX_LINE_BYTES`], [`MAX_ENTRIES`], [`MAX_LOG_BYTES`].
#[derive(Clone, Copy)]
struct Limits {
    line_bytes: usize,
    entries: usize,
    log_bytes: usize,
}

const LIMITS: Limits = Limits {
    line_bytes: MAX_LINE_BYTES,
    entries: MAX_ENTRIES,
    log_bytes: MAX_LOG_BYTES,
};

/// Reads a log from `r` (`name` for messages).
pub fn read_from(name: &str, r: &mut impl BufRead) -> Result<SessionLog, ReadError> {
    read_limited(name, r, LIMITS)
}

fn read_limited(name: &str, r: &mut impl BufRead, limits: Limits) -> Result<SessionLog, ReadError> {
    let too_long = || format!("line longer than {} bytes (the limit)", limits.line_bytes);
    let bad = |line: u64, what: String| ReadError::Line {
        path: name.to_owned(),
        line,
        what,
    };
    let io = |err| ReadError::Io {
        path: name.to_owned(),
        err,
    };
    let mut buf = Vec::new();
    let header: Header = match bounded_line(r, &mut buf, limits.line_bytes).map_err(io)? {
        Line::End => return Err(bad(1, "empty file: no session log header".into())),
        Line::TooLong => return Err(bad(1, too_long())),
        Line::Read => serde_json::from_slice(&buf).map_err(|e| {
            bad(
                1,
                format!("not a session log header ({e}); expected {{\"format\":\"{FORMAT}\",...}}"),
            )
        })?,
    };
    if header.format != FORMAT {
        return Err(bad(
            1,
            format!("format '{}' is not '{FORMAT}'", header.format),
        ));
    }
    if header.version != VERSION {
        return Err(bad(
            1,
            format!(
                "format version {} is not supported (this build reads version {VERSION})",
                header.version
            ),
        ));
    }
    let mut entries: Vec<LogEntry> = Vec::new();
    let mut line = 1u64;
    let mut bytes = 0usize;
    loop {
        line += 1;
        match bounded_line(r, &mut buf, limits.line_bytes).map_err(io)? {
            Line::End => break,
            Line::TooLong => return Err(bad(line, too_long())),
            Line::Read => {}
        }
        if entries.len() >= limits.entries {
            return Err(bad(
                line,
                format!("more than {} entries, the audit's limit", limits.entries),
            ));
        }
        bytes += buf.len() + 1;
        if bytes > limits.log_bytes {
            return Err(bad(
                line,
                format!(
                    "entries larger than {} bytes in all, the audit's limit",
                    limits.log_bytes
                ),
            ));
        }
        let e: LogEntry = serde_json::from_slice(&buf).map_err(|e| {
            let what = if e.is_eof() {
                format!("truncated entry ({e})")
            } else {
                format!("malformed entry ({e})")
            };
            bad(line, what)
        })?;
        if e.seq != entries.len() as u64 {
            return Err(bad(
                line,
                format!("entry seq {} where {} was expected", e.seq, entries.len()),
            ));
        }
        entries.push(e);
    }
    Ok(SessionLog { header, entries })
}

/// Appends entries to a log file, one flushed line each (a log cut short by a crash or a
/// kill is whole up to its last entry).
pub struct Writer {
    inner: Mutex<WriterState>,
}

struct WriterState {
    out: Box<dyn Write + Send>,
    seq: u64,
    started: Instant,
    failed: bool,
}

impl Writer {
    /// Creates (truncates) `path` and writes the header.
    pub fn create(
        path: &Path,
        transport: RecordTransport,
        server: Vec<String>,
    ) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Self::new(Box::new(file), transport, server)
    }

    /// A writer on any output; writes the header.
    pub fn new(
        mut out: Box<dyn Write + Send>,
        transport: RecordTransport,
        server: Vec<String>,
    ) -> std::io::Result<Self> {
        // The wall clock and the monotonic clock of the entries, read together.
        let started = Instant::now();
        let since_epoch = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default();
        let header = Header {
            format: FORMAT.into(),
            version: VERSION,
            transport,
            server,
            started_unix_ms: u64::try_from(since_epoch.as_millis()).unwrap_or(u64::MAX),
            started_unix_us: Some(u64::try_from(since_epoch.as_micros()).unwrap_or(u64::MAX)),
        };
        serde_json::to_writer(&mut out, &header)?;
        out.write_all(b"\n")?;
        out.flush()?;
        Ok(Writer {
            inner: Mutex::new(WriterState {
                out,
                seq: 0,
                started,
                failed: false,
            }),
        })
    }

    /// Appends one entry. A write failure is reported once (tracing) and later entries are
    /// dropped: the proxy keeps forwarding, since the session matters more than its log.
    pub fn append(&self, conn: u32, what: What) {
        let mut s = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        if s.failed {
            return;
        }
        let entry = LogEntry {
            seq: s.seq,
            t_us: u64::try_from(s.started.elapsed().as_micros()).unwrap_or(u64::MAX),
            conn,
            what,
        };
        let r = serde_json::to_writer(&mut s.out, &entry)
            .map_err(std::io::Error::from)
            .and_then(|()| s.out.write_all(b"\n"))
            .and_then(|()| s.out.flush());
        match r {
            Ok(()) => s.seq += 1,
            Err(e) => {
                s.failed = true;
                tracing::error!("session log: cannot write ({e}); the session goes on unlogged");
            }
        }
    }

    /// Logs one line that crossed the proxy: a message if it is JSON, else an `invalid` entry.
    /// `line` is the line without its newline; `len` its full length (a line longer than
    /// [`MAX_LINE_BYTES`] arrives cut to that length).
    pub fn line(&self, conn: u32, dir: LogDir, line: &[u8], len: usize) {
        let what = if len > line.len() {
            What::Invalid {
                dir,
                len,
                why: format!("longer than {MAX_LINE_BYTES} bytes: forwarded, not kept"),
                preview: preview(line),
            }
        } else {
            match serde_json::from_slice::<Value>(line) {
                Ok(json) => What::Msg { dir, json },
                Err(e) => What::Invalid {
                    dir,
                    len,
                    why: format!("not JSON ({e})"),
                    preview: preview(line),
                },
            }
        };
        self.append(conn, what);
    }

    /// Logs one HTTP body or server-sent event's data that crossed the proxy: a JSON array (a
    /// JSON-RPC batch) as one message per element, other JSON as one message, anything else as
    /// an `invalid` entry. `body` holds at most [`MAX_LINE_BYTES`] of it; `len` is its full
    /// length (longer: logged as `invalid`, not kept).
    pub fn body(&self, conn: u32, dir: LogDir, body: &[u8], len: usize) {
        if len > body.len() {
            return self.line(conn, dir, body, len);
        }
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Array(batch)) if !batch.is_empty() => {
                for json in batch {
                    self.append(conn, What::Msg { dir, json });
                }
            }
            Ok(json) => self.append(conn, What::Msg { dir, json }),
            // Not JSON: `line` says why.
            Err(_) => self.line(conn, dir, body, len),
        }
    }
}

fn preview(line: &[u8]) -> String {
    let cut = &line[..line.len().min(MAX_PREVIEW)];
    String::from_utf8_lossy(cut).into_owned()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::sync::Arc;

    /// An output the test reads back: what a [`Writer`] wrote, shared with it.
    #[derive(Clone, Default)]
    pub(crate) struct Shared(pub(crate) Arc<Mutex<Vec<u8>>>);
    impl Write for Shared {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    fn written(f: impl FnOnce(&Writer)) -> Vec<u8> {
        let buf = Shared::default();
        let w = Writer::new(
            Box::new(buf.clone()),
            RecordTransport::Stdio,
            vec!["srv".into()],
        )
        .unwrap();
        f(&w);
        buf.0.lock().unwrap().clone()
    }

    fn parse(bytes: &[u8]) -> Result<SessionLog, ReadError> {
        read_from("log", &mut std::io::Cursor::new(bytes))
    }

    #[test]
    fn round_trip() {
        let bytes = written(|w| {
            w.append(0, What::Open { detail: "".into() });
            w.line(
                0,
                LogDir::ClientToServer,
                br#"{"jsonrpc":"2.0","id":1,"method":"x"}"#,
                37,
            );
            w.line(0, LogDir::ServerToClient, b"hello", 5);
            w.line(0, LogDir::ServerToClient, b"{\"a\":", 99);
        });
        let log = parse(&bytes).unwrap();
        assert_eq!(log.header.server, ["srv"]);
        assert_eq!(log.entries.len(), 4);
        assert!(matches!(
            log.entries[1].what,
            What::Msg {
                dir: LogDir::ClientToServer,
                ..
            }
        ));
        assert!(
            matches!(&log.entries[2].what, What::Invalid { why, .. } if why.starts_with("not JSON"))
        );
        assert!(matches!(
            &log.entries[3].what,
            What::Invalid { len: 99, .. }
        ));
    }

    #[test]
    fn refuses_bad_input_naming_the_line() {
        let good = written(|w| {
            w.append(0, What::Open { detail: "".into() });
            w.line(0, LogDir::ClientToServer, b"{}", 2);
        });
        let text = String::from_utf8(good).unwrap();
        // Truncated: the last line cut in the middle.
        let cut = &text[..text.len() - 5];
        let e = parse(cut.as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("log:3: truncated entry"), "{e}");
        // Malformed line in the middle.
        let mut lines: Vec<&str> = text.lines().collect();
        lines.insert(2, "not json");
        let e = parse(lines.join("\n").as_bytes()).unwrap_err().to_string();
        assert!(e.starts_with("log:3: malformed entry"), "{e}");
        // Not a log at all, empty, wrong version, out of order.
        assert!(
            parse(b"{\"jsonrpc\":\"2.0\"}\n")
                .unwrap_err()
                .to_string()
                .starts_with("log:1: not a session log header")
        );
        assert!(parse(b"").unwrap_err().to_string().contains("empty file"));
        let v2 = text.replacen("\"version\":1", "\"version\":2", 1);
        assert!(
            parse(v2.as_bytes())
                .unwrap_err()
                .to_string()
                .contains("version 2 is not supported")
        );
        let swapped = text.replacen("\"seq\":1", "\"seq\":7", 1);
        assert!(
            parse(swapped.as_bytes())
                .unwrap_err()
                .to_string()
                .starts_with("log:3: entry seq 7")
        );
    }

    #[test]
    fn long_lines_are_refused_without_being_kept() {
        let mut bytes = written(|_| {});
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
        bytes.push(b'\n');
        let e = parse(&bytes).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("log:2: line longer than {MAX_LINE_BYTES} bytes (the limit)")
        );
        // A line of exactly the limit is read.
        let mut bytes = written(|_| {});
        bytes.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES));
        bytes.push(b'\n');
        let e = parse(&bytes).unwrap_err().to_string();
        assert!(e.starts_with("log:2: malformed entry"), "{e}");
    }

    /// Entries are counted and their bytes summed as they are read: a log over either bound is
    /// refused at the line that passes it (the bounds scaled down here; the real ones are
    /// [`MAX_ENTRIES`] and [`MAX_LOG_BYTES`]).
    #[test]
    fn a_log_over_its_entries_or_bytes_is_refused_at_that_line() {
        let bytes = written(|w| {
            for _ in 0..10 {
                w.line(0, LogDir::ClientToServer, b"{}", 2);
            }
        });
        let limited = |entries, log_bytes| {
            let limits = Limits {
                line_bytes: MAX_LINE_BYTES,
                entries,
                log_bytes,
            };
            read_limited("log", &mut std::io::Cursor::new(&bytes), limits)
        };
        assert_eq!(limited(10, 1 << 20).unwrap().entries.len(), 10);
        let e = limited(4, 1 << 20).unwrap_err().to_string();
        assert_eq!(e, "log:6: more than 4 entries, the audit's limit");
        // The entry lines' lengths, newline included (the header is not counted).
        let text = String::from_utf8(bytes.clone()).unwrap();
        let lens: Vec<usize> = text.lines().skip(1).map(|l| l.len() + 1).collect();
        let all: usize = lens.iter().sum();
        assert_eq!(limited(10, all).unwrap().entries.len(), 10);
        // Room for three entries and a byte: the fourth (line 5) passes it.
        let three = lens[..3].iter().sum::<usize>() + 1;
        let e = limited(10, three).unwrap_err().to_string();
        assert_eq!(
            e,
            format!("log:5: entries larger than {three} bytes in all, the audit's limit")
        );
    }

    /// A line is given up as soon as it passes the limit: of a 64 MiB line with a limit of
    /// 1 MiB, at most one more buffer is read (so an endless one ends too).
    #[test]
    fn a_long_line_is_not_read_past_the_limit() {
        use std::io::Read;
        let input = std::io::repeat(b'x').take(64 << 20);
        let mut r = std::io::BufReader::new(input);
        let mut buf = Vec::new();
        assert!(matches!(
            bounded_line(&mut r, &mut buf, 1 << 20),
            Ok(Line::TooLong)
        ));
        let read = (64 << 20) - r.get_ref().limit();
        assert!(read <= (1 << 20) + (64 << 10), "{read} bytes read");
        assert!(buf.len() <= 1 << 20);
    }
}
