//! Hosts under test: the programs that read an MCP server's list, offer its tools to a model and
//! dispatch the model's calls (Claude Code, agent CLIs, our own `stale` and `careful` hosts).
//! The host is driven by a scripted model ([`model_server`]) following a [`plan`], and described
//! by a [`manifest`] (`harness/hosts/NAME/host.toml`, docs/hosts.md). Running and judging a host
//! is the `listsync-host` crate's; a run's [`summary`] is what the hosts page is rendered from.

pub mod manifest;
pub mod model_server;
pub mod plan;
pub mod summary;
