//! `listsync record -- SERVER_COMMAND...`: the interposing stdio proxy. It starts the server
//! command, copies its own stdin to the server's stdin and the server's stdout to its own stdout
//! byte for byte as the bytes arrive (nothing is held, parsed before forwarding, or changed),
//! and logs every line that crossed with its direction and time ([`crate::log::Writer`]). A
//! line that is not JSON is forwarded and logged as `invalid`; a line longer than
//! [`MAX_LINE_BYTES`] is forwarded whole while only its first bytes are kept to log (bounded
//! memory). The server's stderr is inherited.

use crate::log::{Dir, MAX_LINE_BYTES, Transport, What, Writer};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::sync::Arc;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// Copies `from` to `to` as bytes arrive, logging each complete line (and a last one without a
/// newline) as it ends. Returns at EOF of `from` or when `to` is closed.
pub async fn pump(
    from: impl AsyncRead + Unpin,
    mut to: impl AsyncWrite + Unpin,
    log: &Writer,
    conn: u32,
    dir: Dir,
) -> std::io::Result<()> {
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
            return Ok(());
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
            return Ok(());
        }
    }
}

/// Runs `command` behind the proxy, logging to `out`; returns the server's exit status.
pub async fn record_stdio(out: &Path, command: &[String]) -> Result<ExitStatus, String> {
    let (program, args) = command
        .split_first()
        .ok_or("no server command given (listsync record --out FILE -- SERVER_COMMAND...)")?;
    let log = Arc::new(
        Writer::create(out, Transport::Stdio, command.to_vec())
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
    let up_log = log.clone();
    let up = tokio::spawn(async move {
        let r = pump(tokio::io::stdin(), stdin, &up_log, 0, Dir::ClientToServer).await;
        if let Err(e) = r {
            tracing::warn!("record: reading the client failed: {e}");
        }
    });
    let down = pump(stdout, tokio::io::stdout(), &log, 0, Dir::ServerToClient).await;
    if let Err(e) = down {
        tracing::warn!("record: reading the server failed: {e}");
    }
    // The server closed its stdout: it is done (or dying); the client's side has nothing more
    // to reach. Wait for its exit status.
    up.abort();
    let status = child
        .wait()
        .await
        .map_err(|e| format!("waiting for the server: {e}"))?;
    log.append(
        0,
        What::Close {
            detail: format!("server exited: {status}"),
        },
    );
    Ok(status)
}
