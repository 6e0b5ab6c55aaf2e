//! Two refresh algorithms for an MCP client's tool list, written outside listsync and checked
//! with listsync's model checker and simulator through `listsync_core::machine::ClientMachine`
//! (docs/library.md):
//!
//! - [`LastResponseWins`]: one walk per change notification, the last to end is published.
//!   `tests/model.rs` asserts that listsync finds `no_stale_overwrite` violated, with a
//!   counterexample trace that `listsync trace show` validates and `listsync replay` runs.
//! - [`Coalescing`]: single flight with a dirty flag. `tests/model.rs` asserts that every
//!   property holds in each of listsync's list-refresh worlds, and `tests/sim.rs` that a seeded
//!   campaign finds nothing either.

mod coalescing;
mod connection;
mod last_response_wins;

pub use coalescing::Coalescing;
pub use last_response_wins::LastResponseWins;
