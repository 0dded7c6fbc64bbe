//! `redis-server` on a free port, optionally also on a unix socket.

use crate::process::{find_tool, free_port, require_tool, ServerChild};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// A `redis-server` child, no persistence, killed on drop. It can be
/// stopped and restarted on the same port and socket (fault tests).
pub struct RedisServer {
    bin: PathBuf,
    args: Vec<String>,
    child: ServerChild,
    port: u16,
    dir: tempfile::TempDir,
}

impl RedisServer {
    /// Whether `redis-server` is installed (a silent check: no skip message).
    pub fn installed() -> bool {
        find_tool("redis-server", &[]).is_some()
    }

    /// Starts `redis-server` with `extra` arguments appended (e.g.
    /// `["--requirepass", "secret"]`); `None` when it is not installed
    /// (see the crate docs).
    pub fn start(extra: &[&str]) -> Option<RedisServer> {
        let bin = require_tool("redis-server", "redis-server")?;
        // A port taken between `free_port` and the server's bind: try another.
        let mut attempts = 3;
        loop {
            let mut server = Self::configure(bin.clone(), extra);
            match server.spawn() {
                Ok(()) => return Some(server),
                Err(e) if attempts > 1 => {
                    eprintln!("redis-server {e}; retrying on another port");
                    attempts -= 1;
                }
                Err(e) => panic!("redis-server {e}"),
            }
        }
    }

    fn configure(bin: PathBuf, extra: &[&str]) -> RedisServer {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let socket = dir.path().join("redis.sock");
        let mut args: Vec<String> = [
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--unixsocket",
            socket.to_str().expect("utf-8 temp path"),
            "--unixsocketperm",
            "700",
            "--save",
            "",
            "--appendonly",
            "no",
            "--dir",
            dir.path().to_str().expect("utf-8 temp path"),
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        args.extend(extra.iter().map(|s| s.to_string()));
        RedisServer {
            bin,
            args,
            child: ServerChild::default(),
            port,
            dir,
        }
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// The unix socket path.
    pub fn socket(&self) -> PathBuf {
        self.dir.path().join("redis.sock")
    }

    /// The server's working directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.pid()
    }

    /// Freezes the server (SIGSTOP): it keeps its socket open but answers
    /// nothing, like a hung server (timeout tests). [`resume`](Self::resume)
    /// undoes it.
    pub fn pause(&self) {
        self.child.pause();
    }

    /// Lets a [`pause`](Self::pause)d server run again (SIGCONT).
    pub fn resume(&self) {
        self.child.resume();
    }

    /// Kills the server (SIGKILL) and reaps it; its data is gone (no
    /// persistence). No-op when already stopped.
    pub fn kill(&mut self) {
        self.child.kill();
    }

    /// Starts the server again on the same port and socket (killing it
    /// first if it runs) and waits until it accepts connections.
    pub fn restart(&mut self) {
        if let Err(e) = self.spawn() {
            panic!("redis-server {e}");
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        self.kill();
        let child = Command::new(&self.bin)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child.set(child);
        self.child
            .wait_listening(self.addr(), Duration::from_secs(10))
    }
}
