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

use anyhow::{Context, bail};
use listsync_core::client::Pacing;
use listsync_core::history::{Event, RefreshOutcome};
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::{AuthCtx, Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientNotice, ClientSettings, Endpoint, View};
use listsync_rt::control::{self, ReadyInfo};
use serde_json::json;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How many failed attempts in a row the client makes before it gives up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// Retries after a failure, then give up (exit 1).
    Times(u8),
    /// Never give up.
    Forever,
}

impl std::str::FromStr for Retry {
    type Err = String;
    fn from_str(s: &str) -> Result<Retry, String> {
        match s {
            "forever" => Ok(Retry::Forever),
            n => n.parse::<u8>().map(Retry::Times).map_err(|_| {
                format!("'{n}' is neither a number of retries (0..=255) nor 'forever'")
            }),
        }
    }
}

fn parse_url(s: &str) -> Result<String, String> {
    Endpoint::http(s).map(|_| s.to_owned())
}

/// Flags of `listsync watch`.
#[derive(clap::Args)]
pub struct Args {
    /// Protocol era [env: LISTSYNC_ERA] [default: 2025-11-25].
    #[arg(long)]
    era: Option<Era>,
    /// Client strategy: reference, or a known-bad variant for experiments.
    #[arg(long, default_value_t = ClientStrategy::Reference)]
    strategy: ClientStrategy,
    /// Unix socket of the harness control channel [env: LISTSYNC_CONTROL].
    #[arg(long)]
    control: Option<PathBuf>,
    /// Streamable HTTP server URL (http://127.0.0.1:PORT/mcp).
    #[arg(long, conflicts_with = "stdio", value_parser = parse_url)]
    url: Option<String>,
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
    /// --auth-tokens).
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

/// Runs the client until it stops (Ctrl-C, `shutdown`, a lost stdio connection, giving up).
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = rt.block_on(watch(args))?;
    rt.shutdown_background();
    Ok(code)
}

/// Where change lines go: stdout, or stderr when stdout carries MCP.
struct Printer {
    to_stderr: bool,
    /// The line last printed per list.
    last: BTreeMap<Kind, String>,
}

impl Printer {
    fn change(&mut self, kind: Kind, view: &View) {
        if !view.fetched {
            return;
        }
        let names: Vec<&str> = view.items.iter().map(|i| &*i.name).collect();
        let line = format!(
            "{} {} v{} ({} items){}: {}",
            kind,
            view.auth,
            view.version.map_or("-".to_owned(), |v| v.to_string()),
            view.items.len(),
            if view.is_stale() { " stale" } else { "" },
            names.join(", ")
        );
        if self.last.get(&kind) == Some(&line) {
            return;
        }
        if self.to_stderr {
            eprintln!("{line}");
        } else {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        self.last.insert(kind, line);
    }
}

fn diag(line: &str) {
    eprintln!("listsync watch: {line}");
}

fn ms(d: Duration) -> String {
    format!("{} ms", d.as_millis())
}

/// Prints the one-line diagnostic of a notice; returns the reason to give up, if it is one.
fn report(n: &ClientNotice, retry: Retry, failures: &mut BTreeMap<Kind, u32>) -> Option<String> {
    match n {
        ClientNotice::ConnectFailed { why } => diag(&format!("cannot connect: {why}")),
        ClientNotice::ReconnectScheduled { attempt, of, delay } => diag(&match of {
            Some(of) => format!("reconnecting in {} (attempt {attempt} of {of})", ms(*delay)),
            None => format!("reconnecting in {} (attempt {attempt})", ms(*delay)),
        }),
        ClientNotice::Disconnected { why } => diag(&format!("disconnected: {why}")),
        ClientNotice::RefreshFailed { kind, error } => {
            *failures.entry(*kind).or_default() += 1;
            diag(&format!("{kind}: listing failed: {error}"));
        }
        ClientNotice::RetryScheduled {
            kind,
            attempt,
            of,
            delay,
        } => diag(&format!(
            "{kind}: retry {attempt} of {of} in {}",
            ms(*delay)
        )),
        ClientNotice::Warning(w) => diag(&format!("warning: {w}")),
        ClientNotice::NotificationsDropped { count } => diag(&format!(
            "{count} notifications dropped (too many distinct ones pending)"
        )),
        ClientNotice::Event(Event::RefreshEnded { kind, outcome, .. }) => {
            if *outcome != RefreshOutcome::Failed {
                failures.remove(kind);
                return None;
            }
            let n = failures.get(kind).copied().unwrap_or(0);
            if retry == Retry::Forever {
                diag(&format!(
                    "{kind}: still failing after {n} attempts; trying again on the next change notification"
                ));
            } else {
                return Some(format!("{kind}: giving up after {n} failed attempts"));
            }
        }
        _ => {}
    }
    None
}

async fn watch(args: Args) -> anyhow::Result<ExitCode> {
    let era = match (args.era, env("LISTSYNC_ERA")) {
        (Some(e), _) => e,
        (None, Some(e)) => e.parse().map_err(anyhow::Error::msg)?,
        (None, None) => Era::V2025_11_25,
    };
    let strategy = args.strategy;
    let endpoint = match (&args.url, args.stdio, args.command.is_empty()) {
        (Some(url), false, true) => Endpoint::http(url).map_err(anyhow::Error::msg)?,
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
    let (ntx, mut nrx) = mpsc::unbounded_channel();
    let mut settings = ClientSettings::new(era, kinds);
    settings.client.strategy = strategy;
    settings.client.auth = AuthCtx(args.auth);
    if args.pacing == PacingArg::Off {
        settings.client.pacing = Pacing::OFF;
    }
    settings.observer = Some(ntx);
    let timeout = Duration::from_secs(args.timeout.max(1));
    settings.connect_timeout = timeout;
    settings.request_timeout = timeout;
    match args.retry {
        Retry::Times(n) => {
            settings.max_reconnects = Some(u32::from(n));
            settings.client.limits.max_retries = n;
        }
        Retry::Forever => {
            settings.max_reconnects = None;
            settings.client.limits.max_retries = u8::MAX;
        }
    }
    if let Some(file) = &args.token_file {
        let text = std::fs::read_to_string(file)
            .with_context(|| format!("token file {}", file.display()))?;
        let token = text.lines().next().unwrap_or("").trim().to_owned();
        if token.is_empty() {
            bail!("token file {}: the first line is empty", file.display());
        }
        settings.bearer.insert(AuthCtx(args.auth), token);
    }
    let stdio = matches!(endpoint, Endpoint::Stdio);
    let catalog = ClientHandle::spawn(settings, endpoint);
    let stop = CancellationToken::new();
    // Notices go to the printer below and, with a control channel, to the harness too.
    let (ctl_tx, outbox) = match channel {
        Some(channel) => {
            let (tx, rx) = mpsc::unbounded_channel();
            let info = ReadyInfo {
                role: "client",
                era,
                variant: strategy.to_string(),
                extra: json!({ "kinds": kinds }),
            };
            let task = tokio::spawn(control::run_client(
                channel,
                catalog.clone(),
                rx,
                info,
                stop.clone(),
            ));
            (Some(tx), Some(task))
        }
        None => (None, None),
    };

    let mut printer = Printer {
        to_stderr: stdio,
        last: BTreeMap::new(),
    };
    let mut failures = BTreeMap::new();
    let mut changes = catalog.changes();
    let mut status = catalog.status();
    let mut code = ExitCode::SUCCESS;
    loop {
        tokio::select! {
            // Notices first: the client's last failure is said before the line that ends.
            biased;
            Some(n) = nrx.recv() => {
                let give_up = report(&n, args.retry, &mut failures);
                if let Some(tx) = &ctl_tx {
                    let _ = tx.send(n);
                }
                if let Some(why) = give_up {
                    diag(&why);
                    code = ExitCode::from(1);
                    break;
                }
            }
            r = changes.changed() => {
                if r.is_err() { break; }
                changes.borrow_and_update();
                for kind in kinds.iter() {
                    printer.change(kind, &catalog.list(kind));
                }
            }
            r = status.wait_for(|s| s.ended) => {
                // Notices the client sent as it ended are said before the last line.
                while let Ok(n) = nrx.try_recv() {
                    let _ = report(&n, args.retry, &mut failures);
                }
                if let Ok(s) = r && let Some(e) = &s.last_error {
                    if stdio {
                        diag(&format!("stopped: {e}"));
                    } else {
                        diag(&format!("giving up: {e}"));
                        code = ExitCode::from(1);
                    }
                }
                break;
            }
            _ = stop.cancelled() => break,
            _ = tokio::signal::ctrl_c() => break,
        }
    }
    catalog.shutdown();
    if let Some(task) = outbox
        && let Ok(Ok(out)) = tokio::time::timeout(Duration::from_secs(2), task).await
    {
        let _ = tokio::time::timeout(Duration::from_secs(2), out.flush()).await;
    }
    Ok(code)
}
