//! The adapter side of the harness control protocol (`docs/harness-protocol.md`), on the
//! protocol's one codec (`listsync-control`): connects to the Unix socket in `LISTSYNC_CONTROL`,
//! sends events and exactly one reply per command, runs each command in its own task (a call
//! parked at a gate must not block the `release` that frees it), and answers malformed lines with
//! `ok:false` instead of failing.

pub use listsync_control::{Channel, CommandHandler, Failure, Outbox, str_field};

/// Serves commands until the socket closes or a `shutdown` was answered (and flushed).
pub async fn serve(channel: Channel, handler: CommandHandler) {
    channel
        .serve(handler, tokio_util::sync::CancellationToken::new())
        .await;
}
