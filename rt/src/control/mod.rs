//! The harness control channel (`docs/harness-protocol.md`, version 1) for both roles of the
//! reference runtime (feature `harness`), on the protocol's one codec ([`listsync_control`]): the
//! adapter connects, sends `ready`, and serves commands; events go out unsolicited. The server
//! role's catalog commands are the admin socket's ([`crate::admin`]); the gates and the events
//! are this module's.

mod client_role;
mod server_role;

pub use client_role::{connect as connect_client, run_client};
pub use server_role::{run_server, server_command};

pub use listsync_control::{
    Channel, CommandHandler, CommandReply, Failure, MAX_LINE, Outbox, str_field,
};

use serde_json::{Map, Value, json};

/// The information every `ready` event carries.
#[derive(Clone, Debug)]
pub struct ReadyInfo {
    /// `server` or `client`.
    pub role: &'static str,
    /// Protocol era asked for.
    pub era: listsync_core::vocab::Era,
    /// Strategy (the adapter's variant).
    pub variant: String,
    /// More fields (page size, transport, URL...).
    pub extra: Value,
}

impl ReadyInfo {
    fn fields(&self) -> Value {
        let mut m = match json!({
            "impl": "listsync-rt",
            "role": self.role,
            "sdk": "rmcp",
            "sdk_version": RMCP_VERSION,
            "era_requested": self.era.as_str(),
            "variant": self.variant,
        }) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        if let Value::Object(extra) = &self.extra {
            m.extend(extra.clone());
        }
        Value::Object(m)
    }
}

/// The rmcp version this runtime is built against (pinned in Cargo.toml).
pub const RMCP_VERSION: &str = "3.11.0";
