//! A server floods the reference client with one million `ping` requests, as fast as it can
//! write them (a raw JSON-RPC peer written by hand on a `tokio::io::duplex`), and stops reading
//! the answers for two seconds after the first. rmcp starts a task for each request it reads,
//! and the answers cannot be written meanwhile; the client reads no further while 256 requests
//! are unanswered, so its memory stays bounded: the process's resident set (`VmRSS` in
//! /proc/self/status, sampled every 10 ms) may not grow by more than a fixed budget while the
//! flood lasts. Every ping is answered exactly once, and the client's list stays current. This
//! file holds one test so that nothing else shares the process whose memory it measures.

use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{BoxRead, BoxWrite, ClientHandle, ClientSettings, Endpoint, ListHealth};
use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

const FLOOD: u64 = 1_000_000;
/// Growth of the resident set allowed during the flood.
const BUDGET: u64 = 48 << 20;
const BOUND: Duration = Duration::from_secs(180);
/// How long the server stops reading answers, at the first.
const PAUSE: Duration = Duration::from_secs(2);

fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// What the raw server saw of the client's answers to its pings.
#[derive(Default)]
struct Answers {
    /// Per ping, how many answers it got.
    seen: Mutex<Vec<u8>>,
    total: AtomicU64,
}

/// The raw server: answers `initialize` and `tools/list`; once `go` is set, writes [`FLOOD`]
/// pings (ids 0..FLOOD) without waiting for their answers, which it counts as they come.
fn raw_server(io: tokio::io::DuplexStream, go: Arc<AtomicBool>, answers: Arc<Answers>) {
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
                    "serverInfo": {"name": "request-flood", "version": "1"},
                }),
                Some("tools/list") => {
                    json!({"tools": [{"name": "a", "inputSchema": {"type": "object"}}]})
                }
                Some(_) => continue,
                None => {
                    // An answer to one of the pings. At the first, the server stops reading for
                    // a while (it keeps writing pings), as a busy or slow peer does.
                    if answers.total.load(Ordering::SeqCst) == 0 {
                        tokio::time::sleep(PAUSE).await;
                    }
                    if let Some(n) = id.as_u64().filter(|&n| n < FLOOD) {
                        answers.seen.lock().unwrap()[n as usize] += 1;
                        answers.total.fetch_add(1, Ordering::SeqCst);
                    }
                    continue;
                }
            };
            let reply = json!({"jsonrpc": "2.0", "id": id, "result": result});
            if tx.send(format!("{reply}\n")).is_err() {
                return;
            }
        }
    });
    tokio::spawn(async move {
        let mut next = 0u64;
        loop {
            while let Ok(r) = replies.try_recv() {
                if write.write_all(r.as_bytes()).await.is_err() {
                    return;
                }
            }
            if go.load(Ordering::SeqCst) && next < FLOOD {
                let chunk: String = (next..(next + 1000).min(FLOOD))
                    .map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"}}\n"))
                    .collect();
                if write.write_all(chunk.as_bytes()).await.is_err() {
                    return;
                }
                next = (next + 1000).min(FLOOD);
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
async fn a_million_pings_cost_bounded_memory_and_are_all_answered() {
    let go = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Answers {
        seen: Mutex::new(vec![0; FLOOD as usize]),
        total: AtomicU64::new(0),
    });
    let (g, a) = (go.clone(), answers.clone());
    let endpoint = Endpoint::io(move |_auth| {
        let (g, a) = (g.clone(), a.clone());
        async move {
            let (client, server) = tokio::io::duplex(64 << 10);
            raw_server(server, g, a);
            let (r, w) = tokio::io::split(client);
            Ok((Box::new(r) as BoxRead, Box::new(w) as BoxWrite))
        }
    });
    let settings = ClientSettings::new(Era::V2025_11_25, KindSet::only(Kind::Tools));
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
    let all_answered = async {
        while answers.total.load(Ordering::SeqCst) < FLOOD {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let finished = tokio::time::timeout(BOUND, all_answered).await;
    let took = started.elapsed();
    sampling.store(false, Ordering::SeqCst);
    sampler.join().unwrap();
    let grew = peak.load(Ordering::SeqCst).saturating_sub(baseline);
    eprintln!(
        "request flood: {} of {FLOOD} pings answered in {took:?}; resident set {} MiB before, \
         peak growth {} KiB (budget {} MiB)",
        answers.total.load(Ordering::SeqCst),
        baseline >> 20,
        grew >> 10,
        BUDGET >> 20
    );
    assert!(finished.is_ok(), "every ping answered within {BOUND:?}");
    assert!(
        grew <= BUDGET,
        "the resident set grew by {} MiB during the flood (budget {} MiB)",
        grew >> 20,
        BUDGET >> 20
    );
    let seen = answers.seen.lock().unwrap();
    let wrong = seen.iter().filter(|&&n| n != 1).count();
    assert_eq!(wrong, 0, "pings not answered exactly once");
    drop(seen);
    assert_eq!(catalog.list_status(Kind::Tools).health, ListHealth::Current);
    assert_eq!(catalog.tools().items.len(), 1);
    catalog.shutdown();
}
