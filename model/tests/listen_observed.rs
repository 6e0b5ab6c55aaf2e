//! `listen_then_list` is judged from the acknowledgement reaching the client, not from the
//! client's word that it took it: a client that takes the acknowledgement, never lists, and
//! never says it was acknowledged is still caught. Before the world observed acknowledgements
//! (`world::observe_input`), this machine passed `listen-without-relist`'s world.

use listsync_core::client::{
    Activity, CatalogClient, ClientConfig, ClientInput, ClientOutput, Snapshot,
};
use listsync_core::history::{ClientId, Event};
use listsync_core::machine::ClientMachine;
use listsync_core::property::{Property, Verdict};
use listsync_core::vocab::{AuthCtx, Kind};
use listsync_model::configs;
use std::sync::Arc;

/// listsync's own machine (here running `listen-without-relist`), its `ListenAcked` events
/// swallowed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
struct Mute(CatalogClient);

impl ClientMachine for Mute {
    fn new(id: ClientId, cfg: Arc<ClientConfig>) -> Self {
        Mute(CatalogClient::new(id, cfg))
    }
    fn step(&mut self, input: ClientInput, out: &mut Vec<ClientOutput>) {
        self.0.step(input, out);
        out.retain(|o| !matches!(o, ClientOutput::Event(Event::ListenAcked { .. })));
    }
    fn id(&self) -> ClientId {
        self.0.id()
    }
    fn with_id(&self, id: ClientId) -> Self {
        Mute(self.0.with_id(id))
    }
    fn config(&self) -> &ClientConfig {
        self.0.config()
    }
    fn auth(&self) -> AuthCtx {
        self.0.auth()
    }
    fn snapshot_for(&self, kind: Kind, auth: AuthCtx) -> Option<&Snapshot> {
        self.0.snapshot_for(kind, auth)
    }
    fn is_ready(&self) -> bool {
        self.0.is_ready()
    }
    fn is_idle(&self) -> bool {
        self.0.is_idle()
    }
    fn activity(&self) -> Activity {
        self.0.activity()
    }
    fn expectations(&self) -> Vec<(ClientId, Kind, AuthCtx)> {
        self.0.expectations()
    }
    fn retry_armed(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.0.retry_armed(kind, auth)
    }
    fn walk_held(&self, kind: Kind, auth: AuthCtx) -> bool {
        self.0.walk_held(kind, auth)
    }
    fn ttl_due(&self, server_version: u64) -> Vec<Kind> {
        self.0.ttl_due(server_version)
    }
    fn ttl_is_due(&self, server_version: u64) -> bool {
        self.0.ttl_is_due(server_version)
    }
}

#[test]
fn a_client_silent_about_its_acknowledged_listen_is_still_held_to_listing() {
    let config = configs::by_name("listen-without-relist").expect("a known-bad configuration");
    let r = listsync_model::check_client_in::<Mute>(&config);
    assert_eq!(
        r.verdicts.get(&Property::ListenThenList),
        Some(&Verdict::Violated),
        "{:?}",
        r.verdicts
    );
}
