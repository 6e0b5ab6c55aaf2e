//! Peak resident memory of this process while one configuration is checked (Linux: the kernel's
//! high-water mark, reset before each configuration; elsewhere nothing is reported).
//!
//! The figure is the whole process's: it includes what earlier configurations left allocated,
//! so read it as an upper bound on what the configuration needs.

/// Resets the process's peak resident set to its current size (Linux `clear_refs` 5; ignored
/// where unsupported).
pub fn reset_peak() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

/// The process's peak resident set since the last [`reset_peak`], in bytes (`VmHWM`), if the
/// platform reports it.
pub fn peak_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
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
