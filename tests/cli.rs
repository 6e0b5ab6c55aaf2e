//! The command line on bad input: clear errors and exit code 2, never a panic.

use std::process::Command;

fn listsync(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(args)
        .output()
        .expect("runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn trace_show_rejects_bad_files_clearly() {
    let dir = std::env::temp_dir().join(format!("listsync-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let cases = [
        ("garbage.json", "{{{{", "not a valid trace"),
        (
            "other.json",
            r#"{"format":"something-else"}"#,
            "not a listsync trace",
        ),
        (
            "future.json",
            r#"{"format":"listsync-trace","version":7}"#,
            "version 7 is not supported",
        ),
        ("binary.json", "\u{0}\u{1}\u{2}", "not a valid trace"),
    ];
    for (name, text, want) in cases {
        let p = dir.join(name);
        std::fs::write(&p, text).unwrap();
        let (code, _, err) = listsync(&["trace", "show", p.to_str().unwrap()]);
        assert_eq!(code, 2, "{name}: {err}");
        assert!(err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{name}: {err}");
    }
    let (code, _, err) = listsync(&["trace", "show", dir.join("missing.json").to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot open"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_corpus_trace_shows_and_validates() {
    let p = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/offset-cursor.json");
    let (code, out, err) = listsync(&["trace", "show", p]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("no_torn_snapshot       violated"), "{out}");
    assert!(out.contains("valid:"), "{out}");
}

#[test]
fn unknown_configuration_is_an_error() {
    let (code, _, err) = listsync(&[
        "check",
        "no-such-config",
        "--out",
        std::env::temp_dir().to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains("unknown configuration 'no-such-config'"),
        "{err}"
    );
}
