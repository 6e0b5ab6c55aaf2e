//! `listsync report` on the committed JSON is reproducible and readable: regenerating the
//! committed `reports/` twice, into two copies of it, gives byte-identical files; no page carries
//! a Unix-time stamp; every index headline fits in [`pages::HEADLINE_MAX`] characters; and every
//! property column header of the generated pages links to the properties page.

use listsync_core::property::Property;
use listsync_render::pages::{self, Sources};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

fn files(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            files(&p, root, out);
        } else {
            let rel = p.strip_prefix(root).expect("under root").to_path_buf();
            out.insert(rel, std::fs::read(&p).expect("read"));
        }
    }
}

/// Regenerates a copy of the committed reports in a temporary directory; returns every file.
fn regenerate_copy() -> (tempfile::TempDir, BTreeMap<PathBuf, Vec<u8>>) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("reports");
    copy_dir(&root.join("reports"), &out);
    let w = pages::regenerate(&Sources {
        out: out.clone(),
        traces: root.join("traces"),
        // No bench figures: the committed bench.json alone.
        bench_figures: dir.path().join("no-bench-figures"),
        mutants_run: None,
        mutants_explained: root.join("docs/mutants-survivors.json"),
        audit_not_judged: |p| (p == Property::AuthIsolation).then_some("not on the wire"),
    })
    .expect("regenerates");
    assert!(w.failed.is_empty(), "{:?}", w.failed);
    let mut all = BTreeMap::new();
    files(&out, &out, &mut all);
    (dir, all)
}

#[test]
fn regenerating_the_committed_reports_twice_gives_the_same_bytes() {
    let (_a, first) = regenerate_copy();
    let (_b, second) = regenerate_copy();
    assert_eq!(
        first.keys().collect::<Vec<_>>(),
        second.keys().collect::<Vec<_>>(),
        "the two runs wrote different files"
    );
    let differing: Vec<String> = first
        .iter()
        .filter(|(k, v)| second.get(*k) != Some(v))
        .map(|(k, _)| k.display().to_string())
        .collect();
    assert!(
        differing.is_empty(),
        "differ between two runs: {differing:?}"
    );
    for (name, bytes) in &first {
        if name.extension().is_some_and(|x| x == "md") {
            let text = String::from_utf8_lossy(bytes);
            assert!(
                !text.contains("Unix time"),
                "{} carries a Unix-time stamp",
                name.display()
            );
        }
    }
}

#[test]
fn index_headlines_are_short_and_property_headers_link_to_their_definitions() {
    let (_d, all) = regenerate_copy();
    let text = |name: &str| String::from_utf8_lossy(&all[Path::new(name)]).into_owned();
    let index = text("README.md");
    let table: Vec<&str> = index
        .lines()
        .skip_while(|l| !l.starts_with("| page | verdict |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .collect();
    assert!(table.len() >= 6, "{index}");
    for line in table {
        let head = line
            .trim_end_matches('|')
            .rsplit(" | ")
            .next()
            .expect("a headline cell");
        let seen = pages::visible(head);
        assert!(
            seen.chars().count() <= pages::HEADLINE_MAX,
            "{} characters: {seen}",
            seen.chars().count()
        );
    }
    for page in ["model-check.md", "conformance.md"] {
        let text = text(page);
        for p in Property::ALL {
            assert!(
                text.contains(&format!("[{}](properties.md#{p} \"{p}\")", p.short())),
                "{page}: the {p} header does not link to its definition"
            );
        }
    }
    assert!(all.contains_key(Path::new("properties.md")));
    assert!(all.contains_key(Path::new("timings.md")));
}
