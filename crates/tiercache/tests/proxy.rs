//! `tiercache proxy` end to end: the real binary in front of a tiny origin;
//! hits survive a clean restart (SIGTERM) with the origin gone.

mod support;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// An origin answering every request with a cacheable body; counts requests.
fn origin() -> (u16, Arc<AtomicUsize>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let count = Arc::new(AtomicUsize::new(0));
    let c = count.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { continue };
            let c = c.clone();
            std::thread::spawn(move || {
                let mut buf = [0u8; 8192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match s.read(&mut buf) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                c.fetch_add(1, Ordering::SeqCst);
                let body = "from the origin";
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nCache-Control: max-age=3600\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    (port, count)
}

fn get(port: u16, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let x_cache = out
        .lines()
        .find_map(|l| l.strip_prefix("x-cache: "))
        .unwrap_or("")
        .to_owned();
    let body = out.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, x_cache, body)
}

fn start(data_dir: &std::path::Path, upstream_port: u16) -> (Child, u16) {
    let port = support::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args([
            "proxy",
            "--upstream",
            &format!("http://127.0.0.1:{upstream_port}"),
        ])
        .args(["--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data_dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "proxy did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    (child, port)
}

fn sigterm(mut child: Child) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let status = child.wait().unwrap();
    assert!(status.success(), "clean exit on SIGTERM: {status:?}");
}

#[test]
fn proxy_caches_and_serves_hits_after_a_restart_without_the_origin() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_port, count) = origin();
    let (child, port) = start(dir.path(), origin_port);
    assert_eq!(
        get(port, "/a"),
        (200, "MISS".into(), "from the origin".into())
    );
    assert_eq!(
        get(port, "/a"),
        (200, "HIT".into(), "from the origin".into())
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
    sigterm(child);
    // Restart against a port where nothing listens.
    let dead = support::free_port();
    let (child, port) = start(dir.path(), dead);
    assert_eq!(
        get(port, "/a"),
        (200, "HIT".into(), "from the origin".into())
    );
    assert_eq!(get(port, "/b").0, 502);
    sigterm(child);
}

#[test]
fn proxy_without_upstream_is_a_usage_error() {
    let out = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(["proxy", "--data-dir", "/nonexistent-never-created"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no upstream"));
}

#[test]
fn serve_starts_the_http_cache_when_http_cache_has_an_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let (origin_port, count) = origin();
    let http_port = support::free_port();
    let config = dir.path().join("t.toml");
    std::fs::write(
        &config,
        format!(
            "[http_cache]\nlisten = \"127.0.0.1:{http_port}\"\nupstream = \"http://127.0.0.1:{origin_port}\"\n"
        ),
    )
    .unwrap();
    let server = support::Server::start_with(
        &dir.path().join("data"),
        &["--config", config.to_str().unwrap()],
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while TcpStream::connect(("127.0.0.1", http_port)).is_err() {
        assert!(Instant::now() < deadline, "HTTP cache did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(get(http_port, "/s").1, "MISS");
    assert_eq!(get(http_port, "/s").1, "HIT");
    assert_eq!(count.load(Ordering::SeqCst), 1);
    drop(server);
}
