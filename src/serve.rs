//! `listsync serve`: the reference MCP server (core's registry over rmcp) on stdio or Streamable
//! HTTP, optionally driven by the harness control channel. Settings come from flags, else from
//! the harness environment (`LISTSYNC_ERA`, `LISTSYNC_PAGE_SIZE`, `LISTSYNC_CONTROL`,
//! `LISTSYNC_VARIANT`, `LISTSYNC_INITIAL`). Logs go to stderr; on stdio, stdout is MCP. With
//! `--redis URL --node NAME` the server is one node of a multi-instance server whose catalog
//! lives in Redis ([`node`]).

mod node;

use anyhow::{Context, bail};
use listsync_core::server::ServerConfig;
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::Era;
use listsync_rt::control::{self, ReadyInfo};
use listsync_rt::fixtures::Fixtures;
use listsync_rt::server::{ServerSettings, fresh_catalog_id};
use rmcp::ServiceExt;
use serde_json::json;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use tokio_util::sync::CancellationToken;

/// Flags of `listsync serve`.
#[derive(clap::Args)]
pub struct Args {
    /// Serve MCP on stdin/stdout (the default).
    #[arg(long, conflicts_with = "http")]
    stdio: bool,
    /// Serve Streamable HTTP on this loopback address, e.g. 127.0.0.1:8080 (port 0 picks a free
    /// one; the URL is printed on stdout).
    #[arg(long, value_name = "127.0.0.1:PORT")]
    http: Option<SocketAddr>,
    /// Protocol era [env: LISTSYNC_ERA] [default: 2025-11-25].
    #[arg(long)]
    era: Option<Era>,
    /// Items per list page, 0 = one page [env: LISTSYNC_PAGE_SIZE] [default: 0].
    #[arg(long)]
    page_size: Option<u16>,
    /// Unix socket of the harness control channel [env: LISTSYNC_CONTROL].
    #[arg(long)]
    control: Option<PathBuf>,
    /// Server strategy: reference or a known-bad variant [env: LISTSYNC_VARIANT].
    #[arg(long)]
    strategy: Option<ServerStrategy>,
    /// Initial catalog: a JSON array of control-protocol ops [env: LISTSYNC_INITIAL].
    #[arg(long)]
    initial: Option<String>,
    /// `ttlMs` on 2026-07-28 list results.
    #[arg(long)]
    ttl_ms: Option<u32>,
    /// A named fixture set added to the initial catalog: `conformance` (the items and
    /// `test_trigger_tool_change` / `test_trigger_prompt_change` tools the official MCP
    /// conformance suite expects).
    #[arg(long, value_name = "SET")]
    fixtures: Option<Fixtures>,
    #[command(flatten)]
    cluster: node::ClusterArgs,
}

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// Runs the server until stdin closes (stdio), the control channel closes or says `shutdown`,
/// or Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let code = rt.block_on(serve(args))?;
    // The stdio reader blocks in a thread no cancellation interrupts: do not wait for it.
    rt.shutdown_background();
    Ok(code)
}

async fn serve(args: Args) -> anyhow::Result<ExitCode> {
    let era = match (args.era, env("LISTSYNC_ERA")) {
        (Some(e), _) => e,
        (None, Some(e)) => e.parse().map_err(anyhow::Error::msg)?,
        (None, None) => Era::V2025_11_25,
    };
    let page_size = match (args.page_size, env("LISTSYNC_PAGE_SIZE")) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().context("LISTSYNC_PAGE_SIZE")?,
        (None, None) => 0,
    };
    let strategy = match (args.strategy, env("LISTSYNC_VARIANT")) {
        (Some(s), _) => s,
        (None, Some(s)) => s.parse().map_err(anyhow::Error::msg)?,
        (None, None) => ServerStrategy::Reference,
    };
    let initial = match args.initial.or_else(|| env("LISTSYNC_INITIAL")) {
        Some(text) => {
            let v: serde_json::Value = serde_json::from_str(&text).context("initial ops")?;
            control::parse_ops(&v).map_err(|f| anyhow::anyhow!("initial ops: {}", f.error))?
        }
        None => Vec::new(),
    };
    let initial = match args.fixtures {
        Some(f) => f.catalog().into_iter().chain(initial).collect(),
        None => initial,
    };
    let control_path = args
        .control
        .or_else(|| env("LISTSYNC_CONTROL").map(PathBuf::from));
    let settings = ServerSettings {
        core: ServerConfig {
            strategy,
            era,
            page_size,
            ttl_ms: args.ttl_ms,
            catalog_id: fresh_catalog_id(),
            ..ServerConfig::default()
        },
        call_effects: args.fixtures.map(Fixtures::effects),
        ..ServerSettings::default()
    };
    let (server, _node) = node::server(&args.cluster, settings, &initial).await?;
    let stop = CancellationToken::new();

    let mut extra = json!({ "page_size": page_size });
    node::ready_fields(&server, &mut extra);
    let transport_done = CancellationToken::new();
    let mut http = None;
    if let Some(addr) = args.http {
        if args.stdio {
            bail!("--stdio and --http are exclusive");
        }
        let endpoint = server.serve_http(addr).await?;
        let url = endpoint.url();
        println!("{url}");
        eprintln!(
            "listsync serve: Streamable HTTP {era} at {url} ({strategy}, page size {page_size})"
        );
        extra["transport"] = json!("http");
        extra["url"] = json!(url);
        http = Some(endpoint);
    } else {
        extra["transport"] = json!("stdio");
        let service = server.service();
        let done = transport_done.clone();
        tokio::spawn(async move {
            match service.serve(rmcp::transport::stdio()).await {
                Ok(running) => {
                    let _ = running.waiting().await;
                }
                Err(e) => eprintln!("listsync serve: {e}"),
            }
            done.cancel();
        });
    }

    let outbox = match &control_path {
        Some(path) => {
            let info = ReadyInfo {
                role: "server",
                era,
                variant: strategy.to_string(),
                extra,
            };
            let out = control::run_server(server.clone(), path, info, stop.clone())
                .await
                .with_context(|| format!("control socket {}", path.display()))?;
            node::report_health(&server, out.clone());
            Some(out)
        }
        None => None,
    };

    tokio::select! {
        _ = transport_done.cancelled() => {}
        _ = stop.cancelled() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    if let Some(endpoint) = http {
        endpoint.shutdown().await;
    }
    if let Some(out) = outbox {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), out.flush()).await;
    }
    Ok(ExitCode::SUCCESS)
}
