//! listsync harness adapter for the Rust MCP SDK, rmcp (pinned `=3.11.0`): one program, both
//! roles, speaking MCP on stdin/stdout and the harness control protocol on the Unix socket named
//! by `LISTSYNC_CONTROL` (`docs/harness-protocol.md`). It is a system under test: it follows the
//! patterns rmcp documents and adds no protection rmcp lacks. Run it as `listsync adapter rmcp`
//! (the harness does) or as the `listsync-rmcp-adapter` binary.

mod client;
mod control;
mod server;

use serde_json::Value;

/// The rmcp version this adapter is built against (pinned in its Cargo.toml; a test checks the
/// lockfile agrees).
pub const RMCP_VERSION: &str = "3.11.0";

/// The `LISTSYNC_*` environment.
#[derive(Clone, Debug)]
pub struct Env {
    /// Control socket path.
    pub control: String,
    /// `server` or `client`.
    pub role: String,
    /// Era to pin.
    pub era: String,
    /// Items per page (ignored by the macro-made `tools/list`).
    pub page_size: u32,
    /// Initial ops.
    pub initial: Vec<Value>,
    /// Variant.
    pub variant: Option<String>,
}

impl Env {
    /// Reads the environment.
    pub fn read() -> Result<Env, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let control = var("LISTSYNC_CONTROL")
            .ok_or("LISTSYNC_CONTROL is not set (path of the harness control socket)")?;
        let initial = match var("LISTSYNC_INITIAL") {
            Some(t) => match serde_json::from_str::<Value>(&t) {
                Ok(Value::Array(a)) => a,
                _ => return Err("LISTSYNC_INITIAL must be a JSON array of ops".into()),
            },
            None => Vec::new(),
        };
        Ok(Env {
            control,
            role: var("LISTSYNC_ROLE").unwrap_or_else(|| "server".into()),
            era: var("LISTSYNC_ERA").unwrap_or_else(|| "2025-11-25".into()),
            page_size: var("LISTSYNC_PAGE_SIZE")
                .and_then(|p| p.parse().ok())
                .unwrap_or(0),
            initial,
            variant: var("LISTSYNC_VARIANT"),
        })
    }
}

/// Runs the adapter; returns the process exit status (0 normal end, 2 start-up failure).
pub fn run() -> i32 {
    let env = match Env::read() {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("[listsync-rmcp-adapter] {e}");
            return 2;
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            tracing::error!("[listsync-rmcp-adapter] tokio: {e}");
            return 2;
        }
    };
    let code = rt.block_on(async move {
        let channel = match control::Channel::connect(std::path::Path::new(&env.control)).await {
            Ok(c) => c,
            Err(e) => {
                tracing::error!(
                    "[listsync-rmcp-adapter] control socket {}: {e}",
                    env.control
                );
                return 2;
            }
        };
        let out = channel.outbox();
        match env.role.as_str() {
            "server" => server::run(env, out, channel).await,
            "client" => client::run(env, out, channel).await,
            other => {
                out.log(format!(
                    "LISTSYNC_ROLE must be server or client, got '{other}'"
                ));
                out.flush().await;
                2
            }
        }
    });
    // The stdio reader blocks in a thread no cancellation interrupts: do not wait for it.
    rt.shutdown_background();
    code
}
