//! One reading of the wire for every part of listsync that judges from it: the replay of a
//! trace against a real implementation (the harness proxy's timeline), the audit of a recorded
//! session log, and the judging of an agent host. [`jsonrpc`] frames a message, [`items`] reads
//! list pages, `list_changed` notifications and listen acknowledgements, and [`conn`] follows
//! the messages of one connection, in order, into list walks, tool calls and notifications
//! received.

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod conn;
pub mod items;
pub mod jsonrpc;

pub use conn::{ConnObserver, ListWalk, Observed, Received, Sighting, ToolCall, Toward, WalkFate};
pub use items::{NamedItem, delivered_event};
