//! Test harness: runs the real `tiercache serve` binary on a free port in a
//! temporary data directory, and a minimal RESP client to talk to it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

pub struct Server {
    pub child: Child,
    pub port: u16,
    /// The memcached-protocol port, when started with one.
    pub memcache_port: Option<u16>,
    pub data_dir: PathBuf,
}

/// A free port never handed out before in this test binary.
pub fn free_port() -> u16 {
    tiercache_testkit::free_port()
}

impl Server {
    /// Starts `tiercache serve` on a free port with `data_dir`, and waits until it accepts.
    pub fn start(data_dir: &Path) -> Server {
        Self::start_with(data_dir, &[])
    }

    pub fn start_with(data_dir: &Path, extra: &[&str]) -> Server {
        Self::launch(data_dir, extra, None)
    }

    /// Starts with the memcached listener on a free port too.
    pub fn start_with_memcache(data_dir: &Path) -> Server {
        Self::launch(data_dir, &[], Some(free_port()))
    }

    /// Starts with the memcached listener on a free port and `extra` arguments.
    pub fn start_with_memcache_and(data_dir: &Path, extra: &[&str]) -> Server {
        Self::launch(data_dir, extra, Some(free_port()))
    }

    /// Starts with the memcached listener too, `extra` arguments and `env`
    /// variables set for the server process.
    pub fn start_with_env(data_dir: &Path, extra: &[&str], env: &[(&str, &str)]) -> Server {
        Self::launch_env(data_dir, extra, Some(free_port()), env)
    }

    /// Starts with the memcached listener too and `extra` arguments, under
    /// a soft limit of `bytes` on the size of any file it writes
    /// (`RLIMIT_FSIZE`, set by util-linux's `prlimit`; the hard limit stays
    /// unlimited so that [`Server::lift_file_size_limit`] can raise it).
    /// Growing a file past it fails with `EFBIG`, as a full disk would fail
    /// with `ENOSPC`; `SIGXFSZ`, which would kill the process, is ignored.
    pub fn start_with_file_size_limit(data_dir: &Path, extra: &[&str], bytes: u64) -> Server {
        let mut command = Command::new("sh");
        command
            .arg("-c")
            .arg(r#"trap '' XFSZ; limit=$1; shift; exec prlimit --fsize="$limit:unlimited" -- "$0" "$@""#)
            .arg(env!("CARGO_BIN_EXE_tiercache"))
            .arg(bytes.to_string());
        Self::launch_command(command, data_dir, extra, Some(free_port()), &[])
    }

    /// Lifts the limit set by [`Server::start_with_file_size_limit`].
    pub fn lift_file_size_limit(&self) {
        let status = Command::new("prlimit")
            .args([
                "--pid",
                &self.child.id().to_string(),
                "--fsize=unlimited:unlimited",
            ])
            .status()
            .expect("prlimit runs");
        assert!(status.success(), "prlimit could not lift the limit");
    }

    /// The server's log (stderr) so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.data_dir.with_extension(format!("{}.log", self.port)))
            .unwrap_or_default()
    }

    fn launch(data_dir: &Path, extra: &[&str], memcache_port: Option<u16>) -> Server {
        Self::launch_env(data_dir, extra, memcache_port, &[])
    }

    fn launch_env(
        data_dir: &Path,
        extra: &[&str],
        memcache_port: Option<u16>,
        env: &[(&str, &str)],
    ) -> Server {
        let command = Command::new(env!("CARGO_BIN_EXE_tiercache"));
        Self::launch_command(command, data_dir, extra, memcache_port, env)
    }

    /// Runs `command` (the binary, or a wrapper that execs it with its
    /// arguments) with `serve` and the listener arguments appended.
    fn launch_command(
        mut command: Command,
        data_dir: &Path,
        extra: &[&str],
        memcache_port: Option<u16>,
        env: &[(&str, &str)],
    ) -> Server {
        let port = free_port();
        let memcache = memcache_port.map_or("off".to_string(), |p| format!("127.0.0.1:{p}"));
        let log = std::fs::File::create(data_dir.with_extension(format!("{port}.log"))).unwrap();
        let child = command
            .args(["serve", "--data-dir"])
            .arg(data_dir)
            .args([
                "--resp",
                &format!("127.0.0.1:{port}"),
                "--memcache",
                &memcache,
                "--admin",
                "off",
            ])
            .args(extra)
            .envs(env.iter().copied())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("tiercache binary runs");
        let server = Server {
            child,
            port,
            memcache_port,
            data_dir: data_dir.to_path_buf(),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tiercache did not start listening on {port}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        if let Some(p) = memcache_port {
            while TcpStream::connect(("127.0.0.1", p)).is_err() {
                assert!(Instant::now() < deadline, "memcache listener not up on {p}");
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        server
    }

    pub fn client(&self) -> Client {
        Client::connect(self.port)
    }

    /// `kill -9`: no flush, no destructor.
    pub fn kill9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then waits up to `limit` for the exit status.
    pub fn sigterm(self, limit: Duration) -> ExitStatus {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        self.wait_exit(limit)
    }

    /// Waits up to `limit` for the process to exit (killing it, and
    /// failing, past that).
    pub fn wait_exit(mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("tiercache did not exit within {limit:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A RESP reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Reply>>),
}

pub struct Client {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

pub fn command(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

impl Client {
    pub fn connect(port: u16) -> Client {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        Client {
            writer: s.try_clone().unwrap(),
            reader: BufReader::new(s),
        }
    }

    pub fn send_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)
    }

    pub fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.send_raw(&command(args)).unwrap();
        self.read().unwrap()
    }

    /// Sends `commands` in one write (a pipeline) and reads their replies.
    pub fn pipeline(&mut self, commands: &[&[&[u8]]]) -> Vec<Reply> {
        let bytes: Vec<u8> = commands.iter().flat_map(|args| command(args)).collect();
        self.send_raw(&bytes).unwrap();
        commands.iter().map(|_| self.read().unwrap()).collect()
    }

    pub fn read(&mut self) -> std::io::Result<Reply> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let line = line.trim_end_matches("\r\n");
        let (kind, rest) = line.split_at(1);
        Ok(match kind {
            "+" => Reply::Simple(rest.to_string()),
            "-" => Reply::Error(rest.to_string()),
            ":" => Reply::Int(rest.parse().unwrap()),
            "$" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    Reply::Bulk(None)
                } else {
                    let mut buf = vec![0; n as usize + 2];
                    self.reader.read_exact(&mut buf)?;
                    buf.truncate(n as usize);
                    Reply::Bulk(Some(buf))
                }
            }
            "*" => {
                let n: i64 = rest.parse().unwrap();
                if n < 0 {
                    Reply::Array(None)
                } else {
                    let mut items = Vec::new();
                    for _ in 0..n {
                        items.push(self.read()?);
                    }
                    Reply::Array(Some(items))
                }
            }
            other => panic!("unexpected reply type {other:?} in {line:?}"),
        })
    }
}

#[allow(unused_imports)] // not every test binary uses it
pub use tiercache_testkit::backends_required;

/// Finds an installed tool (`redis-cli`, `sqlite3`, `python3`, ...), or
/// says loudly why the test is skipped (fails when backends are required).
pub fn require_tool(name: &str) -> Option<PathBuf> {
    tiercache_testkit::require_tool(name, name)
}

/// A blocking memcached text client for end-to-end tests.
pub struct McText {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

impl McText {
    pub fn connect(port: u16) -> McText {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        McText {
            writer: s.try_clone().unwrap(),
            reader: BufReader::new(s),
        }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)
    }

    /// One reply line without its `\r\n`; `Err` at end of stream.
    pub fn line(&mut self) -> std::io::Result<String> {
        let mut line = String::new();
        if self.reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        Ok(line.trim_end_matches("\r\n").to_string())
    }

    /// `get key`: `Some((flags, value))` or `None`.
    pub fn get(&mut self, key: &str) -> Option<(u32, Vec<u8>)> {
        self.send(format!("get {key}\r\n").as_bytes()).unwrap();
        let header = self.line().unwrap();
        if header == "END" {
            return None;
        }
        let parts: Vec<&str> = header.split(' ').collect();
        assert_eq!(parts[0], "VALUE", "{header}");
        let len: usize = parts[3].parse().unwrap();
        let mut value = vec![0; len + 2];
        self.reader.read_exact(&mut value).unwrap();
        value.truncate(len);
        assert_eq!(self.line().unwrap(), "END");
        Some((parts[2].parse().unwrap(), value))
    }
}
