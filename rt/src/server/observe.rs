//! The server's observer: the events rt's histories judge the server by, taken from what leaves
//! the server and from the administrator's ground truth — never from what the registry says
//! about itself. The registry's [`ServerOutput::Claim`]s (its commits, the visibility it
//! believes its notifications had, whether it believes a tool it ran was present) go to the
//! debug log and to control-channel observers as claims; nothing judges them
//! (`docs/design.md`, "Observed vs reported").
//!
//! | event | observed from |
//! |---|---|
//! | `Committed` | the ground truth: an administrator's batch ([`Server::apply`](super::Server::apply), the control channel's `mutate`, a conformance trigger tool) applied to the observer's own copy of the catalog, when it changes it; on a node of a multi-instance server, a version read from the shared store (a commit's result or the follower's read) newer than any seen |
//! | `Notified` | every `list_changed` handed to a session's transport, whatever asked for it (the registry, [`Server::notify`](super::Server::notify), a listen stream's queue or catch-up, a node's install). `announces`: the ground-truth version when the server produced the notification. `visible`: what a list request would be served at the moment it is handed over — the server is probed through its registry's request input (a sessionless copy taken with the registry locked, a session of its own, every page, under every authorization context the recent catalogs scope an item to), and each list is dated by the latest ground-truth version that shows it |
//! | `Dispatched` / `CallRejected` | the answer to a `tools/call`: a tool result is a dispatch, `present` when the ground truth holds the tool visible to the caller's authorization context at that moment; an error is a refusal |
//! | `Connected`, `Served` | the registry's own outputs: the server is the only witness of a session opened or a page served. A page's client, kind and context are the request's; its `version` is the ground-truth version when it was served, not the registry's word |
//!
//! The probe goes through the request input (what every rmcp handler calls) of a sessionless
//! copy of the registry rather than through rmcp: it takes no gate's occurrence, opens no
//! connection, and leaves the registry as it was (a walk could change the versions it retains
//! for cursors).

use listsync_core::history::{ClientId, Event};
use listsync_core::server::Registry;
use listsync_core::vocab::{AuthCtx, Catalog, Digest, Item, Kind, Name, Op, Scope};
use listsync_core::wire::Response;
use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

/// Ground-truth versions kept to date what a probe saw. A probe that shows a list older than
/// all of them (or of no version at all) dates to version 0: not visible, which is what it is.
const RECENT: usize = 64;

/// The observer's state: the ground truth and the recent versions of it.
#[derive(Debug)]
pub(crate) struct Observer {
    /// Latest ground-truth version and catalog (version 0: nothing known yet).
    version: u64,
    catalog: Arc<Catalog>,
    /// The last [`RECENT`] ground-truth versions, oldest first.
    recent: VecDeque<(u64, Arc<Catalog>)>,
}

impl Observer {
    /// An observer that knows nothing yet.
    pub(crate) fn new() -> Self {
        Observer {
            version: 0,
            catalog: Arc::new(Catalog::default()),
            recent: VecDeque::new(),
        }
    }

    /// The latest ground-truth version (0 before the first).
    pub(crate) fn version(&self) -> u64 {
        self.version
    }

    /// The latest ground-truth catalog.
    pub(crate) fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    fn commit(&mut self, version: u64, catalog: Arc<Catalog>) -> Event {
        self.version = version;
        self.catalog = catalog.clone();
        if self.recent.len() == RECENT {
            self.recent.pop_front();
        }
        self.recent.push_back((version, catalog.clone()));
        Event::Committed { version, catalog }
    }

    /// An administrator's batch: the `Committed` event of the new version if it changes the
    /// ground truth (a batch whose net effect is nothing is no new version).
    pub(crate) fn apply(&mut self, batch: &[Op]) -> Option<Event> {
        let mut next = (*self.catalog).clone();
        for op in batch {
            next.apply(op);
        }
        (next != *self.catalog).then(|| self.commit(self.version + 1, Arc::new(next)))
    }

    /// A version read from where the catalog lives (the initial catalog, a shared store): its
    /// `Committed` event if it is newer than any seen.
    pub(crate) fn learn(&mut self, version: u64, catalog: Arc<Catalog>) -> Option<Event> {
        (version > self.version).then(|| self.commit(version, catalog))
    }

    /// The observed event of the answer `resp` to a `tools/call` of `tool` from session
    /// `client` under `auth`.
    pub(crate) fn answer(
        &self,
        client: ClientId,
        auth: AuthCtx,
        tool: &Name,
        resp: &Response,
    ) -> Event {
        match resp {
            Response::ToolResult { .. } => Event::Dispatched {
                client,
                tool: tool.clone(),
                present: self
                    .catalog
                    .get(Kind::Tools, tool)
                    .is_some_and(|e| e.scope.visible_to(auth)),
            },
            _ => Event::CallRejected {
                client,
                tool: tool.clone(),
            },
        }
    }

    /// The observed event of the server running a call whose arguments (their schema
    /// fingerprint, from the request's `_meta`) were built for an input schema the tool's
    /// definition in the ground truth no longer has.
    pub(crate) fn stale_arguments(
        &self,
        client: ClientId,
        tool: &Name,
        schema: u64,
        resp: &Response,
    ) -> Option<Event> {
        if schema == 0 || !matches!(resp, Response::ToolResult { .. }) {
            return None;
        }
        let def = &self.catalog.get(Kind::Tools, tool)?.def;
        (listsync_core::vocab::schema_fingerprint(def) != schema).then(|| {
            Event::RanStaleArguments {
                client,
                tool: tool.clone(),
            }
        })
    }

    /// The version a list request to `reg` would be served now for a notification of `kind`
    /// that announces `announces`: the earliest, over the kinds the notification covers and
    /// every authorization context that sees a list of its own, of the latest ground-truth
    /// version showing what a probe of `reg` lists (0 if none does), and at most `announces`.
    pub(crate) fn visible(&self, reg: &Registry, kind: Kind, announces: u64) -> u64 {
        let mut visible = announces;
        for auth in self.contexts() {
            for k in kind.notification_group() {
                let seen = listsync_core::world::probe(reg, *k, auth)
                    .and_then(|items| self.version_of(*k, auth, &items))
                    .unwrap_or(0);
                visible = visible.min(seen);
            }
        }
        visible
    }

    /// The latest recent version whose `kind` list under `auth` is `items` (in any order).
    fn version_of(&self, kind: Kind, auth: AuthCtx, items: &[Item]) -> Option<u64> {
        let d = Digest::of(items);
        self.recent
            .iter()
            .rev()
            .find(|(_, c)| Digest::of(&c.visible(kind, auth)) == d)
            .map(|(v, _)| *v)
    }

    /// The authorization contexts whose lists may differ: context 0 (public items only) and
    /// every context a recent version scopes an item to.
    fn contexts(&self) -> BTreeSet<AuthCtx> {
        let mut out = BTreeSet::from([AuthCtx(0)]);
        for (_, c) in &self.recent {
            for e in c.items.values() {
                if let Scope::Only(a) = e.scope {
                    out.insert(a);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listsync_core::server::{ServerConfig, ServerInput};
    use listsync_core::strategy::ServerStrategy;

    fn tools(names: &[&str]) -> Vec<Op> {
        names
            .iter()
            .map(|n| Op::add(Kind::Tools, n, &format!("{n} v1")))
            .collect()
    }

    #[test]
    fn a_batch_that_changes_nothing_is_no_version() {
        let mut o = Observer::new();
        assert!(o.apply(&tools(&["a"])).is_some());
        assert_eq!(o.version(), 1);
        assert!(o.apply(&tools(&["a"])).is_none());
        let undo = [Op::add(Kind::Tools, "b", "b"), Op::remove(Kind::Tools, "b")];
        assert!(o.apply(&undo).is_none());
        assert!(matches!(
            o.apply(&[Op::remove(Kind::Tools, "a")]),
            Some(Event::Committed { version: 2, .. })
        ));
        assert!(o.learn(2, Arc::new(Catalog::default())).is_none());
        assert!(o.learn(5, Arc::new(Catalog::default())).is_some());
    }

    /// A registry that announces a batch before committing it is seen not to show it, whatever
    /// it claims; the reference registry shows it.
    #[test]
    fn the_probe_sees_what_a_list_request_would() {
        for (strategy, want) in [
            (ServerStrategy::Reference, 2),
            (ServerStrategy::NotifyBeforeCommit, 1),
            (ServerStrategy::LyingRegistry, 1),
        ] {
            let cfg = ServerConfig {
                strategy,
                page_size: 1,
                ..ServerConfig::default()
            };
            let mut o = Observer::new();
            let initial = Catalog::from_ops(&tools(&["a", "b"]));
            o.learn(1, Arc::new(initial.clone()));
            let mut reg = Registry::new(cfg, initial);
            let before = reg.clone();
            let batch = vec![Op::remove(Kind::Tools, "a")];
            o.apply(&batch);
            let mut out = Vec::new();
            reg.step(ServerInput::Apply(batch.into()), &mut out);
            let staged = reg.clone();
            assert_eq!(o.visible(&reg, Kind::Tools, 2), want, "{strategy}");
            assert_eq!(
                reg, staged,
                "{strategy}: the probe left the registry as it was"
            );
            assert_ne!(reg, before);
        }
    }

    #[test]
    fn a_removed_tool_that_runs_is_not_present() {
        let mut o = Observer::new();
        o.apply(&tools(&["a"]));
        o.apply(&[Op::remove(Kind::Tools, "a")]);
        let ran = Response::ToolResult {
            name: "a".into(),
            def: "a v1".into(),
        };
        assert!(matches!(
            o.answer(7, AuthCtx(0), &"a".into(), &ran),
            Event::Dispatched { present: false, .. }
        ));
    }
}
