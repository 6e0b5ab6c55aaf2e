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
    assert!(err.contains("cannot read trace"), "{err}");
    assert!(err.contains("No such file"), "{err}");
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

/// No runs at once is not a setting, and a corpus that is not there is not an empty one: both
/// refused (exit 2) before anything starts, not quietly taken as one job or no traces.
#[test]
fn a_matrix_of_no_jobs_or_no_corpus_is_refused() {
    let (code, _, err) = listsync(&["matrix", "--jobs", "0", "--out", "/nonexistent"]);
    assert_eq!(code, 2);
    assert!(err.contains("invalid value '0' for '--jobs"), "{err}");
    let (code, _, err) = listsync(&[
        "matrix",
        "--traces",
        "/nonexistent",
        "--out",
        "/nonexistent",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("no such trace corpus directory"), "{err}");
}

/// `sim merge` merges the summaries the shards wrote into the one-run summary (its table, exit
/// 0 for the reference), and refuses in one line with exit status 2 a set with a shard missing
/// or a file that is not a summary.
#[test]
fn sim_merge_merges_shards_and_refuses_a_missing_one() {
    let dir = std::env::temp_dir().join(format!("listsync-cli-merge-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let shard = |k: u32| {
        let file = dir.join(format!("shard-{k}.json"));
        let (code, _, err) = listsync(&[
            "sim",
            "--seeds",
            "30",
            "--shard",
            &format!("{k}/2"),
            "--json",
            "--report",
            file.to_str().unwrap(),
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert_eq!(code, 0, "{err}");
        file.to_str().unwrap().to_owned()
    };
    let (one, two) = (shard(1), shard(2));
    let (code, out, err) = listsync(&["sim", "merge", &two, &one]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("30 run(s)"), "{out}");
    assert!(out.contains("as expected"), "{out}");
    let (code, _, err) = listsync(&["sim", "merge", &one]);
    assert_eq!(code, 2);
    assert!(err.contains("shard 2/2 is missing"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    let junk = dir.join("junk.json");
    std::fs::write(&junk, "{}").unwrap();
    let (code, _, err) = listsync(&["sim", "merge", &one, junk.to_str().unwrap()]);
    assert_eq!(code, 2);
    assert!(err.contains("not a simulator summary"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A 63 MB trace of 3.5 million steps (the size of one seen in the wild): refused at the step
/// limit while reading, quickly and with bounded memory (the peak resident set of the process,
/// `VmHWM`, sampled until it exits); a file over the size limit is refused before it is read,
/// with its real size.
#[test]
fn big_traces_are_refused_while_reading() {
    let dir = tempfile::Builder::new()
        .prefix("listsync-cli-")
        .tempdir()
        .unwrap();
    let corpus = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/traces/offset-cursor.json"
    ))
    .unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&corpus).unwrap();
    v["steps"] = serde_json::json!([]);
    v["log"] = serde_json::json!([]);
    let text = v.to_string();
    let (head, tail) = text.split_once("\"steps\":[]").unwrap();
    let mut big = String::with_capacity(64 << 20);
    big.push_str(head);
    big.push_str("\"steps\":[");
    for i in 0..3_500_000 {
        if i > 0 {
            big.push(',');
        }
        big.push_str("{\"step\":\"commit\"}");
    }
    big.push(']');
    big.push_str(tail);
    assert!(
        big.len() > 60 << 20 && big.len() < 64 << 20,
        "{}",
        big.len()
    );
    let path = dir.path().join("steps.json");
    std::fs::write(&path, &big).unwrap();
    drop(big);

    let started = std::time::Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_listsync"))
        .args(["trace", "show", "--quiet", path.to_str().unwrap()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut peak = 0u64;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        let hwm = std::fs::read_to_string(format!("/proc/{pid}/status"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        peak = peak.max(hwm * 1024);
        assert!(
            started.elapsed() < std::time::Duration::from_secs(60),
            "still reading"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let took = started.elapsed();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    eprintln!(
        "a 3.5M-step trace: refused in {took:?}, peak resident set {} MiB",
        peak >> 20
    );
    assert_eq!(status.code(), Some(2), "{err}");
    assert!(err.contains("more than 1000000 steps"), "{err}");
    assert!(peak < 512 << 20, "peak resident set {} MiB", peak >> 20);

    // Over the size limit: refused before reading, with the file's real size.
    let f = std::fs::File::create(dir.path().join("huge.json")).unwrap();
    let size: u64 = (64 << 20) + 12345;
    f.set_len(size).unwrap();
    let (code, _, err) = listsync(&[
        "trace",
        "show",
        dir.path().join("huge.json").to_str().unwrap(),
    ]);
    assert_eq!(code, 2);
    assert!(
        err.contains(&format!("{size} bytes; the limit is {}", 64 << 20)),
        "{err}"
    );
}

/// Every file a command reads on a user's word, given one that never ends (`/dev/zero`: no
/// newline, no end of file) or a directory: refused in one line with exit status 2, having
/// read at most the command's limit, instead of reading until memory runs out. A command
/// still running after 20 s counts as hanging (each takes well under a second here).
#[test]
fn endless_and_wrong_kind_inputs_are_refused_in_one_line() {
    let cases: [(&[&str], &str); 9] = [
        (&["audit", "/dev/zero"], "line longer than 8388608 bytes"),
        (
            &["adapter", "check", "/dev/zero"],
            "more than 1048576 bytes",
        ),
        (&["adapter", "check", "/tmp"], "a directory, not a file"),
        (
            &[
                "watch",
                "--token-file",
                "/dev/zero",
                "--url",
                "http://127.0.0.1:9/mcp",
            ],
            "token file /dev/zero: more than 1048576 bytes",
        ),
        (
            &[
                "serve",
                "--http",
                "127.0.0.1:0",
                "--auth-tokens",
                "/dev/zero",
            ],
            "more than 1048576 bytes",
        ),
        (&["trace", "show", "/dev/zero"], "more than 67108864 bytes"),
        (
            &["replay", "/dev/zero", "--against", "reference"],
            "more than 67108864 bytes",
        ),
        (
            &["report", "--out", "/nonexistent/reports"],
            "no such reports directory",
        ),
        (
            &["report", "--bench-figures", "/dev/zero"],
            "the bench figures' path is not a directory",
        ),
    ];
    for (args, want) in cases {
        let mut child = Command::new(env!("CARGO_BIN_EXE_listsync"))
            .args(args)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let started = std::time::Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if started.elapsed() > std::time::Duration::from_secs(20) {
                child.kill().ok();
                child.wait().ok();
                panic!("{args:?}: still running after 20 s");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
        assert!(err.contains(want), "{args:?}: expected '{want}' in: {err}");
    }
}

/// Libraries log through `tracing` (the CLI installs the subscriber): no `eprintln!` or
/// `eprint!` in the sources of any workspace member but the CLI (read from the workspace's
/// `members`, so none is left out).
#[test]
fn libraries_do_not_print_to_stderr() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    // Every workspace member but the CLI itself (the root package), read from the workspace's
    // `members` so that a crate added later is checked too.
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let members: Vec<&str> = manifest
        .lines()
        .find_map(|l| l.trim().strip_prefix("members = ["))
        .expect("one-line `members = [...]` in Cargo.toml")
        .trim_end_matches(']')
        .split(',')
        .map(|m| m.trim().trim_matches('"'))
        .filter(|m| !m.is_empty())
        .collect();
    for m in ["core", "session", "harness/adapters/rmcp"] {
        assert!(members.contains(&m), "{m} not among {members:?}");
    }
    let mut offenders = Vec::new();
    let mut stack: Vec<std::path::PathBuf> = members.iter().map(|c| root.join(c)).collect();
    for p in &stack {
        assert!(p.join("src").is_dir(), "{}: no src/", p.display());
    }
    while let Some(p) = stack.pop() {
        if p.is_dir() {
            if p.file_name()
                .is_some_and(|n| n == "node_modules" || n == "target")
            {
                continue;
            }
            for e in std::fs::read_dir(&p).unwrap() {
                stack.push(e.unwrap().path());
            }
        } else if p.extension().is_some_and(|e| e == "rs")
            && p.components().any(|c| c.as_os_str() == "src")
            && std::fs::read_to_string(&p)
                .map(|t| t.contains("eprintln!") || t.contains("eprint!"))
                .unwrap()
        {
            offenders.push(p.display().to_string());
        }
    }
    assert!(offenders.is_empty(), "eprintln!/eprint! in {offenders:?}");
}
