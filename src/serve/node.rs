//! `listsync serve --redis URL --node NAME`: one node of a multi-instance server. The catalog
//! and its version live in Redis; control-channel batches on any node commit there, and every
//! node installs each new version before it notifies its own clients. The node's health (current,
//! or stale while cut off from Redis) is logged, answered on `GET /health`, and reported on the
//! control channel as `health` events ([`listsync_rt::control::run_server`]).

use anyhow::Context;
use listsync_core::vocab::Op;
use listsync_rt::server::cluster::{Node, NodeOptions};
use listsync_rt::server::{Server, ServerSettings};

/// The multi-instance flags of `listsync serve`.
#[derive(clap::Args)]
pub struct ClusterArgs {
    /// Keep the catalog in this Redis, shared with the other nodes of the same logical server
    /// (e.g. redis://127.0.0.1:6379). The first node up seeds it with the initial catalog.
    #[arg(long, value_name = "URL", requires = "node")]
    redis: Option<String>,
    /// This node's name (logs, health); needs --redis.
    #[arg(long, value_name = "NAME", requires = "redis")]
    node: Option<String>,
    /// Key prefix of the logical server in Redis (nodes with the same prefix serve one catalog).
    #[arg(
        long,
        value_name = "PREFIX",
        default_value = "listsync",
        requires = "redis"
    )]
    redis_prefix: String,
}

/// The server to serve: a node of a cluster with --redis, else a standalone server.
pub async fn server(
    args: &ClusterArgs,
    settings: ServerSettings,
    initial: &[Op],
) -> anyhow::Result<(Server, Option<Node>)> {
    let (Some(redis), Some(name)) = (&args.redis, &args.node) else {
        return Ok((Server::new(settings, initial, None), None));
    };
    let mut opts = NodeOptions::new(redis, name);
    opts.prefix = args.redis_prefix.clone();
    let node = Node::join(settings, initial, None, opts)
        .await
        .with_context(|| format!("node {name}: cannot join the catalog in {redis}"))?;
    let health = node.server().health();
    eprintln!(
        "listsync serve: node {name} joined {redis} (prefix {}): catalog {} at v{}",
        args.redis_prefix, health.catalog_id, health.version
    );
    Ok((node.server().clone(), Some(node)))
}
