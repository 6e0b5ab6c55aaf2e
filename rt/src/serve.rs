//! What `listsync serve` runs: the reference server with its catalog assembled (given ops, a
//! fixture set, or the demo catalog), on stdio (what the client sends that is not JSON-RPC said,
//! a client that floods requests without reading the answers paced) or Streamable HTTP; with an
//! admin socket for `listsync change`, a node of a multi-instance server (feature `cluster`),
//! and a script and the harness control channel (feature `harness`). It runs until the
//! transport ends, the control channel says `shutdown`, the script's stop comes, or Ctrl-C.
//! What it has to say goes to the caller as [`Output`] (the library prints nothing).

#[cfg(feature = "http")]
use crate::server::http::HttpOptions;
use crate::server::{Server, ServerSettings};
use crate::{admin, fixtures::Fixtures};
use listsync_core::server::ServerConfig;
use listsync_core::vocab::{AuthCtx, Kind, Op};
use rmcp::ServiceExt;
use std::path::PathBuf;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Where the server speaks MCP.
#[derive(Clone, Debug, Default)]
pub enum ServeTransport {
    /// stdin/stdout.
    #[default]
    Stdio,
    /// Streamable HTTP on a loopback address (port 0 picks a free one), with its security
    /// options.
    #[cfg(feature = "http")]
    Http {
        /// The address to listen on.
        addr: std::net::SocketAddr,
        /// Tokens, origins, caps.
        options: HttpOptions,
    },
}

/// What `listsync serve` serves, and how.
#[derive(Clone, Default)]
pub struct ServeOptions {
    /// Where MCP is spoken.
    pub transport: ServeTransport,
    /// The registry's configuration (strategy, era, page size, ttl, retained versions, catalog
    /// id).
    pub core: ServerConfig,
    /// Ops of the initial catalog, if given (after the fixture set's items).
    pub initial: Option<Vec<Op>>,
    /// A named fixture set added to the initial catalog.
    pub fixtures: Option<Fixtures>,
    /// An empty catalog. Without it, `initial` and `fixtures`, the demo catalog is served.
    pub empty: bool,
    /// A Unix socket to listen on for `listsync change` (mode 0600; an existing path is refused).
    pub admin_socket: Option<PathBuf>,
    /// The harness control channel's Unix socket (feature `harness`; without it, giving one is
    /// an error).
    pub control: Option<PathBuf>,
    /// A schedule of batches the server applies to itself.
    #[cfg(feature = "harness")]
    pub script: Option<Arc<crate::script::Script>>,
    /// Stop this long after the script's last step.
    #[cfg(feature = "harness")]
    pub stop_after_script: Option<std::time::Duration>,
    /// Serve as one node of a multi-instance server whose catalog lives in Redis.
    #[cfg(feature = "cluster")]
    pub node: Option<crate::server::cluster::NodeOptions>,
}

/// What the server has to say while it runs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    /// The URL of the Streamable HTTP endpoint, once it listens (for stdout).
    Url(String),
    /// What it serves, where, a script's progress, a warning (for stderr, one line each).
    Diagnostic(String),
}

/// Where [`Output`] goes (called from several tasks).
pub type Say = Arc<dyn Fn(Output) + Send + Sync>;

/// The catalog the options ask for: the fixture set's items (the demo catalog when nothing else
/// was asked for), then the given ops; and the fixture set in force.
pub fn initial_catalog(opts: &ServeOptions) -> (Vec<Op>, Option<Fixtures>) {
    let given = if opts.empty {
        None
    } else {
        opts.initial.clone()
    };
    let demo = !opts.empty && given.is_none() && opts.fixtures.is_none();
    let fixtures = if demo {
        Some(Fixtures::Demo)
    } else {
        opts.fixtures
    };
    let given = given.unwrap_or_default();
    let ops = match fixtures {
        Some(f) => f.catalog().into_iter().chain(given).collect(),
        None => given,
    };
    (ops, fixtures)
}

fn failed(context: String) -> impl FnOnce(std::io::Error) -> std::io::Error {
    move |e| std::io::Error::new(e.kind(), format!("{context}: {e}"))
}

/// Serves until the transport ends (stdio), the control channel closes or says `shutdown`, the
/// script's stop, or Ctrl-C. Fails when something it was asked to open cannot be (a node that
/// cannot join its Redis, the admin socket, the HTTP address, the control socket).
pub async fn serve(opts: ServeOptions, say: Say) -> std::io::Result<()> {
    let note = {
        let say = say.clone();
        move |line: String| say(Output::Diagnostic(format!("listsync serve: {line}")))
    };
    #[cfg(not(feature = "harness"))]
    if let Some(path) = &opts.control {
        return Err(crate::no_control_channel(path));
    }
    let (initial, fixtures) = initial_catalog(&opts);
    let demo = fixtures == Some(Fixtures::Demo) && opts.fixtures.is_none();
    let settings = ServerSettings {
        core: opts.core,
        call_effects: fixtures.map(Fixtures::effects),
        ..ServerSettings::default()
    };
    // Said on HTTP and in the control channel's `ready`; unused with neither.
    #[cfg_attr(
        not(any(feature = "http", feature = "harness")),
        allow(unused_variables)
    )]
    let (era, strategy, page_size) = (
        settings.core.era,
        settings.core.strategy,
        settings.core.page_size,
    );
    #[cfg(feature = "cluster")]
    let (server, _node) = match &opts.node {
        Some(node_opts) => {
            let (name, redis) = (node_opts.node.clone(), node_opts.redis.clone());
            let node =
                crate::server::cluster::Node::join(settings, &initial, None, node_opts.clone())
                    .await
                    .map_err(|e| {
                        std::io::Error::other(format!(
                            "node {name}: cannot join the catalog in {redis}: {e}"
                        ))
                    })?;
            let health = node.server().health();
            note(format!(
                "node {name} joined {redis} (prefix {}): catalog {} at v{}",
                node_opts.prefix, health.catalog_id, health.version
            ));
            (node.server().clone(), Some(node))
        }
        None => (Server::new(settings, &initial, None), None),
    };
    #[cfg(not(feature = "cluster"))]
    let server = Server::new(settings, &initial, None);
    if demo {
        let c = server.catalog();
        let n = |k| c.visible(k, AuthCtx(0)).len();
        note(format!(
            "serving the demo catalog ({} tools, {} prompt, {} resource, {} resource template; \
             --initial OPS for your own, --empty for none)",
            n(Kind::Tools),
            n(Kind::Prompts),
            n(Kind::Resources),
            n(Kind::ResourceTemplates),
        ));
    }
    let stop = CancellationToken::new();
    let admin_socket = match &opts.admin_socket {
        Some(path) => {
            let socket = admin::listen(server.clone(), path)
                .await
                .map_err(failed(format!("admin socket {}", path.display())))?;
            note(format!(
                "admin socket {} (listsync change {} OP...)",
                path.display(),
                path.display()
            ));
            Some(socket)
        }
        None => None,
    };
    #[cfg(feature = "harness")]
    if let Some(script) = &opts.script {
        run_script(&server, script, opts.stop_after_script, &stop, &note);
    }

    #[cfg_attr(not(feature = "harness"), allow(unused_mut, unused_variables))]
    let mut extra = serde_json::json!({ "page_size": page_size });
    let transport_done = CancellationToken::new();
    #[cfg(feature = "http")]
    let mut http = None;
    match opts.transport {
        #[cfg(feature = "http")]
        ServeTransport::Http { addr, options } => {
            let admin = options.admin.is_some();
            let endpoint = server
                .serve_http_with(addr, options)
                .await
                .map_err(failed(format!("Streamable HTTP on {addr}")))?;
            let url = endpoint.url();
            say(Output::Url(url.clone()));
            note(format!(
                "Streamable HTTP {era} at {url} ({strategy}, page size {page_size})"
            ));
            if admin {
                note(format!(
                    "admin endpoint POST {} (listsync change {url} --token-file FILE OP...)",
                    url.replace("/mcp", "/admin/change")
                ));
            }
            extra["transport"] = serde_json::json!("http");
            extra["url"] = serde_json::json!(url);
            http = Some(endpoint);
        }
        ServeTransport::Stdio => {
            extra["transport"] = serde_json::json!("stdio");
            let service = server.service();
            let done = transport_done.clone();
            let note = note.clone();
            tokio::spawn(async move {
                // What the client sends that is not JSON-RPC is said (rmcp skips it silently).
                let warn = note.clone();
                let stdin =
                    crate::sniff::checked_stdin(Arc::new(move |m| warn(format!("warning: {m}"))));
                // A client that floods requests without reading the answers waits for them.
                let transport = crate::pace::paced(stdin, tokio::io::stdout());
                match service.serve(transport).await {
                    Ok(running) => {
                        let _ = running.waiting().await;
                    }
                    Err(e) => note(e.to_string()),
                }
                done.cancel();
            });
        }
    }

    #[cfg(feature = "harness")]
    let outbox = match &opts.control {
        Some(path) => {
            let info = crate::control::ReadyInfo {
                role: "server",
                era,
                variant: strategy.to_string(),
                extra,
            };
            let out = crate::control::run_server(server.clone(), path, info, stop.clone())
                .await
                .map_err(failed(format!("control socket {}", path.display())))?;
            Some(out)
        }
        None => None,
    };

    tokio::select! {
        _ = transport_done.cancelled() => {}
        _ = stop.cancelled() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
    #[cfg(feature = "http")]
    if let Some(endpoint) = http {
        endpoint.shutdown().await;
    }
    if let Some(socket) = admin_socket {
        socket.shutdown().await;
    }
    #[cfg(feature = "harness")]
    if let Some(out) = outbox {
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), out.flush()).await;
    }
    Ok(())
}

/// Runs `script` on `server`, saying its progress; cancels `stop` `after` its last step.
#[cfg(feature = "harness")]
fn run_script(
    server: &Server,
    script: &Arc<crate::script::Script>,
    after: Option<std::time::Duration>,
    stop: &CancellationToken,
    note: &(impl Fn(String) + Clone + Send + 'static),
) {
    if !script.description.is_empty() {
        let one_line = script
            .description
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        note(format!("script {}: {one_line}", script.origin));
    }
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let run = crate::script::run(server.clone(), script.clone(), tx, stop.clone());
    let end = stop.clone();
    tokio::spawn(async move {
        run.await;
        if let Some(after) = after {
            tokio::time::sleep(after).await;
            end.cancel();
        }
    });
    let note = note.clone();
    tokio::spawn(async move {
        while let Some(line) = rx.recv().await {
            note(format!("script: {line}"));
        }
    });
}
