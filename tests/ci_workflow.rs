//! docs/ci.md's downstream workflow, run as written: the `listsync` commands of its first YAML
//! block are extracted and run, in an empty directory laid out as the workflow's project
//! (`mcp-adapter/adapter.toml`, `regression-traces/*.json`, `junit/`), against the example
//! adapter of `harness/adapters/example/` renamed `my-client` with one variant:
//!
//! - with its coalescing client every step exits 0;
//! - with its last-response-wins client the replay and matrix steps exit 1 naming
//!   `no_stale_overwrite`, and the adapter check still passes.
//!
//! `listsync check` (the model check of every configuration) is not run here: its exit statuses
//! are the model-check tests' business, and it would double this test's time; the test only
//! checks that the workflow has that step. Needs `python3` (the example adapter's client).

mod harness_support;

use harness_support::repo;
use std::path::Path;
use std::process::Command;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");

/// The `run:` commands of the first YAML block of docs/ci.md that call `listsync`, each as one
/// line (folded `>` blocks joined).
fn workflow_commands() -> Vec<String> {
    let doc = std::fs::read_to_string(repo().join("docs/ci.md")).unwrap();
    let block = doc
        .split("```yaml")
        .nth(1)
        .and_then(|b| b.split("```").next())
        .expect("docs/ci.md has a yaml block");
    let lines: Vec<&str> = block.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let indent = l.len() - l.trim_start().len();
        let t = l.trim_start().trim_start_matches("- ");
        if let Some(rest) = t.strip_prefix("run:") {
            let rest = rest.trim();
            let mut cmd = String::new();
            if rest == ">" || rest == "|" {
                i += 1;
                while i < lines.len()
                    && (lines[i].trim().is_empty()
                        || lines[i].len() - lines[i].trim_start().len() > indent)
                {
                    cmd.push(' ');
                    cmd.push_str(lines[i].trim());
                    i += 1;
                }
            } else {
                cmd.push_str(rest);
                i += 1;
            }
            let cmd = cmd.trim().to_owned();
            if cmd.starts_with("listsync ") {
                out.push(cmd);
            }
            continue;
        }
        i += 1;
    }
    out
}

/// The project of the workflow in `dir`: the example client as `my-client` with `variant`
/// only, two corpus traces as its regression traces, no expected failures yet.
fn project(dir: &Path, variant: &str) {
    let example = repo().join("harness/adapters/example");
    let adapter = dir.join("mcp-adapter");
    std::fs::create_dir_all(&adapter).unwrap();
    std::fs::copy(example.join("client.py"), adapter.join("client.py")).unwrap();
    let manifest = std::fs::read_to_string(example.join("adapter.toml")).unwrap();
    let manifest = manifest
        .replace("name = \"example\"", "name = \"my-client\"")
        .replace(
            "variants = [\"coalescing\", \"last-response-wins\"]",
            &format!("variants = [\"{variant}\"]"),
        );
    assert!(manifest.contains("my-client") && manifest.contains(&format!("[\"{variant}\"]")));
    std::fs::write(adapter.join("adapter.toml"), manifest).unwrap();
    std::fs::write(adapter.join("expected-failures.toml"), "").unwrap();
    let traces = dir.join("regression-traces");
    std::fs::create_dir_all(&traces).unwrap();
    for t in ["naive.json", "request-id-guard.json"] {
        std::fs::copy(repo().join("traces").join(t), traces.join(t)).unwrap();
    }
    std::fs::create_dir_all(dir.join("junit")).unwrap();
}

/// Runs one workflow command in `dir` as a shell would (the glob, `$RUNNER_TEMP`); returns its
/// exit status and its output.
fn run(dir: &Path, cmd: &str) -> (Option<i32>, String) {
    let temp = dir.join("runner-temp");
    let mut args: Vec<String> = Vec::new();
    for word in cmd.split_whitespace().skip(1) {
        let word = word
            .trim_matches('"')
            .replace("$RUNNER_TEMP", temp.to_str().unwrap());
        if word == "regression-traces/*.json" {
            let mut files: Vec<String> = std::fs::read_dir(dir.join("regression-traces"))
                .unwrap()
                .map(|e| {
                    format!(
                        "regression-traces/{}",
                        e.unwrap().file_name().to_string_lossy()
                    )
                })
                .collect();
            files.sort();
            args.extend(files);
        } else {
            args.push(word);
        }
    }
    let out = Command::new(EXE)
        .args(&args)
        .current_dir(dir)
        .output()
        .expect("run listsync");
    let text = format!(
        "$ {cmd}\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.code(), text)
}

#[test]
fn the_ci_workflow_passes_a_correct_client_and_fails_a_buggy_one() {
    let cmds = workflow_commands();
    let first = |what: &str| {
        cmds.iter()
            .find(|c| c.starts_with(what))
            .unwrap_or_else(|| panic!("docs/ci.md's workflow has no `{what}` step: {cmds:#?}"))
            .clone()
    };
    let check = first("listsync check");
    let steps = [
        first("listsync --version"),
        first("listsync adapter check"),
        first("listsync replay"),
        first("listsync matrix"),
    ];
    assert!(check.contains("--junit"), "{check}");
    assert!(steps[3].contains("--only my-client"), "{}", steps[3]);
    for variant in ["coalescing", "last-response-wins"] {
        let dir = tempfile::tempdir().unwrap();
        project(dir.path(), variant);
        for cmd in &steps {
            let (code, text) = run(dir.path(), cmd);
            eprintln!("[{variant}] exit {code:?}\n{text}");
            let judged = cmd.starts_with("listsync replay") || cmd.starts_with("listsync matrix");
            if variant == "last-response-wins" && judged {
                assert_eq!(code, Some(1), "[{variant}]\n{text}");
                assert!(text.contains("no_stale_overwrite"), "[{variant}]\n{text}");
            } else {
                assert_eq!(code, Some(0), "[{variant}]\n{text}");
            }
        }
        // The JUnit files the reporter step reads are there.
        for f in ["replay.xml", "matrix.xml"] {
            assert!(dir.path().join("junit").join(f).is_file(), "{f}");
        }
    }
}
