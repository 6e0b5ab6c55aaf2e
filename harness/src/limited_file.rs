//! Reading a text file a user names (a trace, an adapter manifest, a token file) within a size
//! limit. A regular file over the limit is refused with its size before anything is read, and at
//! most one byte past the limit is ever read, so a pipe, a device (`/dev/zero`) or a file that
//! grows meanwhile costs bounded time and memory and is refused in one line.

use std::io::{Error, ErrorKind, Read};
use std::path::Path;

/// The whole of `path` as UTF-8 text, if it is at most `limit` bytes. The error says what is
/// wrong without the path (the caller adds it).
pub fn read_text(path: &Path, limit: u64) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            "a directory, not a file",
        ));
    }
    if meta.len() > limit {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("{} bytes; the limit is {limit}", meta.len()),
        ));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(Error::new(
            ErrorKind::InvalidData,
            format!("more than {limit} bytes (the limit)"),
        ));
    }
    String::from_utf8(bytes).map_err(|_| Error::new(ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_within_the_limit_is_read_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("t");
        std::fs::write(&p, "abc").unwrap();
        assert_eq!(read_text(&p, 3).unwrap(), "abc");
        let e = read_text(&p, 2).unwrap_err();
        assert_eq!(e.to_string(), "3 bytes; the limit is 2");
    }

    #[test]
    fn an_endless_device_is_refused_past_the_limit() {
        let e = read_text(Path::new("/dev/zero"), 1 << 20).unwrap_err();
        assert_eq!(e.to_string(), "more than 1048576 bytes (the limit)");
        let e = read_text(Path::new("/dev/urandom"), 1 << 10).unwrap_err();
        assert!(e.to_string().starts_with("more than 1024 bytes"), "{e}");
    }

    #[test]
    fn directories_and_binary_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let e = read_text(dir.path(), 10).unwrap_err();
        assert_eq!(e.to_string(), "a directory, not a file");
        let p = dir.path().join("b");
        std::fs::write(&p, [0xff, 0xfe]).unwrap();
        assert_eq!(read_text(&p, 10).unwrap_err().to_string(), "not UTF-8 text");
    }
}
