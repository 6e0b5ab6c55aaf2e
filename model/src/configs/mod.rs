//! The named model configurations `listsync check` runs, each a small closed world with its
//! expected verdicts. Reference configurations must hold every applicable property, explored
//! exhaustively; each known-bad configuration puts one shipped bug in the same world and must be
//! caught. The table in `model/README.md` documents each with its state count and time.
//!
//! Each configuration is built by a function of its own, in the file of its family, which
//! states its world, what it shows, how it is explored, the properties it must violate and the
//! situations it must reach; [`all`] and [`deep`] list them in report order.

mod auth;
mod bad_clients;
mod bad_servers;
mod burst;
mod calls;
mod cluster;
mod deep;
mod large;
mod reference;
mod resources;
mod spec;

use crate::Search;
use listsync_core::property::{Property, Verdict, Verdicts};
use listsync_core::scenario::Scenario;
use listsync_core::situation::Situation;

/// One named configuration.
#[derive(Clone, Debug)]
pub struct Config {
    /// The world.
    pub scenario: Scenario,
    /// What it demonstrates.
    pub about: &'static str,
    /// How to explore it.
    pub search: Search,
    /// Properties expected to be violated (every other applicable one must hold).
    pub violates: &'static [Property],
    /// Situations the exploration must reach for its verdicts to mean something.
    pub situations: &'static [Situation],
}

impl Config {
    /// The configuration's name.
    pub fn name(&self) -> &str {
        &self.scenario.name
    }

    /// Expected verdict of every property.
    pub fn expected(&self) -> Verdicts {
        let v = Property::ALL
            .into_iter()
            .map(|p| {
                let v = if self.violates.contains(&p) {
                    Verdict::Violated
                } else {
                    Verdict::Holds
                };
                (p, v)
            })
            .collect();
        self.scenario.mask(&v)
    }

    /// Whether this is a reference configuration (every strategy `reference`).
    pub fn is_reference(&self) -> bool {
        self.violates.is_empty()
    }
}

/// Every configuration, in report order: reference configurations first, then one per
/// known-bad strategy.
pub fn all() -> Vec<Config> {
    let each: [fn() -> Config; 44] = [
        reference::reference,
        reference::http,
        reference::era_2026,
        reference::era_2026_lossy,
        reference::multi_client,
        auth::auth,
        resources::resources,
        reference::faults,
        reference::list_errors,
        calls::errors,
        calls::known_tools,
        calls::approvals,
        calls::schema_change,
        calls::migration,
        calls::two_servers_one_name,
        cluster::cluster,
        cluster::cluster_migrate,
        large::large,
        large::large_pair,
        large::large_2026,
        large::large_http,
        burst::burst,
        burst::burst_unbound,
        burst::burst_paced,
        bad_clients::naive,
        bad_clients::clear_then_fetch,
        bad_clients::first_page_only,
        bad_clients::request_id_guard,
        bad_clients::flag_cleared_after_await,
        bad_clients::listen_without_relist,
        bad_clients::lying_client,
        bad_servers::notify_before_commit,
        bad_servers::offset_cursor,
        bad_servers::notify_per_mutation,
        bad_servers::stale_dispatch,
        bad_servers::cluster_notify_before_visible,
        bad_servers::lying_registry,
        bad_servers::notify_on_noop,
        bad_clients::refresh_on_any_error,
        bad_clients::two_registries,
        bad_clients::known_tools_survive,
        bad_clients::approval_by_name,
        bad_servers::unvalidated_dispatch,
        bad_clients::prefix_from_server_info,
    ];
    each.into_iter().map(|build| build()).collect()
}

/// The deep suite (`listsync check --deep`): the reference machines in worlds far larger than the
/// default suite's, run by hand and bounded (`--max-states`: none finishes in hours); their
/// figures are committed in reports/model-check.md.
pub fn deep() -> Vec<Config> {
    vec![deep::clients(), deep::auth(), deep::cluster()]
}

/// The reference configurations that exercise only how a client keeps its tool list current
/// (and routes the application's calls by it): no approvals, authorization switches, watched
/// resources, several servers or known tools, and small enough to explore in seconds (the large ones are left to
/// `listsync check`). These are the worlds a refresh algorithm written outside listsync is
/// checked in (docs/library.md): the reference client holds every property in each.
pub fn list_refresh() -> Vec<Config> {
    const LARGE: &[&str] = &[
        "reference-large",
        "reference-large-pair",
        "reference-large-2026",
        "reference-large-http",
    ];
    all()
        .into_iter()
        .filter(|c| {
            let s = &c.scenario;
            c.is_reference()
                && !LARGE.contains(&c.name())
                && s.approvals.is_empty()
                && s.auth_changes.is_empty()
                && s.aggregate.is_none()
                && s.clients.iter().all(|k| {
                    k.watch.is_empty() && k.known.is_empty() && !k.ask_approval && !k.calls_by_name
                })
        })
        .collect()
}

/// Looks a configuration up by name (the default suite's, then the deep suite's).
pub fn by_name(name: &str) -> Option<Config> {
    all().into_iter().chain(deep()).find(|c| c.name() == name)
}
