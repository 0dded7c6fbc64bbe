//! Issue 2's acceptance scenario with the real `redis-cli` and `sqlite3`:
//! 100,000 SETs through `redis-cli --pipe`, `kill -9`, restart: DBSIZE is
//! 100,000 and every value is exact; SIGTERM exits 0 within 10 s and the
//! SQLite file holds all 100,000 rows.

mod support;

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;
use support::{command, require_tool, Reply, Server};

const N: usize = 100_000;

fn value(i: usize) -> String {
    format!("v{i}:{}", i * 7919 % 100_003)
}

#[test]
fn redis_cli_pipe_100k_survives_kill9_and_sigterm() {
    let (Some(redis_cli), Some(sqlite3)) = (require_tool("redis-cli"), require_tool("sqlite3"))
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);

    let mut input = Vec::with_capacity(N * 40);
    for i in 0..N {
        input.extend(command(&[
            b"SET",
            format!("key:{i:06}").as_bytes(),
            value(i).as_bytes(),
        ]));
    }
    let mut pipe = Command::new(&redis_cli)
        .args(["-p", &server.port.to_string(), "--pipe"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    pipe.stdin.take().unwrap().write_all(&input).unwrap();
    let out = pipe.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "redis-cli --pipe failed: {report} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        report.contains(&format!("errors: 0, replies: {N}")),
        "redis-cli --pipe said: {report}"
    );

    server.kill9();
    let server = Server::start(&data);
    let mut client = server.client();
    assert_eq!(client.call(&[b"DBSIZE"]), Reply::Int(N as i64));
    for start in (0..N).step_by(1000) {
        let keys: Vec<Vec<u8>> = (start..start + 1000)
            .map(|i| format!("key:{i:06}").into_bytes())
            .collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(keys.iter().map(|k| k.as_slice()));
        let Reply::Array(Some(values)) = client.call(&args) else {
            panic!("MGET failed")
        };
        for (i, v) in (start..).zip(values) {
            assert_eq!(v, Reply::Bulk(Some(value(i).into_bytes())), "key:{i:06}");
        }
    }
    drop(client);
    let status = server.sigterm(Duration::from_secs(10));
    assert!(status.success(), "SIGTERM exit status {status:?}");

    let count = Command::new(&sqlite3)
        .arg(data.join("tiercache.db"))
        .arg("SELECT count(*) FROM kv;")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&count.stdout).trim(),
        N.to_string(),
        "{}",
        String::from_utf8_lossy(&count.stderr)
    );
    let one = Command::new(&sqlite3)
        .arg(data.join("tiercache.db"))
        .arg("SELECT CAST(value AS TEXT) FROM kv WHERE key = CAST('key:012345' AS BLOB);")
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&one.stdout).trim(), value(12345));
}
