//! `listsync adapter check FILE`: starts the adapter a manifest describes in each role and era it
//! claims and checks its control protocol (`listsync_harness::adapter_check`), one line per
//! session or broken rule. `listsync adapter rmcp` (hidden) runs the rmcp adapter of the harness
//! (crate `harness/adapters/rmcp`) in this process, configured by the `LISTSYNC_*` environment:
//! the harness starts it this way, so one build of `listsync` carries every Rust adapter.

use anyhow::Context;
use listsync_harness::manifest::Manifest;
use listsync_harness::run::Bounds;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

/// Subcommands of `listsync adapter`.
#[derive(clap::Subcommand)]
pub enum Cmd {
    /// Check an adapter's control protocol (docs/harness-protocol.md) in every role and era its
    /// manifest claims; exit 1 if a rule is broken.
    Check {
        /// The adapter's manifest (adapter.toml; docs/writing-an-adapter.md).
        file: PathBuf,
    },
    /// Run the rmcp adapter in this process (the harness starts it this way).
    #[command(hide = true)]
    Rmcp,
}

/// Runs the subcommand.
pub fn run(cmd: Cmd) -> anyhow::Result<ExitCode> {
    match cmd {
        Cmd::Rmcp => Ok(ExitCode::from(
            u8::try_from(listsync_rmcp_adapter::run()).unwrap_or(2),
        )),
        Cmd::Check { file } => {
            let m = Manifest::load(&file).map_err(anyhow::Error::msg)?;
            let exe = std::env::current_exe().context("locating the listsync executable")?;
            let mut paths = crate::home::paths(exe.clone())?;
            let pinned = listsync_harness::pin::PinnedExe::new(&exe).map_err(anyhow::Error::msg)?;
            paths.listsync = pinned.path().to_path_buf();
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            let checked = rt.block_on(listsync_harness::adapter_check::check(
                &paths,
                Arc::new(m),
                Bounds::default(),
                &mut |role, era| {
                    eprintln!("listsync adapter check: starting the {role} in {era}...")
                },
            ));
            for line in checked.lines() {
                println!("{line}");
            }
            Ok(if checked.ok() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            })
        }
    }
}
