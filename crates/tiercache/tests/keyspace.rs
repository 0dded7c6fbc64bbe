//! The real binary with SQLite: `requirepass` is enforced, and `SCAN`,
//! `KEYS`, `DBSIZE` and `INFO keyspace` see the whole key space whether a
//! key sits in the write-back queue (replayed from the journal after
//! `kill -9`), has a pending delete, or lives only in the SQLite file
//! (after a clean restart, with an empty memory tier).

mod support;

use std::collections::BTreeSet;
use std::time::Duration;
use support::{Client, Reply, Server};

const CONFIG: &str = r#"
[server]
requirepass = "s3cret"

[namespace.default]
tiers = ["main"]
write = "back"
flush_interval = "1h"

[store.main]
type = "sqlite"
path = "tiercache.db"
"#;

fn start(dir: &std::path::Path) -> (Server, Client) {
    let config = dir.join("tiercache.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let server = Server::start_with(&dir.join("data"), &["--config", config.to_str().unwrap()]);
    let mut c = server.client();
    assert_eq!(
        c.call(&[b"GET", b"k"]),
        Reply::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(
        c.call(&[b"AUTH", b"wrong"]),
        Reply::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
    );
    assert_eq!(c.call(&[b"AUTH", b"s3cret"]), Reply::Simple("OK".into()));
    (server, c)
}

fn scan_all(c: &mut Client, options: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut keys = Vec::new();
    let mut cursor = b"0".to_vec();
    loop {
        let mut args: Vec<&[u8]> = vec![b"SCAN", &cursor];
        args.extend_from_slice(options);
        let Reply::Array(Some(parts)) = c.call(&args) else {
            panic!("SCAN failed")
        };
        let (Reply::Bulk(Some(next)), Reply::Array(Some(page))) = (&parts[0], &parts[1]) else {
            panic!("bad SCAN reply {parts:?}")
        };
        for k in page {
            let Reply::Bulk(Some(k)) = k else { panic!() };
            keys.push(k.clone());
        }
        if next == b"0" {
            return keys;
        }
        cursor = next.clone();
    }
}

fn check_key_space(c: &mut Client, expected: &BTreeSet<Vec<u8>>, expiring: i64) {
    let scanned = scan_all(c, &[b"COUNT", b"37"]);
    assert_eq!(
        scanned.len(),
        expected.len(),
        "SCAN returned a key twice or missed one"
    );
    assert_eq!(&scanned.into_iter().collect::<BTreeSet<_>>(), expected);
    let matched: BTreeSet<Vec<u8>> = scan_all(c, &[b"MATCH", b"user:1*"]).into_iter().collect();
    let want: BTreeSet<Vec<u8>> = expected
        .iter()
        .filter(|k| k.starts_with(b"user:1"))
        .cloned()
        .collect();
    assert_eq!(matched, want);
    let Reply::Array(Some(keys)) = c.call(&[b"KEYS", b"user:1*"]) else {
        panic!()
    };
    assert_eq!(keys.len(), want.len());
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(expected.len() as i64));
    let Reply::Bulk(Some(info)) = c.call(&[b"INFO", b"keyspace"]) else {
        panic!()
    };
    let info = String::from_utf8(info).unwrap();
    assert!(
        info.contains(&format!("db0:keys={},expires={expiring},", expected.len())),
        "{info}"
    );
}

#[test]
fn key_space_commands_see_queue_store_and_tombstones_with_auth() {
    let dir = tempfile::tempdir().unwrap();
    let (server, mut c) = start(dir.path());
    let mut expected = BTreeSet::new();
    for i in 0..400 {
        let k = format!("user:{i}");
        assert_eq!(
            c.call(&[b"SET", k.as_bytes(), b"v"]),
            Reply::Simple("OK".into())
        );
        expected.insert(k.into_bytes());
    }
    for i in 0..10 {
        let k = format!("session:{i}");
        c.call(&[b"SET", k.as_bytes(), b"v", b"EX", b"3600"]);
        expected.insert(k.into_bytes());
    }
    // Everything is in the write-back queue (flush_interval is an hour),
    // and after kill -9 only in the journal.
    server.kill9();
    let (server, mut c) = start(dir.path());
    check_key_space(&mut c, &expected, 10);
    // DBSIZE flushed the queue into SQLite; now deletes (tombstones) and
    // new keys sit in the queue again, over the store.
    for i in (0..400).step_by(3) {
        let k = format!("user:{i}");
        assert_eq!(c.call(&[b"DEL", k.as_bytes()]), Reply::Int(1));
        expected.remove(k.as_bytes());
    }
    for i in 0..20 {
        let k = format!("new:{i}");
        c.call(&[b"SET", k.as_bytes(), b"v"]);
        expected.insert(k.into_bytes());
    }
    let scanned: BTreeSet<Vec<u8>> = scan_all(&mut c, &[]).into_iter().collect();
    assert_eq!(scanned, expected);
    check_key_space(&mut c, &expected, 10);
    // A clean stop flushes; after a restart the keys are only in SQLite.
    assert!(server.sigterm(Duration::from_secs(10)).success());
    let (_server, mut c) = start(dir.path());
    check_key_space(&mut c, &expected, 10);
}
