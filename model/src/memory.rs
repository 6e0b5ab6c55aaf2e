//! Peak resident memory of this process while one configuration is checked (Linux: the kernel's
//! high-water mark, reset before each configuration; elsewhere nothing is reported).
//!
//! The figure is the whole process's: it includes what earlier configurations left allocated,
//! so read it as an upper bound on what the configuration needs.

use std::sync::atomic::{AtomicU64, Ordering};

/// The resident memory an exploration may use before it is stopped (bytes; 0: no limit).
static LIMIT: AtomicU64 = AtomicU64::new(0);

/// Stops every exploration that follows once the process's resident set passes `bytes`
/// (`listsync check --max-memory`): the checker is told to expand no further state, and the
/// configuration is reported bounded, its progress pass not run. `None`: no limit.
pub fn set_limit(bytes: Option<u64>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The limit [`set_limit`] set.
pub fn limit() -> Option<u64> {
    Some(LIMIT.load(Ordering::Relaxed)).filter(|b| *b > 0)
}

/// The process's resident set now, in bytes (`VmRSS`), if the platform reports it.
pub fn current_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resets the process's peak resident set to its current size (Linux `clear_refs` 5; ignored
/// where unsupported).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set since the last [`reset_peak`], in bytes (`VmHWM`), if the
/// platform reports it.
pub fn peak_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_peak_grows_with_what_is_touched() {
        super::reset_peak();
        let Some(before) = super::peak_bytes() else {
            return; // not Linux: nothing to report, nothing to check
        };
        let big = vec![1u8; 64 << 20];
        std::hint::black_box(&big);
        let after = super::peak_bytes().expect("reported before");
        assert!(
            after >= before + (48 << 20),
            "peak {after} after touching 64 MiB, {before} before"
        );
    }
}
