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
    pub fn start() -> Result<TestRedis, String> {
        let server = provision::redis_server()?;
        let port = free_port()?;
        let dir =
            std::env::temp_dir().join(format!("listsync-redis-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
        let mut r = TestRedis {
            server,
            port,
            dir,
            child: None,
        };
        r.spawn()?;
        Ok(r)
    }

    fn spawn(&mut self) -> Result<(), String> {
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
            .map_err(|e| format!("cannot start {} ({e})", self.server))?;
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if Instant::now() > deadline {
                return Err(format!(
                    "{} did not listen on 127.0.0.1:{} within 10 s",
                    self.server, self.port
                ));
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
        self.spawn()
    }
}

impl Drop for TestRedis {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> Result<u16, String> {
    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("no free port: {e}"))?;
    l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())
}
