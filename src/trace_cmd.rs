//! `listsync trace show`: reads a trace, validates it by replaying it through the model's world
//! (an unreachable step or a verdict that does not reproduce is a clear error), and prints it as
//! a readable step list.

use anyhow::{Context, Result};
use listsync_core::trace::{MAX_TRACE_BYTES, Trace};
use listsync_core::trace_text;
use std::path::Path;
use std::process::ExitCode;

/// Reads a trace file within the limits: a file larger than [`MAX_TRACE_BYTES`] is refused with
/// its real size before anything is read, at most that many bytes are ever read (a file that
/// grows meanwhile, a pipe, a device), and parsing stops at the step limit.
pub fn read(file: &Path) -> Result<Trace> {
    let text = listsync_harness::limited_file::read_text(file, MAX_TRACE_BYTES as u64)
        .with_context(|| format!("cannot read trace {}", file.display()))?;
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
