//! One run: a server adapter and a client adapter started as child processes, the proxy between
//! their stdio, one control channel each, and the actions the harness takes on them (mutate and
//! read the ground truth, call a tool, release held lines, settle). Children are killed when the
//! run ends or is dropped; socket and log files live in a private temporary directory (a fresh,
//! unpredictable name, mode 0700, never an existing path) removed with it, and log files are
//! created there with `O_EXCL`, so a symlink planted in their place is never followed.

use crate::adapters::Launch;
use crate::control::{self, CmdError, Control};
use crate::proxy::{Policy, Proxy, control_items};
use crate::timeline::{Body, Fact, Hub, HubState, NamedItem, Record, Side};
use listsync_core::vocab::{Kind, KindSet, Op};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{Child, Command};

/// Time bounds of a run. Waiting is always for an event, bounded by one of these.
#[derive(Clone, Copy, Debug)]
pub struct Bounds {
    /// An adapter connects and reports `ready`.
    pub startup: Duration,
    /// A predicted message or event shows up after a step.
    pub step: Duration,
    /// A control command is answered.
    pub command: Duration,
    /// Settling: no traffic for this long means a third-party implementation is done reacting
    /// (longer than the TypeScript SDK's 300 ms debounce).
    pub quiet: Duration,
    /// Settling gives up after this long.
    pub settle: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            startup: Duration::from_secs(30),
            step: Duration::from_secs(5),
            command: Duration::from_secs(10),
            quiet: Duration::from_millis(600),
            settle: Duration::from_secs(6),
        }
    }
}

/// What a run needs.
pub struct RunConfig {
    /// Server adapter.
    pub server: Launch,
    /// Client adapter.
    pub client: Launch,
    /// What the proxy holds at first.
    pub policy: Policy,
    /// Kinds whose `list_changed` the proxy probes.
    pub probe_kinds: KindSet,
    /// Kinds whose ground truth is read after each mutation.
    pub kinds: KindSet,
    /// Time bounds.
    pub bounds: Bounds,
}

/// A started run.
pub struct Run {
    /// Timeline and proxy state.
    pub hub: Arc<Hub>,
    /// The proxy.
    pub proxy: Arc<Proxy>,
    /// Server adapter's control channel.
    pub server: Arc<Control>,
    /// Client adapter's control channel.
    pub client: Arc<Control>,
    /// Bounds.
    pub bounds: Bounds,
    /// Kinds whose ground truth is read.
    pub kinds: KindSet,
    children: Vec<(Side, Child)>,
    dir: tempfile::TempDir,
    batches: usize,
}

fn spawn(l: &Launch, control: &std::path::Path, stderr: &std::path::Path) -> Result<Child, String> {
    let (prog, args) = l
        .argv
        .split_first()
        .ok_or_else(|| format!("{}: empty command", l.label))?;
    let err = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(stderr)
        .map_err(|e| format!("{}: {e}", stderr.display()))?;
    Command::new(prog)
        .args(args)
        .envs(l.env.iter().map(|(k, v)| (k, v)))
        .env("LISTSYNC_CONTROL", control)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(err))
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| format!("cannot start {} ({prog}): {e}", l.label))
}

/// The last `n` bytes of a file, as text.
pub fn tail(path: &std::path::Path, n: usize) -> String {
    let data = std::fs::read(path).unwrap_or_default();
    let from = data.len().saturating_sub(n);
    String::from_utf8_lossy(&data[from..]).into_owned()
}

impl Run {
    /// Starts both adapters and the proxy, and waits for the server's `ready` and both control
    /// connections. The client's `ready` comes after its handshake, which may be held.
    pub async fn start(cfg: RunConfig) -> Result<Run, String> {
        let dir = private_dir()?;
        Self::start_in(cfg, dir).await
    }

    async fn start_in(cfg: RunConfig, dir: tempfile::TempDir) -> Result<Run, String> {
        let hub = Hub::new();
        let (s_sock, c_sock) = (dir.path().join("s.sock"), dir.path().join("c.sock"));
        let s_listener =
            control::listen(&s_sock).map_err(|e| format!("{}: {e}", s_sock.display()))?;
        let c_listener =
            control::listen(&c_sock).map_err(|e| format!("{}: {e}", c_sock.display()))?;
        hub.record(Body::Note {
            text: format!(
                "server: {} — {}; client: {} — {}",
                cfg.server.label,
                cfg.server.argv.join(" "),
                cfg.client.label,
                cfg.client.argv.join(" ")
            ),
        });
        let mut server = spawn(&cfg.server, &s_sock, &dir.path().join("server.stderr"))?;
        let mut client = spawn(&cfg.client, &c_sock, &dir.path().join("client.stderr"))?;
        let (Some(s_in), Some(s_out), Some(c_in), Some(c_out)) = (
            server.stdin.take(),
            server.stdout.take(),
            client.stdin.take(),
            client.stdout.take(),
        ) else {
            return Err("adapter stdio was not piped".into());
        };
        let proxy = Proxy::start(
            hub.clone(),
            cfg.policy,
            c_out,
            c_in,
            s_out,
            s_in,
            cfg.probe_kinds,
        );
        let (s_ctl, c_ctl) = tokio::join!(
            Control::accept(s_listener, Side::Server, hub.clone(), cfg.bounds.startup),
            Control::accept(c_listener, Side::Client, hub.clone(), cfg.bounds.startup),
        );
        let mut run = Run {
            hub,
            proxy,
            server: match s_ctl {
                Ok(c) => c,
                Err(e) => {
                    return Err(format!(
                        "{e}; stderr: {}",
                        tail(&dir.path().join("server.stderr"), 1500)
                    ));
                }
            },
            client: match c_ctl {
                Ok(c) => c,
                Err(e) => {
                    return Err(format!(
                        "{e}; stderr: {}",
                        tail(&dir.path().join("client.stderr"), 1500)
                    ));
                }
            },
            bounds: cfg.bounds,
            kinds: cfg.kinds,
            children: vec![(Side::Server, server), (Side::Client, client)],
            dir,
            batches: 0,
        };
        if !run.wait_ready(Side::Server, cfg.bounds.startup).await {
            let why = format!(
                "the server adapter did not report ready within {:?}; stderr: {}",
                cfg.bounds.startup,
                run.stderr_tail(Side::Server, 1500)
            );
            run.stop().await;
            return Err(why);
        }
        Ok(run)
    }

    /// Waits for an adapter's `ready` event. False if it did not come (or the adapter exited).
    pub async fn wait_ready(&self, side: Side, bound: Duration) -> bool {
        let ctl = match side {
            Side::Server => self.server.clone(),
            Side::Client => self.client.clone(),
        };
        self.hub
            .wait_until(bound, |st| {
                if control::events(st, side, "ready").next().is_some() {
                    Some(true)
                } else if ctl.is_closed() {
                    Some(false)
                } else {
                    None
                }
            })
            .await
            .unwrap_or(false)
    }

    /// The last bytes an adapter wrote on stderr.
    pub fn stderr_tail(&self, side: Side, n: usize) -> String {
        tail(
            &self.dir.path().join(format!("{}.stderr", side.as_str())),
            n,
        )
    }

    /// Reads the ground truth of every tracked kind and records it.
    pub async fn read_catalog(
        &self,
        after: &str,
        since: Option<u64>,
    ) -> Result<BTreeMap<Kind, Vec<NamedItem>>, String> {
        let mut kinds = BTreeMap::new();
        for k in self.kinds.iter() {
            let reply = self
                .server
                .cmd("catalog", json!({"kind": k.as_str()}), self.bounds.command)
                .await
                .map_err(|e| format!("catalog {k}: {e}"))?;
            let items = reply
                .get("items")
                .and_then(control_items)
                .ok_or_else(|| format!("catalog {k}: the reply has no items"))?;
            kinds.insert(k, items);
        }
        self.hub.record(Body::Fact(Fact::Catalog {
            after: after.into(),
            since,
            kinds: kinds.clone(),
        }));
        Ok(kinds)
    }

    /// Sends the administrator's next batch and reads the ground truth after it is applied.
    /// An SDK that refuses an op is not an error of the run (the reply is recorded and the
    /// ground truth says what happened); a silent adapter is.
    pub async fn mutate(&mut self, ops: &[Op]) -> Result<Option<CmdError>, String> {
        self.probes_taken().await;
        let batch = self.batches;
        self.batches += 1;
        let issued = self.hub.record(Body::Fact(Fact::MutateIssued {
            batch,
            ops: ops.to_vec(),
        }));
        let ops_json: Vec<Value> = ops.iter().map(crate::adapters::op_json).collect();
        let r = self
            .server
            .cmd("mutate", json!({ "ops": ops_json }), self.bounds.command)
            .await;
        let refused = match r {
            Ok(_) => None,
            Err(e @ CmdError::Failed { .. }) => Some(e),
            Err(e) => return Err(format!("mutate {batch}: {e}")),
        };
        self.read_catalog(&format!("mutate {batch}"), Some(issued))
            .await?;
        Ok(refused)
    }

    /// Sends a command without waiting for its reply (the reply lands on the timeline).
    pub async fn send(&self, side: Side, cmd: &str, fields: Value) -> Result<(), CmdError> {
        let ctl = match side {
            Side::Server => &self.server,
            Side::Client => &self.client,
        };
        ctl.send(cmd, fields).await.map(|_| ())
    }

    /// Records a fact.
    pub fn fact(&self, f: Fact) {
        self.hub.record(Body::Fact(f));
    }

    /// Records a note.
    pub fn note(&self, text: impl Into<String>) {
        self.hub.record(Body::Note { text: text.into() });
    }

    /// Whether the link is idle: nothing held, every forwarded request answered (probes
    /// included), and both adapters alive.
    pub fn idle(st: &HubState) -> bool {
        st.held.is_empty()
            && st
                .requests
                .values()
                .all(|p| p.answered || is_listen(&p.method))
    }

    /// Waits until the proxy's probes of the notifications so far are recorded (at most the
    /// command bound; a probe that cannot finish is recorded failed by then): called before
    /// the harness changes the server, so each probe sees the list of its notification's
    /// moment.
    pub async fn probes_taken(&self) {
        if !self.proxy.probes_recorded(self.bounds.command).await {
            self.note("a probe of an earlier list_changed was not recorded within the command bound; the server changes anyway");
        }
    }

    /// Waits until the link is idle and quiet (see [`Bounds::quiet`]). Returns whether it
    /// settled within [`Bounds::settle`].
    pub async fn settle(&self) -> bool {
        self.hub
            .wait_quiet(self.bounds.quiet, self.bounds.settle, Run::idle)
            .await
    }

    /// Asks both adapters to shut down, then ends them (bounded), and returns the timeline with
    /// each adapter's stderr tail appended when it wrote anything.
    pub async fn finish(mut self) -> Vec<Record> {
        self.stop().await;
        for side in [Side::Server, Side::Client] {
            let t = self.stderr_tail(side, 4000);
            if !t.trim().is_empty() {
                self.hub.record(Body::Note {
                    text: format!("{} adapter stderr (tail):\n{t}", side.as_str()),
                });
            }
        }
        let st = self.hub.lock();
        st.records.clone()
    }

    async fn stop(&mut self) {
        let short = Duration::from_millis(1500);
        let (a, b) = tokio::join!(
            self.server.cmd("shutdown", json!({}), short),
            self.client.cmd("shutdown", json!({}), short)
        );
        let _ = (a, b);
        self.server.close().await;
        self.client.close().await;
        for (side, child) in &mut self.children {
            match tokio::time::timeout(Duration::from_secs(3), child.wait()).await {
                Ok(Ok(status)) if !status.success() => {
                    self.hub.record(Body::Bad {
                        from: format!("process {}", side.as_str()),
                        what: format!("exited with {status}"),
                    });
                }
                Ok(_) => {}
                Err(_) => {
                    let _ = child.start_kill();
                    let _ = child.wait().await;
                    self.hub.record(Body::Note {
                        text: format!("{} adapter did not exit within 3 s: killed", side.as_str()),
                    });
                }
            }
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.start_kill();
        }
        // The directory goes with `self.dir` (TempDir).
    }
}

/// A fresh private directory for one run's sockets and logs: an unpredictable name under the
/// temporary directory, created with mode 0700 and never an existing path.
pub fn private_dir() -> Result<tempfile::TempDir, String> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("lsh-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| format!("cannot create a private temporary directory: {e}"))
}

fn is_listen(method: &str) -> bool {
    method == "subscriptions/listen"
}

/// Every Msg record's JSON with its direction, in order (for scans).
pub fn messages(st: &HubState) -> impl Iterator<Item = (u64, crate::timeline::Dir, &Value)> {
    st.records.iter().filter_map(|r| match &r.body {
        Body::Msg {
            dir, json: Some(v), ..
        } => Some((r.seq, *dir, v)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_are_fresh_private_and_unpredictable() {
        use std::os::unix::fs::PermissionsExt;
        let a = private_dir().unwrap();
        let b = private_dir().unwrap();
        assert_ne!(a.path(), b.path());
        for d in [&a, &b] {
            let mode = std::fs::metadata(d.path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700, "{}", d.path().display());
            let name = d.path().file_name().unwrap().to_string_lossy().into_owned();
            assert!(
                !name.contains(&std::process::id().to_string()),
                "the name does not derive from the pid: {name}"
            );
        }
    }

    /// A symlink planted where a log file goes is refused, and its target left alone.
    #[tokio::test]
    async fn a_planted_symlink_is_never_followed() {
        let dir = private_dir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let log = dir.path().join("server.stderr");
        std::os::unix::fs::symlink(&victim, &log).unwrap();
        let launch = Launch {
            argv: vec!["true".into()],
            env: Vec::new(),
            label: "test".into(),
        };
        let err = spawn(&launch, &dir.path().join("s.sock"), &log).unwrap_err();
        assert!(err.contains("server.stderr"), "{err}");
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    }
}
