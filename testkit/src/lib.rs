//! Test support shared by listsync's test suites and benches.
//!
//! * [`within`]: one bounded wait, so that a test that hangs fails with what it was waiting for
//!   instead of running until CI's time limit (a limit only bounds a wait; no test concludes
//!   anything from time passing);
//! * [`control`]: the harness's end of a control channel (commands, replies, events);
//! * [`peers`]: fake MCP servers that lie, storm or loop, for the tests of a client's defences.
//!
//! The throwaway Redis the multi-instance tests need is provisioned by listsync-cluster's own
//! `testkit` feature (it lives with the code that speaks to Redis).

pub mod control;
pub mod peers;

use std::future::Future;
use std::time::Duration;

/// How long a test waits for any one thing before it fails: long enough for a loaded 2-core
/// machine (Redis nodes, child processes, a release build's first start), short enough that a
/// hang is reported within the test run.
pub const LIMIT: Duration = Duration::from_secs(90);

/// Awaits `fut`, failing the test with `what` if it takes longer than [`LIMIT`].
pub async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(LIMIT, fut)
        .await
        .unwrap_or_else(|_| panic!("timed out after {LIMIT:?} waiting for {what}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_wait_that_ends_returns_its_value() {
        assert_eq!(within("a ready value", async { 7 }).await, 7);
    }

    #[tokio::test(start_paused = true)]
    #[should_panic(expected = "waiting for a future that never ends")]
    async fn a_wait_past_the_limit_fails_naming_what_it_waited_for() {
        within("a future that never ends", std::future::pending::<()>()).await;
    }
}
