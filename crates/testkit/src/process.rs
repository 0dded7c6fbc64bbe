//! Finding binaries, free ports and waiting for a server to listen.

use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// True when tests must not skip for lack of an external tool
/// (`TIERCACHE_REQUIRE_BACKENDS=1`).
pub fn backends_required() -> bool {
    std::env::var("TIERCACHE_REQUIRE_BACKENDS").is_ok_and(|v| v == "1")
}

/// The path of `name` on `PATH` (or in `extra_dirs`), if any.
pub fn find_tool(name: &str, extra_dirs: &[&str]) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.extend(extra_dirs.iter().map(PathBuf::from));
    dirs.into_iter().map(|d| d.join(name)).find(|p| p.is_file())
}

/// The path of `name` on `PATH`. When it is missing: a loud `SKIPPED`
/// message naming the Debian package to install and `None`, or a panic
/// under `TIERCACHE_REQUIRE_BACKENDS=1`.
pub fn require_tool(name: &str, debian_package: &str) -> Option<PathBuf> {
    require_tool_in(name, debian_package, &[])
}

/// [`require_tool`], also looking in `extra_dirs` (PostgreSQL keeps its
/// server binaries in `/usr/lib/postgresql/VERSION/bin`).
pub fn require_tool_in(name: &str, debian_package: &str, extra_dirs: &[&str]) -> Option<PathBuf> {
    let found = find_tool(name, extra_dirs);
    if found.is_none() {
        skip_or_panic(&format!(
            "`{name}` is not installed (Debian package `{debian_package}`; .ci/run installs it)"
        ));
    }
    found
}

/// Says loudly that a test is skipped because of `why`, or panics when
/// backends are required.
pub fn skip_or_panic(why: &str) {
    if backends_required() {
        panic!("{why}, and TIERCACHE_REQUIRE_BACKENDS=1 forbids skipping");
    }
    eprintln!("\n*** SKIPPED: {why} ***\n");
}

/// A TCP port on 127.0.0.1 that was free a moment ago, and never handed
/// out before by this process: tests run in parallel threads, and the
/// kernel may give a just-released port to the next `bind(0)`. Two servers
/// told the same port once made one test talk to the other test's server
/// (a reset connection when that one was killed).
///
/// The port is found by binding a socket that never listens. A listening
/// one (`TcpListener::bind`) let a test see a server that was not there:
/// another thread spawning a process at that moment duplicated the
/// listener into the child until its `exec`, so the port still accepted
/// connections after we dropped ours, and reset them at the `exec`
/// (captured with tcpdump: SYN, SYN-ACK, then RST 60 µs later, 50 ms
/// before the real server listened; 1 run in 100–300 of two parallel
/// tests).
pub fn free_port() -> u16 {
    use socket2::{Domain, Socket, Type};
    static GIVEN: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
    loop {
        let socket = Socket::new(Domain::IPV4, Type::STREAM, None).expect("a TCP socket");
        // As servers bind theirs: a copy of this one alive in a child
        // between fork and exec must not make the server's bind fail.
        socket.set_reuse_address(true).expect("SO_REUSEADDR");
        let any: std::net::SocketAddr = ([127, 0, 0, 1], 0).into();
        socket.bind(&any.into()).expect("bind 127.0.0.1:0");
        let port = socket
            .local_addr()
            .ok()
            .and_then(|a| a.as_socket())
            .map(|a| a.port())
            .expect("a bound address");
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// Waits until `addr` accepts TCP connections; false after `timeout`.
pub fn wait_for_port(addr: SocketAddr, timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if accepts(addr) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// One connection attempt. A connection to itself does not count: on
/// Linux, connecting to a local port nobody listens on succeeds when the
/// kernel happens to pick that same port as the source (TCP simultaneous
/// open), and then the "server" is our own socket.
fn accepts(addr: SocketAddr) -> bool {
    match TcpStream::connect_timeout(&addr, Duration::from_millis(200)) {
        Ok(s) => s.local_addr().ok() != s.peer_addr().ok(),
        Err(_) => false,
    }
}

/// Sends `SIG<name>` to `pid` with `kill(1)` (no-op without a pid).
pub(crate) fn signal(pid: Option<u32>, name: &str) {
    if let Some(pid) = pid {
        let status = std::process::Command::new("kill")
            .arg(format!("-{name}"))
            .arg(pid.to_string())
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name} {pid} failed");
    }
}

/// True when the tests run as root (database servers then need to be told
/// which user to run as, or refuse to start).
pub(crate) fn is_root() -> bool {
    std::process::Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A server child process: killed (SIGKILL) and reaped on [`kill`] and on
/// drop, frozen and thawed with SIGSTOP/SIGCONT. Every server of this crate
/// holds its process in one of these.
///
/// [`kill`]: ServerChild::kill
#[derive(Default)]
pub(crate) struct ServerChild(Option<std::process::Child>);

impl ServerChild {
    /// Takes charge of a freshly spawned `child` (killing any previous one).
    pub(crate) fn set(&mut self, child: std::process::Child) {
        self.kill();
        self.0 = Some(child);
    }

    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.0.as_ref().map(std::process::Child::id)
    }

    /// SIGSTOP: sockets stay open, nothing answers (a hung server).
    pub(crate) fn pause(&self) {
        signal(self.pid(), "STOP");
    }

    /// SIGCONT: undoes [`pause`](Self::pause).
    pub(crate) fn resume(&self) {
        signal(self.pid(), "CONT");
    }

    /// Waits until the child listens on `addr`. An error if it exits first
    /// (the port was taken meanwhile: `free_port` only knows it was free a
    /// moment ago) or is not listening after `timeout`. Checking that the
    /// child still runs matters: another program may listen on the port,
    /// and a test must never talk to a server that is not its own.
    pub(crate) fn wait_listening(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(child) = self.0.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Err(format!("exited ({status}) before listening on {addr}"));
                }
            }
            if accepts(addr) {
                // A server that failed to bind exits at once; one that binds
                // keeps running. Look once more after a beat.
                std::thread::sleep(Duration::from_millis(20));
                if let Some(Ok(Some(status))) = self.0.as_mut().map(|c| c.try_wait()) {
                    return Err(format!(
                        "exited ({status}); {addr} belongs to another program"
                    ));
                }
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!("not listening on {addr} after {timeout:?}"));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL (it works on a paused process too) and reap; no-op when
    /// nothing runs.
    pub(crate) fn kill(&mut self) {
        if let Some(mut child) = self.0.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for ServerChild {
    fn drop(&mut self) {
        self.kill();
    }
}
