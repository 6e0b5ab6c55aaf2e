//! Committed reports name no absolute path of the machine that generated them: every file under
//! `reports/` is scanned for the usual roots of checkouts, temporary files, home directories and
//! installed programs (the writers put placeholders there: `harness/src/portable.rs`).

use std::path::{Path, PathBuf};

/// Prefixes of machine paths.
const MACHINE_ROOTS: [&str; 5] = ["/work/", "/tmp/", "/root/", "/home/", "/usr/"];

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for e in entries {
        let p = e.expect("directory entry").path();
        if p.is_dir() {
            files(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The machine roots `bytes` contains, with the line of the first hit of each.
fn hits(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    MACHINE_ROOTS
        .iter()
        .filter_map(|root| {
            text.lines()
                .position(|l| l.contains(root))
                .map(|n| format!("{root} (line {})", n + 1))
        })
        .collect()
}

#[test]
fn the_scan_sees_a_machine_path() {
    assert_eq!(
        hits(b"ok\nnote: /tmp/.listsync-pinned-1-0 serve"),
        ["/tmp/ (line 2)"]
    );
    assert!(hits(b"note: <pinned listsync> serve; <node> <cache>/ts-v2/adapter.mjs").is_empty());
}

#[test]
fn committed_reports_name_no_absolute_path_of_the_generating_machine() {
    let reports = Path::new(env!("CARGO_MANIFEST_DIR")).join("reports");
    let mut all = Vec::new();
    files(&reports, &mut all);
    all.sort();
    assert!(!all.is_empty(), "no files under {}", reports.display());
    let bad: Vec<String> = all
        .iter()
        .filter_map(|f| {
            let found = hits(&std::fs::read(f).unwrap_or_else(|e| panic!("{}: {e}", f.display())));
            (!found.is_empty()).then(|| {
                format!(
                    "{}: {}",
                    f.strip_prefix(env!("CARGO_MANIFEST_DIR"))
                        .unwrap_or(f)
                        .display(),
                    found.join(", ")
                )
            })
        })
        .collect();
    assert!(
        bad.is_empty(),
        "{} file(s) under reports/ name absolute paths of the machine that wrote them \
         (regenerate them with the current writers):\n{}",
        bad.len(),
        bad.join("\n")
    );
}
