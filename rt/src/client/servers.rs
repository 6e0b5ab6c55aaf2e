//! One application connected to several servers: [`Servers`] holds one [`ClientHandle`] per
//! server under the key the application configured for it, shows their tools as one combined
//! listing built by core's [`aggregate`] from each handle's published tools snapshot (no
//! registry of its own), and routes a call made under a combined name to the member it came
//! from. Each member stays its own client, with its own cache; a member's `serverInfo.name` is
//! read from its status and is the empty string until its first handshake (no tools are
//! published before one, and the reference prefixes never use it).

use super::{CallResult, ClientHandle};
use listsync_core::aggregate::{self, CombinedEntry, Member};
use listsync_core::client::CallError;
use listsync_core::strategy::ClientStrategy;
use listsync_core::vocab::Item;

/// Why a call under a combined name did not run.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServersError {
    /// No entry of the current combined listing has this name; nothing was sent.
    #[error("no tool '{0}' in the combined listing")]
    Unknown(String),
    /// The member the name routes to did not run the call.
    #[error("{key}: call of '{tool}' failed: {error:?}")]
    Call {
        /// The member's configured key.
        key: String,
        /// The tool name as that member's server lists it.
        tool: String,
        /// Why.
        error: CallError,
    },
}

/// Several named clients shown as one combined tool listing.
#[derive(Clone)]
pub struct Servers {
    strategy: ClientStrategy,
    keys: Vec<String>,
    handles: Vec<ClientHandle>,
}

impl Servers {
    /// The members, in order, under their configured keys (checked with
    /// [`aggregate::check_members`]: valid and unique), prefixed as `strategy` prefixes them
    /// (see [`aggregate::prefix`]). Each handle keeps its list as its own settings say; an
    /// application using `prefix-from-server-info` runs its members as `reference`.
    pub fn new(
        strategy: ClientStrategy,
        members: Vec<(String, ClientHandle)>,
    ) -> Result<Servers, String> {
        let (keys, handles): (Vec<String>, Vec<ClientHandle>) = members.into_iter().unzip();
        let servers = Servers {
            strategy,
            keys,
            handles,
        };
        aggregate::check_members(&servers.members())?;
        Ok(servers)
    }

    /// The prefixing strategy.
    pub fn strategy(&self) -> ClientStrategy {
        self.strategy
    }

    /// The members' keys and handles, in order (an [`Entry::member`] indexes this).
    pub fn handles(&self) -> impl Iterator<Item = (&str, &ClientHandle)> {
        self.keys.iter().map(String::as_str).zip(&self.handles)
    }

    /// The handle configured under `key`.
    pub fn handle(&self, key: &str) -> Option<&ClientHandle> {
        self.keys
            .iter()
            .position(|k| k == key)
            .map(|i| &self.handles[i])
    }

    /// The members as they are now: configured key, and the `serverInfo.name` the current
    /// (or last) connection reported, empty before the first.
    pub fn members(&self) -> Vec<Member> {
        self.handles()
            .map(|(key, h)| Member {
                key: key.to_owned(),
                server_name: h.status().borrow().server_name.clone().unwrap_or_default(),
            })
            .collect()
    }

    /// The combined listing of the members' current tools snapshots (a member that has not
    /// listed yet contributes nothing), sorted by combined name.
    pub fn listing(&self) -> Vec<CombinedEntry> {
        let views: Vec<_> = self.handles.iter().map(ClientHandle::tools).collect();
        let lists: Vec<Option<&[Item]>> = views
            .iter()
            .map(|v| v.fetched.then_some(&v.items[..]))
            .collect();
        aggregate::combined(self.strategy, &self.members(), &lists)
    }

    /// Calls the tool the current combined listing shows as `name`, on the member it came from.
    pub async fn call(&self, name: &str) -> Result<CallResult, ServersError> {
        let listing = self.listing();
        let entry =
            aggregate::route(&listing, name).ok_or_else(|| ServersError::Unknown(name.into()))?;
        let tool = entry.item.name.to_string();
        self.handles[entry.member]
            .call(&tool)
            .await
            .map_err(|error| ServersError::Call {
                key: self.keys[entry.member].clone(),
                tool,
                error,
            })
    }

    /// Stops every member.
    pub fn shutdown(&self) {
        for h in &self.handles {
            h.shutdown();
        }
    }
}
