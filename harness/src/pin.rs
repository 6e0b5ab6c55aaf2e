//! A private, stable copy of the `listsync` executable for the length of a replay or matrix run.
//!
//! Every reference and rmcp adapter process is started from the `listsync` binary. A long run
//! that keeps starting it from `target/release/listsync` is exposed to a concurrent
//! `cargo build` replacing that file halfway (a matrix run then mixes two builds, or finds a
//! binary without the `adapter` subcommand). [`PinnedExe`] keeps the inode the run began with:
//! a hard link next to the executable (no copy, same file system), or a copy in a private
//! temporary directory (fresh, unpredictable name, mode 0700) where a link is not possible. It is
//! removed when dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// A pinned executable; the file is removed on drop.
#[derive(Debug)]
pub struct PinnedExe {
    path: PathBuf,
    /// The private directory holding the copy, if it is one.
    _dir: Option<tempfile::TempDir>,
}

static PINS: AtomicU64 = AtomicU64::new(0);

impl PinnedExe {
    /// Pins `exe`: a hard link beside it, else a copy under the temporary directory.
    pub fn new(exe: &Path) -> Result<PinnedExe, String> {
        let n = PINS.fetch_add(1, Ordering::SeqCst);
        let name = format!(".listsync-pinned-{}-{n}", std::process::id());
        if let Some(dir) = exe.parent() {
            let link = dir.join(&name);
            let _ = std::fs::remove_file(&link);
            if std::fs::hard_link(exe, &link).is_ok() {
                return Ok(PinnedExe {
                    path: link,
                    _dir: None,
                });
            }
        }
        let dir = crate::run::private_dir()?;
        let copy = dir.path().join(name);
        std::fs::copy(exe, &copy).map_err(|e| {
            format!(
                "cannot pin {} (link or copy to {}): {e}",
                exe.display(),
                copy.display()
            )
        })?;
        Ok(PinnedExe {
            path: copy,
            _dir: Some(dir),
        })
    }

    /// The pinned file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PinnedExe {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_survives_the_original_being_replaced_and_is_removed_on_drop() {
        let tmp = crate::run::private_dir().unwrap();
        let dir = tmp.path();
        let exe = dir.join("prog");
        std::fs::write(&exe, b"build 1").unwrap();
        let pin = PinnedExe::new(&exe).unwrap();
        // A rebuild writes a new file under the same name.
        std::fs::remove_file(&exe).unwrap();
        std::fs::write(&exe, b"build 2").unwrap();
        assert_eq!(std::fs::read(pin.path()).unwrap(), b"build 1");
        let p = pin.path().to_path_buf();
        drop(pin);
        assert!(!p.exists());
    }
}
