//! listsync-store: the synchronous snapshot store behind a listsync client.
//!
//! Two pieces, both free of async and of every other listsync crate (`listsync-core` depends on
//! this crate, not the reverse):
//!
//! * [`SnapshotCell`] publishes a client's Tools/Prompts/Resources snapshot atomically
//!   (`no_torn_snapshot`), never replaces a newer snapshot with an older one
//!   (`no_stale_overwrite`), and can mark the current one stale after a failed refresh. Reads are
//!   wait-free in a normal build.
//! * [`FlightState`]: single-flight refresh with a dirty flag (`bounded_refresh`,
//!   `no_lost_wakeup`), the pure transition function the sans-IO core embeds, so the model
//!   checker explores it and rt's client actor runs it.
//!
//! rt's client (`rt/src/client/views.rs`) reads and writes its snapshots through
//! [`SnapshotCell`], the cell loom verifies here: one writer (the client's actor) publishes and
//! marks stale while application threads read.
//!
//! All shared-memory types come from [`sync`], which switches to loom under `--cfg loom`;
//! `tests/loom_store.rs` model-checks the crate that way:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom \
//!     cargo test --release -p listsync-store --test loom_store
//! ```

pub mod sync;

mod cell;
mod flight;
#[doc(hidden)]
pub mod racy;

pub use cell::{CellSnapshot, Published, SnapshotCell, Versioned};
pub use flight::FlightState;
