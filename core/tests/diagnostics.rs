//! Why a refresh failed reads as one line that names what the server did and the datum that
//! shows it: a client author sees these in logs and in `listsync watch`, and a lying server is
//! told apart from a slow network by them.

use listsync_core::client::ClientError;
use listsync_core::wire::{Cursor, ErrorReason, RpcError};
use std::sync::Arc;

#[test]
fn every_refresh_failure_is_one_line_naming_what_happened() {
    let cases = [
        (
            ClientError::Rpc(RpcError {
                code: -32602,
                reason: ErrorReason::InvalidCursor,
            }),
            "server error -32602 invalid cursor",
        ),
        (
            ClientError::DuplicateName("search".into()),
            "server listed 'search' twice in one list",
        ),
        (
            ClientError::CursorCycle(Cursor(Arc::from("p2"))),
            "server returned cursor 'p2' twice in one walk",
        ),
        (ClientError::TooManyPages(64), "list has more than 64 pages"),
        (
            ClientError::TooManyItems(10_000),
            "list has more than 10000 items",
        ),
        (
            ClientError::TooManyRestarts(3),
            "list changed under 3 walks in a row",
        ),
        (
            ClientError::UnexpectedResponse("a call result for a list request".into()),
            "unexpected response: a call result for a list request",
        ),
        (
            ClientError::Transport("timed out after 30 s".into()),
            "transport: timed out after 30 s",
        ),
        (
            ClientError::InvalidResponse("tool 'x' has no inputSchema".into()),
            "invalid response: tool 'x' has no inputSchema",
        ),
    ];
    for (error, line) in cases {
        let shown = error.to_string();
        assert_eq!(shown, line);
        assert!(!shown.contains('\n'));
    }
}
