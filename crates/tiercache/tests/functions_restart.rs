//! `FUNCTION` libraries survive restarts of the real server (kept in
//! `<data dir>/functions.rdb`, as Redis keeps them in its RDB), and a
//! damaged functions file stops the server at start with an error that
//! names the file, rather than a server without its libraries.

mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use support::{Reply, Server};

const LIB: &[u8] =
    b"#!lua name=kept\nredis.register_function('kf', function(keys, args) return 'kept ' .. args[1] end)";

#[test]
fn libraries_survive_a_restart_and_a_damaged_file_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path());
    let mut c = server.client();
    assert_eq!(
        c.call(&[b"FUNCTION", b"LOAD", LIB]),
        Reply::Bulk(Some(b"kept".to_vec()))
    );
    assert!(server.sigterm(Duration::from_secs(30)).success());

    let server = Server::start(dir.path());
    let mut c = server.client();
    assert_eq!(
        c.call(&[b"FCALL", b"kf", b"0", b"x"]),
        Reply::Bulk(Some(b"kept x".to_vec()))
    );
    assert!(server.sigterm(Duration::from_secs(30)).success());

    let path = dir.path().join("functions.rdb");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 0x20;
    std::fs::write(&path, &bytes).unwrap();
    let port = support::free_port().to_string();
    let mut child = Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(["serve", "--data-dir"])
        .arg(dir.path())
        .args(["--resp", &format!("127.0.0.1:{port}")])
        .args(["--memcache", "off", "--admin", "off"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tiercache kept running with a damaged functions file");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("functions.rdb") && stderr.contains("corrupt"),
        "{stderr}"
    );
}
