//! `listsync record --out FILE -- SERVER_COMMAND...`: the interposing stdio proxy to configure in
//! an MCP client in place of the server command (`listsync_session::record`).

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `listsync record`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log to write (JSON Lines, docs/session-log.md); truncated if it exists.
    #[arg(long)]
    out: PathBuf,
    /// The server command and its arguments.
    #[arg(last = true, required = true)]
    command: Vec<String>,
}

/// Runs the proxy until the server exits; exits with its status.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let status = rt.block_on(listsync_session::record::record_stdio(
        &args.out,
        &args.command,
    ));
    // Reading stdin blocks a thread that shutdown would otherwise wait for.
    rt.shutdown_background();
    let status = status.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::from(
        status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)),
    ))
}
