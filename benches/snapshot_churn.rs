//! Bench (2), snapshot reads under churn: how long one read of a client's current list takes
//! while a writer thread publishes new snapshots back to back, for the reference store
//! (`listsync_store::SnapshotCell`, wait-free reads over arc-swap) against the two obvious
//! alternatives, `RwLock<Arc<_>>` and `Mutex<Arc<_>>`, and against a bare `arc_swap::ArcSwap`
//! (what the cell adds — the version check and the stale flag — is the difference). Every read
//! returns an `Arc` of the whole snapshot, as an application would hold it.
//!
//! Criterion times the reads of the measuring thread (mean per read); a second pass times every
//! read of every reader thread one by one for the percentiles (p50 … max) that `listsync report`
//! puts in `reports/bench.md`, with the cost of timing an empty operation as a baseline row.

mod support;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use listsync_render::bench::{BenchFile, ChurnRow, Dist, Group};
use listsync_store::{SnapshotCell, Versioned};
use std::collections::BTreeMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

/// A published list: a version and its items (shared between snapshots, as a real catalog's
/// unchanged items would be).
struct Listing {
    version: u64,
    items: Arc<[String]>,
}

impl Versioned for Listing {
    type Version = u64;
    fn version(&self) -> u64 {
        self.version
    }
}

/// The stores, behind one interface.
enum Store {
    Cell(SnapshotCell<Listing>),
    ArcSwap(arc_swap::ArcSwap<Listing>),
    RwLock(RwLock<Arc<Listing>>),
    Mutex(Mutex<Arc<Listing>>),
}

impl Store {
    const NAMES: [&'static str; 4] = ["SnapshotCell", "ArcSwap", "RwLock<Arc<_>>", "Mutex<Arc<_>>"];

    fn new(name: &str, first: Arc<Listing>) -> Store {
        match name {
            "SnapshotCell" => Store::Cell(SnapshotCell::new(first)),
            "ArcSwap" => Store::ArcSwap(arc_swap::ArcSwap::new(first)),
            "RwLock<Arc<_>>" => Store::RwLock(RwLock::new(first)),
            _ => Store::Mutex(Mutex::new(first)),
        }
    }

    fn read(&self) -> u64 {
        match self {
            Store::Cell(c) => {
                let s = c.load();
                s.version() + s.value().items.len() as u64
            }
            Store::ArcSwap(a) => {
                let s = a.load_full();
                s.version + s.items.len() as u64
            }
            Store::RwLock(l) => {
                let s = l.read().expect("not poisoned").clone();
                s.version + s.items.len() as u64
            }
            Store::Mutex(m) => {
                let s = m.lock().expect("not poisoned").clone();
                s.version + s.items.len() as u64
            }
        }
    }

    fn publish(&self, next: Arc<Listing>) {
        match self {
            Store::Cell(c) => {
                let _ = c.publish(next);
            }
            Store::ArcSwap(a) => a.store(next),
            Store::RwLock(l) => *l.write().expect("not poisoned") = next,
            Store::Mutex(m) => *m.lock().expect("not poisoned") = next,
        }
    }
}

/// A store with a writer publishing continuously and `extra` more reader threads reading
/// continuously, until dropped.
struct Churn {
    store: Arc<Store>,
    stop: Arc<AtomicBool>,
    published: Arc<AtomicU64>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Churn {
    fn start(name: &str, extra_readers: u32) -> Churn {
        let items: Arc<[String]> = (0..100).map(|i| format!("tool-{i}")).collect();
        let store = Arc::new(Store::new(
            name,
            Arc::new(Listing {
                version: 0,
                items: items.clone(),
            }),
        ));
        let stop = Arc::new(AtomicBool::new(false));
        let published = Arc::new(AtomicU64::new(0));
        let mut threads = Vec::new();
        {
            let (store, stop, published) = (store.clone(), stop.clone(), published.clone());
            threads.push(std::thread::spawn(move || {
                let mut v = 0;
                while !stop.load(Ordering::Relaxed) {
                    v += 1;
                    store.publish(Arc::new(Listing {
                        version: v,
                        items: items.clone(),
                    }));
                    published.store(v, Ordering::Relaxed);
                }
            }));
        }
        for _ in 0..extra_readers {
            let (store, stop) = (store.clone(), stop.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    black_box(store.read());
                }
            }));
        }
        Churn {
            store,
            stop,
            published,
            threads,
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Times every read of `readers` threads for `dur`; returns the samples (ns) and the writer's
/// publish rate meanwhile.
fn sample_reads(name: &str, readers: u32, dur: Duration) -> (Vec<f64>, f64) {
    let churn = Churn::start(name, 0);
    let start_pub = churn.published.load(Ordering::Relaxed);
    let t0 = Instant::now();
    let handles: Vec<_> = (0..readers)
        .map(|_| {
            let store = churn.store.clone();
            std::thread::spawn(move || {
                let mut v = Vec::with_capacity(1 << 16);
                let end = Instant::now() + dur;
                while Instant::now() < end && v.len() < 4_000_000 {
                    let a = Instant::now();
                    black_box(store.read());
                    v.push(a.elapsed().as_nanos() as f64);
                }
                v
            })
        })
        .collect();
    let mut all = Vec::new();
    for h in handles {
        all.extend(h.join().expect("reader thread"));
    }
    let published = churn.published.load(Ordering::Relaxed) - start_pub;
    let secs = t0.elapsed().as_secs_f64();
    churn.stop();
    (all, published as f64 / secs)
}

/// Samples every store at `readers` readers in `rounds` short slices of `slice` each, the stores
/// taking turns (in a rotating order), so that a change in the machine's load falls on all of
/// them alike; returns per store its samples and mean publish rate.
fn sample_interleaved(
    readers: u32,
    rounds: u32,
    slice: Duration,
) -> BTreeMap<&'static str, (Vec<f64>, f64)> {
    let mut out: BTreeMap<&'static str, (Vec<f64>, f64)> = BTreeMap::new();
    for round in 0..rounds {
        for i in 0..Store::NAMES.len() {
            let name = Store::NAMES[(i + round as usize) % Store::NAMES.len()];
            let (samples, rate) = sample_reads(name, readers, slice);
            let entry = out.entry(name).or_default();
            entry.0.extend(samples);
            entry.1 += rate / f64::from(rounds);
        }
    }
    out
}

/// The cost of timing an empty operation.
fn timer_only(dur: Duration) -> Vec<f64> {
    let mut v = Vec::with_capacity(1 << 20);
    let end = Instant::now() + dur;
    while Instant::now() < end && v.len() < 4_000_000 {
        let a = Instant::now();
        black_box(());
        v.push(a.elapsed().as_nanos() as f64);
    }
    v
}

fn bench(c: &mut Criterion) {
    let clock = support::RunClock::start();
    let quick = support::quick();
    // Percentile pass: rounds of short slices, the stores taking turns.
    let (rounds, slice) = if quick {
        (20, Duration::from_millis(50))
    } else {
        (60, Duration::from_millis(100))
    };
    let sample_for = slice * rounds;
    let mut rows = Vec::new();
    let mut group = c.benchmark_group("snapshot_churn");
    for readers in [1u32, 2, 4] {
        let mut means = BTreeMap::new();
        for name in Store::NAMES {
            // Criterion: the measuring thread reads; readers - 1 more read in the background.
            let churn = Churn::start(name, readers - 1);
            let id = BenchmarkId::new(name, format!("{readers} reader(s)"));
            let mut mean_ns = 0.0;
            group.bench_function(id, |b| {
                b.iter_custom(|iters| {
                    let t = Instant::now();
                    for _ in 0..iters {
                        black_box(churn.store.read());
                    }
                    let d = t.elapsed();
                    mean_ns = d.as_nanos() as f64 / iters.max(1) as f64;
                    d
                })
            });
            churn.stop();
            if mean_ns > 0.0 {
                means.insert(name, mean_ns);
            }
        }
        if means.is_empty() {
            continue; // filtered out
        }
        for (name, (mut samples, publishes_per_sec)) in sample_interleaved(readers, rounds, slice) {
            let Some(mean_ns) = means.get(name) else {
                continue;
            };
            rows.push(ChurnRow {
                store: name.to_owned(),
                readers,
                read_ns: Dist::of(&mut samples),
                reads_per_sec: 1e9 / mean_ns,
                publishes_per_sec,
            });
        }
    }
    group.finish();
    if !rows.is_empty() {
        // The timer's own cost, beside the stores measured (none when a filter matched none).
        let mut t = timer_only(sample_for);
        rows.push(ChurnRow {
            store: "timer only".into(),
            readers: 1,
            read_ns: Dist::of(&mut t),
            reads_per_sec: 0.0,
            publishes_per_sec: 0.0,
        });
    }
    let mut file = BenchFile::new();
    file.churn = Some(Group {
        run: clock.info(),
        driver: "std threads: one writer publishing back to back, 1, 2 or 4 reader threads".into(),
        notes: vec![
            "Each read returns an Arc of the whole snapshot (100 items). Percentiles (and the \
             means the ratios use) time every read individually, so they include the timer's \
             own cost (the `timer only` row); reads/s is criterion's, from one store at a time."
                .into(),
            format!(
                "Percentiles: {rounds} rounds of {} ms per store and reader count, the stores \
                 taking turns in a rotating order, so that the machine's changing load falls on \
                 all of them alike.",
                slice.as_millis()
            ),
            "With 2 or 4 readers there are 3 or 5 busy threads on a 2-core machine: a lock holder \
             can be preempted, which is what the tail of the lock-based stores shows."
                .into(),
        ],
        rows,
    });
    support::write_figures("churn", &file);
}

criterion_group! {
    name = benches;
    config = support::criterion_for_ops();
    targets = bench
}

criterion_main!(benches);
