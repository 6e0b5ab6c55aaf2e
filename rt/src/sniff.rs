//! JSON-RPC over stdio, watched on its way to rmcp. rmcp skips lines that are not JSON (as the
//! other SDKs do), so a peer that prints banners, garbage or binary output would leave the
//! other end waiting, silently: a client for a handshake that never comes, a server for
//! requests. rmcp also drops, with nothing said, a line longer than 16 MiB and a JSON line that
//! is not a message it reads (a response whose id is `1.5`, a request without a method). These
//! readers pass every byte through unchanged and report the first few lines that are not
//! JSON-RPC or are too long, so the user learns at once what the peer sent: `Sniffer` on a server
//! child's stdout (it also owns the child, which is killed when the connection is dropped), and
//! `CheckedStdin` on `listsync serve`'s stdin.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, ReadBuf};
use tokio::process::{Child, ChildStdout};

/// Lines longer than this are judged by their first byte only.
const MAX_CHECKED_LINE: usize = 64 << 10;
/// Non-JSON lines reported per connection (one more says that further ones are not).
const MAX_REPORTS: u32 = 3;
/// Characters of a bad line shown.
const SHOWN: usize = 80;

/// Reports a non-JSON line.
pub type Report = Arc<dyn Fn(String) + Send + Sync>;

/// What is watched, as its reports say it.
#[derive(Clone, Copy)]
struct Source {
    /// One bad line: "… printed a line that is not JSON-RPC …".
    one: &'static str,
    /// One line over rmcp's limit, which rmcp drops.
    oversized: &'static str,
    /// One JSON line that is not a message rmcp reads (which rmcp drops).
    misshapen: &'static str,
    /// Whether a JSON line is a message rmcp reads from this source.
    readable: fn(&[u8]) -> bool,
    /// Once the reports stop.
    more: &'static str,
}

const SERVER_STDOUT: Source = Source {
    one: "the server printed a line that is not JSON-RPC on stdout",
    oversized: "the server printed a line longer than 16 MiB on stdout (dropped, unread)",
    misshapen: "the server printed a JSON line on stdout that is not a JSON-RPC message (dropped)",
    readable: readable::<rmcp::model::ServerJsonRpcMessage>,
    more: "the server keeps printing lines that are not JSON-RPC on stdout (no longer reported)",
};

const CLIENT_STDIN: Source = Source {
    one: "the client sent a line that is not JSON-RPC on stdin",
    oversized: "the client sent a line longer than 16 MiB on stdin (dropped, unread)",
    misshapen: "the client sent a JSON line on stdin that is not a JSON-RPC message (dropped)",
    readable: readable::<rmcp::model::ClientJsonRpcMessage>,
    more: "the client keeps sending lines that are not JSON-RPC on stdin (no longer reported)",
};

/// Whether rmcp reads `line` (JSON) as a message `M`, or skips it without an answer being
/// lost: a notification (rmcp ignores those it does not know, for compatibility). A request or
/// response of the wrong shape — an id that is neither an integer nor a string, a missing
/// `result` — is dropped, and what waits for it waits for its timeout.
fn readable<M: serde::de::DeserializeOwned>(line: &[u8]) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        method: Option<serde::de::IgnoredAny>,
        id: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<M>(line).is_ok()
        || serde_json::from_slice::<Probe>(line).is_ok_and(|p| p.method.is_some() && p.id.is_none())
}

/// rmcp's longest line: a longer one is dropped (with nothing said but a `tracing` event).
const RMCP_MAX_LINE: usize = rmcp::transport::async_rw::DEFAULT_MAX_LINE_LENGTH;

/// A reader checked line by line; `G` is kept with it (and dropped with it).
pub struct CheckedReader<R, G = ()> {
    inner: R,
    check: LineCheck,
    _keep: G,
}

/// A server child's stdout, checked line by line. The child lives (and is killed on drop)
/// with the connection.
pub(crate) type Sniffer = CheckedReader<ChildStdout, KillOnDrop>;

/// Kills the child when dropped.
pub(crate) struct KillOnDrop(Arc<Mutex<Child>>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Ok(mut c) = self.0.lock() {
            let _ = c.start_kill();
        }
    }
}

/// A server child's stdout, reporting what the server prints that is not JSON-RPC.
pub(crate) fn sniffer(stdout: ChildStdout, child: Arc<Mutex<Child>>, report: Report) -> Sniffer {
    CheckedReader {
        inner: stdout,
        check: LineCheck::new(SERVER_STDOUT, report),
        _keep: KillOnDrop(child),
    }
}

/// This process's stdin, checked line by line (a stdio server's requests).
pub type CheckedStdin = CheckedReader<tokio::io::Stdin>;

/// Stdin for a stdio server, reporting what its client sends that is not JSON-RPC.
pub fn checked_stdin(report: Report) -> CheckedStdin {
    CheckedReader {
        inner: tokio::io::stdin(),
        check: LineCheck::new(CLIENT_STDIN, report),
        _keep: (),
    }
}

/// Splits bytes into lines and reports the first few that are not JSON.
struct LineCheck {
    source: Source,
    line: Vec<u8>,
    /// Bytes of the current line so far (the first [`MAX_CHECKED_LINE`] are kept).
    length: usize,
    /// The current line outgrew [`MAX_CHECKED_LINE`].
    long: bool,
    reports: u32,
    report: Report,
}

impl LineCheck {
    fn new(source: Source, report: Report) -> LineCheck {
        LineCheck {
            source,
            line: Vec::new(),
            length: 0,
            long: false,
            reports: 0,
            report,
        }
    }

    fn scan(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
                continue;
            }
            self.length += 1;
            if self.length == RMCP_MAX_LINE + 1 && !self.long_line_is_bad() {
                // A line that may be JSON but that rmcp will drop.
                self.tell(self.source.oversized);
            }
            if self.line.len() < MAX_CHECKED_LINE {
                self.line.push(b);
            } else if !self.long {
                self.long = true;
                // A line that outgrew the check and cannot be JSON is told now, not at its
                // end: a peer printing without newlines (binary output) may never end it.
                if self.long_line_is_bad() {
                    self.tell_not_json(Some("without a newline so far"));
                }
            }
        }
    }

    /// The current line is over [`MAX_CHECKED_LINE`] and does not start as JSON does.
    fn long_line_is_bad(&self) -> bool {
        let text = self.line.trim_ascii();
        !text.is_empty() && !matches!(text.first(), Some(b'{' | b'['))
    }

    fn end_line(&mut self) {
        // A long line was told when it outgrew the check, if it was bad.
        let text = self.line.trim_ascii();
        // One parse for a message rmcp reads; a second only for a line it does not.
        if !(self.long || text.is_empty() || (self.source.readable)(text)) {
            if serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err() {
                self.tell_not_json(None);
            } else {
                self.tell(self.source.misshapen);
            }
        }
        self.line.clear();
        self.length = 0;
        self.long = false;
    }

    /// Reports the current line as not JSON-RPC (`how`: said after it).
    fn tell_not_json(&mut self, how: Option<&str>) {
        let what = match how {
            Some(how) => format!("{} ({} KiB {how})", self.source.one, MAX_CHECKED_LINE >> 10),
            None => self.source.one.to_owned(),
        };
        self.tell(&what);
    }

    /// Reports the current line (`what` it is, then how it starts), or that there are more.
    fn tell(&mut self, what: &str) {
        if self.reports > MAX_REPORTS {
            return;
        }
        self.reports += 1;
        let message = if self.reports > MAX_REPORTS {
            self.source.more.to_owned()
        } else {
            let text = self.line.trim_ascii();
            let shown: String = String::from_utf8_lossy(text).chars().take(SHOWN).collect();
            format!("{what}: {shown:?}")
        };
        (self.report)(message);
    }
}

impl<R: AsyncRead + Unpin, G: Unpin> AsyncRead for CheckedReader<R, G> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &r {
            let this = &mut *self;
            this.check.scan(&buf.filled()[before..]);
        }
        r
    }
}

/// How the child ended, if it did within `wait` (polled; the child is shared).
pub(crate) async fn exit_status(
    child: &Arc<Mutex<Child>>,
    wait: std::time::Duration,
) -> Option<std::process::ExitStatus> {
    let deadline = tokio::time::Instant::now() + wait;
    loop {
        let status = child
            .lock()
            .ok()
            .and_then(|mut c| c.try_wait().ok().flatten());
        if status.is_some() || tokio::time::Instant::now() >= deadline {
            return status;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A check of a server's stdout and the reports it makes.
    fn checking() -> (Arc<Mutex<Vec<String>>>, LineCheck) {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = seen.clone();
        let report: Report = Arc::new(move |m| s.lock().unwrap().push(m));
        (seen, LineCheck::new(SERVER_STDOUT, report))
    }

    #[test]
    fn only_non_json_lines_are_reported_and_only_a_few() {
        let (seen, mut lines) = checking();
        lines.scan(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nhello");
        lines.scan(b" world\n{\"jsonrpc\":\"2.0\",\"method\":\"notifications/x\"}\r\n");
        for _ in 0..10 {
            lines.scan(b"garbage\n");
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen[0].contains("\"hello world\""), "{}", seen[0]);
        assert!(seen[1].contains("\"garbage\""), "{}", seen[1]);
        assert!(seen[3].contains("no longer reported"), "{}", seen[3]);
    }

    /// JSON that rmcp would not read as a message from this peer is told; a notification rmcp
    /// does not know is not (rmcp skips those on purpose, and nothing waits for one).
    #[test]
    fn json_that_is_not_a_message_is_told() {
        let (seen, mut lines) = checking();
        for fine in [
            r#"{"jsonrpc":"2.0","id":3,"result":{"tools":[]}}"#,
            r#"{"jsonrpc":"2.0","id":"3","error":{"code":-32603,"message":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/vendor/thing","params":{"a":1}}"#,
            r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#,
        ] {
            lines.scan(format!("{fine}\n").as_bytes());
        }
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
        lines.scan(b"{\"jsonrpc\":\"2.0\",\"id\":1.5,\"result\":{}}\n");
        lines.scan(b"{\"jsonrpc\":\"2.0\",\"id\":2}\n");
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 2, "{seen:?}");
        for (said, id) in seen.iter().zip(["1.5", "2"]) {
            assert!(
                said.starts_with(SERVER_STDOUT.misshapen) && said.contains(&format!(":{id}")),
                "{said}"
            );
        }
        // A client's request without a method, on serve's stdin.
        let said: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = said.clone();
        let mut stdin = LineCheck::new(CLIENT_STDIN, Arc::new(move |m| s.lock().unwrap().push(m)));
        stdin.scan(b"{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}\n");
        stdin.scan(b"{\"jsonrpc\":\"2.0\",\"id\":8,\"params\":{}}\n");
        let said = said.lock().unwrap();
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].starts_with(CLIENT_STDIN.misshapen), "{}", said[0]);
    }

    /// Output without newlines (`cat /dev/zero` as a server) is told once it outgrows the
    /// check, not at a newline that may never come; a long line that starts as JSON is not.
    #[test]
    fn a_long_line_that_cannot_be_json_is_told_before_it_ends() {
        let (seen, mut lines) = checking();
        let json_start = [
            b"{\"jsonrpc\":\"2.0\",\"result\":\"".as_slice(),
            &[b'x'; 100 << 10],
        ]
        .concat();
        lines.scan(&json_start);
        assert!(seen.lock().unwrap().is_empty());
        lines.scan(b"\"}\n");
        assert!(seen.lock().unwrap().is_empty());
        for _ in 0..100 {
            lines.scan(&[0u8; 8 << 10]);
        }
        told_once(&seen, &mut lines, "(64 KiB without a newline so far)");
    }

    /// One report so far, containing `want`; the line's end is not told again.
    fn told_once(seen: &Mutex<Vec<String>>, lines: &mut LineCheck, want: &str) {
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1, "{seen:?}");
            assert!(seen[0].contains(want), "{}", seen[0]);
        }
        lines.scan(b"\n");
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    /// A line that starts as JSON but is longer than rmcp reads is told once it is, since rmcp
    /// drops it with nothing said; a line just under the limit is not.
    #[test]
    fn a_line_longer_than_rmcp_reads_is_told() {
        let (seen, mut lines) = checking();
        let start = b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":\"";
        lines.scan(start);
        lines.scan(&vec![b'x'; RMCP_MAX_LINE - start.len()]);
        lines.scan(b"\n");
        assert!(
            seen.lock().unwrap().is_empty(),
            "{:?}",
            seen.lock().unwrap()
        );
        lines.scan(start);
        for _ in 0..17 {
            lines.scan(&vec![b'x'; 1 << 20]);
        }
        told_once(
            &seen,
            &mut lines,
            "the server printed a line longer than 16 MiB on stdout (dropped, unread): \
             \"{\\\"jsonrpc\\\":\\\"2.0\\\",\\\"method\\\":\\\"notifications/message\\\"",
        );
    }
}
