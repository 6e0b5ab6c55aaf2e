//! listsync core: the sans-IO vocabulary and state machines that the model checker, the
//! simulator and the tokio runtime all execute, the history property checkers that judge every
//! run, and the versioned trace schema.
//!
//! Nothing here performs I/O or depends on an async runtime: machines are plain
//! `Clone + Hash + Eq` data stepped by their drivers.

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod aggregate;
pub mod certain;
pub mod client;
pub mod history;
pub mod machine;
pub mod monitor;
pub mod property;
pub mod record;
pub mod scenario;
pub mod server;
pub mod shared;
pub mod situation;
pub mod strategy;
pub mod tape;
pub mod trace;
pub mod trace_text;
pub mod vocab;
pub mod wire;
pub mod world;
