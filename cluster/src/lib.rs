//! listsync on several nodes: one logical MCP server whose catalog lives in Redis. A batch
//! commits atomically and bumps the cluster-wide version once ([`store`]); every node follows
//! the store and makes a new version visible locally before it notifies its own clients
//! ([`node`]). The model's `reference-cluster` configuration proves this design (with a bus that
//! duplicates, reorders and loses events); `cluster-notify-before-visible` shows the bug it
//! avoids.

pub mod node;
pub mod store;
#[cfg(feature = "testkit")]
pub mod testkit;
