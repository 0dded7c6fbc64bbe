//! `memcached` on a free port.

use crate::process::{find_tool, free_port, require_tool, ServerChild};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

/// A `memcached` child (TCP only, UDP off), killed on drop; can be stopped
/// and restarted on the same port.
pub struct Memcached {
    bin: PathBuf,
    child: ServerChild,
    port: u16,
    memory_mb: u32,
}

impl Memcached {
    /// Whether `memcached` is installed (a silent check: no skip message).
    pub fn installed() -> bool {
        find_tool("memcached", &[]).is_some()
    }

    /// Starts `memcached` with 64 MB of memory; `None` when it is not
    /// installed (see the crate docs).
    pub fn start() -> Option<Memcached> {
        Self::start_with_memory(64)
    }

    /// Starts `memcached -m memory_mb`.
    pub fn start_with_memory(memory_mb: u32) -> Option<Memcached> {
        let bin = require_tool("memcached", "memcached")?;
        let mut server = Memcached {
            bin,
            child: ServerChild::default(),
            port: free_port(),
            memory_mb,
        };
        // A port taken between `free_port` and the server's bind: try another.
        for attempt in 1.. {
            match server.spawn() {
                Ok(()) => break,
                Err(e) if attempt < 3 => {
                    eprintln!("memcached {e}; retrying on another port");
                    server.port = free_port();
                }
                Err(e) => panic!("memcached {e}"),
            }
        }
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

    /// Kills (SIGKILL) and reaps the server; no-op when stopped.
    pub fn kill(&mut self) {
        self.child.kill();
    }

    /// Starts the server again on the same port.
    pub fn restart(&mut self) {
        if let Err(e) = self.spawn() {
            panic!("memcached {e}");
        }
    }

    fn spawn(&mut self) -> Result<(), String> {
        self.kill();
        // `-u root` is needed (and only matters) when running as root.
        let child = Command::new(&self.bin)
            .args(["-p", &self.port.to_string(), "-U", "0", "-l", "127.0.0.1"])
            .args(["-m", &self.memory_mb.to_string(), "-u", "root"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn memcached");
        self.child.set(child);
        self.child
            .wait_listening(self.addr(), Duration::from_secs(10))
    }
}
