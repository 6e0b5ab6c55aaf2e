//! The test process's own resident set, for the flood tests (each alone in its binary, so that
//! nothing else shares the process whose memory it measures).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// `VmRSS` of this process, in bytes.
pub fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

/// The resident set sampled every 10 ms on a thread of its own, from [`Peak::start`] to
/// [`Peak::stop`].
pub struct Peak {
    baseline: u64,
    peak: Arc<AtomicU64>,
    sampling: Arc<AtomicBool>,
    sampler: std::thread::JoinHandle<()>,
}

impl Peak {
    pub fn start() -> Peak {
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
        Peak {
            baseline,
            peak,
            sampling,
            sampler,
        }
    }

    /// The resident set at the start, and its greatest growth since.
    pub fn stop(self) -> (u64, u64) {
        self.sampling.store(false, Ordering::SeqCst);
        self.sampler.join().unwrap();
        let grew = self
            .peak
            .load(Ordering::SeqCst)
            .saturating_sub(self.baseline);
        (self.baseline, grew)
    }
}
