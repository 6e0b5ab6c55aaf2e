//! `listsync serve`: the reference MCP server (core's registry over rmcp) on stdio or Streamable
//! HTTP, optionally driven by the harness control channel ([`listsync_rt::serve`] runs it; this
//! module reads the flags). Settings come from flags; the harness protocol's environment
//! (`LISTSYNC_ERA`, `LISTSYNC_PAGE_SIZE`, `LISTSYNC_CONTROL`, `LISTSYNC_INITIAL`,
//! docs/harness-protocol.md) gives the defaults of the flags it names; the strategy is a flag
//! only, so a known-bad server is never picked up from the environment. Without `--initial`,
//! `--fixtures` or `--empty` it serves the demo catalog and says so. Logs go to stderr; on stdio,
//! stdout is MCP. With `--redis URL --node NAME` the server is one node of a multi-instance
//! server whose catalog lives in Redis ([`node`]). The HTTP endpoint's security options (tokens,
//! origins, caps) are documented in the README's "Security" section. `--script FILE|PRESET` runs
//! a schedule of batches ([`listsync_rt::script`]); `--admin-socket PATH` and
//! `--admin-token-file FILE` (HTTP) let `listsync change` send batches by hand
//! (docs/test-your-client.md).

mod node;

use crate::harness_env as env;
use anyhow::{Context, bail};
use listsync_core::server::{DEFAULT_RETAIN_VERSIONS, ServerConfig};
use listsync_core::strategy::ServerStrategy;
use listsync_core::vocab::Era;
use listsync_rt::fixtures::Fixtures;
use listsync_rt::serve::{Output, ServeOptions, ServeTransport};
use listsync_rt::server::fresh_catalog_id;
use listsync_rt::server::http::{HttpAuth, HttpOptions};
use listsync_rt::server::tokens::TokenTable;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

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
    /// Items per list page, 0 = one page [env: LISTSYNC_PAGE_SIZE] [default: the script's, else
    /// 0].
    #[arg(long)]
    page_size: Option<u16>,
    /// Unix socket of the harness control channel [env: LISTSYNC_CONTROL].
    #[arg(long)]
    control: Option<PathBuf>,
    /// Server strategy: reference, or a known-bad variant that reproduces a bug on purpose
    /// (notify-before-commit, offset-cursor, notify-per-mutation, stale-dispatch, ...).
    #[arg(long, default_value_t = ServerStrategy::Reference)]
    strategy: ServerStrategy,
    /// Initial catalog: a JSON array of control-protocol ops [env: LISTSYNC_INITIAL]. Without it
    /// (and without --fixtures or --empty) the demo catalog is served.
    #[arg(long)]
    initial: Option<String>,
    /// Start with an empty catalog instead of the demo one.
    #[arg(long, conflicts_with_all = ["initial", "fixtures"])]
    empty: bool,
    /// `ttlMs` on 2026-07-28 list results.
    #[arg(long)]
    ttl_ms: Option<u32>,
    /// Walk versions kept so that a walk a commit overtakes is still served to its end
    /// (docs/design.md, "Version-bound walks"); 0 refuses every cursor of an earlier version.
    #[arg(long, value_name = "N", default_value_t = DEFAULT_RETAIN_VERSIONS)]
    retain_versions: u8,
    /// A named fixture set added to the initial catalog: `demo` (the default catalog) or
    /// `conformance` (the items and `test_trigger_tool_change` / `test_trigger_prompt_change`
    /// tools the official MCP conformance suite expects).
    #[arg(long, value_name = "SET")]
    fixtures: Option<Fixtures>,
    /// HTTP: bearer tokens, one `TOKEN PRINCIPAL CONTEXT` per line; requests without a known
    /// token get 401. Without it every request is made under context 0 (public items only).
    #[arg(long, value_name = "FILE", requires = "http")]
    auth_tokens: Option<PathBuf>,
    /// HTTP, tests only: `Authorization: Bearer auth<N>` selects context N for anyone who sends
    /// it. Never use it where another user can reach the port.
    #[arg(long, requires = "http", conflicts_with = "auth_tokens")]
    insecure_test_auth: bool,
    /// HTTP: a browser origin allowed besides the loopback ones (`scheme://host[:port]`, or
    /// `scheme://host:*` for any port); repeatable. Other origins get 403.
    #[arg(long, value_name = "ORIGIN", requires = "http")]
    allow_origin: Vec<String>,
    /// HTTP: most live sessions (2025-11-25); an initialize beyond gets 503.
    #[arg(long, value_name = "N", default_value_t = HttpOptions::default().max_sessions)]
    max_sessions: usize,
    /// HTTP: most open connections; one beyond gets 503 and is closed.
    #[arg(long, value_name = "N", default_value_t = HttpOptions::default().max_connections)]
    max_connections: usize,
    /// HTTP: seconds a connection may take to send a request head (from its start, or from the
    /// previous response) before it is closed.
    #[arg(long, value_name = "SECS", default_value_t = HttpOptions::default().header_timeout.as_secs())]
    header_timeout: u64,
    /// A schedule of batches the server applies to itself: a TOML file, or a preset
    /// (stale-race, mid-walk, burst, call-removal, schema-change; docs/test-your-client.md).
    #[arg(long, value_name = "FILE|PRESET")]
    script: Option<String>,
    /// Stop the server this many seconds after the script's last step (its clients see it
    /// end; a recorded session is then whole for `listsync audit`).
    #[arg(long, value_name = "SECS", requires = "script")]
    stop_after_script: Option<f64>,
    /// Listen on a new Unix socket at PATH (mode 0600) for `listsync change PATH OP...` (the
    /// control protocol's server role).
    #[arg(long, value_name = "PATH")]
    admin_socket: Option<PathBuf>,
    /// HTTP: enable `POST /admin/change` for `listsync change URL --token-file FILE OP...`; the
    /// file's first line is the one token it accepts (at least 16 characters). Off by default
    /// (the path answers 404).
    #[arg(long, value_name = "FILE", requires = "http")]
    admin_token_file: Option<PathBuf>,
    #[command(flatten)]
    cluster: node::ClusterArgs,
}

/// Runs the server until stdin closes (stdio), the control channel closes or says `shutdown`,
/// or Ctrl-C.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let opts = options(args)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    let say = Arc::new(|o: Output| match o {
        Output::Url(url) => println!("{url}"),
        Output::Diagnostic(line) => eprintln!("{line}"),
    });
    let served = rt.block_on(listsync_rt::serve::serve(opts, say));
    // The stdio reader blocks in a thread no cancellation interrupts: do not wait for it.
    rt.shutdown_background();
    served?;
    Ok(ExitCode::SUCCESS)
}

/// What to serve, from the flags (and the harness protocol's environment for their defaults).
fn options(args: Args) -> anyhow::Result<ServeOptions> {
    let script = match &args.script {
        Some(s) => Some(Arc::new(
            listsync_rt::script::Script::load(s).map_err(anyhow::Error::msg)?,
        )),
        None => None,
    };
    let stop_after_script = match args.stop_after_script {
        Some(s) if !(0.0..=86_400.0).contains(&s) => {
            bail!("--stop-after-script: 0 to 86400 seconds")
        }
        s => s.map(std::time::Duration::from_secs_f64),
    };
    let era = match (args.era, env("LISTSYNC_ERA")) {
        (Some(e), _) => e,
        (None, Some(e)) => e.parse().map_err(anyhow::Error::msg)?,
        (None, None) => Era::V2025_11_25,
    };
    let page_size = match (args.page_size, env("LISTSYNC_PAGE_SIZE")) {
        (Some(p), _) => p,
        (None, Some(p)) => p.parse().context("LISTSYNC_PAGE_SIZE")?,
        (None, None) => script.as_ref().and_then(|s| s.page_size).unwrap_or(0),
    };
    let initial = match args.initial.clone().or_else(|| env("LISTSYNC_INITIAL")) {
        Some(text) if !args.empty => {
            let v: serde_json::Value = serde_json::from_str(&text).context("initial ops")?;
            Some(
                listsync_rt::admin::parse_ops(&v)
                    .map_err(|f| anyhow::anyhow!("initial ops: {}", f.error))?,
            )
        }
        _ => None,
    };
    let transport = match args.http {
        Some(_) if args.stdio => bail!("--stdio and --http are exclusive"),
        Some(addr) => ServeTransport::Http {
            addr,
            options: http_options(&args)?,
        },
        None => ServeTransport::Stdio,
    };
    Ok(ServeOptions {
        transport,
        core: ServerConfig {
            strategy: args.strategy,
            era,
            page_size,
            ttl_ms: args.ttl_ms,
            retain_versions: args.retain_versions,
            catalog_id: fresh_catalog_id(),
            ..ServerConfig::default()
        },
        initial,
        fixtures: args.fixtures,
        empty: args.empty,
        admin_socket: args.admin_socket,
        control: args
            .control
            .or_else(|| env("LISTSYNC_CONTROL").map(PathBuf::from)),
        script,
        stop_after_script,
        node: args.cluster.node_options(),
    })
}

/// The HTTP endpoint's security options from the flags.
fn http_options(args: &Args) -> anyhow::Result<HttpOptions> {
    let auth = match (&args.auth_tokens, args.insecure_test_auth) {
        (Some(file), _) => {
            let table = TokenTable::load(file).map_err(anyhow::Error::msg)?;
            HttpAuth::Tokens(Arc::new(table))
        }
        (None, true) => {
            eprintln!(
                "listsync serve: --insecure-test-auth: `Bearer auth<N>` selects context N for \
                 anyone (tests only)"
            );
            HttpAuth::InsecureTestAuth
        }
        (None, false) => HttpAuth::Anonymous,
    };
    if args.max_sessions == 0 || args.max_connections == 0 || args.header_timeout == 0 {
        bail!("--max-sessions, --max-connections and --header-timeout must be at least 1");
    }
    let admin = match &args.admin_token_file {
        Some(file) => Some(Arc::new(
            TokenTable::admin(file).map_err(anyhow::Error::msg)?,
        )),
        None => None,
    };
    Ok(HttpOptions {
        admin,
        auth,
        allowed_origins: args.allow_origin.clone(),
        max_sessions: args.max_sessions,
        max_connections: args.max_connections,
        header_timeout: std::time::Duration::from_secs(args.header_timeout),
        ..HttpOptions::default()
    })
}
