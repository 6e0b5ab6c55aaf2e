//! `listsync trace show`: reads a trace, validates it by replaying it through the model's world
//! (an unreachable step or a verdict that does not reproduce is a clear error), and prints it as
//! a readable step list.

use anyhow::{Context, Result};
use listsync_core::trace::{MAX_TRACE_BYTES, Trace, TraceError};
use listsync_core::trace_text;
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
    if quiet {
        println!(
            "{}: valid, {} steps, reproduces {}",
            file.display(),
            t.steps.len(),
            trace_text::violated_list(&replay.verdicts)
        );
    } else {
        print!(
            "{}",
            trace_text::show(&file.display().to_string(), &t, &replay)
        );
        println!(
            "\nvalid: every step replays and the verdicts match the trace's expected verdicts"
        );
    }
    Ok(ExitCode::SUCCESS)
}
