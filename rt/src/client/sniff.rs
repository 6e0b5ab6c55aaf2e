//! The stdout of a server child process, watched on its way to rmcp. rmcp skips lines that are
//! not JSON (as the other SDKs do), so a server that prints banners or garbage on stdout would
//! leave the client waiting for a handshake that never comes, silently. This reader passes every
//! byte through unchanged and reports the first few lines that are not JSON-RPC, so the user
//! learns at once what the server printed. It also owns the child process, which is killed when
//! the connection is dropped.

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
pub(crate) type Report = Arc<dyn Fn(String) + Send + Sync>;

/// The child's stdout, checked line by line.
pub(crate) struct Sniffer {
    inner: ChildStdout,
    /// Kept so that the child lives (and is killed on drop) with the connection.
    child: Arc<Mutex<Child>>,
    check: LineCheck,
}

impl Sniffer {
    pub(crate) fn new(inner: ChildStdout, child: Arc<Mutex<Child>>, report: Report) -> Sniffer {
        Sniffer {
            inner,
            child,
            check: LineCheck::new(report),
        }
    }
}

/// Splits bytes into lines and reports the first few that are not JSON.
struct LineCheck {
    line: Vec<u8>,
    /// The current line outgrew [`MAX_CHECKED_LINE`].
    long: bool,
    reports: u32,
    report: Report,
}

impl LineCheck {
    fn new(report: Report) -> LineCheck {
        LineCheck {
            line: Vec::new(),
            long: false,
            reports: 0,
            report,
        }
    }

    fn scan(&mut self, bytes: &[u8]) {
        for &b in bytes {
            if b == b'\n' {
                self.end_line();
            } else if self.line.len() < MAX_CHECKED_LINE {
                self.line.push(b);
            } else {
                self.long = true;
            }
        }
    }

    fn end_line(&mut self) {
        let text = self.line.trim_ascii();
        let bad = !text.is_empty()
            && if self.long {
                !matches!(text.first(), Some(b'{' | b'['))
            } else {
                serde_json::from_slice::<serde::de::IgnoredAny>(text).is_err()
            };
        if bad && self.reports <= MAX_REPORTS {
            self.reports += 1;
            let message = if self.reports > MAX_REPORTS {
                "the server keeps printing lines that are not JSON-RPC on stdout (no longer reported)"
                    .to_owned()
            } else {
                let shown: String = String::from_utf8_lossy(text).chars().take(SHOWN).collect();
                format!("the server printed a line that is not JSON-RPC on stdout: {shown:?}")
            };
            (self.report)(message);
        }
        self.line.clear();
        self.long = false;
    }
}

impl AsyncRead for Sniffer {
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

impl Drop for Sniffer {
    fn drop(&mut self) {
        if let Ok(mut c) = self.child.lock() {
            let _ = c.start_kill();
        }
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

    #[test]
    fn only_non_json_lines_are_reported_and_only_a_few() {
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let s = seen.clone();
        let report: Report = Arc::new(move |m| s.lock().unwrap().push(m));
        let mut lines = LineCheck::new(report);
        lines.scan(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\nhello");
        lines.scan(b" world\n{\"jsonrpc\":\"2.0\"}\r\n");
        for _ in 0..10 {
            lines.scan(b"garbage\n");
        }
        let seen = seen.lock().unwrap();
        assert_eq!(seen.len(), 4, "{seen:?}");
        assert!(seen[0].contains("\"hello world\""), "{}", seen[0]);
        assert!(seen[3].contains("no longer reported"), "{}", seen[3]);
    }
}
