//! `listsync record --out FILE -- SERVER_COMMAND...`: the interposing stdio proxy to configure in
//! an MCP client in place of the server command (`listsync_session::record`); `listsync record
//! --out FILE --http 127.0.0.1:PORT --upstream URL`: the Streamable HTTP reverse proxy to point
//! an MCP client at instead of the server's URL (`listsync_session::http`), until SIGINT or
//! SIGTERM. With `--numbered`, each start of the stdio proxy takes the first free number N
//! (0, 1, ...) and writes `{n}` in `--out` and in the server command as N: a host that starts
//! its server more than once (a probe, then the session) gets one log, and one server, per start.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `listsync record`.
#[derive(clap::Args)]
pub struct Args {
    /// The session log to write (JSON Lines, docs/session-log.md); truncated if it exists.
    #[arg(long)]
    out: PathBuf,
    /// Record Streamable HTTP: listen on this address (port 0 picks a free one; the URL is
    /// printed on stderr) and forward to --upstream.
    #[arg(long, value_name = "127.0.0.1:PORT", requires = "upstream")]
    http: Option<SocketAddr>,
    /// The server's Streamable HTTP endpoint (http://HOST:PORT/PATH).
    #[arg(long, value_name = "URL", requires = "http")]
    upstream: Option<String>,
    /// Listen on an address that is not loopback (the recorder has no authentication of its
    /// own: whoever reaches it reaches the server).
    #[arg(long, requires = "http")]
    allow_non_loopback: bool,
    /// Each start takes the first number N (0, 1, ...) whose log does not exist yet, and `{n}`
    /// in --out and in the server command stands for it (stdio): one log per start of a host's
    /// server.
    #[arg(long, conflicts_with = "http")]
    numbered: bool,
    /// The server command and its arguments (stdio).
    #[arg(last = true, required_unless_present = "http", conflicts_with = "http")]
    command: Vec<String>,
}

/// Runs the proxy: stdio until the server exits (exits with its status), HTTP until SIGINT
/// or SIGTERM.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    if let (Some(listen), Some(upstream)) = (args.http, args.upstream) {
        let opts = listsync_session::http::HttpRecorderOptions {
            listen,
            upstream,
            out: args.out,
            allow_non_loopback: args.allow_non_loopback,
        };
        rt.block_on(async {
            let recorder = listsync_session::http::HttpRecorder::bind(&opts).await?;
            eprintln!(
                "listsync record: listening on {} (upstream {}, log {}; stop with Ctrl-C)",
                recorder.url(),
                opts.upstream,
                opts.out.display()
            );
            recorder
                .run_until(listsync_session::http::interrupted())
                .await;
            Ok::<_, String>(())
        })
        .map_err(anyhow::Error::msg)?;
        return Ok(ExitCode::SUCCESS);
    }
    let (out, command) = if args.numbered {
        numbered(&args.out, &args.command)?
    } else {
        (args.out, args.command)
    };
    let status = rt.block_on(listsync_session::record::record_stdio(&out, &command));
    // Reading stdin blocks a thread that shutdown would otherwise wait for.
    rt.shutdown_background();
    let status = status.map_err(anyhow::Error::msg)?;
    Ok(ExitCode::from(
        status.code().map_or(1, |c| u8::try_from(c).unwrap_or(1)),
    ))
}

/// The first free number's log (claimed by creating it) and the command with `{n}` replaced.
fn numbered(out: &std::path::Path, command: &[String]) -> anyhow::Result<(PathBuf, Vec<String>)> {
    let template = out.to_string_lossy();
    if !template.contains("{n}") {
        anyhow::bail!("--numbered: --out {template} has no {{n}}");
    }
    for n in 0..10_000u32 {
        let path = PathBuf::from(template.replace("{n}", &n.to_string()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => {
                let command = command
                    .iter()
                    .map(|a| a.replace("{n}", &n.to_string()))
                    .collect();
                return Ok((path, command));
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => anyhow::bail!("{}: {e}", path.display()),
        }
    }
    anyhow::bail!("--numbered: no free number for {template}")
}
