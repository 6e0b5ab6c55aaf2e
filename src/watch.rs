//! `listsync watch`: the reference client. Connects to a server — a child process
//! (`-- CMD...`), a Streamable HTTP URL (`--url`), or MCP on this process's own stdin/stdout
//! (`--stdio`, how the harness runs the client adapter) — and prints each change of its
//! snapshots as it happens, with the catalog version behind it: a snapshot identical to the one
//! last printed is not printed again. Every failure (connecting, listing) and every retry it
//! schedules is one line on stderr as it happens; after `--retry N` failed attempts in a row
//! (default 5) the client gives up and `watch` exits with status 1 (`--retry forever` keeps
//! trying). With `--control` it also serves the harness control channel (client role). Era and
//! control socket fall back to the harness environment (`LISTSYNC_ERA`, `LISTSYNC_CONTROL`); the
//! strategy is a flag only.
//!
//! Several servers, as one application connected to all of them: each named with a repeated
//! `--server NAME=COMMAND` (COMMAND split on whitespace, no shell) or `--url NAME=URL`. One
//! client runs per server; the tools line is the combined listing, each tool under
//! `NAME__tool` (`tools auth0 alpha=v1 beta=v2 (4 items): alpha__read, ...`), printed whenever
//! any server's tools change; the other lists and every diagnostic are printed per server,
//! prefixed `NAME: `. `--strategy prefix-from-server-info` prefixes with each server's reported
//! `serverInfo.name` instead (known-bad, for experiments). A bad NAME, a NAME given twice, a
//! NAME with nothing after `=`, or named servers mixed with `--stdio`, `-- CMD`, an unnamed
//! `--url` or a control socket is a usage error (exit status 2, one line).

use crate::harness_env as env;
use anyhow::{Context, bail};
use listsync_core::aggregate::{self, Member};
use listsync_core::client::Pacing;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind};
use listsync_rt::client::Endpoint;
use listsync_rt::watch::{self, Ended, Retry, Said, WatchOptions, Watched};
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

/// The largest token file `--token-file` reads (its first line is the token).
const MAX_TOKEN_FILE: u64 = 1 << 20;

/// One `--url`: a plain URL (one server), or `NAME=URL` (one of several).
#[derive(Clone, Debug)]
enum UrlArg {
    Plain(String),
    Named(String, String),
}

/// `NAME=URL` when the text before the first `=` could be a name (no `:` or `/`, which every
/// URL has before a query's `=`); otherwise a plain URL, checked here. A named one is checked
/// with the other named servers, so that its errors are one line.
fn parse_url(s: &str) -> Result<UrlArg, String> {
    match s.split_once('=') {
        Some((name, url)) if !name.contains([':', '/']) => {
            Ok(UrlArg::Named(name.to_owned(), url.to_owned()))
        }
        _ => Endpoint::http(s).map(|_| UrlArg::Plain(s.to_owned())),
    }
}

/// Flags of `listsync watch`.
#[derive(clap::Args)]
pub struct Args {
    /// Protocol era [env: LISTSYNC_ERA] [default: 2025-11-25].
    #[arg(long)]
    era: Option<Era>,
    /// Client strategy: reference, or a known-bad variant for experiments. With several servers,
    /// `prefix-from-server-info` prefixes each server's tools with the `serverInfo.name` it
    /// reports instead of its NAME (servers reporting the same name collide).
    #[arg(long, default_value_t = ClientStrategy::Reference)]
    strategy: ClientStrategy,
    /// Unix socket of the harness control channel [env: LISTSYNC_CONTROL]; one server only.
    #[arg(long)]
    control: Option<PathBuf>,
    /// Streamable HTTP server URL (http://127.0.0.1:PORT/mcp); or, repeatable, NAME=URL: one of
    /// several servers, its tools shown as NAME__tool (NAME: 1 to 32 characters of a-z, 0-9 and
    /// '-', unique among --url and --server).
    #[arg(long, value_name = "URL|NAME=URL", value_parser = parse_url)]
    url: Vec<UrlArg>,
    /// One of several servers, a child process: NAME=COMMAND, its tools shown as NAME__tool.
    /// COMMAND is the server's command line split on whitespace (no shell, no quoting: an
    /// argument cannot contain a space). Repeatable; combines with --url NAME=URL. Servers are
    /// taken in order, every --server before every --url NAME=URL. With named servers the tools
    /// line is the combined listing (`tools auth0 alpha=v1 beta=v2 (N items): alpha__read,
    /// ...`, `v-`: not listed yet), printed when any server's tools change; the other lists and
    /// every diagnostic are printed per server, prefixed `NAME: `.
    #[arg(long = "server", value_name = "NAME=COMMAND")]
    servers: Vec<String>,
    /// Speak MCP on this process's stdin/stdout (changes are printed on stderr).
    #[arg(long)]
    stdio: bool,
    /// Lists to keep, comma-separated [default: tools,prompts,resources,resource_templates].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<Kind>,
    /// Authorization context to start in (HTTP: sent as `Bearer auth<N>` unless --token-file
    /// gives a token; only a server started with --insecure-test-auth honours `auth<N>`).
    #[arg(long, default_value_t = 0)]
    auth: u8,
    /// A file whose first line is the bearer token to present over HTTP (a server started with
    /// --auth-tokens); with several servers, to each of them.
    #[arg(long, value_name = "FILE")]
    token_file: Option<PathBuf>,
    /// Failed attempts in a row (connecting, or listing one list) retried before giving up with
    /// exit status 1; `forever` never gives up.
    #[arg(long, default_value = "5", value_name = "N|forever")]
    retry: Retry,
    /// Longest wait for a connection (with its handshake) and for each request, in seconds.
    #[arg(long, default_value_t = 10, value_name = "SECS")]
    timeout: u64,
    /// Pacing of the walks notifications cause: `default` (adaptive coalescing gap, storm
    /// back-off; docs/design.md, "Pacing") or `off` (walk at once; the harness replays traces
    /// step by step with it).
    #[arg(long, value_enum, default_value_t = PacingArg::Default)]
    pacing: PacingArg,
    /// Mark on the tools line each tool with side effects (every tool whose definition does not
    /// declare `readOnlyHint: true`) that a user would have to approve: `[approve]` when it is
    /// first listed, `[re-approve]` when its definition differs from the one listed before (a
    /// changed tool, or a new tool reusing a removed one's name).
    #[arg(long)]
    approvals: bool,
    /// The server command to run (after `--`).
    #[arg(last = true)]
    command: Vec<String>,
}

/// `--pacing`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PacingArg {
    Default,
    Off,
}

/// Runs the client until it stops (Ctrl-C, `shutdown`, a lost stdio connection, giving up).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = options(args)?;
    // On stdio, stdout carries MCP: changes are printed on stderr.
    let to_stderr = matches!(opts.watched, Watched::One(Endpoint::Stdio));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let ended = rt.block_on(watch::watch(opts, &mut |said| match said {
        Said::Change(line) if to_stderr => eprintln!("{line}"),
        Said::Change(line) => {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        Said::Diagnostic(line) => eprintln!("listsync watch: {line}"),
    }))?;
    rt.shutdown_background();
    Ok(match ended {
        Ended::Stopped => ExitCode::SUCCESS,
        Ended::GaveUp => ExitCode::from(1),
    })
}

/// The flags, with the harness environment's fallbacks, as [`WatchOptions`].
fn options(args: Args) -> anyhow::Result<WatchOptions> {
    let era = match (args.era, env("LISTSYNC_ERA")) {
        (Some(e), _) => e,
        (None, Some(e)) => e.parse().map_err(anyhow::Error::msg)?,
        (None, None) => Era::V2025_11_25,
    };
    let control = args
        .control
        .clone()
        .or_else(|| env("LISTSYNC_CONTROL").map(PathBuf::from));
    let watched = match named(&args)? {
        Some(members) => {
            if args.stdio {
                bail!("--stdio speaks MCP with one client: not with --server or --url NAME=URL");
            }
            if !args.command.is_empty() || args.url.iter().any(|u| matches!(u, UrlArg::Plain(_))) {
                bail!(
                    "once one server is named, name every one: --server NAME=COMMAND or --url NAME=URL (not -- CMD or a plain --url)"
                );
            }
            if control.is_some() {
                bail!(
                    "the control channel (--control, LISTSYNC_CONTROL) serves one client: not with --server or --url NAME=URL"
                );
            }
            Watched::Many(members)
        }
        None => {
            let url = match args.url.as_slice() {
                [] => None,
                [UrlArg::Plain(url)] => Some(url),
                _ => bail!("give exactly one of: -- <server command...>, --url URL, --stdio"),
            };
            Watched::One(match (url, args.stdio, args.command.is_empty()) {
                (Some(url), false, true) => Endpoint::http(url).map_err(anyhow::Error::msg)?,
                (None, true, true) => Endpoint::Stdio,
                (None, false, false) => {
                    Endpoint::command(&args.command).context("empty command")?
                }
                _ => bail!("give exactly one of: -- <server command...>, --url URL, --stdio"),
            })
        }
    };
    let bearer = match &args.token_file {
        Some(file) => Some(read_token(file)?),
        None => None,
    };
    Ok(WatchOptions {
        era,
        strategy: args.strategy,
        watched,
        kinds: if args.kinds.is_empty() {
            Kind::ALL.into_iter().collect()
        } else {
            args.kinds.iter().copied().collect()
        },
        auth: AuthCtx(args.auth),
        bearer,
        retry: args.retry,
        timeout: Duration::from_secs(args.timeout.max(1)),
        pacing: match args.pacing {
            PacingArg::Default => Pacing::default(),
            PacingArg::Off => Pacing::OFF,
        },
        control,
        approvals: args.approvals,
    })
}

/// The named servers (`--server NAME=COMMAND`, then `--url NAME=URL`), None if there are none;
/// each NAME checked (valid, unique) and each COMMAND or URL present.
fn named(args: &Args) -> anyhow::Result<Option<Vec<(String, Endpoint)>>> {
    let mut members = Vec::new();
    for s in &args.servers {
        let Some((name, command)) = s.split_once('=') else {
            bail!("--server {s}: expected NAME=COMMAND");
        };
        let argv: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
        let Some(endpoint) = Endpoint::command(&argv) else {
            bail!("--server {name}=: no command after '='");
        };
        members.push((name.to_owned(), endpoint));
    }
    for u in &args.url {
        if let UrlArg::Named(name, url) = u {
            if url.is_empty() {
                bail!("--url {name}=: no URL after '='");
            }
            let endpoint =
                Endpoint::http(url).map_err(|e| anyhow::anyhow!("--url {name}={url}: {e}"))?;
            members.push((name.clone(), endpoint));
        }
    }
    if members.is_empty() {
        return Ok(None);
    }
    let check: Vec<Member> = members
        .iter()
        .map(|(key, _)| Member {
            key: key.clone(),
            server_name: String::new(),
        })
        .collect();
    aggregate::check_members(&check).map_err(anyhow::Error::msg)?;
    Ok(Some(members))
}

/// The token on the first line of `file` (at most [`MAX_TOKEN_FILE`] bytes read); an empty first
/// line is an error naming the file.
pub fn read_token(file: &std::path::Path) -> anyhow::Result<String> {
    let text = listsync_harness::limited_file::read_text(file, MAX_TOKEN_FILE)
        .with_context(|| format!("token file {}", file.display()))?;
    let token = text.lines().next().unwrap_or("").trim().to_owned();
    if token.is_empty() {
        bail!("token file {}: the first line is empty", file.display());
    }
    Ok(token)
}
