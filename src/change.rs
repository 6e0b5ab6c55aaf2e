//! `listsync change ADDR OP...`: one batch of changes to a running `listsync serve`, through its
//! admin socket (`serve --admin-socket PATH`) or its HTTP admin endpoint (`serve --http ...
//! --admin-token-file FILE`, then `change URL --token-file FILE`). Prints the version the batch
//! made visible. A malformed op is one line naming it and exit status 2; a batch the server
//! refuses changes nothing, is one line, and exit status 1.

use anyhow::bail;
use listsync_rt::admin::{self, ChangeError};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// Flags of `listsync change`.
#[derive(clap::Args)]
pub struct Args {
    /// The server's admin socket (a path), or its URL (`http://127.0.0.1:PORT/mcp`) when it
    /// serves HTTP with `--admin-token-file`.
    addr: String,
    /// The ops of one batch: `add:KIND:NAME[@CONTEXT]=DESCRIPTION`, `update:KIND:NAME=DESCRIPTION`,
    /// `remove:KIND:NAME` (KIND: tool, prompt, resource, template), `content:URI=TEXT`, or a
    /// control-protocol op as JSON.
    #[arg(required = true, value_name = "OP", allow_hyphen_values = true)]
    ops: Vec<String>,
    /// With a URL: the file whose first line is the admin token.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Seconds to wait for the server's answer.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    timeout: u64,
}

/// Sends the batch and prints `version N (K notifications)`.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let ops = admin::ops_of_args(&args.ops).map_err(anyhow::Error::msg)?;
    let http = args.addr.starts_with("http://") || args.addr.starts_with("https://");
    let token = match (&args.token_file, http) {
        (Some(file), true) => Some(crate::watch::read_token(file)?),
        (None, true) => bail!(
            "{}: a URL needs --token-file FILE (the admin token)",
            args.addr
        ),
        (Some(_), false) => bail!("--token-file goes with a URL, not a socket path"),
        (None, false) => None,
    };
    let bound = Duration::from_secs(args.timeout.max(1));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let result = rt.block_on(async {
        match &token {
            Some(t) => admin::change_by_http(&args.addr, t, ops, bound).await,
            None => admin::change_by_socket(args.addr.as_ref(), ops, bound).await,
        }
    });
    match result {
        Ok(c) => {
            println!("version {} ({} notifications)", c.version, c.notified);
            Ok(ExitCode::SUCCESS)
        }
        Err(e @ ChangeError::Refused(_)) => {
            eprintln!("listsync change: {e}");
            Ok(ExitCode::from(1))
        }
        Err(ChangeError::Failed(e)) => bail!("{e}"),
    }
}
