//! `listsync record -- SERVER_COMMAND...`: the interposing stdio proxy. It starts the server
//! command, copies its own stdin to the server's stdin and the server's stdout to its own stdout
//! byte for byte as the bytes arrive (nothing is held, parsed before forwarding, or changed),
//! and logs every line that crossed with its direction and time ([`crate::log::Writer`]). A
//! line that is not JSON is forwarded and logged as `invalid`; a line longer than
//! [`MAX_LINE_BYTES`] is forwarded whole while only its first bytes are kept to log (bounded
//! memory). The server's stderr is inherited.
//!
//! However the session ends, the log ends with the connection's `close` entry saying how: the
//! server exited by itself; the client closed its side (the server is given a moment to exit,
//! then asked to with SIGTERM, then killed); or the proxy was sent SIGTERM, SIGINT or SIGHUP —
//! how hosts end their servers — which it forwards to the server before waiting for it. Every
//! entry is flushed as it is written ([`Writer`]), so nothing logged before the end is lost.

use crate::log::{LogDir, MAX_LINE_BYTES, RecordTransport, What, Writer};
use futures_util::future::{FusedFuture, FutureExt};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::process::Child;

/// How long a server is given to exit by itself once its client is gone, and again after it
/// was sent SIGTERM, before it is killed.
pub const GRACE: Duration = Duration::from_secs(2);

/// Why one direction's copy ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyEnded {
    /// Its source reached the end (the writer closed its side).
    SourceClosed,
    /// Its destination no longer takes bytes (the reader is gone).
    DestinationClosed,
}

/// Copies `from` to `to` as bytes arrive, logging each complete line (and a last one without a
/// newline) as it ends. Returns at EOF of `from` or when `to` is closed, saying which.
pub async fn pump(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    log: &Writer,
    conn: u32,
    dir: LogDir,
) -> std::io::Result<CopyEnded> {
    let mut from = BufReader::with_capacity(64 << 10, from);
    let mut line: Vec<u8> = Vec::new();
    let mut len = 0usize;
    loop {
        let chunk = from.fill_buf().await?;
        if chunk.is_empty() {
            if len > 0 {
                log.line(conn, dir, &line, len);
            }
            let _ = to.shutdown().await;
            return Ok(CopyEnded::SourceClosed);
        }
        let (part, end) = match chunk.iter().position(|b| *b == b'\n') {
            Some(i) => (i + 1, true),
            None => (chunk.len(), false),
        };
        let bytes = &chunk[..part];
        let body = if end { &bytes[..part - 1] } else { bytes };
        // The newline is forwarded after the line is logged: the peer cannot act on a message
        // before its newline, so whatever it sends in reply is logged after it.
        let mut write = to.write_all(body).await;
        let keep = MAX_LINE_BYTES.saturating_sub(line.len()).min(body.len());
        line.extend_from_slice(&body[..keep]);
        len += body.len();
        from.consume(part);
        if end {
            // A CR before the newline belongs to the framing, not to the message.
            let cr = line.last() == Some(&b'\r') && len == line.len();
            let (l, n) = if cr {
                (&line[..line.len() - 1], len - 1)
            } else {
                (&line[..], len)
            };
            log.line(conn, dir, l, n);
            line.clear();
            len = 0;
            write = write.and(to.write_all(b"\n").await);
        }
        let write = write.and(to.flush().await);
        if write.is_err() {
            // The other side is gone: nothing more can be forwarded.
            return Ok(CopyEnded::DestinationClosed);
        }
    }
}

/// Runs `command` behind the proxy, logging to `out`; returns the server's exit status.
pub async fn record_stdio(out: &Path, command: &[String]) -> Result<ExitStatus, String> {
    let (program, args) = command
        .split_first()
        .ok_or("no server command given (listsync record --out FILE -- SERVER_COMMAND...)")?;
    let log = Arc::new(
        Writer::create(out, RecordTransport::Stdio, command.to_vec())
            .map_err(|e| format!("cannot create {}: {e}", out.display()))?,
    );
    let mut child = tokio::process::Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {program}: {e}"))?;
    log.append(
        0,
        What::Open {
            detail: format!("server process {}", child.id().unwrap_or(0)),
        },
    );
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        return Err("the server's pipes are missing".into());
    };
    let pid = child.id();
    let up_log = log.clone();
    let mut up = tokio::spawn(async move {
        pump(
            tokio::io::stdin(),
            stdin,
            &up_log,
            0,
            LogDir::ClientToServer,
        )
        .await
    });
    let down = pump(stdout, tokio::io::stdout(), &log, 0, LogDir::ServerToClient).fuse();
    tokio::pin!(down);
    let mut signals = Signals::new();
    // (why the session ended, if not by the server closing its output; whether the server's
    // output is still being copied)
    let (how, copying) = tokio::select! {
        r = &mut down => match r {
            Ok(CopyEnded::SourceClosed) => (None, false),
            Ok(CopyEnded::DestinationClosed) => (Some("the client closed its side".to_owned()), false),
            Err(e) => {
                tracing::warn!("record: reading the server failed: {e}");
                (None, false)
            }
        },
        r = &mut up => {
            if let Ok(Err(e)) = &r {
                tracing::warn!("record: reading the client failed: {e}");
            }
            (Some("the client closed its side".to_owned()), true)
        },
        name = signals.next() => {
            forward(pid, name);
            (Some(format!("listsync record got {name}, forwarded to the server")), true)
        },
    };
    up.abort();
    let status = match &how {
        // The server closed its stdout: it is done (or dying). Wait for its exit status.
        None => child
            .wait()
            .await
            .map_err(|e| format!("waiting for the server: {e}"))?,
        Some(_) => {
            // Keep copying what the server still says while it winds down...
            let status = {
                let drain = async {
                    if copying {
                        let _ = (&mut down).await;
                    }
                    std::future::pending::<()>().await
                };
                tokio::select! {
                    s = wind_down(&mut child, pid) => s?,
                    () = drain => unreachable!("drain never completes"),
                }
            };
            // ...and what is left in its pipe once it has exited (bounded: a process it left
            // behind may hold the pipe open).
            if copying && !down.is_terminated() {
                let _ = tokio::time::timeout(GRACE, &mut down).await;
            }
            status
        }
    };
    let detail = match how {
        None => format!("server exited: {status}"),
        Some(how) => format!("{how}; server exited: {status}"),
    };
    log.append(0, What::Close { detail });
    Ok(status)
}

/// Waits for a server whose client is gone (or that was forwarded a signal) to exit: [`GRACE`],
/// then SIGTERM and [`GRACE`] again, then it is killed.
async fn wind_down(child: &mut Child, pid: Option<u32>) -> Result<ExitStatus, String> {
    if let Ok(s) = tokio::time::timeout(GRACE, child.wait()).await {
        return s.map_err(|e| format!("waiting for the server: {e}"));
    }
    forward(pid, "SIGTERM");
    if let Ok(s) = tokio::time::timeout(GRACE, child.wait()).await {
        return s.map_err(|e| format!("waiting for the server: {e}"));
    }
    tracing::warn!("record: the server did not exit after SIGTERM; killing it");
    let _ = child.start_kill();
    child
        .wait()
        .await
        .map_err(|e| format!("waiting for the server: {e}"))
}

/// Sends the signal named `name` to the server process `pid`.
fn forward(pid: Option<u32>, name: &str) {
    #[cfg(unix)]
    {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let sig = match name {
            "SIGINT" => Signal::SIGINT,
            "SIGHUP" => Signal::SIGHUP,
            _ => Signal::SIGTERM,
        };
        if let Some(pid) = pid.and_then(|p| i32::try_from(p).ok())
            && let Err(e) = kill(Pid::from_raw(pid), sig)
        {
            tracing::warn!("record: cannot send {name} to the server: {e}");
        }
    }
    #[cfg(not(unix))]
    let _ = (pid, name);
}

/// The signals that end a recording: SIGTERM, SIGINT and SIGHUP.
struct Signals {
    #[cfg(unix)]
    unix: Vec<(&'static str, Option<tokio::signal::unix::Signal>)>,
}

impl Signals {
    fn new() -> Signals {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let unix = [
                ("SIGTERM", SignalKind::terminate()),
                ("SIGINT", SignalKind::interrupt()),
                ("SIGHUP", SignalKind::hangup()),
            ]
            .into_iter()
            .map(|(name, kind)| (name, signal(kind).ok()))
            .collect();
            Signals { unix }
        }
        #[cfg(not(unix))]
        Signals {}
    }

    /// The name of the next signal received.
    async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            let waits = self.unix.iter_mut().filter_map(|(name, s)| {
                let name = *name;
                s.as_mut().map(|s| {
                    Box::pin(async move {
                        s.recv().await;
                        name
                    })
                })
            });
            let waits: Vec<_> = waits.collect();
            if waits.is_empty() {
                return std::future::pending().await;
            }
            futures_util::future::select_all(waits).await.0
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
            "SIGINT"
        }
    }
}
