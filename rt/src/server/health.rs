//! A server's health: the catalog version it serves and, for a node of a multi-instance server,
//! whether it is following the shared store or cut off from it (stale: still serving its last
//! version, which may be out of date). `GET /health` on the HTTP endpoint answers it as JSON;
//! `listsync serve` also logs every change and reports it on the control channel.

use serde_json::{Value, json};

/// What a server reports about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HealthReport {
    /// The node's name (multi-instance servers only).
    pub node: Option<String>,
    /// Catalog version visible to list requests.
    pub version: u64,
    /// Version space of `version` (shared by every node of a cluster).
    pub catalog_id: u64,
    /// Why the node is stale (cut off from the shared store), if it is.
    pub stale: Option<String>,
}

impl HealthReport {
    /// Whether the node is cut off from the shared store.
    pub fn is_stale(&self) -> bool {
        self.stale.is_some()
    }

    /// `"current"` or `"stale"`.
    pub fn state(&self) -> &'static str {
        if self.is_stale() { "stale" } else { "current" }
    }

    /// As JSON: `{"state", "version", "catalog_id", "node"?, "reason"?}`.
    pub fn to_json(&self) -> Value {
        let mut v = json!({
            "state": self.state(),
            "version": self.version,
            "catalog_id": self.catalog_id,
        });
        if let Some(n) = &self.node {
            v["node"] = json!(n);
        }
        if let Some(r) = &self.stale {
            v["reason"] = json!(r);
        }
        v
    }
}

impl std::fmt::Display for HealthReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(n) = &self.node {
            write!(f, "node {n}: ")?;
        }
        match &self.stale {
            None => write!(f, "current at v{}", self.version),
            Some(r) => write!(
                f,
                "STALE, still serving v{} (cut off from the shared store: {r})",
                self.version
            ),
        }
    }
}
