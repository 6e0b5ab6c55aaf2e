//! `listsync audit FILE... [--json] [--junit FILE]`: judges session logs (`listsync_session::audit_file`);
//! exit 1 if any property is violated, 2 if a log cannot be read.

use std::path::PathBuf;
use std::process::ExitCode;

/// Arguments of `listsync audit`.
#[derive(clap::Args)]
pub struct Args {
    /// Session logs written by `listsync record`.
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// One JSON document (an array, one object per log) instead of text.
    #[arg(long)]
    json: bool,
    /// Also write a JUnit XML report (one testcase per log × property) to this file.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
}

/// Audits every log.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let mut all = Vec::new();
    for f in &args.files {
        all.push(listsync_session::audit_file(f).map_err(anyhow::Error::msg)?);
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&all)?);
    } else {
        for a in &all {
            print!("{}", listsync_session::render(a));
        }
    }
    if let Some(f) = &args.junit {
        listsync_render::junit::write(f, &[listsync_session::junit(&all)])?;
    }
    let violated = all.iter().any(|a| a.audit.violated());
    Ok(if violated {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
