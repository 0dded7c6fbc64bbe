//! A temporary MariaDB server (`mariadb-install-db` + `mariadbd`) on a free port.

use crate::process::{find_tool, free_port, is_root, require_tool_in, ServerChild};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The database, user and password [`Mariadb::start`] creates.
pub const MARIADB_DATABASE: &str = "tiercache";
/// See [`MARIADB_DATABASE`].
pub const MARIADB_USER: &str = "tiercache";
/// See [`MARIADB_DATABASE`].
pub const MARIADB_PASSWORD: &str = "tiercache";

/// A `mariadbd` child with its own data directory, killed on drop. At start
/// it creates a database and a password-authenticated user for it
/// ([`MARIADB_USER`]), so tests connect the way a deployment does. It can be
/// killed, restarted with its data, and paused (SIGSTOP) to test timeouts.
///
/// Tuned to start fast and not to be durable: no binary log, a 32 MB buffer
/// pool, `innodb_flush_log_at_trx_commit=2` (a commit survives a killed
/// server, not a machine crash).
pub struct Mariadb {
    /// First field: dropped (killed) before the data directory goes.
    child: ServerChild,
    bin: PathBuf,
    client: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
}

const SBIN: &[&str] = &["/usr/sbin", "/sbin", "/usr/local/sbin"];

impl Mariadb {
    /// Whether MariaDB's server, installer and client are installed (a
    /// silent check: no skip message).
    pub fn installed() -> bool {
        ["mariadbd", "mariadb-install-db", "mariadb"]
            .iter()
            .all(|tool| find_tool(tool, SBIN).is_some())
    }

    /// Initialises a data directory and starts the server; `None` when
    /// MariaDB is not installed (see the crate docs).
    pub fn start() -> Option<Mariadb> {
        let bin = require_tool_in("mariadbd", "mariadb-server", SBIN)?;
        let install = require_tool_in("mariadb-install-db", "mariadb-server", SBIN)?;
        let client = require_tool_in("mariadb", "mariadb-client", SBIN)?;
        let dir = tempfile::Builder::new()
            .prefix("tiercache-mariadb")
            .tempdir()
            .expect("temp dir");
        let data = dir.path().join("data");
        // Each server gets its own tmpdir: servers sharing /tmp delete each
        // other's temporary tables at startup, and a bootstrap fails.
        let tmp = dir.path().join("tmp");
        std::fs::create_dir(&tmp).expect("create tmpdir");
        let out = Command::new(&install)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", path_str(&data)))
            .arg(format!("--tmpdir={}", path_str(&tmp)))
            .args(["--auth-root-authentication-method=normal", "--skip-test-db"])
            .args(root_user())
            .stdin(Stdio::null())
            .output()
            .expect("run mariadb-install-db");
        assert!(
            out.status.success(),
            "mariadb-install-db failed: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut server = Mariadb {
            bin,
            client,
            dir,
            port: free_port(),
            child: ServerChild::default(),
        };
        server.restart();
        server.root_sql(&format!(
            "CREATE DATABASE {MARIADB_DATABASE}; \
             CREATE USER '{MARIADB_USER}'@'%' IDENTIFIED BY '{MARIADB_PASSWORD}'; \
             GRANT ALL ON {MARIADB_DATABASE}.* TO '{MARIADB_USER}'@'%';"
        ));
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

    /// `mysql://tiercache:tiercache@127.0.0.1:PORT/tiercache`.
    pub fn url(&self) -> String {
        format!(
            "mysql://{MARIADB_USER}:{MARIADB_PASSWORD}@127.0.0.1:{}/{MARIADB_DATABASE}",
            self.port
        )
    }

    /// The server's directory (data in `data/`, log in `error.log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    fn socket(&self) -> PathBuf {
        self.dir.path().join("mariadb.sock")
    }

    /// Runs `sql` as root over the unix socket, panicking on failure.
    pub fn root_sql(&self, sql: &str) {
        let out = Command::new(&self.client)
            .arg("--no-defaults")
            .arg(format!("--socket={}", path_str(&self.socket())))
            .args(["-uroot", "-e", sql])
            .stdin(Stdio::null())
            .output()
            .expect("run mariadb client");
        assert!(
            out.status.success(),
            "mariadb -e {sql:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Kills the server (SIGKILL) and reaps it; the data stays. No-op when
    /// stopped.
    pub fn kill(&mut self) {
        self.child.kill();
    }

    /// Pauses the server (SIGSTOP): connections stay open but nothing
    /// answers, as with a hung server.
    pub fn pause(&self) {
        self.child.pause();
    }

    /// Resumes a paused server (SIGCONT).
    pub fn resume(&self) {
        self.child.resume();
    }

    /// Starts the server again on the same port with the same data (killing
    /// it first if it runs) and waits until it accepts connections.
    pub fn restart(&mut self) {
        self.kill();
        let dir = self.dir.path();
        // The server recreates these; a stale socket or pid file from a
        // killed server would make it wait or refuse.
        let _ = std::fs::remove_file(self.socket());
        let _ = std::fs::remove_file(dir.join("mariadb.pid"));
        let child = Command::new(&self.bin)
            .arg("--no-defaults")
            .arg(format!("--datadir={}", path_str(&dir.join("data"))))
            .arg(format!("--tmpdir={}", path_str(&dir.join("tmp"))))
            .arg(format!("--socket={}", path_str(&self.socket())))
            .arg(format!("--pid-file={}", path_str(&dir.join("mariadb.pid"))))
            .arg(format!("--log-error={}", path_str(&dir.join("error.log"))))
            .arg(format!("--port={}", self.port))
            .args([
                "--bind-address=127.0.0.1",
                "--skip-log-bin",
                "--skip-name-resolve",
                "--innodb-buffer-pool-size=32M",
                "--innodb-flush-log-at-trx-commit=2",
                "--max-allowed-packet=256M",
                "--max-connections=200",
            ])
            .args(root_user())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn mariadbd");
        self.child.set(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        // The port opens before the server is ready for queries; also wait
        // for the socket file, which appears when it is.
        if let Err(e) = self
            .child
            .wait_listening(self.addr(), Duration::from_secs(30))
        {
            panic!("mariadbd {e}; see {}", dir.join("error.log").display());
        }
        while !self.socket().exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// `--user=root` when running as root (mariadbd refuses root otherwise);
/// nothing for other users, who run it as themselves.
fn root_user() -> &'static [&'static str] {
    if is_root() {
        &["--user=root"]
    } else {
        &[]
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}
