//! `listsync trace show`: reads a trace, validates it by replaying it through the model's world
//! (an unreachable step or a verdict that does not reproduce is a clear error), and prints it as
//! a readable step list.

use anyhow::{Context, Result};
use listsync_core::property::{Property, Verdict};
use listsync_core::trace::{MAX_TRACE_BYTES, Trace, TraceError};
use std::io::Read;
use std::path::Path;
use std::process::ExitCode;

/// Reads a trace file within the limits: a file larger than [`MAX_TRACE_BYTES`] is refused with
/// its real size before anything is read, at most that many bytes are ever read (a file that
/// grows meanwhile, a pipe), and parsing stops at the step limit.
pub fn read(file: &Path) -> Result<Trace> {
    let f = std::fs::File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let size = f.metadata().map(|m| m.len()).unwrap_or(0);
    if size > MAX_TRACE_BYTES as u64 {
        return Err(TraceError::TooLarge(size)).with_context(|| format!("{}", file.display()));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    f.take(MAX_TRACE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", file.display()))?;
    if bytes.len() > MAX_TRACE_BYTES {
        return Err(anyhow::anyhow!(
            "trace is more than {MAX_TRACE_BYTES} bytes (it grew while being read); the limit is {MAX_TRACE_BYTES}"
        ))
        .with_context(|| format!("{}", file.display()));
    }
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("not a valid trace: the file is not UTF-8 text"))
        .with_context(|| format!("{}", file.display()))?;
    Trace::from_json(&text).with_context(|| format!("{}", file.display()))
}

/// Runs `listsync trace show FILE`.
pub fn show(file: &Path, quiet: bool) -> Result<ExitCode> {
    let t = read(file)?;
    let replay = t.check().with_context(|| format!("{}", file.display()))?;
    let s = &t.scenario;
    if quiet {
        println!(
            "{}: valid, {} steps, reproduces {}",
            file.display(),
            t.steps.len(),
            violated_list(&replay.verdicts)
        );
        return Ok(ExitCode::SUCCESS);
    }
    println!(
        "trace {} (schema v{}, from {})",
        file.display(),
        t.version,
        t.source
    );
    println!(
        "scenario '{}': era {}, {:?}, server {} (page size {}), {} client(s) {}",
        s.name,
        s.era,
        s.transport,
        s.server.strategy,
        s.server.page_size,
        s.clients.len(),
        s.client_strategy()
    );
    println!(
        "initial catalog: {}",
        s.initial
            .iter()
            .map(|o| o.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    );
    for (i, b) in s.script.iter().enumerate() {
        println!(
            "batch {i}: {}",
            b.iter()
                .map(|o| o.to_string())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    println!();
    let mut last: Option<Option<usize>> = None;
    for (i, line) in &replay.log {
        if last != Some(*i) {
            match i {
                None => println!("start:"),
                Some(i) => println!("step {i:>3}: {}", t.steps[*i]),
            }
            last = Some(*i);
        }
        println!("          {line}");
    }
    println!();
    for p in Property::ALL {
        let v = replay
            .verdicts
            .get(&p)
            .copied()
            .unwrap_or(Verdict::NotApplicable);
        let at = replay
            .first_violation
            .iter()
            .find(|(q, _)| *q == p)
            .map(|(_, i)| format!(" (after step {i})"))
            .unwrap_or_default();
        println!("{:22} {v}{at}", p.as_str());
    }
    if let Some(d) = &t.detail {
        println!("\n{d}");
    }
    println!("\nvalid: every step replays and the verdicts match the trace's expected verdicts");
    Ok(ExitCode::SUCCESS)
}

fn violated_list(v: &listsync_core::property::Verdicts) -> String {
    let list: Vec<_> = v
        .iter()
        .filter(|(_, v)| **v == Verdict::Violated)
        .map(|(p, _)| p.as_str())
        .collect();
    if list.is_empty() {
        "no violation".into()
    } else {
        list.join(", ")
    }
}
