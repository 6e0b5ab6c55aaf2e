//! listsync harness: replays model and simulator traces, and runs generated scenarios, against
//! real MCP implementations — our runtime, rmcp, the TypeScript SDKs v1 and v2, the Python SDK —
//! by sitting on the stdio link between a client adapter and a server adapter, holding and
//! releasing JSON-RPC messages, and driving both adapters through their control channels
//! (`docs/harness-protocol.md`). What it observes becomes a history of core events, judged by
//! the same property checkers as the model. `listsync replay` and `listsync matrix` are its
//! command-line front.

// No function over 150 lines of code (the threshold is in clippy.toml).
#![warn(clippy::too_many_lines)]

pub mod adapter_check;
pub mod adapters;
pub mod conformance_suite;
pub mod control;
pub mod exercises;
pub mod expected;
pub mod findings;
pub mod history;
pub mod hosts;
/// JSON-RPC framing, shared with every reader of the wire (`listsync-observe`).
pub use listsync_observe::jsonrpc;
pub mod limited_file;
pub mod manifest;
pub mod matrix;
pub mod msglog;
pub mod outcome;
pub mod pin;
pub mod portable;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod run;
pub mod timeline;

/// The rmcp version the reference runtime and the rmcp adapter are built against (pinned
/// `=3.11.0` in the workspace).
pub const RMCP_VERSION: &str = "3.11.0";
