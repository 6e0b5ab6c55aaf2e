//! `listsync watch`: the reference client. Connects to a server — a child process
//! (`-- CMD...`), a Streamable HTTP URL (`--url`), or MCP on this process's own stdin/stdout
//! (`--stdio`, how the harness runs the client adapter) — and prints every change of its
//! snapshots as it happens, with the catalog version behind it. With `--control` it also serves
//! the harness control channel (client role). Settings fall back to the harness environment
//! (`LISTSYNC_ERA`, `LISTSYNC_VARIANT`, `LISTSYNC_CONTROL`, `LISTSYNC_PACING`).

use anyhow::{Context, bail};
use listsync_core::client::Pacing;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientSettings, Endpoint};
use listsync_rt::control::{self, ReadyInfo};
use serde_json::json;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// Flags of `listsync watch`.
#[derive(clap::Args)]
pub struct Args {
    /// Protocol era [env: LISTSYNC_ERA] [default: 2025-11-25].
    #[arg(long)]
    era: Option<Era>,
    /// Client strategy: reference or a known-bad variant [env: LISTSYNC_VARIANT].
    #[arg(long)]
    strategy: Option<ClientStrategy>,
    /// Unix socket of the harness control channel [env: LISTSYNC_CONTROL].
    #[arg(long)]
    control: Option<PathBuf>,
    /// Streamable HTTP server URL (http://127.0.0.1:PORT/mcp).
    #[arg(long, conflicts_with = "stdio")]
    url: Option<String>,
    /// Speak MCP on this process's stdin/stdout (changes are printed on stderr).
    #[arg(long)]
    stdio: bool,
    /// Lists to keep, comma-separated [default: tools,prompts,resources,resource_templates].
    #[arg(long, value_delimiter = ',')]
    kinds: Vec<Kind>,
    /// Authorization context to start in (HTTP: sent as `Bearer auth<N>`).
    #[arg(long, default_value_t = 0)]
    auth: u8,
    /// Pacing of the walks notifications cause: `default` (adaptive coalescing gap, storm
    /// back-off; docs/design.md) or `off` (walk at once; the harness replays traces step by
    /// step with it) [env: LISTSYNC_PACING].
    #[arg(long)]
    pacing: Option<PacingArg>,
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

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Runs the client until it stops (Ctrl-C, `shutdown`, a lost stdio connection).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = rt.block_on(watch(args))?;
    rt.shutdown_background();
    Ok(code)
}

async fn watch(args: Args) -> anyhow::Result<ExitCode> {
    let era = match (args.era, env("LISTSYNC_ERA")) {
        (Some(e), _) => e,
        (None, Some(e)) => e.parse().map_err(anyhow::Error::msg)?,
        (None, None) => Era::V2025_11_25,
    };
    let strategy = match (args.strategy, env("LISTSYNC_VARIANT")) {
        (Some(s), _) => s,
        (None, Some(s)) => s.parse().map_err(anyhow::Error::msg)?,
        (None, None) => ClientStrategy::Reference,
    };
    let endpoint = match (&args.url, args.stdio, args.command.is_empty()) {
        (Some(url), false, true) => Endpoint::Http { url: url.clone() },
        (None, true, true) => Endpoint::Stdio,
        (None, false, false) => Endpoint::command(&args.command).context("empty command")?,
        _ => bail!("give exactly one of: -- <server command...>, --url URL, --stdio"),
    };
    let kinds: KindSet = if args.kinds.is_empty() {
        Kind::ALL.into_iter().collect()
    } else {
        args.kinds.iter().copied().collect()
    };
    let control_path = args
        .control
        .or_else(|| env("LISTSYNC_CONTROL").map(PathBuf::from));
    // The control channel first: no event may be lost.
    let channel = match &control_path {
        Some(path) => Some(
            control::connect_client(path)
                .await
                .with_context(|| format!("control socket {}", path.display()))?,
        ),
        None => None,
    };
    let (ntx, nrx) = tokio::sync::mpsc::unbounded_channel();
    let mut settings = ClientSettings::new(era, kinds);
    settings.client.strategy = strategy;
    settings.client.auth = AuthCtx(args.auth);
    let pacing = match (args.pacing, env("LISTSYNC_PACING").as_deref()) {
        (Some(p), _) => p,
        (None, Some("off")) => PacingArg::Off,
        (None, Some("default") | None) => PacingArg::Default,
        (None, Some(other)) => bail!("LISTSYNC_PACING: expected default or off, not '{other}'"),
    };
    if pacing == PacingArg::Off {
        settings.client.pacing = Pacing::OFF;
    }
    settings.observer = Some(ntx);
    let to_stderr = matches!(endpoint, Endpoint::Stdio);
    let catalog = ClientHandle::spawn(settings, endpoint);
    let stop = CancellationToken::new();
    let outbox = match channel {
        Some(channel) => {
            let info = ReadyInfo {
                role: "client",
                era,
                variant: strategy.to_string(),
                extra: json!({ "kinds": kinds }),
            };
            Some(control::run_client(channel, catalog.clone(), nrx, info, stop.clone()).await)
        }
        None => {
            drop(nrx);
            None
        }
    };

    let mut changes = catalog.changes();
    let mut status = catalog.status();
    loop {
        tokio::select! {
            r = changes.changed() => {
                if r.is_err() { break; }
                let c = changes.borrow_and_update().clone();
                if c.seq == 0 { continue; }
                let view = catalog.list(c.kind);
                let names: Vec<&str> = view.items.iter().map(|i| &*i.name).collect();
                let line = format!(
                    "{} {} v{} ({} items){}: {}",
                    c.kind,
                    c.auth,
                    c.version.map_or("-".to_owned(), |v| v.to_string()),
                    c.len,
                    if c.stale { " stale" } else { "" },
                    names.join(", ")
                );
                if to_stderr {
                    eprintln!("{line}");
                } else {
                    let mut out = std::io::stdout().lock();
                    let _ = writeln!(out, "{line}");
                    let _ = out.flush();
                }
            }
            r = status.wait_for(|s| s.ended) => {
                if let Ok(s) = r && let Some(e) = &s.last_error {
                    eprintln!("listsync watch: stopped: {e}");
                }
                break;
            }
            _ = stop.cancelled() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    catalog.shutdown();
    if let Some(out) = outbox {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), out.flush()).await;
    }
    Ok(ExitCode::SUCCESS)
}
