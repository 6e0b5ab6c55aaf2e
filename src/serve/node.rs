//! `listsync serve --redis URL --node NAME`: one node of a multi-instance server. The catalog
//! and its version live in Redis; control-channel batches on any node commit there, and every
//! node installs each new version before it notifies its own clients. The node's health (current,
//! or stale while cut off from Redis) is logged, answered on `GET /health`, and reported on the
//! control channel as `health` events ([`listsync_rt::control::run_server`]).

use listsync_rt::server::cluster::NodeOptions;

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

impl ClusterArgs {
    /// The node to serve as, with --redis and --node (else a standalone server).
    pub fn node_options(&self) -> Option<NodeOptions> {
        let (Some(redis), Some(name)) = (&self.redis, &self.node) else {
            return None;
        };
        let mut opts = NodeOptions::new(redis, name);
        opts.prefix = self.redis_prefix.clone();
        Some(opts)
    }
}
