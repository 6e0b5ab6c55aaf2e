//! Carrying out the sends the registry machine asks for: each session's notifications go to its
//! outlet — the rmcp `Peer` of a 2025-11-25 session, or the `SubscriptionSink` of a 2026-07-28
//! listen stream — and every send is awaited (with a timeout), so a caller knows the bytes were
//! handed to the transport before it returns.
//!
//! This is the one place a notification leaves the server, whichever path asked for it (the
//! registry, `Server::notify`, a listen stream's queue or catch-up, a node's install), so the
//! observer judges every `list_changed` here: just before it is handed over, the server is
//! probed for what a list request would be served, and once it was handed over the observed
//! `Notified` is recorded (see [`super::observe`]).

use super::{ServerNotice, Shared, lock};
use listsync_core::history::{ClientId, Event};
use listsync_core::server::ServerOutput;
use listsync_core::vocab::Kind;
use listsync_core::wire::{Notification, ServerMsg};
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::service::{Peer, RoleServer, SubscriptionSink};
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::task::JoinSet;

/// Where a session's notifications go.
#[derive(Clone)]
pub enum Outlet {
    /// A 2025-11-25 session (stdio connection or HTTP session with its GET stream).
    Peer(Peer<RoleServer>),
    /// A 2026-07-28 `subscriptions/listen` stream.
    Sink(SubscriptionSink),
    /// A listen stream registered in the registry whose sink is not attached yet: its
    /// notifications wait here (see the handler's `listen`).
    Pending(Vec<Tagged>),
}

/// A notification on its way to a session, with the ground-truth version it announces: the
/// latest one the server's observer knew of when the server produced the notification.
#[derive(Clone, Debug)]
pub struct Tagged {
    /// The notification.
    pub note: Notification,
    /// The ground-truth version it announces.
    pub announces: u64,
}

impl Shared {
    /// Delivers the `Send`s among `out`, produced when the ground truth was at version
    /// `announces` (responses are not expected here and are ignored). Returns how many
    /// notifications were handed to a transport.
    pub(crate) async fn deliver(self: &Arc<Self>, out: Vec<ServerOutput>, announces: u64) -> usize {
        let mut per: BTreeMap<ClientId, Vec<Tagged>> = BTreeMap::new();
        for o in out {
            if let ServerOutput::Send {
                to,
                msg: ServerMsg::Notification(n),
                ..
            } = o
            {
                if matches!(n, Notification::Acknowledged { .. }) {
                    continue; // rmcp sends the acknowledgement itself
                }
                per.entry(to)
                    .or_default()
                    .push(Tagged { note: n, announces });
            }
        }
        self.deliver_tagged(per).await
    }

    /// Delivers each session's notifications. Returns how many were handed to a transport.
    pub(crate) async fn deliver_tagged(
        self: &Arc<Self>,
        per: BTreeMap<ClientId, Vec<Tagged>>,
    ) -> usize {
        if per.is_empty() {
            return 0;
        }
        let mut tasks = JoinSet::new();
        {
            let mut outlets = lock(&self.outlets);
            for (to, notes) in per {
                match outlets.get_mut(&to) {
                    Some(Outlet::Pending(queue)) => queue.extend(notes),
                    Some(outlet) => {
                        let outlet = outlet.clone();
                        let shared = self.clone();
                        tasks.spawn(async move { shared.send_all(to, outlet, notes).await });
                    }
                    None => {} // the session has no connection any more
                }
            }
        }
        let mut sent = 0;
        while let Some(n) = tasks.join_next().await {
            sent += n.unwrap_or(0);
        }
        sent
    }

    async fn send_all(&self, to: ClientId, outlet: Outlet, notes: Vec<Tagged>) -> usize {
        let mut sent = 0;
        for Tagged { note: n, announces } in notes {
            let (method, uri) = match &n {
                Notification::ListChanged { kind, .. } => (kind.list_changed_method(), None),
                Notification::ResourceUpdated { uri, .. } => {
                    ("notifications/resources/updated", Some(uri.to_string()))
                }
                Notification::Acknowledged { .. } => continue,
            };
            #[cfg(feature = "harness")]
            self.gates
                .checkpoint(&crate::gate::GateTarget::Notification {
                    method: method.to_owned(),
                })
                .await;
            // What a list request would be served as this one is handed over.
            let observed = match &n {
                Notification::ListChanged { kind, .. } if self.watched() => Some(Event::Notified {
                    client: to,
                    kind: *kind,
                    announces,
                    visible: self.visible_now(*kind, announces),
                }),
                _ => None,
            };
            let send = send_one(&outlet, &n);
            match tokio::time::timeout(self.settings.delivery_timeout, send).await {
                Ok(Ok(())) => {
                    sent += 1;
                    self.count_sent(1);
                    if let Some(e) = &observed {
                        self.record_observed(e);
                    }
                    self.notice(ServerNotice::Sent {
                        session: to,
                        method,
                        uri,
                    });
                }
                // The session's transport closed or stalled: its client left or is stuck, which
                // is not this server's fault (the simulator injects it on purpose).
                Ok(Err(e)) => {
                    tracing::info!(session = to, method, "notification not sent: {e}");
                }
                Err(_) => {
                    tracing::info!(session = to, method, "notification timed out");
                }
            }
        }
        sent
    }
}

async fn send_one(outlet: &Outlet, n: &Notification) -> Result<(), String> {
    match (outlet, n) {
        (Outlet::Peer(p), Notification::ListChanged { kind, .. }) => match kind {
            Kind::Tools => p.notify_tool_list_changed().await,
            Kind::Prompts => p.notify_prompt_list_changed().await,
            Kind::Resources | Kind::ResourceTemplates => p.notify_resource_list_changed().await,
        }
        .map_err(|e| e.to_string()),
        (Outlet::Peer(p), Notification::ResourceUpdated { uri, .. }) => p
            .notify_resource_updated(ResourceUpdatedNotificationParam::new(uri.to_string()))
            .await
            .map_err(|e| e.to_string()),
        (Outlet::Sink(s), Notification::ListChanged { kind, .. }) => match kind {
            Kind::Tools => s.notify_tool_list_changed().await,
            Kind::Prompts => s.notify_prompt_list_changed().await,
            Kind::Resources | Kind::ResourceTemplates => s.notify_resource_list_changed().await,
        }
        .map_err(|e| e.to_string()),
        (Outlet::Sink(s), Notification::ResourceUpdated { uri, .. }) => s
            .notify_resource_updated(uri.to_string())
            .await
            .map_err(|e| e.to_string()),
        (_, Notification::Acknowledged { .. }) | (Outlet::Pending(_), _) => Ok(()),
    }
}
