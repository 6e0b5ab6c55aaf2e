//! Test support (feature `testkit`, enabled only by the test and bench targets that need it, never
//! by the production build): a throwaway Redis server for tests, `redis-server` on a free
//! loopback port with its own temporary directory (append-only file on, so a restart keeps the
//! data), stopped on drop. The executable is found or provisioned on first use by [`provision`]
//! (a `redis-server` on PATH, else a pinned Redis 7 unpacked or built into `.cache/redis/`).

pub mod provision;

use provision::RedisServer;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// A Redis server owned by a test.
#[derive(Debug)]
pub struct TestRedis {
    server: RedisServer,
    port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

impl TestRedis {
    /// Starts a server on a free port, provisioning `redis-server` first if this machine has
    /// none. Fails with a one-line message when it cannot.
    ///
    /// A free port is only free when it was asked for: another test may take it before Redis
    /// binds it, and Redis then exits at once. Such a start is tried again on another port (up
    /// to [`START_ATTEMPTS`] times).
    pub fn start() -> Result<TestRedis, String> {
        let server = provision::redis_server()?;
        let mut last = String::new();
        for _ in 0..START_ATTEMPTS {
            let port = free_port()?;
            let dir =
                std::env::temp_dir().join(format!("listsync-redis-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir)
                .map_err(|e| format!("creating {}: {e}", dir.display()))?;
            let mut r = TestRedis {
                server: server.clone(),
                port,
                dir,
                child: None,
            };
            match r.spawn() {
                Ok(()) => return Ok(r),
                Err(Spawn::Exited(why)) => last = why,
                Err(Spawn::Failed(why)) => return Err(why),
            }
        }
        Err(last)
    }

    /// Starts the server and waits until it answers as itself (a connection alone could be
    /// another listener's, on a port taken in between: another test's Redis among them).
    fn spawn(&mut self) -> Result<(), Spawn> {
        let child = self
            .server
            .command()
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
            ])
            .args(["--appendonly", "yes", "--dir"])
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| Spawn::Failed(format!("cannot start {} ({e})", self.server)))?;
        let child = self.child.insert(child);
        let pid = child.id();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answers_as(self.port, pid) {
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Err(Spawn::Exited(format!(
                    "{} exited ({status}) before listening on 127.0.0.1:{}",
                    self.server, self.port
                )));
            }
            if Instant::now() > deadline {
                return Err(Spawn::Failed(format!(
                    "{} did not listen on 127.0.0.1:{} within 10 s",
                    self.server, self.port
                )));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    /// The URL to connect to.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Stops the server (the data stays in its directory).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port, with the same data.
    pub fn restart(&mut self) -> Result<(), String> {
        self.stop();
        self.spawn().map_err(|e| match e {
            Spawn::Exited(why) | Spawn::Failed(why) => why,
        })
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Ports tried by [`TestRedis::start`] before it gives up.
const START_ATTEMPTS: u32 = 5;

/// Why a server did not start.
enum Spawn {
    /// It exited at once (most likely: its port was taken); another port may do.
    Exited(String),
    /// Anything else.
    Failed(String),
}

/// Whether the Redis server answering on `port` is the process `pid` (its `INFO server`
/// says so within a second): another test's server that took the port first does not count.
fn answers_as(port: u16, pid: u32) -> bool {
    let second = Duration::from_secs(1);
    let info = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection_with_timeout(second))
        .and_then(|mut c| {
            c.set_read_timeout(Some(second))?;
            redis::cmd("INFO").arg("server").query::<String>(&mut c)
        });
    info.is_ok_and(|i| {
        i.lines()
            .any(|l| l.trim_end() == format!("process_id:{pid}"))
    })
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port another listener holds: Redis cannot bind it and exits, and the start is told so
    /// (so that it tries another port) instead of taking the other listener for Redis.
    #[test]
    fn a_port_taken_by_another_listener_is_not_taken_for_redis() {
        let server = provision::redis_server().unwrap_or_else(|e| panic!("{e}"));
        let other = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = other.local_addr().expect("addr").port();
        let dir = std::env::temp_dir().join(format!("listsync-redis-{}-taken", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let mut r = TestRedis {
            server,
            port,
            dir,
            child: None,
        };
        match r.spawn() {
            Err(Spawn::Exited(why)) => assert!(why.contains("exited"), "{why}"),
            Err(Spawn::Failed(why)) => panic!("not told the server exited: {why}"),
            Ok(()) => panic!("the other listener on {port} was taken for Redis"),
        }
        drop(other);
        // And a start that finds its port taken moves on to another.
        let mut r = TestRedis::start().unwrap_or_else(|e| panic!("{e}"));
        let pid = |r: &TestRedis| r.child.as_ref().expect("running").id();
        assert!(answers_as(r.port, pid(&r)));
        r.restart().unwrap_or_else(|e| panic!("{e}"));
        assert!(answers_as(r.port, pid(&r)));
        // Another Redis on the port is not this one.
        assert!(!answers_as(r.port, pid(&r) + 1));
    }
}
