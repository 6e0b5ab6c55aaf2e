//! What a step of the world records: the history events its machines emit, and typed
//! [`Note`]s of what else happened (a message sent or received, a batch applied, a fault, a
//! timer). Readers match on the notes (the diagram builder, the harness's lockstep log) and
//! print them with `Display` (`listsync trace show`); nothing parses their text.

use crate::client::CallError;
use crate::history::{ClientId, Event};
use crate::property::Property;
use crate::vocab::{AuthCtx, Kind, Name, Op};
use crate::wire::{ClientMsg, ServerMsg};
use crate::world::Link;
use std::fmt;
use std::sync::Arc;

/// Something that happened during a step, besides history events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// The monitor found a violation at the last event.
    Violation {
        /// The property.
        property: Property,
        /// Why.
        detail: String,
    },
    /// The server put a message on a client's connection.
    ServerSends {
        /// Receiving client.
        to: ClientId,
        /// The message.
        msg: ServerMsg,
    },
    /// A client put a request on its connection.
    ClientSends {
        /// Sending client.
        client: ClientId,
        /// The request.
        msg: ClientMsg,
    },
    /// The server took a request off a client's connection.
    ServerReceives {
        /// Sending client.
        client: ClientId,
        /// The request.
        msg: ClientMsg,
    },
    /// A client took a message off its connection.
    ClientReceives {
        /// Receiving client.
        client: ClientId,
        /// The message.
        msg: ServerMsg,
    },
    /// A client armed a retry timer.
    RetryArmed {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Attempt number.
        attempt: u8,
        /// Delay.
        delay_ms: u32,
    },
    /// A client held a walk back until its pacing timer fires.
    WalkHeld {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Delay.
        delay_ms: u32,
    },
    /// A client's refresh failed; it kept its snapshot.
    RefreshFailed {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
        /// Why.
        error: String,
    },
    /// (2026-07-28) The server refused a client's `subscriptions/listen` as an unknown method:
    /// the client goes on without change notifications.
    ListenRefused {
        /// Client.
        client: ClientId,
        /// The server's answer.
        error: String,
    },
    /// A client's tool call finished.
    CallDone {
        /// Client.
        client: ClientId,
        /// Tool.
        name: Name,
        /// The definition that ran, or why not.
        result: Result<Arc<str>, CallError>,
    },
    /// A watched resource's content reached a client.
    Content {
        /// Client.
        client: ClientId,
        /// Resource URI.
        uri: Name,
        /// Content.
        text: Arc<str>,
    },
    /// The administrator applied a scripted batch.
    AdminApplies {
        /// Index in the script.
        batch: u8,
        /// Its ops.
        ops: Vec<Op>,
    },
    /// (cluster) The shared store committed a version and sent a change event to every node.
    StoreCommits {
        /// Version.
        version: u64,
    },
    /// (cluster) The bus will deliver an event twice.
    BusDuplicates {
        /// Node.
        node: u8,
        /// Version the event announces.
        version: u64,
    },
    /// (cluster) The bus lost an event.
    BusLoses {
        /// Node.
        node: u8,
        /// Version the event announces.
        version: u64,
    },
    /// (cluster) A node received a change event.
    BusDelivers {
        /// Node.
        node: u8,
        /// Version the event announces.
        version: u64,
    },
    /// (cluster) A node made a store version visible.
    NodeTakes {
        /// Node.
        node: u8,
        /// Version.
        version: u64,
    },
    /// (cluster) A node behind the store with no event pending read the store.
    NodePolls {
        /// Node.
        node: u8,
    },
    /// (cluster) A node loaded the version it had already announced.
    NodeLoads {
        /// Node.
        node: u8,
        /// Version.
        version: u64,
    },
    /// (cluster) A client's connection moved to another node.
    ClientMoves {
        /// Client.
        client: ClientId,
        /// The node it reconnects to.
        to: u8,
    },
    /// The network delivers the notification at the head of a client's link twice.
    NetworkDuplicates {
        /// Client.
        client: ClientId,
    },
    /// The network lost the notification at the head of a client's link.
    NetworkLoses {
        /// Client.
        client: ClientId,
    },
    /// A tool call on its way to the server failed with an internal error in the server's
    /// place.
    CallFails {
        /// Calling client.
        client: ClientId,
        /// Tool.
        name: Name,
    },
    /// A list request on its way to the server failed with an internal error in the server's
    /// place.
    ListFails {
        /// Listing client.
        client: ClientId,
        /// List kind.
        kind: Kind,
    },
    /// The application switched a client's authorization context.
    AuthSwitch {
        /// Client.
        client: ClientId,
        /// The new context.
        auth: AuthCtx,
    },
    /// The application called a tool.
    AppCalls {
        /// Client.
        client: ClientId,
        /// Tool.
        name: Name,
    },
    /// The user approved a tool as the client lists it.
    UserApproves {
        /// Client.
        client: ClientId,
        /// Tool.
        name: Name,
    },
    /// A client's cached list ran out of `ttlMs`.
    TtlRunsOut {
        /// Client.
        client: ClientId,
        /// List kind.
        kind: Kind,
    },
    /// A client's connection was cut.
    ConnectionCut {
        /// Client.
        client: ClientId,
    },
    /// A cut client connected again.
    Reconnects {
        /// Client.
        client: ClientId,
    },
}

impl Note {
    /// The client a note is about, if one.
    pub fn client(&self) -> Option<ClientId> {
        match self {
            Note::ServerSends { to: c, .. }
            | Note::ClientSends { client: c, .. }
            | Note::ServerReceives { client: c, .. }
            | Note::ClientReceives { client: c, .. }
            | Note::RetryArmed { client: c, .. }
            | Note::WalkHeld { client: c, .. }
            | Note::RefreshFailed { client: c, .. }
            | Note::ListenRefused { client: c, .. }
            | Note::CallDone { client: c, .. }
            | Note::Content { client: c, .. }
            | Note::ClientMoves { client: c, .. }
            | Note::NetworkDuplicates { client: c }
            | Note::NetworkLoses { client: c }
            | Note::CallFails { client: c, .. }
            | Note::ListFails { client: c, .. }
            | Note::AuthSwitch { client: c, .. }
            | Note::AppCalls { client: c, .. }
            | Note::UserApproves { client: c, .. }
            | Note::TtlRunsOut { client: c, .. }
            | Note::ConnectionCut { client: c }
            | Note::Reconnects { client: c } => Some(*c),
            _ => None,
        }
    }
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::Violation { property, detail } => write!(f, "VIOLATION {property}: {detail}"),
            Note::ServerSends { to, msg } => write!(f, "server -> c{to}: {}", msg.describe()),
            Note::ClientSends { client, msg } => {
                write!(f, "c{client} -> server: {}", msg.describe())
            }
            Note::ServerReceives { client, msg } => {
                write!(f, "server receives from c{client}: {}", msg.describe())
            }
            Note::ClientReceives { client, msg } => {
                write!(f, "c{client} receives: {}", msg.describe())
            }
            Note::RetryArmed {
                client,
                kind,
                attempt,
                delay_ms,
            } => write!(
                f,
                "c{client} arms retry {attempt} of {kind} in {delay_ms} ms"
            ),
            Note::WalkHeld {
                client,
                kind,
                delay_ms,
            } => write!(f, "c{client} holds its walk of {kind} for {delay_ms} ms"),
            Note::RefreshFailed {
                client,
                kind,
                error,
            } => write!(f, "c{client} refresh of {kind} failed: {error}"),
            Note::ListenRefused { client, error } => write!(
                f,
                "c{client} listen refused ({error}): no change notifications"
            ),
            Note::CallDone {
                client,
                name,
                result,
            } => write!(f, "c{client} call {name}: {result:?}"),
            Note::Content { client, uri, text } => write!(f, "c{client} content {uri}={text}"),
            Note::AdminApplies { batch, ops } => write!(
                f,
                "admin applies batch {batch}: {}",
                ops.iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            Note::StoreCommits { version } => {
                write!(f, "store commits v{version}; bus event to every node")
            }
            Note::BusDuplicates { node, version } => {
                write!(f, "bus duplicates event v{version} to node {node}")
            }
            Note::BusLoses { node, version } => {
                write!(f, "bus loses event v{version} to node {node}")
            }
            Note::BusDelivers { node, version } => {
                write!(f, "node {node} receives bus event v{version}")
            }
            Note::NodeTakes { node, version } => write!(f, "node {node} takes v{version}"),
            Note::NodePolls { node } => write!(f, "node {node} polls the store"),
            Note::NodeLoads { node, version } => write!(f, "node {node} loads v{version}"),
            Note::ClientMoves { client, to } => write!(f, "c{client} reconnects to node {to}"),
            Note::NetworkDuplicates { client } => {
                write!(f, "network duplicates a notification to c{client}")
            }
            Note::NetworkLoses { client } => {
                write!(f, "network loses a notification to c{client}")
            }
            Note::CallFails { client, name } => {
                write!(f, "c{client}'s call of {name} fails with an internal error")
            }
            Note::ListFails { client, kind } => {
                write!(f, "c{client}'s list of {kind} fails with an internal error")
            }
            Note::AuthSwitch { client, auth } => write!(f, "c{client} switches to {auth}"),
            Note::AppCalls { client, name } => write!(f, "c{client} application calls {name}"),
            Note::UserApproves { client, name } => write!(f, "c{client} user approves {name}"),
            Note::TtlRunsOut { client, kind } => write!(f, "c{client} {kind} ttl runs out"),
            Note::ConnectionCut { client } => write!(f, "c{client} connection cut"),
            Note::Reconnects { client } => write!(f, "c{client} reconnects"),
        }
    }
}

/// A sink for what happens during a step.
pub trait Recorder {
    /// A history event.
    fn event(&mut self, e: &Event);
    /// Whether this recorder keeps notes (the world builds none for one that does not).
    fn wants_notes(&self) -> bool {
        true
    }
    /// What a client machine says about itself (that it started, restarted or ended a
    /// refresh, or published a list): an explanation of what it did, never evidence; the
    /// world judges from what it observes instead. Default: ignored.
    fn claim(&mut self, _e: &Event) {}
    /// A note.
    fn note(&mut self, note: Note);
    /// A message was put on `link` of `client`'s connection (schedulers use this to plan its
    /// delivery).
    fn sent(&mut self, _client: ClientId, _link: Link) {}
}

/// Records `make()` if the recorder keeps notes.
pub(crate) fn note(rec: &mut dyn Recorder, make: impl FnOnce() -> Note) {
    if rec.wants_notes() {
        rec.note(make());
    }
}

impl Recorder for () {
    fn event(&mut self, _: &Event) {}
    fn wants_notes(&self) -> bool {
        false
    }
    fn note(&mut self, _: Note) {}
}

/// Records events, and events and notes in order as text.
#[derive(Clone, Debug, Default)]
pub struct Log {
    /// Events.
    pub events: Vec<Event>,
    /// Events and notes, interleaved, as text.
    pub lines: Vec<String>,
}

impl Recorder for Log {
    fn event(&mut self, e: &Event) {
        self.events.push(e.clone());
        self.lines.push(e.to_string());
    }
    fn claim(&mut self, e: &Event) {
        self.lines.push(format!("(the client says) {e}"));
    }
    fn note(&mut self, note: Note) {
        self.lines.push(note.to_string());
    }
}
