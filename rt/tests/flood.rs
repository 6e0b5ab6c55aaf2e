//! A server floods the reference client with one million `tools/list_changed` notifications
//! (a raw JSON-RPC peer written by hand on a `tokio::io::duplex`, so nothing slows the flood
//! down but the client itself). The client coalesces them before they reach its actor, so its
//! memory stays bounded: the process's resident set (`VmRSS` in /proc/self/status, sampled every
//! 10 ms) may not grow by more than a fixed budget while the flood lasts, and the client still
//! ends current, having counted every notification. This file holds one test so that nothing
//! else shares the process whose memory it measures.

mod common;

use common::memory::Peak;
use common::raw_peer;
use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientNotice, ClientSettings, ListHealth};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::mpsc;

const FLOOD: u64 = 1_000_000;
/// Growth of the resident set allowed during the flood.
const BUDGET: u64 = 48 << 20;
const BOUND: Duration = Duration::from_secs(180);

/// The raw server: answers `initialize`, `tools/list` and `ping`; floods once `go` is set.
fn raw_server(io: tokio::io::DuplexStream, go: Arc<AtomicBool>, lists: Arc<AtomicU64>) {
    let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
    let chunk = note.repeat(1000);
    let mut sent = 0;
    raw_peer::serve(
        io,
        go,
        move |message| {
            let result = match message["method"].as_str() {
                Some("initialize") => Some(raw_peer::initialize_result("flood")),
                Some("tools/list") => {
                    lists.fetch_add(1, Ordering::SeqCst);
                    Some(raw_peer::one_tool())
                }
                Some("ping") => Some(json!({})),
                _ => None,
            };
            std::future::ready(result)
        },
        move || {
            (sent < FLOOD).then(|| {
                sent += 1000;
                chunk.clone()
            })
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_notifications_cost_bounded_memory() {
    let go = Arc::new(AtomicBool::new(false));
    let lists = Arc::new(AtomicU64::new(0));
    let (g, l) = (go.clone(), lists.clone());
    let endpoint = raw_peer::endpoint(move |io| raw_server(io, g.clone(), l.clone()));
    let mut settings = ClientSettings::new(Era::V2025_11_25, KindSet::only(Kind::Tools));
    // How many notifications each hand-over to the actor carried (reported, not asserted: it
    // depends on how far the actor falls behind the flood).
    let (tx, mut notices) = mpsc::unbounded_channel();
    settings.observer = Some(tx);
    let handovers = Arc::new(AtomicU64::new(0));
    let counter = handovers.clone();
    tokio::spawn(async move {
        while let Some(n) = notices.recv().await {
            if let ClientNotice::Notification { .. } = n {
                counter.fetch_add(1, Ordering::SeqCst);
            }
        }
    });
    let catalog = ClientHandle::spawn(settings, endpoint);
    raw_peer::first_list(&catalog, BOUND).await;
    let mut status = catalog.status();

    let peak = Peak::start();
    let started = std::time::Instant::now();
    go.store(true, Ordering::SeqCst);
    tokio::time::timeout(
        BOUND,
        status.wait_for(|s| s.notifications >= FLOOD && s.idle),
    )
    .await
    .expect("the flood is absorbed within the bound")
    .expect("client alive");
    let took = started.elapsed();
    let (baseline, grew) = peak.stop();
    eprintln!(
        "flood: {FLOOD} notifications absorbed in {took:?} in {} hand-overs to the actor; {} list \
         requests; resident set {} MiB before, peak growth {} KiB (budget {} MiB)",
        handovers.load(Ordering::SeqCst),
        lists.load(Ordering::SeqCst),
        baseline >> 20,
        grew >> 10,
        BUDGET >> 20
    );
    assert!(
        grew <= BUDGET,
        "the resident set grew by {} MiB during the flood (budget {} MiB)",
        grew >> 20,
        BUDGET >> 20
    );
    assert_eq!(catalog.list_status(Kind::Tools).health, ListHealth::Current);
    assert_eq!(catalog.tools().items.len(), 1);
    catalog.shutdown();
}
