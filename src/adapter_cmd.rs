//! `listsync adapter rmcp`: runs the rmcp adapter of the harness (crate
//! `harness/adapters/rmcp`) in this process, configured by the `LISTSYNC_*` environment. The
//! harness starts it this way, so one build of `listsync` carries every Rust adapter.

use std::process::ExitCode;

/// Flags of `listsync adapter`.
#[derive(clap::Args)]
pub struct Args {
    /// Which adapter (only `rmcp`).
    name: String,
}

/// Runs the adapter until its control channel or stdin closes.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    match args.name.as_str() {
        "rmcp" => Ok(ExitCode::from(
            u8::try_from(listsync_rmcp_adapter::run()).unwrap_or(2),
        )),
        other => anyhow::bail!("unknown adapter '{other}' (rmcp)"),
    }
}
