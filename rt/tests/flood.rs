//! A server floods the reference client with one million `tools/list_changed` notifications
//! (a raw JSON-RPC peer written by hand on a `tokio::io::duplex`, so nothing slows the flood
//! down but the client itself). The client coalesces them before they reach its actor, so its
//! memory stays bounded: the process's resident set (`VmRSS` in /proc/self/status, sampled every
//! 10 ms) may not grow by more than a fixed budget while the flood lasts, and the client still
//! ends current, having counted every notification. This file holds one test so that nothing
//! else shares the process whose memory it measures.

use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{
    BoxRead, BoxWrite, ClientHandle, ClientNotice, ClientSettings, Endpoint, ListHealth,
};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const FLOOD: u64 = 1_000_000;
/// Growth of the resident set allowed during the flood.
const BUDGET: u64 = 48 << 20;
const BOUND: Duration = Duration::from_secs(180);

fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The raw server: answers `initialize`, `tools/list` and `ping`; floods once `go` is set.
fn raw_server(
    io: tokio::io::DuplexStream,
    go: Arc<AtomicBool>,
    sent: Arc<AtomicU64>,
    lists: Arc<AtomicU64>,
) {
    let (read, mut write) = tokio::io::split(io);
    let (tx, mut replies) = mpsc::unbounded_channel::<String>();
    tokio::spawn(async move {
        let mut lines = BufReader::new(read).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            let Ok(v) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            let id = v["id"].clone();
            let result = match v["method"].as_str() {
                Some("initialize") => json!({
                    "protocolVersion": "2025-11-25",
                    "capabilities": {"tools": {"listChanged": true}},
                    "serverInfo": {"name": "flood", "version": "1"},
                }),
                Some("tools/list") => {
                    lists.fetch_add(1, Ordering::SeqCst);
                    json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})
                }
                Some("ping") => json!({}),
                _ => continue,
            };
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            if tx.send(format!("{reply}\n")).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        let note = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n";
        let chunk = note.repeat(1000);
        loop {
            while let Ok(r) = replies.try_recv() {
                if write.write_all(r.as_bytes()).await.is_err() {
                    return;
                }
            }
            if go.load(Ordering::SeqCst) && sent.load(Ordering::SeqCst) < FLOOD {
                if write.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
                sent.fetch_add(1000, Ordering::SeqCst);
            } else {
                // Idle: the next reply, or a look at the flood flag every 10 ms.
                tokio::select! {
                    r = replies.recv() => match r {
                        Some(r) => {
                            if write.write_all(r.as_bytes()).await.is_err() {
                                return;
                            }
                        }
                        None => return,
                    },
                    _ = tokio::time::sleep(Duration::from_millis(10)) => {}
                }
            }
            let _ = write.flush().await;
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_notifications_cost_bounded_memory() {
    let go = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicU64::new(0));
    let lists = Arc::new(AtomicU64::new(0));
    let (g, s, l) = (go.clone(), sent.clone(), lists.clone());
    let endpoint = Endpoint::io(move |_auth| {
        let (g, s, l) = (g.clone(), s.clone(), l.clone());
        async move {
            let (client, server) = tokio::io::duplex(64 << 10);
            raw_server(server, g, s, l);
            let (r, w) = tokio::io::split(client);
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    });
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
    let mut status = catalog.status();
    tokio::time::timeout(
        BOUND,
        status.wait_for(|s| s.ready && s.idle && s.publications == 1),
    )
    .await
    .expect("first list within the bound")
    .expect("client alive");

    let baseline = rss();
    let peak = Arc::new(AtomicU64::new(baseline));
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let (peak, sampling) = (peak.clone(), sampling.clone());
        std::thread::spawn(move || {
            while sampling.load(Ordering::SeqCst) {
                peak.fetch_max(rss(), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(10));
            }
        })
    };
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
    sampling.store(false, Ordering::SeqCst);
    sampler.join().unwrap();
    let grew = peak.load(Ordering::SeqCst).saturating_sub(baseline);
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
