//! A server floods the reference client with one million `ping` requests, as fast as it can
//! write them (a raw JSON-RPC peer written by hand on a `tokio::io::duplex`), and stops reading
//! the answers for two seconds after the first. rmcp starts a task for each request it reads,
//! and the answers cannot be written meanwhile; the client reads no further while 256 requests
//! are unanswered, so its memory stays bounded: the process's resident set (`VmRSS` in
//! /proc/self/status, sampled every 10 ms) may not grow by more than a fixed budget while the
//! flood lasts. Every ping is answered exactly once, and the client's list stays current. This
//! file holds one test so that nothing else shares the process whose memory it measures.

mod common;

use common::memory::Peak;
use common::raw_peer;
use listsync_core::vocab::{Era, Kind, KindSet};
use listsync_rt::client::{ClientHandle, ClientSettings, ListHealth};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const FLOOD: u64 = 1_000_000;
/// Growth of the resident set allowed during the flood.
const BUDGET: u64 = 48 << 20;
const BOUND: Duration = Duration::from_secs(180);
/// How long the server stops reading answers, at the first.
const PAUSE: Duration = Duration::from_secs(2);

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
    let mut next = 0u64;
    raw_peer::serve(
        io,
        go,
        move |message| {
            let answers = answers.clone();
            async move {
                match message["method"].as_str() {
                    Some("initialize") => Some(raw_peer::initialize_result("request-flood")),
                    Some("tools/list") => Some(raw_peer::one_tool()),
                    Some(_) => None,
                    None => {
                        // An answer to one of the pings. At the first, the server stops reading
                        // for a while (it keeps writing pings), as a busy or slow peer does.
                        if answers.total.load(Ordering::SeqCst) == 0 {
                            tokio::time::sleep(PAUSE).await;
                        }
                        let id = message["id"].as_u64().filter(|&n| n < FLOOD);
                        if let Some(n) = id {
                            answers.seen.lock().unwrap()[n as usize] += 1;
                            answers.total.fetch_add(1, Ordering::SeqCst);
                        }
                        None
                    }
                }
            }
        },
        move || {
            (next < FLOOD).then(|| {
                let to = (next + 1000).min(FLOOD);
                let chunk = (next..to)
                    .map(|n| format!("{{\"jsonrpc\":\"2.0\",\"id\":{n},\"method\":\"ping\"}}\n"))
                    .collect();
                next = to;
                chunk
            })
        },
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_million_pings_cost_bounded_memory_and_are_all_answered() {
    let go = Arc::new(AtomicBool::new(false));
    let answers = Arc::new(Answers {
        seen: Mutex::new(vec![0; FLOOD as usize]),
        total: AtomicU64::new(0),
    });
    let (g, a) = (go.clone(), answers.clone());
    let endpoint = raw_peer::endpoint(move |io| raw_server(io, g.clone(), a.clone()));
    let settings = ClientSettings::new(Era::V2025_11_25, KindSet::only(Kind::Tools));
    let catalog = ClientHandle::spawn(settings, endpoint);
    raw_peer::first_list(&catalog, BOUND).await;

    let peak = Peak::start();
    let started = std::time::Instant::now();
    go.store(true, Ordering::SeqCst);
    let all_answered = async {
        while answers.total.load(Ordering::SeqCst) < FLOOD {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    };
    let finished = tokio::time::timeout(BOUND, all_answered).await;
    let took = started.elapsed();
    let (baseline, grew) = peak.stop();
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
