//! The client's rmcp handler. rmcp runs each inbound notification in its own spawned task, so
//! callbacks run concurrently and in no particular order; this handler therefore only hands
//! each notification, tagged with the connection epoch, to the coalescing [`Inflow`] that wakes
//! the actor. All decisions are made by the one actor task that steps the catalog machine.

use super::inflow::Inflow;
use listsync_core::vocab::Kind;
use listsync_core::wire::{Notification, ServerMsg};
use rmcp::ClientHandler;
use rmcp::model::{ClientConfig, ResourceUpdatedNotificationParam};
use rmcp::service::{NotificationContext, RoleClient};

pub(crate) struct Notifier {
    pub(crate) epoch: u32,
    pub(crate) inflow: Inflow,
    pub(crate) info: ClientConfig,
}

impl Notifier {
    fn forward(&self, n: Notification, method: &'static str, uri: Option<String>) {
        self.inflow
            .push(self.epoch, ServerMsg::Notification(n), method, uri);
    }

    fn list_changed(&self, kind: Kind) {
        self.forward(
            Notification::ListChanged { kind, sub: None },
            kind.list_changed_method(),
            None,
        );
    }
}

impl ClientHandler for Notifier {
    fn get_info(&self) -> ClientConfig {
        self.info.clone()
    }

    async fn on_tool_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.list_changed(Kind::Tools);
    }

    async fn on_prompt_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.list_changed(Kind::Prompts);
    }

    async fn on_resource_list_changed(&self, _ctx: NotificationContext<RoleClient>) {
        self.list_changed(Kind::Resources);
    }

    async fn on_resource_updated(
        &self,
        p: ResourceUpdatedNotificationParam,
        _ctx: NotificationContext<RoleClient>,
    ) {
        self.forward(
            Notification::ResourceUpdated {
                uri: p.uri.as_str().into(),
                sub: None,
            },
            "notifications/resources/updated",
            Some(p.uri),
        );
    }
}
