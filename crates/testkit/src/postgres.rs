//! A temporary PostgreSQL cluster (`initdb` + `pg_ctl`) on a free port.

use crate::process::{find_tool, free_port, is_root, require_tool_in, wait_for_port};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The superuser's password. TCP connections must authenticate
/// (`scram-sha-256`), so a wrong password is a real authentication failure;
/// the unix socket trusts (for the helper's own `psql`-free setup).
pub const POSTGRES_PASSWORD: &str = "tiercache";

/// A PostgreSQL cluster in a temporary directory, stopped (`pg_ctl stop -m
/// immediate`) and removed on drop. It can be killed and restarted on the
/// same port with its data (fault tests).
///
/// When the tests run as root, `initdb` and `pg_ctl` run as the `postgres`
/// OS user (PostgreSQL refuses to run as root), and the directory is owned
/// by it.
///
/// Tuned to start fast and not to be durable against a machine crash:
/// `fsync=off`, `full_page_writes=off`, 16 MB of shared buffers. Commits are
/// still written (to the OS) before they return (`synchronous_commit` stays
/// on), so a committed write survives [`Postgres::kill`].
pub struct Postgres {
    bin_dir: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    /// `Some` when commands must run as the `postgres` user.
    run_as: Option<&'static str>,
    running: bool,
}

/// Directories holding PostgreSQL's server binaries, newest version first.
fn postgres_bin_dirs() -> Vec<String> {
    let mut versions: Vec<(u32, String)> = std::fs::read_dir("/usr/lib/postgresql")
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| {
                    let name = e.file_name().to_string_lossy().to_string();
                    let v = name.parse::<u32>().ok()?;
                    Some((v, format!("/usr/lib/postgresql/{name}/bin")))
                })
                .collect()
        })
        .unwrap_or_default();
    versions.sort_by_key(|v| std::cmp::Reverse(v.0));
    versions.into_iter().map(|(_, d)| d).collect()
}

impl Postgres {
    /// Whether PostgreSQL's server binaries are installed (a silent check:
    /// no skip message).
    pub fn installed() -> bool {
        let dirs = postgres_bin_dirs();
        let dir_refs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        find_tool("initdb", &dir_refs).is_some()
    }

    /// Creates and starts a cluster; `None` when PostgreSQL is not installed
    /// (see the crate docs).
    pub fn start() -> Option<Postgres> {
        let dirs = postgres_bin_dirs();
        let dir_refs: Vec<&str> = dirs.iter().map(String::as_str).collect();
        let initdb = require_tool_in("initdb", "postgresql", &dir_refs)?;
        // `initdb` may be a symlink on PATH; its siblings (`pg_ctl`,
        // `createdb`) live next to the real file.
        let initdb = std::fs::canonicalize(&initdb).unwrap_or(initdb);
        let bin_dir = initdb
            .parent()
            .expect("initdb has a directory")
            .to_path_buf();
        let run_as = is_root().then_some("postgres");
        let dir = tempfile::Builder::new()
            .prefix("tiercache-pg")
            .tempdir()
            .expect("temp dir");
        let pwfile = dir.path().join("pwfile");
        std::fs::write(&pwfile, format!("{POSTGRES_PASSWORD}\n")).expect("write pwfile");
        if let Some(user) = run_as {
            let status = Command::new("chown")
                .args(["-R", &format!("{user}:"), path_str(dir.path())])
                .status()
                .expect("run chown");
            assert!(status.success(), "chown {} to {user}", dir.path().display());
        }
        let mut pg = Postgres {
            bin_dir,
            port: free_port(),
            dir,
            run_as,
            running: false,
        };
        let data = pg.data_dir();
        pg.run(
            "initdb",
            &[
                "-D",
                path_str(&data),
                "-U",
                "postgres",
                "--auth-local=trust",
                "--auth-host=scram-sha-256",
                "--pwfile",
                path_str(&pwfile),
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        );
        // The port can be taken between `free_port` and the server's bind
        // (another test's server): `pg_ctl -w` then reports the failed
        // start, and the first start retries on a fresh port. Later
        // restarts must keep their port (clients hold the URL).
        for attempt in 1.. {
            match pg.try_start() {
                Ok(()) => break,
                Err(e) if attempt < 3 => {
                    eprintln!("postgres on port {} did not start, retrying: {e}", pg.port);
                    pg.port = free_port();
                }
                Err(e) => panic!("{e}"),
            }
        }
        Some(pg)
    }

    fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// Runs a PostgreSQL tool (as the `postgres` user when root), panicking
    /// with its output when it fails.
    fn run(&self, tool: &str, args: &[&str]) {
        if let Err(e) = self.try_run(tool, args) {
            panic!("{e}");
        }
    }

    /// Runs a PostgreSQL tool; its status and output when it fails.
    fn try_run(&self, tool: &str, args: &[&str]) -> Result<(), String> {
        let bin = self.bin_dir.join(tool);
        let mut cmd = match self.run_as {
            Some(user) => {
                let mut c = Command::new("runuser");
                c.args(["-u", user, "--"]).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        let out = cmd
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| panic!("run {tool}: {e}"));
        if out.status.success() {
            return Ok(());
        }
        Err(format!(
            "{tool} {args:?} failed: {}\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        ))
    }

    /// `127.0.0.1:PORT`.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.port))
    }

    /// The TCP port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `postgres://postgres:PASSWORD@127.0.0.1:PORT/postgres`.
    pub fn url(&self) -> String {
        self.url_for("postgres")
    }

    /// The URL of database `db` on this cluster (create it first with
    /// [`Postgres::create_database`]).
    pub fn url_for(&self, db: &str) -> String {
        format!(
            "postgres://postgres:{POSTGRES_PASSWORD}@127.0.0.1:{}/{db}",
            self.port
        )
    }

    /// Creates database `db` (over the unix socket).
    pub fn create_database(&self, db: &str) {
        self.run(
            "createdb",
            &[
                "-h",
                path_str(self.dir.path()),
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
                db,
            ],
        );
    }

    /// The cluster's directory (data in `data/`, server log in `log`).
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// Stops the server at once (`pg_ctl stop -m immediate`: no checkpoint,
    /// clients cut off, as in a crash). The data stays; no-op when stopped.
    pub fn kill(&mut self) {
        if !self.running {
            return;
        }
        self.running = false;
        let data = self.data_dir();
        self.run(
            "pg_ctl",
            &["-D", path_str(&data), "-m", "immediate", "-w", "stop"],
        );
    }

    /// Starts the server again on the same port with the same data (killing
    /// it first if it runs) and waits until it accepts connections.
    pub fn restart(&mut self) {
        self.kill();
        if let Err(e) = self.try_start() {
            panic!("{e}");
        }
    }

    /// Starts the stopped server and waits until it accepts connections.
    /// `pg_ctl -w` waits for *this* cluster's postmaster to report ready
    /// (its pid file), so a server of someone else's on the port cannot
    /// pass for it; the port check after it is a second guard.
    fn try_start(&mut self) -> Result<(), String> {
        let data = self.data_dir();
        let log = self.dir.path().join("log");
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off \
             -c full_page_writes=off -c shared_buffers=16MB -c max_connections=60",
            self.port,
            path_str(self.dir.path())
        );
        self.try_run(
            "pg_ctl",
            &[
                "-D",
                path_str(&data),
                "-l",
                path_str(&log),
                "-o",
                &options,
                "-w",
                "-t",
                "30",
                "start",
            ],
        )
        .map_err(|e| {
            let log = std::fs::read_to_string(&log).unwrap_or_default();
            format!("{e}\nserver log:\n{log}")
        })?;
        self.running = true;
        if !wait_for_port(self.addr(), Duration::from_secs(10)) {
            return Err(format!("postgres did not listen on {}", self.addr()));
        }
        Ok(())
    }
}

fn path_str(p: &Path) -> &str {
    p.to_str().expect("utf-8 temp path")
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            self.running = false;
            let data = self.data_dir();
            let bin = self.bin_dir.join("pg_ctl");
            let mut cmd = match self.run_as {
                Some(user) => {
                    let mut c = Command::new("runuser");
                    c.args(["-u", user, "--"]).arg(&bin);
                    c
                }
                None => Command::new(&bin),
            };
            // Never panic in drop (it may run during a panic).
            let _ = cmd
                .args(["-D", path_str(&data), "-m", "immediate", "-w", "stop"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A start that cannot bind its port is an error naming the cause (the
    /// path the first start retries on), not a hang or a silent success.
    #[test]
    fn a_taken_port_fails_the_start_with_the_server_log() {
        let Some(mut pg) = Postgres::start() else {
            return; // not installed: `start` said so loudly
        };
        pg.kill();
        let squatter = std::net::TcpListener::bind(pg.addr()).expect("bind the stopped port");
        let err = pg.try_start().expect_err("the port is taken");
        assert!(err.contains("pg_ctl"), "{err}");
        assert!(err.contains("server log"), "{err}");
        assert!(!pg.running);
        drop(squatter);
        pg.restart();
        assert!(wait_for_port(pg.addr(), Duration::from_secs(5)));
    }
}
