//! Walks under changes that keep coming, counted on the wire between the reference client and
//! server (a tap that reads every JSON-RPC line), on simulated time (a paused tokio clock: the
//! counts do not depend on the machine's speed):
//!
//! * eight tools added 5 ms apart, one `list_changed` each, from a server with version-bound
//!   cursors, each line taking 2 ms to reach the client (so commits land in the middle of
//!   walks): with the default (adaptive) pacing the client abandons no walk, walks at most four
//!   times and converges; with the coalescing gap off it abandons no walk either. (Against a
//!   server that refuses the cursors of an earlier version the same run abandons walks: the
//!   count is real.)
//! * a server that answers every `tools/list` with a `list_changed` as well: over a minute the
//!   client's walks stay within the documented storm bound, it publishes only real changes, and
//!   a real change in the middle of the storm still arrives.

mod common;

use common::*;
use listsync_core::client::{Coalesce, Pacing};
use listsync_core::vocab::{Era, Kind, KindSet, Op};
use listsync_rt::client::{BoxRead, BoxWrite, ClientHandle, Endpoint};
use listsync_rt::history::SharedHistory;
use listsync_rt::server::{Server, ServerSettings};
use listsync_testkit::peers::serve_in_memory;
use serde_json::Value;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

/// What the tap saw of `tools/list`.
#[derive(Default)]
struct Wire {
    /// First-page requests: walks started (restarts included).
    walks: u64,
    /// All `tools/list` requests.
    pages: u64,
    /// `tools/list` results without a next cursor: walks that reached their last page.
    completed: u64,
}

impl Wire {
    /// Walks started that never reached their last page (restarted, or refused a cursor).
    fn abandoned(&self) -> u64 {
        self.walks - self.completed
    }
}

type Seen = Arc<Mutex<Wire>>;

async fn write_line(to: &mut (impl AsyncWrite + Unpin), line: &str) -> bool {
    to.write_all(line.as_bytes()).await.is_ok()
        && to.write_all(b"\n").await.is_ok()
        && to.flush().await.is_ok()
}

/// Client to server: count list requests and the cursors they follow.
async fn pump_up(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, seen: Seen) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v.get("method").and_then(Value::as_str) == Some("tools/list")
        {
            let first = v
                .pointer("/params/cursor")
                .and_then(Value::as_str)
                .is_none();
            let mut w = seen.lock().unwrap();
            w.pages += 1;
            w.walks += u64::from(first);
        }
        if !write_line(&mut to, &line).await {
            break;
        }
    }
}

/// Each line from the server takes this long to reach the client (simulated time), so that a
/// walk takes a few ms and commits 5 ms apart land in the middle of walks.
const LATENCY: Duration = Duration::from_millis(2);

/// Server to client: note every list result that ends a walk.
async fn pump_down(from: impl AsyncRead + Unpin, mut to: impl AsyncWrite + Unpin, seen: Seen) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tokio::time::sleep(LATENCY).await;
        if let Ok(v) = serde_json::from_str::<Value>(&line)
            && v.pointer("/result/tools").is_some()
            && v.pointer("/result/nextCursor").is_none_or(Value::is_null)
        {
            seen.lock().unwrap().completed += 1;
        }
        if !write_line(&mut to, &line).await {
            break;
        }
    }
}

/// Connections to `server` through a counting tap.
fn tapped(server: &Server, seen: &Seen) -> Endpoint {
    let (server, seen) = (server.clone(), seen.clone());
    Endpoint::io(move |auth| {
        let (server, seen) = (server.clone(), seen.clone());
        async move {
            let (client_end, tap_client) = tokio::io::duplex(1 << 16);
            let tap_server = serve_in_memory(server.service_as(auth));
            let (cr, cw) = tokio::io::split(tap_client);
            let (sr, sw) = tokio::io::split(tap_server);
            tokio::spawn(pump_up(cr, sw, seen.clone()));
            tokio::spawn(pump_down(sr, cw, seen));
            let (r, w) = tokio::io::split(client_end);
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    })
}

fn tools(n: usize) -> Vec<Op> {
    (0..n)
        .map(|i| Op::add(Kind::Tools, &format!("t{i}"), &format!("t{i} v1")))
        .collect()
}

/// A reference client pacing as `pacing`, recording into `history` (the server's), connected
/// through a tap.
fn client(server: &Server, pacing: Pacing, seen: &Seen, history: &SharedHistory) -> ClientHandle {
    let mut s = client_settings(Era::V2025_11_25, KindSet::only(Kind::Tools), 0, history);
    s.client.pacing = pacing;
    ClientHandle::spawn(s, tapped(server, seen))
}

/// Waits (on simulated time, 1 ms at a time) until the client is idle and has taken in every
/// notification the server sent. (`common::settle` waits for status changes, which on a paused
/// clock would never let a pacing timer come due.)
async fn quiet(server: &Server, catalog: &ClientHandle) {
    within("quiescence", async {
        loop {
            let s = catalog.status().borrow().clone();
            if s.ready && s.idle && s.notifications >= u64::from(server.notifications_sent()) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
    .await;
}

fn names(catalog: &ClientHandle) -> Vec<String> {
    catalog.tools().value().names()
}

/// Four tools, two per page; then eight more, one commit (and one notification) every 5 ms.
/// Returns (walks during the burst, cursors left unfollowed, converged).
async fn spaced_burst(pacing: Pacing) -> (u64, u64, bool) {
    let history = SharedHistory::new();
    let server = common::server(
        ServerSettings::new(Era::V2025_11_25, 2),
        &tools(4),
        &history,
    );
    let seen = Seen::default();
    let catalog = client(&server, pacing, &seen, &history);
    quiet(&server, &catalog).await;
    let before = seen.lock().unwrap().walks;
    for i in 4..12 {
        tokio::time::sleep(Duration::from_millis(5)).await;
        server
            .apply(&[Op::add(Kind::Tools, &format!("t{i}"), &format!("t{i} v1"))])
            .await;
    }
    quiet(&server, &catalog).await;
    let (walks, abandoned) = {
        let w = seen.lock().unwrap();
        (w.walks, w.abandoned())
    };
    let mut want: Vec<String> = (0..12).map(|i| format!("t{i}")).collect();
    want.sort();
    let mut have = names(&catalog);
    have.sort();
    let converged = have == want && catalog.tools().value().version == Some(server.version());
    catalog.shutdown();
    quiescent(&history, &[(0, KindSet::only(Kind::Tools))]);
    assert_holds(&history);
    (walks - before, abandoned, converged)
}

#[tokio::test(start_paused = true)]
async fn adaptive_pacing_coalesces_a_spaced_burst_without_abandoning_a_walk() {
    let (walks, abandoned, converged) = spaced_burst(Pacing::default()).await;
    assert_eq!(abandoned, 0, "walks abandoned");
    assert!(walks <= 4, "{walks} walks for the burst");
    assert!(converged);

    let off = Pacing {
        coalesce: Coalesce::Off,
        ..Pacing::default()
    };
    let (walks_off, abandoned, converged) = spaced_burst(off).await;
    assert_eq!(abandoned, 0, "walks abandoned with the gap off");
    assert!(converged);
    // Without the gap, only walks that overlap a commit coalesce (the dirty flag).
    assert!(
        walks <= walks_off,
        "{walks} walks paced, {walks_off} with the gap off"
    );
}

#[tokio::test(start_paused = true)]
async fn a_notification_on_every_list_does_not_make_the_client_walk_without_end() {
    let history = SharedHistory::new();
    let mut settings = ServerSettings::new(Era::V2025_11_25, 2);
    settings.core.notify_on_list = true;
    let server = common::server(settings, &tools(4), &history);
    let seen = Seen::default();
    let pacing = Pacing::default();
    let catalog = client(&server, pacing, &seen, &history);
    wait_view("first list", &catalog, Kind::Tools, |v| {
        v.value().items.len() == 4
    })
    .await;

    // Half a minute of storm, a real change, another half minute.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let first_half = seen.lock().unwrap().walks;
    server.apply(&[Op::add(Kind::Tools, "new", "new v1")]).await;
    wait_view("the real change", &catalog, Kind::Tools, |v| {
        v.value().items.iter().any(|i| &*i.name == "new")
    })
    .await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let (walks, pages, abandoned) = {
        let w = seen.lock().unwrap();
        (w.walks, w.pages, w.abandoned())
    };
    let st = catalog.status().borrow().clone();
    catalog.shutdown();

    // The documented bound: the first walk, then per storm (one before the change, one after
    // it, the back-off starting over after a real change) `storm_after` walks back to back and
    // one per storm delay, the delay doubling from 100 ms to 10 s.
    let per_storm = pacing.storm_bound(30.0).expect("storm back-off on");
    let bound = 1 + 2 * per_storm;
    assert!(
        walks <= bound,
        "{walks} walks in a minute of storm, bound {bound}"
    );
    assert!(first_half > 3, "the storm was real: {first_half} walks");
    assert!(first_half <= 1 + per_storm);
    // Every walk went to its last page.
    assert_eq!(abandoned, 0, "walks abandoned");
    assert!(pages <= 3 * walks, "{pages} pages in {walks} walks");
    // Only the first list and the real change were published.
    assert_eq!(st.publications, 2, "publications");
    assert!(st.notifications > walks, "notifications kept coming");
    // The storm server's own bounded_refresh violation (a list_changed without a commit) is
    // all the history shows: the client's snapshots are untorn and never go backwards.
    let v = violated_set(&history);
    assert_eq!(
        v,
        [listsync_core::property::Property::BoundedRefresh],
        "{v:?}"
    );
}
