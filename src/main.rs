//! `listsync`: the command-line front of every instrument — `check` (model checking), `explore`
//! (stateright's Explorer), `trace show` (read and validate a trace), and the runtime, simulator,
//! harness and report commands as they land.

mod adapter_cmd;
mod audit_cmd;
mod change;
mod check;
mod explore;
mod home;
mod host_cmd;
mod matrix_cmd;
mod progress;
mod record_cmd;
mod replay_cmd;
mod report_cmd;
mod serve;
mod sim_cmd;
mod suite_cmd;
mod trace_cmd;
mod watch;

use clap::{Parser, Subcommand};

/// The model check clones and drops a world per transition: a faster allocator than the
/// system's is most of the difference it can make without changing the machines.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;
use std::path::PathBuf;
use std::process::ExitCode;

/// Proves and tests that MCP clients keep a server's tools, prompts and resources lists
/// consistent while the server changes them.
/// `listsync --version`: the package version and the commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("LISTSYNC_COMMIT"),
    ")"
);

#[derive(Parser)]
#[command(name = "listsync", version = VERSION, about)]
struct Cli {
    /// Where provisioned adapters, the conformance suite's runner and (outside a listsync source
    /// tree) the unpacked adapters, trace corpus and suite pin go (default: the source tree's
    /// .cache/, else $XDG_CACHE_HOME/listsync, else ~/.cache/listsync; `LISTSYNC_CACHE` still
    /// names the adapters' cache).
    #[arg(long, global = true, value_name = "DIR")]
    cache_dir: Option<PathBuf>,
    /// More diagnostics on stderr: -v info (and rmcp's own warnings), -vv debug, -vvv trace
    /// (default: warnings and errors of listsync). `RUST_LOG` (e.g.
    /// `RUST_LOG=listsync_rt=debug`) overrides it.
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    verbose: u8,
    #[command(subcommand)]
    cmd: Cmd,
}

/// Installs the diagnostics subscriber: library `tracing` events on stderr (stdout carries
/// results, or MCP itself on stdio), filtered by `RUST_LOG` when set, else by `-v`.
fn init_logging(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    // rmcp reports every failed connection and request itself, at error level; the runtime
    // already says the same in one line of its own, so rmcp is heard from -v on.
    let level = match verbose {
        0 => "warn,rmcp=off",
        1 => "info,rmcp=warn",
        2 => "debug",
        _ => "trace",
    };
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => {
            EnvFilter::try_new(&v).unwrap_or_else(|_| EnvFilter::new(level))
        }
        _ => EnvFilter::new(level),
    };
    let _ = tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_env_filter(filter)
        .try_init();
}

#[derive(Subcommand)]
enum Cmd {
    /// Model-check the named configurations (all by default) and compare with their expected
    /// verdicts; write counterexample traces and reports/model-check.md.
    Check(check::Args),
    /// Open stateright's Explorer on one configuration (127.0.0.1 only).
    Explore {
        /// Configuration name (see `listsync check --list`).
        config: String,
        /// Port on 127.0.0.1.
        #[arg(long, default_value_t = 3000)]
        port: u16,
    },
    /// Deterministic simulation: many seeded runs under a fault plan, or one scale run
    /// (`--burst`); violations are shrunk to traces.
    Sim(sim_cmd::Args),
    /// Run the reference MCP server (stdio or Streamable HTTP on 127.0.0.1).
    Serve(serve::Args),
    /// Run the reference MCP client and print each snapshot change with its version.
    Watch(watch::Args),
    /// Change a running `listsync serve`'s lists: one batch of ops through its admin socket or
    /// HTTP admin endpoint; prints the new version.
    Change(change::Args),
    /// Replay traces against a real implementation (ours or an SDK) through the harness.
    Replay(replay_cmd::Args),
    /// Replay the trace corpus and generated scenarios against every implementation; write
    /// reports/conformance.md and reports/conformance.json.
    Matrix(matrix_cmd::Args),
    /// Run the official MCP conformance suite against `listsync serve --http` (lists, list
    /// changes, subscriptions, caching; both eras); write reports/conformance-suite.md.
    ConformanceSuite(suite_cmd::Args),
    /// Regenerate every page under reports/ (tables, sequence diagrams, bench plots) from the
    /// tools' JSON outputs.
    Report(report_cmd::Args),
    /// Record a real MCP session: an interposing stdio proxy, or a Streamable HTTP reverse
    /// proxy (`--http ADDR --upstream URL`), that logs every message.
    Record(record_cmd::Args),
    /// Judge recorded session logs per property; exit 1 on any violation.
    Audit(audit_cmd::Args),
    /// Runs a host (Claude Code, our own stale and careful hosts, any host with a manifest)
    /// against a scripted model and the reference server, and judges what it offered the model
    /// and dispatched (docs/hosts.md).
    Host(host_cmd::Args),
    /// Our own hosts under test: `stale` (offers the first tool list forever) or `careful`
    /// (offers the current list at every turn), started by `listsync host stale|careful`.
    #[command(hide = true)]
    OwnHost {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Adapters of your own: `adapter check FILE` checks one's control protocol.
    Adapter {
        #[command(subcommand)]
        cmd: adapter_cmd::Cmd,
    },
    /// Work with trace files.
    Trace {
        #[command(subcommand)]
        cmd: TraceCmd,
    },
}

#[derive(Subcommand)]
enum TraceCmd {
    /// Validate a trace by replaying it through the model's world and print it as a readable
    /// step list.
    Show {
        /// Trace file (JSON).
        file: PathBuf,
        /// Only validate; print one line.
        #[arg(long)]
        quiet: bool,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    home::set_cache_dir(cli.cache_dir);
    let result = match cli.cmd {
        Cmd::Check(args) => check::run(args),
        Cmd::Explore { config, port } => explore::run(&config, port),
        Cmd::Sim(args) => sim_cmd::run(args),
        Cmd::Serve(args) => serve::run(args),
        Cmd::Watch(args) => watch::run(args),
        Cmd::Change(args) => change::run(args),
        Cmd::Replay(args) => replay_cmd::run(args),
        Cmd::Matrix(args) => matrix_cmd::run(args),
        Cmd::Report(args) => report_cmd::run(args),
        Cmd::ConformanceSuite(args) => suite_cmd::run(args),
        Cmd::Record(args) => record_cmd::run(args),
        Cmd::Audit(args) => audit_cmd::run(args),
        Cmd::Host(args) => host_cmd::run(args),
        Cmd::OwnHost { args } => host_cmd::own_host(args),
        Cmd::Adapter { cmd } => adapter_cmd::run(cmd),
        Cmd::Trace {
            cmd: TraceCmd::Show { file, quiet },
        } => trace_cmd::show(&file, quiet),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("listsync: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// A variable of the harness protocol's environment (docs/harness-protocol.md: `LISTSYNC_ERA`,
/// `LISTSYNC_PAGE_SIZE`, `LISTSYNC_CONTROL`, ...), the default of the flag it names; unset when
/// empty.
fn harness_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}
