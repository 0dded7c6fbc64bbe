//! The admin HTTP listener of the real binary: `/metrics` reflects what
//! clients did, `/healthz` answers, unknown paths are 404, and it works on
//! a unix socket too.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{free_port, Client, Server};

/// One HTTP/1.1 request with `Connection: close`; returns (status, body).
fn http_get(mut stream: impl Read + Write, path: &str) -> (u16, String) {
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    stream.read_to_string(&mut raw).unwrap();
    let status = raw
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP response: {raw:?}"));
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    (status, body.to_string())
}

fn wait_for<T>(mut f: impl FnMut() -> std::io::Result<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        match f() {
            Ok(v) => return v,
            Err(e) if Instant::now() > deadline => panic!("admin listener never came up: {e}"),
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// `tiercache serve` on `data_dir` with RESP on a free port, memcached off,
/// the admin listener on `admin`, and `extra` arguments; killed on drop.
fn start_with_admin(data_dir: &std::path::Path, admin: &str, extra: &[&str]) -> Server {
    let resp = free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(["serve", "--data-dir"])
        .arg(data_dir)
        .args(["--resp", &format!("127.0.0.1:{resp}")])
        .args(["--memcache", "off", "--admin", admin])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    Server {
        child,
        port: resp,
        memcache_port: None,
        data_dir: data_dir.to_path_buf(),
    }
}

fn metric(body: &str, line_prefix: &str) -> f64 {
    body.lines()
        .find_map(|l| l.strip_prefix(line_prefix))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {line_prefix:?} in\n{body}"))
}

#[test]
fn metrics_and_healthz_over_tcp() {
    let dir = tempfile::tempdir().unwrap();
    let admin = free_port();
    let server = start_with_admin(dir.path(), &format!("127.0.0.1:{admin}"), &[]);
    let resp = server.port;
    let connect = || TcpStream::connect(("127.0.0.1", admin));
    wait_for(connect);
    wait_for(|| TcpStream::connect(("127.0.0.1", resp)));

    let mut c = Client::connect(resp);
    for i in 0..10 {
        c.call(&[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    c.call(&[b"GET", b"k1"]);
    c.call(&[b"GET", b"k2"]);

    let (status, body) = http_get(connect().unwrap(), "/metrics");
    assert_eq!(status, 200, "{body}");
    assert!(
        body.contains("# TYPE tiercache_hits_total counter"),
        "{body}"
    );
    assert!(metric(&body, "tiercache_hits_total{tier=\"memory\"} ") >= 2.0);
    assert_eq!(metric(&body, "tiercache_entries{tier=\"memory\"} "), 10.0);
    assert!(metric(&body, "tiercache_bytes{tier=\"memory\"} ") > 0.0);
    assert_eq!(
        metric(&body, "tiercache_max_bytes{tier=\"memory\"} "),
        256.0 * 1024.0 * 1024.0
    );

    assert_eq!(
        http_get(connect().unwrap(), "/healthz"),
        (200, "ok\n".into())
    );
    assert_eq!(http_get(connect().unwrap(), "/nope").0, 404);

    // Garbage on the admin port gets an error, and the server stays up.
    let mut junk = connect().unwrap();
    junk.write_all(b"\x00\x01 not http\r\n\r\n").unwrap();
    let mut sink = Vec::new();
    let _ = junk.read_to_end(&mut sink);
    assert_eq!(http_get(connect().unwrap(), "/healthz").0, 200);

    let status = server.sigterm(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
}

#[test]
fn healthz_over_a_unix_socket() {
    let dir = tempfile::tempdir().unwrap();
    let sock = dir.path().join("admin.sock");
    let server = start_with_admin(dir.path(), &format!("unix:{}", sock.display()), &[]);
    let stream = wait_for(|| UnixStream::connect(&sock));
    assert_eq!(http_get(stream, "/healthz"), (200, "ok\n".into()));
    let status = server.sigterm(Duration::from_secs(10));
    assert!(status.success(), "{status:?}");
    assert!(!sock.exists(), "the socket file is removed on shutdown");
}

#[test]
fn busy_polling_is_counted_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("busy.toml");
    std::fs::write(&config, "[server]\nbusy_poll = \"1ms\"\n").unwrap();
    let admin = free_port();
    let server = start_with_admin(
        &dir.path().join("data"),
        &format!("127.0.0.1:{admin}"),
        &["--config", config.to_str().unwrap()],
    );
    let resp = server.port;
    let connect = || TcpStream::connect(("127.0.0.1", admin));
    wait_for(connect);
    wait_for(|| TcpStream::connect(("127.0.0.1", resp)));
    let (_, body) = http_get(connect().unwrap(), "/metrics");
    let before = metric(&body, "tiercache_busy_poll_spins_total ");
    let mut c = Client::connect(resp);
    // Back-to-back requests, each within the window of the one before.
    for i in 0..50 {
        c.call(&[b"SET", format!("k{i}").as_bytes(), b"v"]);
    }
    let (_, body) = http_get(connect().unwrap(), "/metrics");
    assert!(
        metric(&body, "tiercache_busy_poll_spins_total ") > before,
        "{body}"
    );
    // Polling for nothing is bounded by serving: far less than the
    // seconds this test has run.
    let idle = metric(&body, "tiercache_busy_poll_idle_seconds_total ");
    assert!((0.0..1.0).contains(&idle), "{body}");
    assert!(server.sigterm(Duration::from_secs(10)).success());
}
