//! listsync-rt: the real runtime. Core's sans-IO machines — the server [`Registry`] and the
//! client [`CatalogClient`] — driven by tokio over rmcp, the official Rust MCP SDK, on stdio,
//! `tokio::io::duplex` and Streamable HTTP, in both protocol eras.
//!
//! * [`server::Server`]: the reference server (registry behind a mutex, hand-written rmcp
//!   handler, version-bound pagination, one coalesced `list_changed` per batch after commit);
//! * [`client::ClientHandle`]: the reference client (one actor task stepping the catalog machine,
//!   wait-free snapshot reads, a change stream, retries and reconnects);
//! * [`serve`]: the reference server as `listsync serve` runs it (catalog, transport, admin
//!   socket, script, control channel, shutdown);
//! * [`watch`]: the reference client watching a server (or several, their tools combined),
//!   each change and failure said as a line (`listsync watch`);
//! * [`fixtures`]: the items and trigger tools the official conformance suite expects;
//! * [`admin`]: the admin socket and op arguments of `listsync change`;
//! * `control` (feature `harness`): the harness control protocol (`docs/harness-protocol.md`)
//!   for both roles;
//! * `gate` (feature `harness`): parking a chosen reply, call, notification or commit until
//!   it is released;
//! * `script` (feature `harness`): timed schedules of batches a server applies to itself
//!   (`serve --script`), with presets for the known races;
//! * [`history::SharedHistory`]: a shared recorder of core history events, judged with core's
//!   property checkers.
//!
//! [`Registry`]: listsync_core::server::Registry
//! [`CatalogClient`]: listsync_core::client::CatalogClient

//!
//! The harness's instrumentation — the control channel, gates and scripts — is compiled only
//! with the feature `harness` (off by default; the CLI, the simulator and the tests turn it on).

pub mod admin;
pub mod canon;
pub mod client;
#[cfg(feature = "harness")]
pub mod control;
pub mod fixtures;
#[cfg(feature = "harness")]
pub mod gate;
pub mod history;
pub mod items;
pub mod pace;
mod panic;
#[cfg(feature = "harness")]
pub mod script;
pub mod serve;
pub mod server;
pub mod sniff;
pub mod watch;

/// The error of a control socket asked of a build without the feature `harness`.
#[cfg(not(feature = "harness"))]
pub(crate) fn no_control_channel(path: &std::path::Path) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        format!(
            "control socket {}: this build has no harness control channel (listsync-rt's \
             feature `harness`)",
            path.display()
        ),
    )
}
