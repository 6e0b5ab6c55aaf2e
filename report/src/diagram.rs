//! Counterexample traces as sequence diagrams (SVG).
//!
//! [`build`] replays a trace through core's world with a recorder of its own and turns what
//! happened into a [`Diagram`]: one lane per participant (the server, or a cluster's store, bus
//! and nodes; a *network* lane holding the messages in flight; one lane per client), one row per
//! step, and inside each row one band per thing that happened, in order — a message delivered
//! (an arrow out of the network lane), a message sent (an arrow into it), a commit, a refresh, a
//! publication, a violation. Each message gets its own *track* in the network lane, a dashed
//! line from the row that sent it to the row that delivered (or lost) it, so overtaking and
//! messages left in flight are visible at a glance. The row of the step after which the trace's
//! property first fails (`Trace::replay`'s `first_violation`) is highlighted, with the
//! monitor's explanation.
//!
//! [`render`] lays the diagram out and writes SVG text: monospace labels (widths are estimated,
//! not measured), no scripts, no external resources. Elements carry classes and `data-*`
//! attributes (`lane`/`data-lane`, `row`/`data-step`, `violation`/`data-property`) that the tests
//! read back.

use crate::svg::{self, CHAR_PX, FONT_FAMILY, esc, text, text_width, truncate, wrap};
use anyhow::{Context, Result};
use listsync_core::history::{ClientId, Event, RefreshOutcome, Restart};
use listsync_core::property::Property;
use listsync_core::trace::Trace;
use listsync_core::vocab::ItemList;
use listsync_core::world::{Link, Recorder, Step, World};
use std::fmt::Write as _;

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
pub struct Lane {
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
pub enum Line {
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
pub struct Row {
    /// Step index; None for the rows before the first step and after the last.
    pub step: Option<usize>,
    /// The step as text.
    pub label: String,
    /// What happened, in order.
    pub lines: Vec<Line>,
    /// The property the trace shows, if it first fails at this step.
    pub violation: Option<Property>,
}

/// One message's life in a network (or bus) lane.
#[derive(Clone, Debug)]
pub struct Track {
    /// Network or bus lane.
    pub lane: usize,
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
    pub lanes: Vec<Lane>,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
    /// Messages.
    pub tracks: Vec<Track>,
    /// Step index at which the shown property first fails.
    pub first_violation: Option<usize>,
}

/// What one step recorded, in order.
enum Raw {
    Event(Event),
    Note(String),
    Sent(ClientId, Link),
}

#[derive(Default)]
struct Rec {
    raw: Vec<Raw>,
}

impl Recorder for Rec {
    fn event(&mut self, e: &Event) {
        self.raw.push(Raw::Event(e.clone()));
    }
    fn note(&mut self, text: String) {
        self.raw.push(Raw::Note(text));
    }
    fn sent(&mut self, client: ClientId, link: Link) {
        self.raw.push(Raw::Sent(client, link));
    }
}

/// Where a message is in flight.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Place {
    Link(ClientId, Link),
    Bus(u8),
}

/// A message in flight: where, its identity (debug text of the value), its track.
struct Flight {
    place: Place,
    key: String,
    track: usize,
}

/// Every message in flight in `w`: (place, identity, description, kind).
fn in_flight(w: &World) -> Vec<(Place, String, String, MsgKind)> {
    let mut v = Vec::new();
    for (c, l) in w.links.iter().enumerate() {
        let c = c as ClientId;
        for m in &l.up {
            v.push((
                Place::Link(c, Link::Up),
                format!("{m:?}"),
                m.describe(),
                MsgKind::Request,
            ));
        }
        for (link, q) in [(Link::Down, &l.down), (Link::Stream, &l.stream)] {
            for m in q {
                let kind = if matches!(m, listsync_core::wire::ServerMsg::Notification(_)) {
                    MsgKind::Notification
                } else {
                    MsgKind::Response
                };
                v.push((Place::Link(c, link), format!("{m:?}"), m.describe(), kind));
            }
        }
    }
    for (n, q) in w.bus.iter().enumerate() {
        for ver in q {
            v.push((
                Place::Bus(n as u8),
                ver.to_string(),
                format!("v{ver} to node {n}"),
                MsgKind::Bus,
            ));
        }
    }
    v
}

fn items_text(items: &ItemList) -> String {
    format!(
        "[{}]",
        items
            .iter()
            .map(|i| format!("{}={}", i.name, i.def))
            .collect::<Vec<_>>()
            .join(",")
    )
}

fn restart_text(r: Restart) -> &'static str {
    match r {
        Restart::InvalidCursor => "invalid cursor",
        Restart::NotifiedMidWalk => "notified mid-walk",
        Restart::VersionChanged => "version changed",
        Restart::Retry => "retry",
    }
}

/// Splits a note `c12 rest` into (12, rest).
fn client_prefix(s: &str) -> Option<(ClientId, &str)> {
    let rest = s.strip_prefix('c')?;
    let end = rest.find(' ')?;
    let id = rest[..end].parse().ok()?;
    Some((id, &rest[end + 1..]))
}

/// Splits a note `node 3 rest` into (3, rest).
fn node_prefix(s: &str) -> Option<(u8, &str)> {
    let rest = s.strip_prefix("node ")?;
    let end = rest.find(' ')?;
    let id = rest[..end].parse().ok()?;
    Some((id, &rest[end + 1..]))
}

struct Builder<'a> {
    trace: &'a Trace,
    lanes: Vec<Lane>,
    rows: Vec<Row>,
    tracks: Vec<Track>,
    flights: Vec<Flight>,
    net: usize,
    bus: Option<usize>,
    store: Option<usize>,
    servers: Vec<usize>,
    clients: Vec<usize>,
    seen: Vec<Property>,
    first_violation: Option<usize>,
}

impl<'a> Builder<'a> {
    fn new(trace: &'a Trace) -> Self {
        let scn = &trace.scenario;
        let mut lanes = Vec::new();
        let mut store = None;
        let mut bus = None;
        let server_about = format!("server: {}", scn.server.strategy);
        let mut servers = Vec::new();
        if let Some(cl) = &scn.cluster {
            store = Some(lanes.len());
            lanes.push(Lane {
                kind: LaneKind::Store,
                name: "store".into(),
                about: "shared, versioned".into(),
            });
            bus = Some(lanes.len());
            lanes.push(Lane {
                kind: LaneKind::Bus,
                name: "bus".into(),
                about: "events in flight".into(),
            });
            for n in 0..cl.nodes.max(1) {
                servers.push(lanes.len());
                lanes.push(Lane {
                    kind: LaneKind::Server(n),
                    name: format!("node {n}"),
                    about: server_about.clone(),
                });
            }
        } else {
            servers.push(lanes.len());
            lanes.push(Lane {
                kind: LaneKind::Server(0),
                name: "server".into(),
                about: server_about,
            });
        }
        let net = lanes.len();
        lanes.push(Lane {
            kind: LaneKind::Network,
            name: "network".into(),
            about: format!("{:?}, in flight", scn.transport).to_lowercase(),
        });
        let mut clients = Vec::new();
        for (i, c) in scn.clients.iter().enumerate() {
            clients.push(lanes.len());
            lanes.push(Lane {
                kind: LaneKind::Client(i as ClientId),
                name: format!("c{i}"),
                about: format!("client: {}", c.strategy),
            });
        }
        Builder {
            trace,
            lanes,
            rows: Vec::new(),
            tracks: Vec::new(),
            flights: Vec::new(),
            net,
            bus,
            store,
            servers,
            clients,
            seen: Vec::new(),
            first_violation: None,
        }
    }

    fn server_lane(&self, w: &World, client: ClientId) -> usize {
        let n = w.node_of.get(client as usize).copied().unwrap_or(0);
        self.servers
            .get(usize::from(n))
            .copied()
            .unwrap_or(self.servers[0])
    }

    fn client_lane(&self, c: ClientId) -> usize {
        self.clients.get(c as usize).copied().unwrap_or(self.net)
    }

    fn node_lane(&self, n: u8) -> usize {
        self.servers
            .get(usize::from(n))
            .copied()
            .unwrap_or(self.servers[0])
    }

    /// The lane for store-level notes: the store in a cluster, else the server.
    fn commit_lane(&self) -> usize {
        self.store.unwrap_or(self.servers[0])
    }

    fn note(lines: &mut Vec<Line>, lane: usize, text: impl Into<String>, tone: Tone) {
        lines.push(Line::Note {
            lane,
            text: text.into(),
            tone,
        });
    }

    /// Turns one step's recording into lines. Sends are left without a track; `reconcile`
    /// assigns them.
    fn lines_of(&self, w: &World, raw: Vec<Raw>, lines: &mut Vec<Line>) {
        let mut msg_text: Option<String> = None;
        for r in raw {
            match r {
                Raw::Event(e) => self.event_line(w, &e, lines),
                Raw::Sent(c, link) => {
                    let from = if link == Link::Up {
                        self.client_lane(c)
                    } else {
                        self.server_lane(w, c)
                    };
                    lines.push(Line::Send {
                        from,
                        track: None,
                        text: msg_text.take().unwrap_or_default(),
                    });
                }
                Raw::Note(n) => self.note_line(w, &n, &mut msg_text, lines),
            }
        }
    }

    fn event_line(&self, w: &World, e: &Event, lines: &mut Vec<Line>) {
        match e {
            Event::Committed { version, catalog } => Self::note(
                lines,
                self.commit_lane(),
                format!(
                    "commit v{version} ({} item{})",
                    catalog.items.len(),
                    if catalog.items.len() == 1 { "" } else { "s" }
                ),
                Tone::Plain,
            ),
            Event::Connected { client } => {
                Self::note(lines, self.client_lane(*client), "connect", Tone::Plain)
            }
            Event::Notified {
                client,
                announces,
                visible,
                ..
            } if announces != visible => Self::note(
                lines,
                self.server_lane(w, *client),
                format!("notify c{client}: announces v{announces}, v{visible} visible"),
                Tone::Warn,
            ),
            Event::Dispatched {
                client,
                tool,
                present,
            } => {
                let lane = self.server_lane(w, *client);
                if *present {
                    Self::note(
                        lines,
                        lane,
                        format!("run {tool} for c{client}"),
                        Tone::Plain,
                    );
                } else {
                    Self::note(
                        lines,
                        lane,
                        format!("run {tool} for c{client}: NOT in registry"),
                        Tone::Bad,
                    );
                }
            }
            Event::CallRejected { client, tool } => Self::note(
                lines,
                self.server_lane(w, *client),
                format!("reject call {tool} from c{client} (-32602)"),
                Tone::Plain,
            ),
            Event::RefreshStarted {
                client,
                kind,
                refresh,
                ..
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!("start refresh r{refresh} of {kind}"),
                Tone::Plain,
            ),
            Event::WalkRestarted {
                client,
                refresh,
                reason,
                ..
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!("restart walk r{refresh}: {}", restart_text(*reason)),
                Tone::Plain,
            ),
            Event::RefreshEnded {
                client,
                refresh,
                outcome,
                ..
            } if *outcome != RefreshOutcome::Published => Self::note(
                lines,
                self.client_lane(*client),
                format!("r{refresh} ends: {outcome:?}").to_lowercase(),
                if *outcome == RefreshOutcome::Failed {
                    Tone::Warn
                } else {
                    Tone::Plain
                },
            ),
            Event::Published {
                client,
                kind,
                items,
                version,
                ..
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!(
                    "publish {kind} {}{}",
                    items_text(items),
                    version.map(|v| format!(" v{v}")).unwrap_or_default()
                ),
                Tone::Key,
            ),
            Event::MarkedStale { client, kind, .. } => Self::note(
                lines,
                self.client_lane(*client),
                format!("mark {kind} stale"),
                Tone::Warn,
            ),
            // Shown by the arrows, or not needed to follow the run.
            Event::Notified { .. }
            | Event::Served { .. }
            | Event::Woken { .. }
            | Event::RefreshEnded { .. }
            | Event::ListenAcked { .. }
            | Event::Quiescent { .. } => {}
        }
    }

    fn note_line(&self, w: &World, n: &str, msg_text: &mut Option<String>, lines: &mut Vec<Line>) {
        if let Some(rest) = n.strip_prefix("VIOLATION ") {
            let (p, detail) = rest.split_once(": ").unwrap_or((rest, ""));
            if let Ok(property) = p.parse::<Property>() {
                lines.push(Line::Violation {
                    property,
                    text: detail.to_owned(),
                    primary: Some(property) == self.trace.shows,
                });
                return;
            }
        }
        if let Some(rest) = n.strip_prefix("server -> ") {
            *msg_text = Some(rest.split_once(": ").map_or(rest, |(_, m)| m).to_owned());
            return;
        }
        if let Some((_, rest)) = client_prefix(n)
            && let Some(m) = rest.strip_prefix("-> server: ")
        {
            *msg_text = Some(m.to_owned());
            return;
        }
        if let Some(ops) = n.strip_prefix("admin applies batch ") {
            let ops = ops.split_once(": ").map_or(ops, |(_, o)| o);
            Self::note(
                lines,
                self.commit_lane(),
                format!("admin: {ops}"),
                Tone::Plain,
            );
            return;
        }
        let skip = [
            "server receives from",
            "network duplicates",
            "network loses",
            "store commits",
            "bus duplicates",
            "bus loses",
        ];
        if skip.iter().any(|s| n.starts_with(s)) {
            return;
        }
        if let Some((node, rest)) = node_prefix(n) {
            if rest.starts_with("receives bus event") {
                return;
            }
            Self::note(lines, self.node_lane(node), rest, Tone::Plain);
            return;
        }
        if let Some((c, rest)) = client_prefix(n) {
            if rest.starts_with("receives: ") || rest.starts_with("woken") {
                return;
            }
            let tone = if rest.contains("failed") || rest.contains("cut") {
                Tone::Warn
            } else {
                Tone::Plain
            };
            Self::note(lines, self.client_lane(c), rest, tone);
            return;
        }
        let _ = w;
        Self::note(lines, self.servers[0], n, Tone::Plain);
    }

    fn new_track(&mut self, place: Place, kind: MsgKind, start: (usize, usize)) -> usize {
        let lane = match place {
            Place::Link(..) => self.net,
            Place::Bus(_) => self.bus.unwrap_or(self.net),
        };
        self.tracks.push(Track {
            lane,
            kind,
            start,
            end: None,
            lost: false,
            slot: 0,
        });
        self.tracks.len() - 1
    }

    /// Matches the messages in flight after a step against those before: the missing ones
    /// were lost, the new ones were sent (matched to the row's send lines by place and text)
    /// or copied by the network.
    fn reconcile(&mut self, w: &World, row: usize, lines: &mut Vec<Line>) {
        let now = in_flight(w);
        let mut matched = vec![false; now.len()];
        let mut lost = Vec::new();
        for (fi, f) in self.flights.iter().enumerate() {
            let hit = now
                .iter()
                .enumerate()
                .position(|(i, (p, k, _, _))| !matched[i] && *p == f.place && *k == f.key);
            match hit {
                Some(i) => matched[i] = true,
                None => lost.push(fi),
            }
        }
        for fi in lost.iter().rev() {
            let f = self.flights.remove(*fi);
            lines.push(Line::Lost { track: f.track });
            self.tracks[f.track].end = Some((row, lines.len() - 1));
            self.tracks[f.track].lost = true;
        }
        // Which row lines are sends from which place.
        let send_place = |line: &Line, place: Place, b: &Builder| -> bool {
            let Line::Send {
                from, track: None, ..
            } = line
            else {
                return false;
            };
            match place {
                Place::Link(c, Link::Up) => *from == b.client_lane(c),
                Place::Link(c, _) => *from == b.server_lane(w, c),
                Place::Bus(_) => false,
            }
        };
        for (i, (place, key, desc, kind)) in now.into_iter().enumerate() {
            if matched[i] {
                continue;
            }
            let at = lines.iter().position(|l| {
                send_place(l, place, self) && matches!(l, Line::Send { text, .. } if *text == desc)
            });
            match at {
                Some(li) => {
                    let t = self.new_track(place, kind, (row, li));
                    if let Line::Send { track, .. } = &mut lines[li] {
                        *track = Some(t);
                    }
                    self.flights.push(Flight {
                        place,
                        key,
                        track: t,
                    });
                }
                None => {
                    let copy = self
                        .flights
                        .iter()
                        .find(|f| f.place == place && f.key == key);
                    let of = copy.map(|f| f.track);
                    let bus_send = matches!(place, Place::Bus(_)) && of.is_none();
                    lines.push(if bus_send {
                        Line::Send {
                            from: self.commit_lane(),
                            track: None,
                            text: desc.clone(),
                        }
                    } else {
                        Line::Copy { track: 0, of }
                    });
                    let li = lines.len() - 1;
                    let t = self.new_track(place, kind, (row, li));
                    match &mut lines[li] {
                        Line::Send { track, .. } => *track = Some(t),
                        Line::Copy { track, .. } => *track = t,
                        _ => {}
                    }
                    self.flights.push(Flight {
                        place,
                        key,
                        track: t,
                    });
                }
            }
        }
    }

    /// Records violations that first happen at this step; quiescence properties have no
    /// VIOLATION note, so their explanation comes from the monitor.
    fn violations(&mut self, w: &World, step: usize, lines: &mut Vec<Line>) -> Option<Property> {
        let mut shown = None;
        for p in Property::ALL {
            if w.holds(p) || self.seen.contains(&p) {
                continue;
            }
            self.seen.push(p);
            let noted = lines
                .iter()
                .any(|l| matches!(l, Line::Violation { property, .. } if *property == p));
            if !noted {
                let text = w
                    .monitor
                    .check_quiescent(&w.expectations())
                    .into_iter()
                    .find(|(q, _)| *q == p)
                    .map(|(_, d)| d)
                    .or_else(|| w.monitor.first_violation(p).map(str::to_owned))
                    .unwrap_or_default();
                lines.push(Line::Violation {
                    property: p,
                    text,
                    primary: Some(p) == self.trace.shows,
                });
            }
            if Some(p) == self.trace.shows {
                shown = Some(p);
                self.first_violation = Some(step);
            }
        }
        shown
    }

    /// The final state: what each client holds against what its server shows.
    fn end_row(&self, w: &World) -> Row {
        let mut lines = Vec::new();
        for (c, client) in w.clients.iter().enumerate() {
            let node = w.node_of.get(c).copied().unwrap_or(0);
            let server = &w.nodes[usize::from(node).min(w.nodes.len() - 1)];
            for (_, kind, auth) in client.expectations() {
                let visible = server.catalog().visible(kind, auth);
                let visible: ItemList = visible.into();
                let held = client.snapshot_for(kind, auth);
                let same = held.is_some_and(|s| s.items == visible);
                let held_text = match held {
                    Some(s) => format!(
                        "holds {kind} {}{}{}",
                        items_text(&s.items),
                        s.version.map(|v| format!(" v{v}")).unwrap_or_default(),
                        if s.stale { " (stale)" } else { "" }
                    ),
                    None => format!("holds no {kind} list"),
                };
                Self::note(
                    &mut lines,
                    self.node_lane(node),
                    format!(
                        "c{c} should see {kind} {} v{}",
                        items_text(&visible),
                        server.version()
                    ),
                    Tone::Plain,
                );
                Self::note(
                    &mut lines,
                    self.client_lane(c as ClientId),
                    held_text,
                    if same { Tone::Key } else { Tone::Bad },
                );
            }
        }
        Row {
            step: None,
            label: "end of trace".into(),
            lines,
            violation: None,
        }
    }
}

/// A link as a direction between participants.
fn link_text(client: ClientId, link: Link) -> String {
    match link {
        Link::Up => format!("c{client} → server"),
        Link::Down => format!("server → c{client}"),
        Link::Stream => format!("stream → c{client}"),
    }
}

/// A step as the row's label: core's wording, with message queues named by direction (`[i]` is
/// the position in the queue, 0 the oldest message).
pub fn step_label(step: &Step) -> String {
    match *step {
        Step::Deliver {
            client,
            link,
            index,
        } => format!("deliver {} [{index}]", link_text(client, link)),
        Step::Duplicate { client, link } => {
            format!("duplicate oldest on {}", link_text(client, link))
        }
        Step::Drop { client, link } => format!("lose oldest on {}", link_text(client, link)),
        _ => step.to_string(),
    }
}

/// Replays `trace` and builds its diagram. Fails if the trace does not replay.
pub fn build(trace: &Trace) -> Result<Diagram> {
    let scn = &trace.scenario;
    scn.validate()
        .map_err(anyhow::Error::msg)
        .context("invalid scenario")?;
    let mut b = Builder::new(trace);
    let mut rec = Rec::default();
    let mut world = World::new_recorded(scn, &mut rec);
    let mut lines = Vec::new();
    b.lines_of(&world, std::mem::take(&mut rec.raw), &mut lines);
    b.reconcile(&world, 0, &mut lines);
    b.rows.push(Row {
        step: None,
        label: "start".into(),
        lines,
        violation: None,
    });
    for (i, step) in trace.steps.iter().enumerate() {
        let row = b.rows.len();
        let mut lines = Vec::new();
        // A delivery ends a track: find which message it takes before the world moves.
        let delivered = match *step {
            Step::Deliver {
                client,
                link,
                index,
            } => {
                let l = world.links.get(client as usize);
                let found = l.and_then(|l| match link {
                    Link::Up => {
                        l.up.get(usize::from(index))
                            .map(|m| (format!("{m:?}"), m.describe()))
                    }
                    Link::Down => l
                        .down
                        .get(usize::from(index))
                        .map(|m| (format!("{m:?}"), m.describe())),
                    Link::Stream => l
                        .stream
                        .get(usize::from(index))
                        .map(|m| (format!("{m:?}"), m.describe())),
                });
                let to = if link == Link::Up {
                    b.server_lane(&world, client)
                } else {
                    b.client_lane(client)
                };
                found.map(|(k, d)| (Place::Link(client, link), k, d, to))
            }
            Step::BusDeliver { node, index } => world
                .bus
                .get(usize::from(node))
                .and_then(|q| q.get(usize::from(index)))
                .map(|v| {
                    (
                        Place::Bus(node),
                        v.to_string(),
                        format!("change v{v}"),
                        b.node_lane(node),
                    )
                }),
            _ => None,
        };
        if let Some((place, key, desc, to)) = delivered {
            let fi = b
                .flights
                .iter()
                .position(|f| f.place == place && f.key == key);
            let track = fi.map(|fi| b.flights.remove(fi).track);
            lines.push(Line::Deliver {
                to,
                track,
                text: desc,
            });
            if let Some(t) = track {
                b.tracks[t].end = Some((row, 0));
            }
        }
        world
            .apply(scn, step, &mut rec)
            .map_err(|reason| anyhow::anyhow!("step {i} ({step}) cannot happen: {reason}"))?;
        b.lines_of(&world, std::mem::take(&mut rec.raw), &mut lines);
        b.reconcile(&world, row, &mut lines);
        let violation = b.violations(&world, i, &mut lines);
        b.rows.push(Row {
            step: Some(i),
            label: step_label(step),
            lines,
            violation,
        });
    }
    let end = b.end_row(&world);
    b.rows.push(end);
    let era = scn.era;
    let transport = format!("{:?}", scn.transport).to_lowercase();
    let page = if scn.server.page_size == 0 {
        "one page".to_owned()
    } else {
        format!("page size {}", scn.server.page_size)
    };
    let title = match trace.shows {
        Some(p) => match b.first_violation {
            Some(s) => format!("{} · {p} violated at step {s}", scn.name),
            None => format!("{} · {p}", scn.name),
        },
        None => scn.name.clone(),
    };
    let subtitle = format!(
        "client {} · server {} · {era} over {transport} · {page} · {} client{} · {} steps · source: {}",
        scn.client_strategy(),
        scn.server_strategy(),
        scn.clients.len(),
        if scn.clients.len() == 1 { "" } else { "s" },
        trace.steps.len(),
        trace.source,
    );
    Ok(Diagram {
        title,
        subtitle,
        detail: trace.detail.clone(),
        lanes: b.lanes,
        rows: b.rows,
        tracks: b.tracks,
        first_violation: b.first_violation,
    })
}

/// Parses and renders a trace file's text.
pub fn trace_to_svg(json: &str) -> Result<String> {
    let trace = Trace::from_json(json)?;
    Ok(render(&build(&trace)?))
}

// ---------------------------------------------------------------------------------------------
// Layout and SVG.

const MARGIN: f64 = 16.0;
const BAND: f64 = 22.0;
const ROW_PAD: f64 = 5.0;
const LANE_HEAD: f64 = 40.0;
const SLOT: f64 = 13.0;
/// Least and most room between a track lane's edge and its outermost track.
const TRACK_PAD_MIN: f64 = 20.0;
const TRACK_PAD_MAX: f64 = 260.0;

fn color(k: MsgKind) -> &'static str {
    match k {
        MsgKind::Request => "#1f5fbf",
        MsgKind::Response => "#2e7d32",
        MsgKind::Notification => "#d9480f",
        MsgKind::Bus => "#7b3fb0",
    }
}

fn marker(k: MsgKind) -> &'static str {
    match k {
        MsgKind::Request => "req",
        MsgKind::Response => "resp",
        MsgKind::Notification => "notif",
        MsgKind::Bus => "bus",
    }
}

/// Computed geometry.
struct Layout {
    label_w: f64,
    lane_x: Vec<f64>,
    lane_w: Vec<f64>,
    /// Track lanes: from the lane's left edge to its first track.
    pad_left: Vec<f64>,
    width: f64,
    /// Characters that fit in a note box of each lane.
    lane_chars: Vec<usize>,
}

fn is_track_lane(k: LaneKind) -> bool {
    matches!(k, LaneKind::Network | LaneKind::Bus)
}

/// Assigns each track a column in its lane (greedy interval colouring by start), so tracks
/// alive at the same time never share one. Returns the number of columns per lane.
fn assign_slots(d: &mut Diagram) -> Vec<usize> {
    let mut cols = vec![0usize; d.lanes.len()];
    let n_rows = d.rows.len();
    let mut order: Vec<usize> = (0..d.tracks.len()).collect();
    order.sort_by_key(|&t| d.tracks[t].start);
    // busy[lane][slot] = (row, line) until which the slot is taken.
    let mut busy: Vec<Vec<(usize, usize)>> = vec![Vec::new(); d.lanes.len()];
    for t in order {
        let (lane, start) = (d.tracks[t].lane, d.tracks[t].start);
        let end = d.tracks[t].end.unwrap_or((n_rows, 0));
        let slots = &mut busy[lane];
        let slot = match slots.iter().position(|until| *until < start) {
            Some(s) => {
                slots[s] = end;
                s
            }
            None => {
                slots.push(end);
                slots.len() - 1
            }
        };
        d.tracks[t].slot = slot;
        cols[lane] = cols[lane].max(slot + 1);
    }
    cols
}

fn layout(d: &Diagram, cols: &[usize]) -> Layout {
    let longest_label = d
        .rows
        .iter()
        .map(|r| r.label.chars().count() + 4)
        .max()
        .unwrap_or(10);
    let label_w = (longest_label as f64 * CHAR_PX + 12.0).clamp(150.0, 250.0);
    // Participant lanes: as wide as their notes and header.
    let mut lane_w: Vec<f64> = d
        .lanes
        .iter()
        .enumerate()
        .map(|(i, lane)| {
            if is_track_lane(lane.kind) {
                return 0.0;
            }
            let longest = d
                .rows
                .iter()
                .flat_map(|r| &r.lines)
                .filter_map(|l| match l {
                    Line::Note { lane, text, .. } if *lane == i => Some(text_width(text)),
                    _ => None,
                })
                .fold(text_width(&lane.about), f64::max);
            (longest + 28.0).clamp(150.0, 270.0)
        })
        .collect();
    // Track lanes: room on each side of their tracks for the labels of the arrows between
    // them and the participants, so that a label does not run across a track.
    let n = d.lanes.len();
    let mut pad_left = vec![TRACK_PAD_MIN; n];
    let mut pad_right = vec![TRACK_PAD_MIN; n];
    for line in d.rows.iter().flat_map(|r| &r.lines) {
        let (lane, t, text) = match line {
            Line::Send {
                from,
                track: Some(t),
                text,
            } => (*from, *t, text),
            Line::Deliver {
                to,
                track: Some(t),
                text,
            } => (*to, *t, text),
            _ => continue,
        };
        let tl = d.tracks[t].lane;
        let need = text_width(text) + 16.0;
        if lane < tl {
            let dist = lane_w[lane] / 2.0 + lane_w[lane + 1..tl].iter().sum::<f64>();
            pad_left[tl] = pad_left[tl].max(need - dist);
        } else if lane > tl {
            let dist = lane_w[lane] / 2.0 + lane_w[tl + 1..lane].iter().sum::<f64>();
            pad_right[tl] = pad_right[tl].max(need - dist);
        }
    }
    for (i, lane) in d.lanes.iter().enumerate() {
        if is_track_lane(lane.kind) {
            pad_left[i] = pad_left[i].min(TRACK_PAD_MAX);
            pad_right[i] = pad_right[i].min(TRACK_PAD_MAX);
            let tracks = cols[i].saturating_sub(1) as f64 * SLOT;
            lane_w[i] = (pad_left[i] + tracks + pad_right[i]).max(150.0);
        }
    }
    let mut lane_x = Vec::new();
    let mut x = MARGIN + label_w;
    for w in &lane_w {
        lane_x.push(x + w / 2.0);
        x += w;
    }
    let lane_chars = lane_w
        .iter()
        .map(|w| ((w - 20.0) / CHAR_PX).floor().max(8.0) as usize)
        .collect();
    Layout {
        label_w,
        lane_x,
        lane_w,
        pad_left,
        width: (x + MARGIN).max(640.0),
        lane_chars,
    }
}

/// Bands a line takes.
fn bands(line: &Line, lay: &Layout) -> usize {
    match line {
        Line::Note { lane, text, .. } => wrap(text, lay.lane_chars[*lane]).len(),
        Line::Violation { property, text, .. } => {
            let chars = ((lay.width - MARGIN * 2.0 - lay.label_w - 24.0) / CHAR_PX) as usize;
            wrap(&format!("✗ {property} violated: {text}"), chars).len()
        }
        _ => 1,
    }
}

/// A lane's second header line, without its `role: ` prefix when the whole does not fit.
fn header_about(about: &str, chars: usize) -> &str {
    if about.chars().count() <= chars {
        return about;
    }
    about.split_once(": ").map_or(about, |(_, rest)| rest)
}

fn track_x(d: &Diagram, lay: &Layout, t: usize) -> f64 {
    let tr = &d.tracks[t];
    let left = lay.lane_x[tr.lane] - lay.lane_w[tr.lane] / 2.0;
    left + lay.pad_left[tr.lane] + tr.slot as f64 * SLOT
}

/// The legend's explanations, under the message colours.
const LEGEND_NOTES: [&str; 2] = [
    "dashed: in flight from send to delivery (dotted: never delivered) · ✗ lost · red row: the step after which the property first fails",
    "Generated by `listsync report` from the trace's JSON. Step numbers are the trace's step indices; [i] is the message's position in its queue (0 = oldest).",
];

/// Renders a diagram as SVG text.
pub fn render(d: &Diagram) -> String {
    let mut d = d.clone();
    let cols = assign_slots(&mut d);
    let lay = layout(&d, &cols);
    let d = &d;
    let width = lay.width;
    let text_chars = ((width - 2.0 * MARGIN) / CHAR_PX) as usize;

    // Header.
    let mut head = String::new();
    let mut y = MARGIN + 16.0;
    text(&mut head, MARGIN, y, "start", "title", &d.title, "");
    for l in wrap(&d.subtitle, text_chars) {
        y += 18.0;
        text(&mut head, MARGIN, y, "start", "dim", &l, "");
    }
    if let Some(detail) = &d.detail {
        for l in wrap(detail, text_chars) {
            y += 18.0;
            text(&mut head, MARGIN, y, "start", "bad", &l, "");
        }
    }
    let lanes_top = y + 14.0;
    let rows_top = lanes_top + LANE_HEAD + 6.0;

    // Rows: vertical positions of every band.
    let mut row_y = Vec::new(); // (top, height)
    let mut line_y: Vec<Vec<f64>> = Vec::new(); // top of each line's first band
    let mut yy = rows_top;
    for r in &d.rows {
        let label_lines = wrap(&r.label, ((lay.label_w - 40.0) / CHAR_PX) as usize).len();
        let mut ys = Vec::new();
        let mut inner = ROW_PAD;
        for l in &r.lines {
            ys.push(yy + inner);
            inner += bands(l, &lay) as f64 * BAND;
        }
        let h = inner.max(label_lines as f64 * 16.0 + 6.0).max(BAND) + ROW_PAD;
        row_y.push((yy, h));
        line_y.push(ys);
        yy += h;
    }
    let rows_bottom = yy;
    let foot_top = rows_bottom + 6.0;
    let legend_top = foot_top + LANE_HEAD + 14.0;
    let legend_notes: Vec<String> = LEGEND_NOTES
        .iter()
        .flat_map(|t| wrap(t, text_chars))
        .collect();
    let height = legend_top + 14.0 + 24.0 + legend_notes.len() as f64 * 18.0 + 8.0;

    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width:.0}" height="{height:.0}" viewBox="0 0 {width:.0} {height:.0}" font-family="{FONT_FAMILY}" font-size="{}">"#,
        svg::FONT_PX
    );
    let _ = writeln!(s, "<title>{}</title>", esc(&d.title));
    let _ = writeln!(
        s,
        r#"<style>
text {{ fill: #1f2328; }}
text.halo, text.label, text.msg, text.dim, text.bad, text.lost {{ paint-order: stroke; stroke: #ffffff; stroke-width: 4px; stroke-linejoin: round; }}
.title {{ font-size: 16px; font-weight: bold; }}
.dim {{ fill: #57606a; }}
.bad {{ fill: #b3261e; font-weight: bold; }}
.warn {{ fill: #a04a00; }}
.lost {{ fill: #b3261e; font-weight: bold; }}
.stepno {{ font-weight: bold; fill: #57606a; }}
.lanehead {{ font-weight: bold; }}
.note-key {{ font-weight: bold; fill: #0b3d91; }}
.note-bad {{ font-weight: bold; fill: #b3261e; }}
.note-warn {{ fill: #8a3c00; }}
</style>"#
    );
    let _ = writeln!(s, "<defs>");
    for k in [
        MsgKind::Request,
        MsgKind::Response,
        MsgKind::Notification,
        MsgKind::Bus,
    ] {
        let _ = writeln!(
            s,
            r#"<marker id="ah-{}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{}"/></marker>"#,
            marker(k),
            color(k)
        );
    }
    let _ = writeln!(s, "</defs>");
    let _ = writeln!(
        s,
        r##"<rect x="0" y="0" width="{width:.0}" height="{height:.0}" fill="#ffffff"/>"##
    );
    s.push_str(&head);

    // Row backgrounds.
    for (ri, r) in d.rows.iter().enumerate() {
        let (top, h) = row_y[ri];
        let fill = if r.violation.is_some() {
            "#fde7e7"
        } else if r.step.is_none() {
            "#eef1f5"
        } else if ri % 2 == 0 {
            "#f7f8fa"
        } else {
            "#ffffff"
        };
        let _ = writeln!(
            s,
            r##"<rect x="{MARGIN}" y="{top:.1}" width="{:.1}" height="{h:.1}" fill="{fill}"/>"##,
            width - 2.0 * MARGIN
        );
    }
    // Lanes: track lanes get a tinted column; others a vertical line.
    for (i, lane) in d.lanes.iter().enumerate() {
        let x = lay.lane_x[i];
        let w = lay.lane_w[i];
        let _ = writeln!(
            s,
            r#"<g class="lane" data-lane="{}" data-kind="{}">"#,
            esc(&lane.name),
            match lane.kind {
                LaneKind::Store => "store",
                LaneKind::Bus => "bus",
                LaneKind::Server(_) => "server",
                LaneKind::Network => "network",
                LaneKind::Client(_) => "client",
            }
        );
        if is_track_lane(lane.kind) {
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{rows_top:.1}" width="{:.1}" height="{:.1}" fill="#dfe9f7" fill-opacity="0.55"/>"##,
                x - w / 2.0 + 6.0,
                w - 12.0,
                rows_bottom - rows_top
            );
        } else {
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{foot_top:.1}" stroke="#9aa3ad" stroke-width="1.5"/>"##,
                lanes_top + LANE_HEAD
            );
        }
        for top in [lanes_top, foot_top] {
            let bw = w - 12.0;
            let _ = writeln!(
                s,
                r##"<rect x="{:.1}" y="{top:.1}" width="{bw:.1}" height="{LANE_HEAD}" rx="5" fill="{}" stroke="#6b7682"/>"##,
                x - bw / 2.0,
                if is_track_lane(lane.kind) {
                    "#dfe9f7"
                } else {
                    "#eef1f5"
                }
            );
            text(&mut s, x, top + 16.0, "middle", "lanehead", &lane.name, "");
            let chars = ((bw - 8.0) / CHAR_PX) as usize;
            text(
                &mut s,
                x,
                top + 32.0,
                "middle",
                "dim",
                &truncate(header_about(&lane.about, chars), chars),
                &lane.about,
            );
        }
        let _ = writeln!(s, "</g>");
    }

    // Tracks (drawn under the arrows and notes).
    let _ = writeln!(s, r#"<g class="tracks">"#);
    for (t, tr) in d.tracks.iter().enumerate() {
        let x = track_x(d, &lay, t);
        let y1 = line_y[tr.start.0][tr.start.1] + 18.0;
        let (y2, open) = match tr.end {
            Some((r, l)) => (line_y[r][l] + 18.0, false),
            None => (rows_bottom - 4.0, true),
        };
        let _ = writeln!(
            s,
            r#"<line class="track" x1="{x:.1}" y1="{y1:.1}" x2="{x:.1}" y2="{y2:.1}" stroke="{}" stroke-width="1.6" stroke-dasharray="{}"/>"#,
            color(tr.kind),
            if open { "2 4" } else { "5 3" }
        );
    }
    let _ = writeln!(s, "</g>");

    // Rows' content.
    let right_edge = width - MARGIN - 4.0;
    for (ri, r) in d.rows.iter().enumerate() {
        let (top, h) = row_y[ri];
        let mut class = String::from(if r.step.is_some() { "row" } else { "row-extra" });
        if r.violation.is_some() {
            class.push_str(" violation");
        }
        let _ = write!(s, r#"<g class="{class}""#);
        if let Some(step) = r.step {
            let _ = write!(s, r#" data-step="{step}""#);
        }
        if let Some(p) = r.violation {
            let _ = write!(s, r#" data-property="{p}""#);
        }
        let _ = writeln!(s, ">");
        if r.violation.is_some() {
            let _ = writeln!(
                s,
                r##"<rect x="{MARGIN}" y="{top:.1}" width="5" height="{h:.1}" fill="#c62828"/>"##
            );
        }
        let _ = writeln!(
            s,
            r##"<line x1="{MARGIN}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#d5dae0"/>"##,
            top + h,
            width - MARGIN,
            top + h
        );
        // Label column.
        let num = r.step.map(|n| n.to_string()).unwrap_or_default();
        text(&mut s, MARGIN + 30.0, top + 17.0, "end", "stepno", &num, "");
        let label_chars = ((lay.label_w - 40.0) / CHAR_PX) as usize;
        for (k, l) in wrap(&r.label, label_chars).iter().enumerate() {
            text(
                &mut s,
                MARGIN + 38.0,
                top + 17.0 + k as f64 * 16.0,
                "start",
                if r.step.is_some() { "label" } else { "dim" },
                l,
                "",
            );
        }
        for (li, line) in r.lines.iter().enumerate() {
            let by = line_y[ri][li];
            draw_line(&mut s, d, &lay, line, by, right_edge);
        }
        let _ = writeln!(s, "</g>");
    }

    // Legend.
    let mut lx = MARGIN;
    let ly = legend_top + 14.0;
    for (k, name) in [
        (MsgKind::Request, "request"),
        (MsgKind::Response, "response"),
        (MsgKind::Notification, "notification"),
        (MsgKind::Bus, "bus event"),
    ] {
        if k == MsgKind::Bus && !d.tracks.iter().any(|t| t.kind == MsgKind::Bus) {
            continue;
        }
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{}" stroke-width="1.6" marker-end="url(#ah-{})"/>"#,
            lx + 34.0,
            color(k),
            marker(k)
        );
        text(&mut s, lx + 40.0, ly + 4.0, "start", "dim", name, "");
        lx += 48.0 + text_width(name) + 18.0;
    }
    for (k, l) in legend_notes.iter().enumerate() {
        text(
            &mut s,
            MARGIN,
            ly + 24.0 + k as f64 * 18.0,
            "start",
            "dim",
            l,
            "",
        );
    }
    let _ = writeln!(s, "</svg>");
    s
}

fn draw_line(s: &mut String, d: &Diagram, lay: &Layout, line: &Line, by: f64, right_edge: f64) {
    let text_y = by + 13.0;
    let arrow_y = by + 18.0;
    let left_limit = MARGIN + lay.label_w + 2.0;
    match line {
        Line::Note {
            lane,
            text: t,
            tone,
        } => {
            let x = lay.lane_x[*lane];
            let lines = wrap(t, lay.lane_chars[*lane]);
            let longest = lines.iter().map(|l| text_width(l)).fold(0.0, f64::max);
            let w = (longest + 14.0).min(lay.lane_w[*lane] - 6.0);
            let h = lines.len() as f64 * BAND - 4.0;
            let (fill, stroke, class) = match tone {
                Tone::Plain => ("#ffffff", "#8a94a0", "note"),
                Tone::Key => ("#e3effd", "#1f5fbf", "note-key"),
                Tone::Warn => ("#fff3e0", "#e07b00", "note-warn"),
                Tone::Bad => ("#ffebee", "#c62828", "note-bad"),
            };
            let _ = writeln!(
                s,
                r#"<rect class="note" x="{:.1}" y="{:.1}" width="{w:.1}" height="{h:.1}" rx="4" fill="{fill}" stroke="{stroke}" stroke-width="{}"/>"#,
                x - w / 2.0,
                by + 2.0,
                if *tone == Tone::Plain { 1.0 } else { 1.6 }
            );
            for (k, l) in lines.iter().enumerate() {
                text(s, x, text_y + 1.0 + k as f64 * BAND, "middle", class, l, "");
            }
        }
        Line::Send {
            from,
            track,
            text: t,
        }
        | Line::Deliver {
            to: from,
            track,
            text: t,
        } => {
            let Some(tk) = *track else {
                let x = lay.lane_x[*from];
                text(s, x + 8.0, text_y, "start", "dim", t, "");
                return;
            };
            let kind = d.tracks[tk].kind;
            let lane_x = lay.lane_x[*from];
            let tx = track_x(d, lay, tk);
            let sending = matches!(line, Line::Send { .. });
            let (x1, x2) = if sending { (lane_x, tx) } else { (tx, lane_x) };
            let shorten = if x2 > x1 { -3.0 } else { 3.0 };
            let _ = writeln!(
                s,
                r#"<line class="{}" x1="{x1:.1}" y1="{arrow_y:.1}" x2="{:.1}" y2="{arrow_y:.1}" stroke="{}" stroke-width="1.6" marker-end="url(#ah-{})"/>"#,
                if sending { "send" } else { "deliver" },
                x2 + shorten,
                color(kind),
                marker(kind)
            );
            if !sending {
                let _ = writeln!(
                    s,
                    r#"<circle cx="{tx:.1}" cy="{arrow_y:.1}" r="2.6" fill="{}"/>"#,
                    color(kind)
                );
            }
            // The label sits by the participant's lane, on the side facing the network.
            if lane_x < tx {
                let chars = ((right_edge - lane_x - 8.0) / CHAR_PX) as usize;
                text(
                    s,
                    lane_x + 8.0,
                    text_y,
                    "start",
                    "msg",
                    &truncate(t, chars),
                    t,
                );
            } else {
                let chars = ((lane_x - 8.0 - left_limit) / CHAR_PX) as usize;
                text(
                    s,
                    lane_x - 8.0,
                    text_y,
                    "end",
                    "msg",
                    &truncate(t, chars),
                    t,
                );
            }
        }
        Line::Lost { track } => {
            let x = track_x(d, lay, *track);
            let _ = writeln!(
                s,
                r##"<path class="lost-mark" d="M{:.1},{:.1} l8,8 m0,-8 l-8,8" stroke="#c62828" stroke-width="2"/>"##,
                x - 4.0,
                arrow_y - 4.0
            );
            text(s, x + 8.0, text_y + 2.0, "start", "lost", "lost", "");
        }
        Line::Copy { track, of } => {
            let x = track_x(d, lay, *track);
            let kind = d.tracks[*track].kind;
            if let Some(o) = of {
                let ox = track_x(d, lay, *o);
                let _ = writeln!(
                    s,
                    r#"<line x1="{ox:.1}" y1="{arrow_y:.1}" x2="{x:.1}" y2="{arrow_y:.1}" stroke="{}" stroke-width="1.6"/>"#,
                    color(kind)
                );
            }
            text(s, x + 8.0, text_y + 2.0, "start", "warn", "duplicated", "");
        }
        Line::Violation {
            property,
            text: t,
            primary,
        } => {
            let chars = ((right_edge - left_limit - 8.0) / CHAR_PX) as usize;
            let all = format!("✗ {property} violated: {t}");
            for (k, l) in wrap(&all, chars).iter().enumerate() {
                text(
                    s,
                    left_limit + 8.0,
                    text_y + k as f64 * BAND,
                    "start",
                    if *primary { "bad" } else { "warn" },
                    l,
                    "",
                );
            }
        }
    }
}
