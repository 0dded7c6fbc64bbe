//! `redis-server` on a free port, optionally also on a unix socket.

use crate::process::{find_tool, free_port, require_tool, wait_for_port, ServerChild};
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
        let mut server = RedisServer {
            bin,
            args,
            child: ServerChild::default(),
            port,
            dir,
        };
        server.restart();
        Some(server)
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
        self.kill();
        let child = Command::new(&self.bin)
            .args(&self.args)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn redis-server");
        self.child.set(child);
        assert!(
            wait_for_port(self.addr(), Duration::from_secs(10)),
            "redis-server did not start on {}",
            self.addr()
        );
    }
}
