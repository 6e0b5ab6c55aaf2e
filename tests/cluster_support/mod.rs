//! What the multi-instance tests share: a Redis of their own (the cluster crate's test kit),
//! `listsync serve --http --redis --node` nodes as real processes driven through the harness
//! control channel, reference clients (rt's `ClientHandle`) connected to nodes through small TCP
//! forwarders that stand for a load balancer (so a client can be moved to another node), and the
//! history of the whole run, judged with core's checkers.
//!
//! Files: [`forward`] (the load balancer / network path), [`node`] (node processes and their
//! control channel), [`rig`] (Redis, nodes and clients of one test), [`judge`] (one history from
//! several processes, and the verdicts), [`batches`] (generated batches); the bounded waits here.

#![allow(dead_code)] // each test file uses a different part of this module

mod batches;
mod forward;
mod judge;
mod node;
mod rig;

// The parts each test file may use (each uses a different few).
#[allow(unused_imports)]
pub use batches::{Batches, names_of};
#[allow(unused_imports)]
pub use forward::Forward;
#[allow(unused_imports)]
pub use node::{Node, NodeSpec};
#[allow(unused_imports)]
pub use rig::{Rig, TestClient, initial_ops};

use std::time::Duration;

pub use listsync_testkit::{LIMIT, within};

/// Polls `check` until it returns `Some`, failing the test after [`LIMIT`]. The pause between
/// polls only paces the loop; nothing is concluded from time passing.
pub async fn eventually<T>(what: &str, mut check: impl AsyncFnMut() -> Option<T>) -> T {
    within(what, async {
        loop {
            if let Some(v) = check().await {
                return v;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
}
