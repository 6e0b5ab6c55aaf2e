//! docs/test-your-client.md's commands run as written: the block after its `<!-- tested` marker
//! is read from the page, each line run (every word `listsync` being the built binary) from an
//! empty directory in order, and each exit status compared with the `# exit N` the line
//! carries. Each command has a bound.

use std::process::Stdio;
use std::time::Duration;

const EXE: &str = env!("CARGO_BIN_EXE_listsync");
const PAGE: &str = include_str!("../docs/test-your-client.md");
const BOUND: Duration = Duration::from_secs(60);

/// The words of a command line: blanks separate them, '...' and "..." quote (no escapes).
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quote = None;
    let mut any = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => cur.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                any = true;
            }
            (None, c) if c.is_whitespace() => {
                if any || !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                any = false;
            }
            (None, c) => cur.push(c),
        }
    }
    assert!(quote.is_none(), "unclosed quote: {line}");
    if any || !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The tested block's commands with their expected exit status.
fn commands() -> Vec<(Vec<String>, i32, String)> {
    let after = PAGE
        .split_once("<!-- tested")
        .expect("the page marks its tested block")
        .1;
    let block = after
        .split_once("```sh\n")
        .expect("a sh block after the marker")
        .1
        .split_once("```")
        .expect("the block ends")
        .0;
    block
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (cmd, exit) = l
                .rsplit_once("# exit ")
                .unwrap_or_else(|| panic!("no `# exit N` on: {l}"));
            let code: i32 = exit.trim().parse().expect("exit status");
            (words(cmd), code, l.to_owned())
        })
        .collect()
}

#[test]
fn the_words_of_a_line() {
    assert_eq!(
        words("a 'b c' \"d\"  e=''"),
        ["a", "b c", "d", "e="].map(String::from)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_how_to_runs_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let cmds = commands();
    assert!(cmds.len() >= 4, "{cmds:?}");
    for (argv, want, line) in cmds {
        let argv: Vec<String> = argv
            .into_iter()
            .map(|w| if w == "listsync" { EXE.to_owned() } else { w })
            .collect();
        let out = tokio::time::timeout(
            BOUND,
            tokio::process::Command::new(&argv[0])
                .args(&argv[1..])
                .current_dir(dir.path())
                .stdin(Stdio::null())
                .kill_on_drop(true)
                .output(),
        )
        .await
        .unwrap_or_else(|_| panic!("{line}: did not end within {BOUND:?}"))
        .expect("run");
        assert_eq!(
            out.status.code(),
            Some(want),
            "{line}\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // What the page says the naive client's audit draws.
    assert!(dir.path().join("naive.jsonl.bounded_refresh.svg").exists());
}
