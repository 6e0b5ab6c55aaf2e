//! Counterexample traces as sequence diagrams (SVG).
//!
//! [`build`] ([`build`](build::build), in `build.rs`) replays a trace through core's world with a recorder of its own and turns what
//! happened into a [`Diagram`]: one lane per participant (the server, or a cluster's store, bus
//! and nodes; a *network* lane holding the messages in flight; one lane per client), one row per
//! step, and inside each row one band per thing that happened, in order — a message delivered
//! (an arrow out of the network lane), a message sent (an arrow into it), a commit, a refresh, a
//! publication, a violation. Each message gets its own *track* in the network lane, a dashed
//! line from the row that sent it to the row that delivered (or lost) it, so overtaking and
//! messages left in flight are visible at a glance. The row of the step after which the trace's
//! property first fails (`Trace::replay`'s `first_violation`) is highlighted, with the
//! monitor's explanation; for a property judged when the world comes to rest, the highlight
//! moves to the step after which its violation was certain ([`listsync_core::certain`]: the
//! step that lost the wake-up or let the stale list in), and the last step keeps its note.
//!
//! [`render`] ([`draw`], over [`layout`]) lays the diagram out and writes SVG text: monospace labels (widths are estimated,
//! not measured), no scripts, no external resources. Elements carry classes and `data-*`
//! attributes (`lane`/`data-lane`, `row`/`data-step`, `violation`/`data-property`) that the tests
//! read back.
//!
//! Files: this one holds the diagram's model; `build.rs` turns a trace into one; `fold.rs`
//! removes the clients (and nodes) the violation does not name; `layout.rs` places lanes, rows
//! and tracks; `draw.rs` writes the SVG.

mod build;
mod draw;
mod fold;
mod layout;

pub use build::{build, step_label};
pub use draw::render;

use anyhow::Result;
use listsync_core::history::ClientId;
use listsync_core::property::Property;
use listsync_core::trace::Trace;

/// Who a lane stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LaneKind {
    /// A cluster's shared store.
    Store,
    /// A cluster's change bus (events in flight to nodes).
    Bus,
    /// The server, or node `n` of a cluster.
    Server(u8),
    /// Client–server messages in flight.
    Network,
    /// A client.
    Client(ClientId),
}

/// One lane.
#[derive(Clone, Debug)]
pub struct DiagramLane {
    /// Who.
    pub kind: LaneKind,
    /// Its name (`server`, `node 1`, `c0`, `network`...), also its `data-lane` attribute.
    pub name: String,
    /// A second header line (strategy, role).
    pub about: String,
}

/// How a note is drawn.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    /// Ordinary.
    Plain,
    /// A publication (what applications read).
    Key,
    /// Worth attention (stale marking, failure, fault).
    Warn,
    /// Wrong (a violation's cause).
    Bad,
}

/// The kind of a message, which sets its colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsgKind {
    /// Client to server.
    Request,
    /// Server to client, answering a request.
    Response,
    /// Server to client, unsolicited.
    Notification,
    /// Store to node, on the bus.
    Bus,
}

/// One band of a row.
#[derive(Clone, Debug)]
pub enum Band {
    /// Something a participant did or noticed, drawn as a box on its lane.
    Note {
        /// Lane index.
        lane: usize,
        /// Text.
        text: String,
        /// Style.
        tone: Tone,
    },
    /// A message put in flight: an arrow from a lane into its track.
    Send {
        /// Sending lane.
        from: usize,
        /// Track of the message (None if it could not be matched; then no track is drawn).
        track: Option<usize>,
        /// The message.
        text: String,
    },
    /// A message delivered: an arrow from its track to the receiving lane.
    Deliver {
        /// Receiving lane.
        to: usize,
        /// Track of the message.
        track: Option<usize>,
        /// The message.
        text: String,
    },
    /// The network lost a message.
    Lost {
        /// Its track.
        track: usize,
    },
    /// The network delivers a message twice: a second track branches off the first.
    Copy {
        /// The new track.
        track: usize,
        /// The copied one, if known.
        of: Option<usize>,
    },
    /// A property fails here.
    Violation {
        /// Which.
        property: Property,
        /// The monitor's explanation.
        text: String,
        /// Whether it is the property the trace shows.
        primary: bool,
    },
}

/// One row: one step of the trace (or the initial state, or the final state).
#[derive(Clone, Debug)]
pub struct DiagramRow {
    /// Step index; None for the rows before the first step and after the last.
    pub step: Option<usize>,
    /// The step as text.
    pub label: String,
    /// What happened, in order.
    pub lines: Vec<Band>,
    /// The property the trace shows, if it first fails at this step.
    pub violation: Option<Property>,
}

/// One message's life in a network (or bus) lane.
#[derive(Clone, Debug)]
pub struct Track {
    /// Network or bus lane.
    pub lane: usize,
    /// The lane at its far end: the client a network message goes to or comes from, the node a
    /// bus event goes to.
    pub party: usize,
    /// Colour.
    pub kind: MsgKind,
    /// (row, line) where it was sent.
    pub start: (usize, usize),
    /// (row, line) where it was delivered or lost; None while in flight at the end.
    pub end: Option<(usize, usize)>,
    /// Whether it was lost.
    pub lost: bool,
    /// Column within the lane (assigned by [`render`]).
    pub slot: usize,
}

/// A trace as a sequence diagram.
#[derive(Clone, Debug)]
pub struct Diagram {
    /// First header line.
    pub title: String,
    /// Second header line: strategies, era, transport.
    pub subtitle: String,
    /// The violation's explanation.
    pub detail: Option<String>,
    /// Lanes, left to right.
    pub lanes: Vec<DiagramLane>,
    /// Rows, top to bottom.
    pub rows: Vec<DiagramRow>,
    /// Messages.
    pub tracks: Vec<Track>,
    /// Step index at which the shown property first fails (at rest: becomes certain to).
    pub first_violation: Option<usize>,
}

/// Parses and renders a trace file's text.
pub fn trace_to_svg(json: &str) -> Result<String> {
    let trace = Trace::from_json(json)?;
    Ok(render(&build(&trace)?))
}
