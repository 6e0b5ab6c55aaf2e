//! Finds or provisions the `redis-server` the tests start, once per process and race-free across
//! processes, so that `cargo test` needs nothing installed beforehand.
//!
//! In order:
//! 1. `LISTSYNC_REDIS_SERVER=/path/to/redis-server`, if set;
//! 2. a `redis-server` on PATH;
//! 3. a Redis already provisioned in the cache (`$LISTSYNC_CACHE/redis`, else `<repo>/.cache/redis`;
//!    a stamp file says it is complete);
//! 4. provisioning into that cache, under an exclusive lock on `<cache>/.lock` (a second process
//!    waits, then finds the stamp):
//!    - with the OS package manager: `apt-get download` of Debian's `redis-tools` (its
//!      `redis-check-rdb` is the server) and of the libraries it needs that this machine lacks,
//!      unpacked with `dpkg-deb -x` into the cache, nothing installed (as root, `apt-get update`
//!      first if the package lists do not know it);
//!    - else a build of the pinned Redis [`PINNED_VERSION`] release from its source tarball
//!      (Debian's `.orig.tar.gz`, from the Debian mirror apt is configured with, or from
//!      `LISTSYNC_REDIS_SOURCE_URL`; checked against [`PINNED_SHA256`]) with `make`.
//!
//! One progress line goes to stderr while provisioning; if every way fails, the error is one line
//! naming what each attempt lacked. `LISTSYNC_REDIS_PROVISION=apt|source` skips steps 2 and 3 and
//! forces one way (to check a way on a machine that has Redis; use it with a `LISTSYNC_CACHE` of
//! its own).

use nix::fcntl::{Flock, FlockArg};
use sha2::{Digest, Sha256};
use std::fmt;
use std::fs::{self, File, OpenOptions};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::OnceLock;

/// The Redis release built from source when the package manager cannot provide one.
pub const PINNED_VERSION: &str = "7.0.15";
/// SHA-256 of `redis_7.0.15.orig.tar.gz` (the upstream release tarball, as Debian's signed
/// `redis_7.0.15-1~deb12u7.dsc` lists it).
pub const PINNED_SHA256: &str = "4b1dc4ee6d622a09fff9c6777191209750fb5e5a725ef78ea012d6eef4c22982";
/// The stamp's first line; bump it when the cache layout changes.
const STAMP_FORMAT: &str = "listsync redis cache v1";

/// A `redis-server` executable and the library directory it needs (a Redis unpacked from
/// Debian packages links libraries this machine may lack).
#[derive(Clone, Debug)]
pub struct RedisServer {
    /// The executable.
    pub program: PathBuf,
    /// Added to `LD_LIBRARY_PATH` when it runs.
    pub lib_dir: Option<PathBuf>,
}

impl RedisServer {
    /// A command that runs it (arguments to be added).
    pub fn command(&self) -> Command {
        let mut c = Command::new(&self.program);
        if let Some(lib) = &self.lib_dir {
            let mut paths = vec![lib.clone()];
            if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
                paths.extend(std::env::split_paths(&old));
            }
            if let Ok(joined) = std::env::join_paths(paths) {
                c.env("LD_LIBRARY_PATH", joined);
            }
        }
        c
    }

    /// Its `--version` line, if it runs.
    fn version(&self) -> Result<String, String> {
        let out = self
            .command()
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("{} does not run: {e}", self.program.display()))?;
        let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !out.status.success() || !text.starts_with("Redis server v=") {
            return Err(format!(
                "{} --version failed: {}",
                self.program.display(),
                last_line(&out)
            ));
        }
        Ok(text)
    }
}

impl fmt::Display for RedisServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.program.display())
    }
}

/// The `redis-server` to start, found or provisioned on the first call of the process.
pub fn redis_server() -> Result<RedisServer, String> {
    static FOUND: OnceLock<Result<RedisServer, String>> = OnceLock::new();
    FOUND.get_or_init(find_or_provision).clone()
}

fn find_or_provision() -> Result<RedisServer, String> {
    if let Some(p) = std::env::var_os("LISTSYNC_REDIS_SERVER") {
        return Ok(RedisServer {
            program: PathBuf::from(p),
            lib_dir: None,
        });
    }
    let forced = match std::env::var("LISTSYNC_REDIS_PROVISION").ok().as_deref() {
        None | Some("") => None,
        Some("apt") => Some(Way::Apt),
        Some("source") => Some(Way::Source),
        Some(other) => {
            return Err(format!(
                "LISTSYNC_REDIS_PROVISION={other}: expected `apt` or `source`"
            ));
        }
    };
    if forced.is_none()
        && let Some(p) = on_path("redis-server")
    {
        return Ok(RedisServer {
            program: p,
            lib_dir: None,
        });
    }
    let cache = Cache::new(cache_dir());
    fs::create_dir_all(&cache.dir)
        .map_err(|e| format!("cannot create {}: {e}", cache.dir.display()))?;
    if forced.is_none()
        && let Some(found) = cache.provisioned()
    {
        return Ok(found);
    }
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(cache.dir.join(".lock"))
        .map_err(|e| format!("cannot open {}/.lock: {e}", cache.dir.display()))?;
    let _held = Flock::lock(lock, FlockArg::LockExclusive)
        .map_err(|(_, e)| format!("cannot lock {}/.lock: {e}", cache.dir.display()))?;
    // Another process may have finished while this one waited.
    if forced.is_none()
        && let Some(found) = cache.provisioned()
    {
        return Ok(found);
    }
    cache.provision(forced)
}

/// How a Redis gets into the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Way {
    Apt,
    Source,
}

/// `<cache>/bin/redis-server`, `<cache>/lib/` (unpacked libraries) and `<cache>/stamp`.
struct Cache {
    dir: PathBuf,
}

impl Cache {
    fn new(dir: PathBuf) -> Cache {
        Cache { dir }
    }

    fn server(&self) -> RedisServer {
        let lib = self.dir.join("lib");
        RedisServer {
            program: self.dir.join("bin/redis-server"),
            lib_dir: lib.is_dir().then_some(lib),
        }
    }

    fn stamp(&self) -> PathBuf {
        self.dir.join("stamp")
    }

    /// The cached Redis, if a provisioning completed (its stamp is written last).
    fn provisioned(&self) -> Option<RedisServer> {
        let stamp = fs::read_to_string(self.stamp()).ok()?;
        let server = self.server();
        (stamp.lines().next() == Some(STAMP_FORMAT) && server.program.is_file()).then_some(server)
    }

    fn provision(&self, forced: Option<Way>) -> Result<RedisServer, String> {
        let _ = fs::remove_file(self.stamp());
        let ways = match forced {
            Some(w) => vec![w],
            None => vec![Way::Apt, Way::Source],
        };
        let mut failures = Vec::new();
        for way in ways {
            for d in ["bin", "lib", "work"] {
                let _ = fs::remove_dir_all(self.dir.join(d));
            }
            let attempt = match way {
                Way::Apt => self.unpack_debian_packages(),
                Way::Source => self.build_from_source(),
            };
            let _ = fs::remove_dir_all(self.dir.join("work"));
            match attempt.and_then(|how| {
                let version = self.server().version()?;
                Ok((how, version))
            }) {
                Ok((how, version)) => {
                    fs::write(self.stamp(), format!("{STAMP_FORMAT}\n{version}\n{how}\n"))
                        .map_err(|e| format!("cannot write {}: {e}", self.stamp().display()))?;
                    return Ok(self.server());
                }
                Err(e) => failures.push(e),
            }
        }
        Err(format!(
            "cannot provision redis-server for the tests ({}); install Redis 7 \
             (Debian/Ubuntu: apt-get install redis-server) or set LISTSYNC_REDIS_SERVER=/path/to/redis-server",
            failures.join("; ")
        ))
    }

    /// Debian's `redis-tools` and the libraries it needs that are not installed, unpacked into
    /// the cache without installing anything.
    fn unpack_debian_packages(&self) -> Result<String, String> {
        let apt_get = on_path("apt-get").ok_or("apt: no apt-get on PATH")?;
        on_path("dpkg-deb").ok_or("apt: no dpkg-deb on PATH")?;
        progress(&format!(
            "listsync: provisioning Redis 7 for the tests into {} (first use: apt-get download redis-tools, unpacked without installing; seconds)...",
            self.dir.display()
        ));
        let work = self.dir.join("work");
        fs::create_dir_all(&work).map_err(|e| format!("apt: creating {}: {e}", work.display()))?;
        let mut depends = apt_depends("redis-tools");
        if depends.is_err() && is_root() {
            run(Command::new(&apt_get).arg("update"), "apt: apt-get update")?;
            depends = apt_depends("redis-tools");
        }
        let mut packages = vec!["redis-tools".to_string()];
        packages.extend(
            depends?
                .into_iter()
                .filter(|p| p.starts_with("lib") && !dpkg_installed(p)),
        );
        run(
            Command::new(&apt_get)
                .arg("download")
                .args(&packages)
                .current_dir(&work),
            "apt: apt-get download",
        )?;
        let root = work.join("root");
        for deb in fs::read_dir(&work).map_err(|e| format!("apt: {e}"))? {
            let deb = deb.map_err(|e| format!("apt: {e}"))?.path();
            if deb.extension().is_some_and(|x| x == "deb") {
                run(
                    Command::new("dpkg-deb").arg("-x").arg(&deb).arg(&root),
                    "apt: dpkg-deb -x",
                )?;
            }
        }
        // redis-tools' redis-check-rdb is the server (Debian's redis-server package only adds a
        // symlink to it, a configuration and a service); it acts by the name it is started as.
        let bin = self.dir.join("bin");
        fs::create_dir_all(&bin).map_err(|e| format!("apt: {e}"))?;
        fs::copy(
            root.join("usr/bin/redis-check-rdb"),
            bin.join("redis-server"),
        )
        .map_err(|e| format!("apt: redis-tools has no usr/bin/redis-check-rdb: {e}"))?;
        let lib = self.dir.join("lib");
        fs::create_dir_all(&lib).map_err(|e| format!("apt: {e}"))?;
        for dir in library_dirs(&root) {
            for f in fs::read_dir(&dir).map_err(|e| format!("apt: {e}"))? {
                let f = f.map_err(|e| format!("apt: {e}"))?.path();
                if f.file_name()
                    .is_some_and(|n| n.to_string_lossy().contains(".so"))
                {
                    // Copy through symlinks (`liblzf.so.1 -> liblzf.so.1.5`).
                    fs::copy(&f, lib.join(f.file_name().unwrap_or_default()))
                        .map_err(|e| format!("apt: copying {}: {e}", f.display()))?;
                }
            }
        }
        Ok(format!("apt-get download {}", packages.join(" ")))
    }

    /// The pinned release built from its source tarball.
    fn build_from_source(&self) -> Result<String, String> {
        on_path("make").ok_or("source: no make on PATH")?;
        on_path("cc").ok_or("source: no C compiler (cc) on PATH")?;
        let urls = source_urls();
        if urls.is_empty() {
            return Err(
                "source: no Debian mirror in apt's sources and no LISTSYNC_REDIS_SOURCE_URL".into(),
            );
        }
        progress(&format!(
            "listsync: building Redis {PINNED_VERSION} from source for the tests into {} (first use; a few minutes)...",
            self.dir.display()
        ));
        let work = self.dir.join("work");
        fs::create_dir_all(&work).map_err(|e| format!("source: {e}"))?;
        let tarball = work.join(format!("redis_{PINNED_VERSION}.orig.tar.gz"));
        let mut fetched = Err(String::from(
            "source: no download tool (curl or wget) on PATH",
        ));
        for url in &urls {
            fetched = download(url, &tarball);
            if fetched.is_ok() {
                break;
            }
        }
        let url = fetched?;
        let bytes = fs::read(&tarball).map_err(|e| format!("source: {e}"))?;
        let sum: String = Sha256::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        if sum != PINNED_SHA256 {
            return Err(format!(
                "source: {url} has SHA-256 {sum}, expected {PINNED_SHA256}"
            ));
        }
        run(
            Command::new("tar")
                .arg("xzf")
                .arg(&tarball)
                .current_dir(&work),
            "source: tar xzf",
        )?;
        let src = work.join(format!("redis-{PINNED_VERSION}"));
        let jobs = std::thread::available_parallelism().map_or(1, |n| n.get());
        let log = self.dir.join("build.log");
        let log_file = File::create(&log).map_err(|e| format!("source: {e}"))?;
        let status = Command::new("make")
            .arg(format!("-j{jobs}"))
            .args(["MALLOC=libc", "BUILD_TLS=no", "USE_SYSTEMD=no"])
            .current_dir(&src)
            .stdin(Stdio::null())
            .stdout(log_file.try_clone().map_err(|e| format!("source: {e}"))?)
            .stderr(log_file)
            .status()
            .map_err(|e| format!("source: cannot run make: {e}"))?;
        if !status.success() {
            return Err(format!(
                "source: make failed ({status}); see {}",
                log.display()
            ));
        }
        let bin = self.dir.join("bin");
        fs::create_dir_all(&bin).map_err(|e| format!("source: {e}"))?;
        fs::copy(src.join("src/redis-server"), bin.join("redis-server"))
            .map_err(|e| format!("source: the build left no src/redis-server: {e}"))?;
        Ok(format!("built from {url}"))
    }
}

/// `$LISTSYNC_CACHE/redis`, else `<repo>/.cache/redis` (as the adapters' cache).
fn cache_dir() -> PathBuf {
    match std::env::var_os("LISTSYNC_CACHE") {
        Some(c) => PathBuf::from(c).join("redis"),
        None => {
            let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
            crate_dir.parent().unwrap_or(crate_dir).join(".cache/redis")
        }
    }
}

/// Where the source tarball may be fetched: `LISTSYNC_REDIS_SOURCE_URL`, else the pool path
/// on each Debian archive apt is configured with.
fn source_urls() -> Vec<String> {
    if let Ok(u) = std::env::var("LISTSYNC_REDIS_SOURCE_URL") {
        return vec![u];
    }
    let pool = format!("pool/main/r/redis/redis_{PINNED_VERSION}.orig.tar.gz");
    let mut archives: Vec<String> = Vec::new();
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = fs::read_dir("/etc/apt/sources.list.d") {
        let mut more: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        more.sort();
        files.extend(more);
    }
    for f in files {
        let Ok(text) = fs::read_to_string(&f) else {
            continue;
        };
        for line in text.lines().map(str::trim) {
            let uris: Vec<&str> = if let Some(rest) = line.strip_prefix("URIs:") {
                rest.split_whitespace().collect()
            } else if line.starts_with("deb ") || line.starts_with("deb-src ") {
                line.split_whitespace()
                    .skip(1)
                    .filter(|w| !w.starts_with('['))
                    .take(1)
                    .collect()
            } else {
                Vec::new()
            };
            for u in uris {
                // The main archive's pool holds the tarball; security archives hold updates.
                if u.starts_with("http") && !u.contains("security") {
                    let a = format!("{}/{pool}", u.trim_end_matches('/'));
                    if !archives.contains(&a) {
                        archives.push(a);
                    }
                }
            }
        }
    }
    archives
}

/// Fetches `url` into `to` with curl or wget; returns the URL.
fn download(url: &str, to: &Path) -> Result<String, String> {
    let mut cmd = if on_path("curl").is_some() {
        let mut c = Command::new("curl");
        c.args(["--fail", "--silent", "--show-error", "--location"])
            .args(["--connect-timeout", "30", "--max-time", "600", "--output"])
            .arg(to)
            .arg(url);
        c
    } else if on_path("wget").is_some() {
        let mut c = Command::new("wget");
        c.args(["--quiet", "--timeout=30", "--output-document"])
            .arg(to)
            .arg(url);
        c
    } else {
        return Err("source: no download tool (curl or wget) on PATH".into());
    };
    run(&mut cmd, &format!("source: downloading {url}"))?;
    Ok(url.to_string())
}

/// The packages `package` depends on (first alternative of each), from `apt-cache depends`.
fn apt_depends(package: &str) -> Result<Vec<String>, String> {
    let out = run(
        Command::new("apt-cache").args(["depends", "--important", package]),
        "apt: apt-cache depends",
    )?;
    let text = String::from_utf8_lossy(&out.stdout);
    // `|Depends: a` then `Depends: b` is the group `a | b`: keep `a`. Virtual names (`<x>`) and
    // the providers apt lists under a dependency (indented, no prefix) are skipped.
    let mut deps = Vec::new();
    let mut alternative = false;
    for l in text.lines().map(str::trim_start) {
        let (name, first_of_group) = if let Some(p) = l.strip_prefix("|Depends:") {
            (p, true)
        } else if let Some(p) = l
            .strip_prefix("Depends:")
            .or_else(|| l.strip_prefix("PreDepends:"))
        {
            (p, false)
        } else {
            continue;
        };
        let name = name.trim();
        if !alternative && !name.starts_with('<') {
            deps.push(name.to_string());
        }
        alternative = first_of_group;
    }
    if deps.is_empty() {
        return Err(format!("apt: apt-cache does not know {package}"));
    }
    Ok(deps)
}

fn dpkg_installed(package: &str) -> bool {
    Command::new("dpkg-query")
        .args(["-W", "-f=${Status}", package])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("install ok installed"))
}

/// `usr/lib/<triplet>/` and `lib/<triplet>/` (and the plain ones) under an unpacked root.
fn library_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for base in ["usr/lib", "lib"] {
        let base = root.join(base);
        if base.is_dir() {
            dirs.push(base.clone());
            if let Ok(rd) = fs::read_dir(&base) {
                dirs.extend(
                    rd.filter_map(|e| e.ok().map(|e| e.path()))
                        .filter(|p| p.is_dir()),
                );
            }
        }
    }
    dirs
}

/// One line on the process's stderr, past the test harness's output capture (which takes
/// the eprint macros), so that a first run says why it pauses.
fn progress(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

fn on_path(program: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p)
            .map(|d| d.join(program))
            .find(|f| f.is_file())
    })
}

/// Runs a command to completion, capturing its output; an error names `what` and the last
/// line the command printed.
fn run(cmd: &mut Command, what: &str) -> Result<Output, String> {
    let out = cmd
        .env("DEBIAN_FRONTEND", "noninteractive")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: {e}"))?;
    if !out.status.success() {
        return Err(format!("{what} failed: {}", last_line(&out)));
    }
    Ok(out)
}

fn last_line(out: &Output) -> String {
    let err = String::from_utf8_lossy(&out.stderr);
    let text = String::from_utf8_lossy(&out.stdout);
    err.lines()
        .chain(text.lines())
        .map(str::trim)
        .rfind(|l| !l.is_empty() && !l.starts_with("W:"))
        .unwrap_or("(no output)")
        .to_string()
}
