//! Judging a multi-instance run: one history from several processes, core's checkers on it, and
//! what each node did in its own order.
//!
//! # One history from several processes
//!
//! Clients record into one in-process [`SharedHistory`](listsync_rt::history::SharedHistory), in
//! the order they step. Each node reports its own events on its control channel, in its own order;
//! they are merged by arrival. A node records the store's commit of a version (`Committed`) when it
//! takes that version, before the notifications that announce it. Arrival order across processes is
//! not causal order (a client may publish a version before the control event of the node that took
//! it has been read), so each `Committed` is placed just before the first client event that needs
//! it: a publication of the list that version shows (the earliest commit not yet placed that shows it,
//! unless one placed already does; publications are observed from the clients' readers and carry
//! no version), or a quiescence point at that version. Commits are
//! deduplicated by version (every node reports every version it takes), and the test fails if two
//! nodes report different catalogs for one version. Node session ids are renamed per node (every
//! node numbers its sessions from the same base).

use super::rig::Rig;
use listsync_core::history::{ClientId, Event};
use listsync_core::vocab::{Catalog, Digest};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl Rig {
    /// The run's history: client events with node events merged in (see the module doc).
    pub fn merged(&self) -> Vec<Event> {
        let client_events = self.history.events();
        let arrived = self.node_events.events.lock().unwrap().clone();
        let mut commits: BTreeMap<u64, Arc<Catalog>> = BTreeMap::new();
        for a in &arrived {
            if let Event::Committed { version, catalog } = &a.event {
                let prev = commits.entry(*version).or_insert_with(|| catalog.clone());
                assert_eq!(
                    prev, catalog,
                    "two nodes report different catalogs for v{version}"
                );
            }
        }
        let quiescent: HashMap<usize, u64> = self.quiescent.iter().copied().collect();
        let mut out = Vec::new();
        let commits: Vec<(u64, Arc<Catalog>)> = commits.into_iter().collect();
        // Commits placed so far: `commits[..placed]`.
        let mut placed = 0;
        let mut ni = 0;
        for (i, e) in client_events.iter().enumerate() {
            while ni < arrived.len() && arrived[ni].at <= i {
                if !matches!(arrived[ni].event, Event::Committed { .. }) {
                    out.push(rename(arrived[ni].node, &arrived[ni].event));
                }
                ni += 1;
            }
            let need = match e {
                Event::Published {
                    kind, auth, items, ..
                } => {
                    // A publish is observed (what the client's readers read), undated: it needs
                    // the commit of the list it shows, unless a placed commit shows it already.
                    let d = Digest::of(items);
                    let shows = |c: &Catalog| Digest::of(&c.visible(*kind, *auth)) == d;
                    if commits[..placed].iter().any(|(_, c)| shows(c)) {
                        0
                    } else {
                        commits[placed..]
                            .iter()
                            .find(|(_, c)| shows(c))
                            .map_or(0, |(v, _)| *v)
                    }
                }
                Event::Quiescent { .. } => quiescent[&i],
                _ => 0,
            };
            while let Some((version, catalog)) = commits.get(placed)
                && *version <= need
            {
                out.push(Event::Committed {
                    version: *version,
                    catalog: catalog.clone(),
                });
                placed += 1;
            }
            out.push(e.clone());
        }
        for a in &arrived[ni..] {
            if !matches!(a.event, Event::Committed { .. }) {
                out.push(rename(a.node, &a.event));
            }
        }
        out.extend(
            commits[placed..]
                .iter()
                .map(|(version, catalog)| Event::Committed {
                    version: *version,
                    catalog: catalog.clone(),
                }),
        );
        out
    }

    /// Each node's own events, in its order.
    pub fn node_stream(&self, node: usize) -> Vec<Event> {
        self.node_events
            .events
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.node == node)
            .map(|a| a.event.clone())
            .collect()
    }

    /// Judges the run: core's checkers on the merged history hold; on every node, each
    /// notification announces a version the node had taken (and made visible) before sending
    /// it; the versions each node took strictly increase; and the store's final catalog is the
    /// one the nodes report for its version. Returns the merged history.
    pub async fn judge(&self) -> Vec<Event> {
        let events = self.merged();
        let j = listsync_core::monitor::judge(&events);
        let keep = std::env::var_os("LISTSYNC_KEEP_HISTORY").is_some();
        if keep || !j.violations.is_empty() {
            let path = std::env::temp_dir().join(format!(
                "listsync-cluster-history-{}.txt",
                self.dir
                    .file_name()
                    .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
            ));
            let text: Vec<String> = events
                .iter()
                .enumerate()
                .map(|(i, e)| format!("{i:5}: {e}"))
                .collect();
            let _ = std::fs::write(&path, text.join("\n"));
            eprintln!(
                "history ({} events) written to {}",
                events.len(),
                path.display()
            );
        }
        if !j.violations.is_empty() {
            let path = "(see above)";
            panic!(
                "violations: {:#?}\nhistory ({} events) {path}",
                &j.violations[..j.violations.len().min(5)],
                events.len(),
            );
        }
        for node in &self.nodes {
            let mut taken = 0u64;
            for e in self.node_stream(node.index) {
                match e {
                    Event::Committed { version, .. } => {
                        assert!(
                            version > taken,
                            "node {} took v{version} after v{taken}",
                            node.name
                        );
                        taken = version;
                    }
                    Event::Notified {
                        announces, visible, ..
                    } => {
                        assert!(
                            announces <= taken && announces <= visible,
                            "node {} announced v{announces} having taken v{taken} (visible v{visible})",
                            node.name
                        );
                    }
                    _ => {}
                }
            }
        }
        let (v, catalog) = self.truth().await;
        let reported = events.iter().rev().find_map(|e| match e {
            Event::Committed { version, catalog } if *version == v => Some(catalog.clone()),
            _ => None,
        });
        assert_eq!(
            reported.as_deref(),
            Some(&catalog),
            "the nodes' v{v} is not the store's"
        );
        events
    }
}

/// Renames a node's session ids into a per-node range.
fn rename(node: usize, e: &Event) -> Event {
    let r = |c: &ClientId| (node as ClientId + 1) * 1_000_000 + c;
    let mut e = e.clone();
    match &mut e {
        Event::Connected { client }
        | Event::Notified { client, .. }
        | Event::Served { client, .. }
        | Event::Dispatched { client, .. }
        | Event::CallRejected { client, .. } => *client = r(client),
        _ => {}
    }
    e
}
