//! One run of a host: provisions it (once), starts the scripted model server, writes the MCP
//! configuration naming `listsync record --numbered --out session.{n}.jsonl -- listsync serve
//! --stdio --admin-socket admin-{n}.sock ...` as the server, starts the host with its
//! manifest's command and environment (HOME an empty private directory, PATH kept, nothing else
//! of ours), waits for it within its bound, waits for each log's `close`, merges the logs into
//! one (`session.jsonl`, one connection per start of the server), and judges the run.
//!
//! A host may start its server more than once (the MCP TypeScript SDK 2 probes with
//! `server/discover` on a first process, ends it, and starts another): each start has its own
//! log and admin socket, and the plan's changes go to the newest server that answers.

use crate::judge;
use crate::{HostError, HostOptions, HostRef, HostRun};
use listsync_harness::hosts::manifest::{Expand, HostManifest};
use listsync_harness::hosts::model_server::{ChangeHook, ModelServer, ModelSettings};
use listsync_harness::hosts::plan::Plan;
use listsync_rt::admin;
use listsync_session::log::What;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether `prog` is on PATH (or is a path that exists).
fn on_path(prog: &str) -> bool {
    if prog.contains('/') {
        return Path::new(prog).exists();
    }
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(prog).is_file()))
}

fn base_expand(host: &HostRef, opts: &HostOptions) -> Expand {
    Expand {
        listsync: opts.listsync.clone(),
        hosts: opts.hosts_dir.clone(),
        version: host.version.clone(),
        cache: opts.cache.clone(),
        ..Expand::default()
    }
}

/// Runs the manifest's provisioning (if any); what it printed last on stdout.
pub fn provision(host: &HostRef, opts: &HostOptions) -> Result<String, HostError> {
    let m = &host.manifest;
    if let Some(missing) = m.needs.iter().find(|p| !on_path(p)) {
        return Err(HostError::Skipped(format!(
            "{} needs {missing}, which is not on PATH",
            host.label()
        )));
    }
    if m.provision.is_empty() {
        return Ok(String::new());
    }
    let argv = base_expand(host, opts).argv(&m.provision);
    tracing::info!("provisioning {} ({})", host.label(), argv.join(" "));
    let out = std::process::Command::new(&argv[0])
        .args(&argv[1..])
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| {
            HostError::Failed(format!("provisioning {}: {}: {e}", host.label(), argv[0]))
        })?;
    // Exit status 3: a toolchain it needs is missing (the script said which).
    if out.status.code() == Some(3) {
        return Err(HostError::Skipped(format!(
            "provisioning {} found a toolchain it needs missing (see the line above)",
            host.label()
        )));
    }
    if !out.status.success() {
        return Err(HostError::Failed(format!(
            "provisioning {} failed ({})",
            host.label(),
            out.status
        )));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    Ok(text.lines().last().unwrap_or_default().trim().to_owned())
}

/// The server's command line for a run.
fn server_argv(
    opts: &HostOptions,
    plan: &Plan,
    log: &Path,
    socket: &Path,
    script: Option<&Path>,
) -> Result<Vec<String>, HostError> {
    let exe = opts.listsync.to_string_lossy().into_owned();
    let mut argv = vec![
        exe.clone(),
        "record".into(),
        "--numbered".into(),
        "--out".into(),
        log.to_string_lossy().into_owned(),
        "--".into(),
        exe,
        "serve".into(),
        "--stdio".into(),
        "--era".into(),
        opts.era.clone(),
        "--page-size".into(),
        plan.page_size.to_string(),
        "--admin-socket".into(),
        socket.to_string_lossy().into_owned(),
    ];
    if let Some(initial) = &plan.initial {
        let ops = admin::ops_of_args(initial)
            .map_err(|e| HostError::Failed(format!("plan {}: initial: {e}", plan.name)))?;
        argv.push("--initial".into());
        argv.push(ops.to_string());
    }
    if let Some(s) = script {
        argv.push("--script".into());
        argv.push(s.to_string_lossy().into_owned());
    }
    Ok(argv)
}

/// Runs the host once under the plan, its files in `dir` (emptied first).
pub fn run_once(
    host: &HostRef,
    plan: &Plan,
    opts: &HostOptions,
    provisioned: &str,
    index: usize,
    dir: &Path,
) -> Result<HostRun, HostError> {
    let fail = |what: &str, e: &dyn std::fmt::Display| HostError::Failed(format!("{what}: {e}"));
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).map_err(|e| fail(&dir.display().to_string(), &e))?;
    // The host runs in a directory of its own: every path it is given is absolute.
    let dir = &std::path::absolute(dir).map_err(|e| fail(&dir.display().to_string(), &e))?;
    // The admin socket and HOME in a private directory of their own (a socket path is short).
    let private = tempfile::Builder::new()
        .prefix("listsync-host-")
        .tempdir()
        .map_err(|e| fail("temporary directory", &e))?;
    let socket = private.path().join("admin-{n}.sock");
    let home = private.path().join("home");
    std::fs::create_dir_all(&home).map_err(|e| fail("home", &e))?;
    let log = dir.join("session.jsonl");
    let log_each = dir.join("session.{n}.jsonl");
    std::fs::create_dir_all(dir.join("requests")).map_err(|e| fail("requests", &e))?;
    let script = match plan.call_script() {
        Some(text) => {
            let p = dir.join("server-script.toml");
            std::fs::write(&p, text).map_err(|e| fail(&p.display().to_string(), &e))?;
            Some(p)
        }
        None => None,
    };
    let server = server_argv(opts, plan, &log_each, &socket, script.as_deref())?;
    let mcp_config = dir.join("mcp.json");
    std::fs::write(
        &mcp_config,
        serde_json::to_string_pretty(&HostManifest::mcp_config(&server)).unwrap_or_default(),
    )
    .map_err(|e| fail("mcp.json", &e))?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| fail("runtime", &e))?;
    let started = Instant::now();
    let (exit, recording) = rt.block_on(async {
        let hook = change_hook(socket.clone());
        let model = ModelServer::start(ModelSettings {
            plan: plan.clone(),
            tool_prefix: host.manifest.tool_prefix.clone(),
            own_tools: host.manifest.own_tools.clone(),
            on_change: Some(hook),
            keep_bodies: Some(dir.join("requests")),
        })
        .await
        .map_err(|e| fail("model server", &e))?;
        let x = Expand {
            provisioned: provisioned.to_owned(),
            model_url: model.url(),
            mcp_config: mcp_config.clone(),
            prompt: plan.prompt.clone(),
            home: home.clone(),
            server: server.clone(),
            ..base_expand(host, opts)
        };
        let argv = x.argv(&host.manifest.command);
        let env = x.env(&host.manifest.env);
        std::fs::write(dir.join("host-command.txt"), argv.join("\n"))
            .map_err(|e| fail("host-command.txt", &e))?;
        let stdout =
            std::fs::File::create(dir.join("host.stdout")).map_err(|e| fail("host.stdout", &e))?;
        let stderr =
            std::fs::File::create(dir.join("host.stderr")).map_err(|e| fail("host.stderr", &e))?;
        let mut cmd = tokio::process::Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .env_clear()
            .envs(
                std::env::var_os("PATH")
                    .map(|p| ("PATH".to_owned(), p.to_string_lossy().into_owned())),
            )
            .envs(env)
            .current_dir(private.path())
            .stdin(std::process::Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .kill_on_drop(true);
        let mut child = cmd.spawn().map_err(|e| fail(&argv[0], &e))?;
        let bound = host.manifest.timeout().map_err(HostError::Failed)?;
        let exit = wait_bounded(&mut child, bound).await;
        // `record` writes the connection's close once the server has exited (it gives the
        // server 2 s, then SIGTERM, 2 s more, then SIGKILL).
        let deadline = Instant::now() + Duration::from_secs(6);
        while Instant::now() < deadline && !numbered(&log_each).iter().all(|l| closed(l)) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok::<_, HostError>((exit, model.stop()))
    })?;
    let seconds = started.elapsed().as_secs_f64();
    std::fs::write(
        dir.join("model.json"),
        serde_json::to_string_pretty(&recording).unwrap_or_default(),
    )
    .map_err(|e| fail("model.json", &e))?;
    merge_logs(&numbered(&log_each), &log).map_err(|e| {
        HostError::Failed(format!(
            "{}: the session logs cannot be merged ({e}); the host's output is in {}",
            host.label(),
            dir.display()
        ))
    })?;
    let session = listsync_session::log::read(&log).map_err(|e| {
        HostError::Failed(format!(
            "{}: the session log cannot be read ({e}); the host's output is in {}",
            host.label(),
            dir.display()
        ))
    })?;
    let audit = listsync_session::audit::audit(&session);
    let wire = listsync_session::wire::observe(&session.entries);
    let judgement = judge::judge(&session, &wire, &recording, opts.catch_up);
    std::fs::write(
        dir.join("judgement.json"),
        serde_json::to_string_pretty(&judgement).unwrap_or_default(),
    )
    .map_err(|e| fail("judgement.json", &e))?;
    Ok(HostRun {
        index,
        dir: dir.to_path_buf(),
        host_exit: exit,
        seconds,
        audit,
        side_requests: recording
            .requests
            .iter()
            .filter(|r| r.turn.is_none())
            .count(),
        other_paths: recording.other_paths.clone(),
        judgement,
    })
}

/// The plan's changes, made through the admin socket of the newest server that answers (each
/// start of the server has its own numbered socket; an earlier one may have left its own).
fn change_hook(socket: PathBuf) -> ChangeHook {
    Arc::new(move |ops: Vec<String>| {
        let sock = socket.clone();
        Box::pin(async move {
            let ops = admin::ops_of_args(&ops)?;
            let mut last = "no server has started".to_owned();
            for s in numbered(&sock).into_iter().rev() {
                match admin::change_by_socket(&s, ops.clone(), Duration::from_secs(10)).await {
                    Ok(_) => return Ok(()),
                    Err(e) => last = e.to_string(),
                }
            }
            Err(last)
        })
    })
}

/// Waits for the host to exit, killing it past `bound`; says how it ended.
async fn wait_bounded(child: &mut tokio::process::Child, bound: Duration) -> String {
    match tokio::time::timeout(bound, child.wait()).await {
        Ok(Ok(s)) => s.to_string(),
        Ok(Err(e)) => format!("wait failed: {e}"),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            format!("killed after {} s (its bound)", bound.as_secs())
        }
    }
}

/// Whether the log has its connection's close.
fn closed(log: &Path) -> bool {
    listsync_session::log::read(log).is_ok_and(|l| {
        l.entries
            .iter()
            .any(|e| matches!(e.what, What::Close { .. }))
    })
}

/// The existing files of a `{n}` template, in order of N (0, 1, ... up to the first missing).
fn numbered(template: &Path) -> Vec<std::path::PathBuf> {
    let t = template.to_string_lossy();
    (0..)
        .map(|n: u32| std::path::PathBuf::from(t.replace("{n}", &n.to_string())))
        .take_while(|p| p.exists())
        .collect()
}

/// Merges the logs of each start of the server into one log at `out`: the first's header (its
/// start the earliest), start N's entries as connection N, times made relative to that start,
/// entries in time order and numbered again. The per-start logs are removed once merged.
fn merge_logs(parts: &[std::path::PathBuf], out: &Path) -> Result<(), String> {
    use listsync_session::log::LogEntry;
    let mut logs = Vec::new();
    for p in parts {
        logs.push(listsync_session::log::read(p).map_err(|e| format!("{}: {e}", p.display()))?);
    }
    let Some(first) = logs.first() else {
        return Err("the server was never started".into());
    };
    let start = logs.iter().map(|l| l.header.start_us()).min().unwrap_or(0);
    let mut header = first.header.clone();
    header.started_unix_ms = start / 1000;
    header.started_unix_us = Some(start);
    let mut entries: Vec<LogEntry> = Vec::new();
    for (n, l) in logs.iter().enumerate() {
        let shift = l.header.start_us() - start;
        let conn = u32::try_from(n).unwrap_or(u32::MAX);
        entries.extend(l.entries.iter().map(|e| LogEntry {
            t_us: e.t_us + shift,
            conn,
            ..e.clone()
        }));
    }
    entries.sort_by_key(|e| (e.t_us, e.conn, e.seq));
    let mut text = serde_json::to_string(&header).map_err(|e| e.to_string())?;
    text.push('\n');
    for (i, e) in entries.iter_mut().enumerate() {
        e.seq = i as u64;
        text.push_str(&serde_json::to_string(e).map_err(|e| e.to_string())?);
        text.push('\n');
    }
    std::fs::write(out, text).map_err(|e| format!("{}: {e}", out.display()))?;
    for p in parts {
        let _ = std::fs::remove_file(p);
    }
    Ok(())
}
