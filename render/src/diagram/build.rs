//! A trace replayed through core's world, with a recorder that keeps what each step did,
//! turned into a [`Diagram`]: lanes, rows, lines and message tracks.

use super::{Band, Diagram, DiagramLane, DiagramRow, LaneKind, MsgKind, Tone, Track};
use anyhow::{Context, Result};
use listsync_core::history::{ClientId, Event, RefreshOutcome, Restart};
use listsync_core::property::Property;
use listsync_core::record::{Note, Recorder};
use listsync_core::trace::Trace;
use listsync_core::vocab::ItemList;
use listsync_core::world::{Link, Step, World};

/// What one step recorded, in order.
enum Raw {
    Event(Event),
    Note(Note),
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
    fn note(&mut self, note: Note) {
        self.raw.push(Raw::Note(note));
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
        for ver in q.iter().map(|e| e.version) {
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

struct Builder<'a> {
    trace: &'a Trace,
    lanes: Vec<DiagramLane>,
    rows: Vec<DiagramRow>,
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
            lanes.push(DiagramLane {
                kind: LaneKind::Store,
                name: "store".into(),
                about: "shared, versioned".into(),
            });
            bus = Some(lanes.len());
            lanes.push(DiagramLane {
                kind: LaneKind::Bus,
                name: "bus".into(),
                about: "events in flight".into(),
            });
            for n in 0..cl.nodes.max(1) {
                servers.push(lanes.len());
                lanes.push(DiagramLane {
                    kind: LaneKind::Server(n),
                    name: format!("node {n}"),
                    about: server_about.clone(),
                });
            }
        } else {
            servers.push(lanes.len());
            lanes.push(DiagramLane {
                kind: LaneKind::Server(0),
                name: "server".into(),
                about: server_about,
            });
        }
        let net = lanes.len();
        lanes.push(DiagramLane {
            kind: LaneKind::Network,
            name: "network".into(),
            about: format!("{:?}, in flight", scn.transport).to_lowercase(),
        });
        let mut clients = Vec::new();
        for (i, c) in scn.clients.iter().enumerate() {
            clients.push(lanes.len());
            lanes.push(DiagramLane {
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

    fn note(lines: &mut Vec<Band>, lane: usize, text: impl Into<String>, tone: Tone) {
        lines.push(Band::Note {
            lane,
            text: text.into(),
            tone,
        });
    }

    /// Turns one step's recording into lines. Sends are left without a track; `reconcile`
    /// assigns them.
    fn lines_of(&self, w: &World, raw: Vec<Raw>, lines: &mut Vec<Band>) {
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
                    lines.push(Band::Send {
                        from,
                        track: None,
                        text: msg_text.take().unwrap_or_default(),
                    });
                }
                Raw::Note(n) => self.note_line(&n, &mut msg_text, lines),
            }
        }
    }

    fn event_line(&self, w: &World, e: &Event, lines: &mut Vec<Band>) {
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
            Event::RanStaleArguments { client, tool } => Self::note(
                lines,
                self.server_lane(w, *client),
                format!("run {tool} for c{client}: arguments for an old schema"),
                Tone::Bad,
            ),
            Event::CallRejected { client, tool } => Self::note(
                lines,
                self.server_lane(w, *client),
                format!("reject call {tool} from c{client} (-32602)"),
                Tone::Plain,
            ),
            Event::CombinedListing {
                client,
                shown,
                listed,
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!("combined listing: {shown} of {listed} tools"),
                if shown == listed {
                    Tone::Plain
                } else {
                    Tone::Bad
                },
            ),
            Event::CalledCombined { name, client, tool } => Self::note(
                lines,
                self.client_lane(*client),
                format!("app calls {name}: goes out as {tool}"),
                Tone::Plain,
            ),
            Event::Routed {
                client, tool, sent, ..
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!("router {} {tool}", if *sent { "sends" } else { "refuses" }),
                Tone::Plain,
            ),
            Event::CallFailed {
                client,
                tool,
                gone,
                relisted,
                ..
            } => Self::note(
                lines,
                self.client_lane(*client),
                format!(
                    "call {tool} failed ({}){}",
                    if *gone { "gone" } else { "not a change" },
                    if relisted.is_empty() {
                        String::new()
                    } else {
                        format!(": lists {relisted} again")
                    }
                ),
                if !*gone && !relisted.is_empty() {
                    Tone::Bad
                } else {
                    Tone::Plain
                },
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
            // The user's approval is drawn from its note.
            Event::Notified { .. }
            | Event::Approved { .. }
            | Event::NoticeReceived { .. }
            | Event::Served { .. }
            | Event::Woken { .. }
            | Event::RefreshEnded { .. }
            | Event::ListenAcked { .. }
            | Event::Quiescent { .. } => {}
        }
    }

    fn note_line(&self, n: &Note, msg_text: &mut Option<String>, lines: &mut Vec<Band>) {
        let client = |c: ClientId, text: String, tone: Tone, lines: &mut Vec<Band>| {
            Self::note(lines, self.client_lane(c), text, tone)
        };
        match n {
            Note::Violation { property, detail } => lines.push(Band::Violation {
                property: *property,
                text: detail.clone(),
                primary: Some(*property) == self.trace.shows,
            }),
            // The text of the arrow the next `sent` draws.
            Note::ServerSends { msg, .. } => *msg_text = Some(msg.describe()),
            Note::ClientSends { msg, .. } => *msg_text = Some(msg.describe()),
            Note::AdminApplies { ops, .. } => Self::note(
                lines,
                self.commit_lane(),
                format!(
                    "admin: {}",
                    ops.iter()
                        .map(|o| o.to_string())
                        .collect::<Vec<_>>()
                        .join("; ")
                ),
                Tone::Plain,
            ),
            // Shown by the arrows and tracks.
            Note::ServerReceives { .. }
            | Note::ClientReceives { .. }
            | Note::NetworkDuplicates { .. }
            | Note::NetworkLoses { .. }
            | Note::StoreCommits { .. }
            | Note::BusDuplicates { .. }
            | Note::BusLoses { .. }
            | Note::BusDelivers { .. } => {}
            Note::NodeTakes { node, version } => Self::note(
                lines,
                self.node_lane(*node),
                format!("takes v{version}"),
                Tone::Plain,
            ),
            Note::NodePolls { node } => {
                Self::note(lines, self.node_lane(*node), "polls the store", Tone::Plain)
            }
            Note::NodeLoads { node, version } => Self::note(
                lines,
                self.node_lane(*node),
                format!("loads v{version}"),
                Tone::Plain,
            ),
            Note::RetryArmed {
                client: c,
                kind,
                attempt,
                delay_ms,
            } => client(
                *c,
                format!("arms retry {attempt} of {kind} in {delay_ms} ms"),
                Tone::Plain,
                lines,
            ),
            Note::WalkHeld {
                client: c,
                kind,
                delay_ms,
            } => client(
                *c,
                format!("holds its walk of {kind} for {delay_ms} ms"),
                Tone::Plain,
                lines,
            ),
            Note::RefreshFailed {
                client: c,
                kind,
                error,
            } => client(
                *c,
                format!("refresh of {kind} failed: {error}"),
                Tone::Warn,
                lines,
            ),
            Note::ListenRefused { client: c, error } => client(
                *c,
                format!("listen refused ({error}): no change notifications"),
                Tone::Warn,
                lines,
            ),
            Note::CallDone {
                client: c,
                name,
                result,
            } => client(*c, format!("call {name}: {result:?}"), Tone::Plain, lines),
            Note::Content {
                client: c,
                uri,
                text,
            } => client(*c, format!("content {uri}={text}"), Tone::Plain, lines),
            Note::ClientMoves { client: c, to } => {
                client(*c, format!("reconnects to node {to}"), Tone::Plain, lines)
            }
            Note::AuthSwitch { client: c, auth } => {
                client(*c, format!("switches to {auth}"), Tone::Plain, lines)
            }
            Note::CallFails { client: c, name } => client(
                *c,
                format!("call {name} fails: internal error"),
                Tone::Warn,
                lines,
            ),
            Note::ListFails { client: c, kind } => client(
                *c,
                format!("list of {kind} fails: internal error"),
                Tone::Warn,
                lines,
            ),
            Note::AppCalls { client: c, name } => {
                client(*c, format!("application calls {name}"), Tone::Plain, lines)
            }
            Note::UserApproves { client: c, name } => {
                client(*c, format!("user approves {name}"), Tone::Plain, lines)
            }
            Note::TtlRunsOut { client: c, kind } => {
                client(*c, format!("{kind} ttl runs out"), Tone::Plain, lines)
            }
            Note::ConnectionCut { client: c } => {
                client(*c, "connection cut".into(), Tone::Warn, lines)
            }
            Note::Reconnects { client: c } => client(*c, "reconnects".into(), Tone::Plain, lines),
        }
    }

    fn new_track(&mut self, place: Place, kind: MsgKind, start: (usize, usize)) -> usize {
        let (lane, party) = match place {
            Place::Link(c, _) => (self.net, self.client_lane(c)),
            Place::Bus(n) => (self.bus.unwrap_or(self.net), self.node_lane(n)),
        };
        self.tracks.push(Track {
            lane,
            party,
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
    fn reconcile(&mut self, w: &World, row: usize, lines: &mut Vec<Band>) {
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
            lines.push(Band::Lost { track: f.track });
            self.tracks[f.track].end = Some((row, lines.len() - 1));
            self.tracks[f.track].lost = true;
        }
        // Which row lines are sends from which place.
        let send_place = |line: &Band, place: Place, b: &Builder| -> bool {
            let Band::Send {
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
                send_place(l, place, self) && matches!(l, Band::Send { text, .. } if *text == desc)
            });
            match at {
                Some(li) => {
                    let t = self.new_track(place, kind, (row, li));
                    if let Band::Send { track, .. } = &mut lines[li] {
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
                        Band::Send {
                            from: self.commit_lane(),
                            track: None,
                            text: desc.clone(),
                        }
                    } else {
                        Band::Copy { track: 0, of }
                    });
                    let li = lines.len() - 1;
                    let t = self.new_track(place, kind, (row, li));
                    match &mut lines[li] {
                        Band::Send { track, .. } => *track = Some(t),
                        Band::Copy { track, .. } => *track = t,
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
    fn violations(&mut self, w: &World, step: usize, lines: &mut Vec<Band>) -> Option<Property> {
        let mut shown = None;
        for p in Property::ALL {
            if w.holds(p) || self.seen.contains(&p) {
                continue;
            }
            self.seen.push(p);
            let noted = lines
                .iter()
                .any(|l| matches!(l, Band::Violation { property, .. } if *property == p));
            if !noted {
                let text = w
                    .monitor
                    .check_quiescent(&w.expectations())
                    .into_iter()
                    .find(|(q, _)| *q == p)
                    .map(|(_, d)| d)
                    .or_else(|| w.monitor.first_violation(p).map(str::to_owned))
                    .unwrap_or_default();
                lines.push(Band::Violation {
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

    /// Moves the highlight of quiescence property `p`, seen violated at step `seen`, to step
    /// `k`, after which its violation was certain ([`listsync_core::certain`]), with a line
    /// saying so.
    fn certain(&mut self, p: Property, k: usize, seen: Option<usize>) {
        for row in &mut self.rows {
            if row.step == seen {
                row.violation = None;
            }
            if row.step == Some(k) {
                row.violation = Some(p);
                row.lines.push(Band::Violation {
                    property: p,
                    text: format!(
                        "certain from here on: however what is in flight is delivered and the \
                         timers fire, with no further change or fault, the run ends with it \
                         violated{}",
                        seen.map(|s| format!(" (seen at step {s})"))
                            .unwrap_or_default()
                    ),
                    primary: true,
                });
            }
        }
        self.first_violation = Some(k);
    }

    /// The final state: what each client holds against what its server shows.
    fn end_row(&self, w: &World) -> DiagramRow {
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
        DiagramRow {
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
    b.rows.push(DiagramRow {
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
                .map(|e| {
                    let v = e.version;
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
            lines.push(Band::Deliver {
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
        b.rows.push(DiagramRow {
            step: Some(i),
            label: step_label(step),
            lines,
            violation,
        });
    }
    let end = b.end_row(&world);
    b.rows.push(end);
    let seen_at = b.first_violation;
    if let Some(p) = trace.shows.filter(|p| p.judged_at_rest())
        && let Some(k) = listsync_core::certain::became_certain(trace, p)?
        && Some(k) != seen_at
    {
        b.certain(p, k, seen_at);
    }
    let era = scn.era;
    let transport = format!("{:?}", scn.transport).to_lowercase();
    let page = if scn.server.page_size == 0 {
        "one page".to_owned()
    } else {
        format!("page size {}", scn.server.page_size)
    };
    let title = match (trace.shows, seen_at, b.first_violation) {
        (Some(p), Some(seen), Some(certain)) if seen != certain => format!(
            "{} · {p} violated at step {seen}, certain from step {certain}",
            scn.name
        ),
        (Some(p), _, Some(s)) => format!("{} · {p} violated at step {s}", scn.name),
        (Some(p), _, None) => format!("{} · {p}", scn.name),
        (None, ..) => scn.name.clone(),
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
    let mut d = Diagram {
        title,
        subtitle,
        detail: trace.detail.clone(),
        lanes: b.lanes,
        rows: b.rows,
        tracks: b.tracks,
        first_violation: b.first_violation,
    };
    super::fold::fold(&mut d, trace);
    Ok(d)
}
