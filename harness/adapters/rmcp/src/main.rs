//! `listsync-rmcp-adapter`: the rmcp adapter as a program of its own (the harness runs the same
//! code as `listsync adapter rmcp`).

fn main() {
    // Diagnostics on stderr (stdout is MCP); `RUST_LOG` adjusts the level (default: warn).
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .init();
    std::process::exit(listsync_rmcp_adapter::run());
}
