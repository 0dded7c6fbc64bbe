//! Durability of the real server: SIGKILL mid-load loses no acknowledged
//! write (nor an acknowledged transaction); SIGTERM, and a client's
//! `SHUTDOWN`, flush everything to SQLite and exit 0.

mod support;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use support::{command, Reply, Server};

fn value_of(i: u64) -> Vec<u8> {
    format!("value-{i}-{}", "x".repeat((i % 50) as usize)).into_bytes()
}

#[test]
fn sigkill_mid_load_loses_no_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let port = server.port;
    let stop = Arc::new(AtomicBool::new(false));

    // Four writers pipeline batches of SETs; a key counts as acknowledged
    // only once its +OK has been read.
    let writers: Vec<_> = (0..4u64)
        .map(|w| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut client = support::Client::connect(port);
                let mut acked: Vec<u64> = Vec::new();
                let mut next = w * 1_000_000;
                'load: while !stop.load(Ordering::Relaxed) {
                    let batch: Vec<u64> = (next..next + 200).collect();
                    next += 200;
                    let mut bytes = Vec::new();
                    for i in &batch {
                        bytes.extend(command(&[
                            b"SET",
                            format!("key:{i}").as_bytes(),
                            &value_of(*i),
                        ]));
                    }
                    if client.send_raw(&bytes).is_err() {
                        break;
                    }
                    for i in batch {
                        match client.read() {
                            Ok(Reply::Simple(s)) if s == "OK" => acked.push(i),
                            Ok(other) => panic!("unexpected reply {other:?}"),
                            Err(_) => break 'load, // killed
                        }
                    }
                }
                acked
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(1500));
    server.kill9();
    stop.store(true, Ordering::Relaxed);
    let acked: Vec<u64> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert!(
        acked.len() > 1_000,
        "the load ran before the kill ({} acks)",
        acked.len()
    );

    let server = Server::start(&data);
    let mut client = server.client();
    for chunk in acked.chunks(500) {
        let keys: Vec<Vec<u8>> = chunk
            .iter()
            .map(|i| format!("key:{i}").into_bytes())
            .collect();
        let mut args: Vec<&[u8]> = vec![b"MGET"];
        args.extend(keys.iter().map(|k| k.as_slice()));
        let Reply::Array(Some(values)) = client.call(&args) else {
            panic!("MGET failed")
        };
        for (i, v) in chunk.iter().zip(values) {
            assert_eq!(
                v,
                Reply::Bulk(Some(value_of(*i))),
                "acknowledged key:{i} after kill -9"
            );
        }
    }
    let Reply::Int(n) = client.call(&[b"DBSIZE"]) else {
        panic!("DBSIZE failed")
    };
    assert!(
        n as usize >= acked.len(),
        "DBSIZE {n} < {} acknowledged",
        acked.len()
    );
    // The clean shutdown flushes the tens of thousands of replayed keys, on
    // a SQLite writer thread that runs niced: on a machine short of CPU (a
    // debug build beside four busy loops) that took about a minute.
    assert!(server.sigterm(Duration::from_secs(300)).success());
}

#[test]
fn sigterm_flushes_to_sqlite_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    let mut bytes = Vec::new();
    for i in 0..5_000u64 {
        bytes.extend(command(&[
            b"SET",
            format!("key:{i}").as_bytes(),
            &value_of(i),
        ]));
    }
    bytes.extend(command(&[b"DEL", b"key:0"]));
    client.send_raw(&bytes).unwrap();
    for _ in 0..5_000 {
        assert_eq!(client.read().unwrap(), Reply::Simple("OK".into()));
    }
    assert_eq!(client.read().unwrap(), Reply::Int(1));
    drop(client);
    let status = server.sigterm(Duration::from_secs(10));
    assert!(status.success(), "exit status {status:?}");

    // The SQLite file alone holds every write (the journal is empty).
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use tiercache::Store;
        let store = tiercache::stores::SqliteStore::open("check", &data.join("tiercache.db"), "kv")
            .unwrap();
        assert_eq!(store.count().await.unwrap(), 4_999);
        let keys: Vec<bytes::Bytes> = (0..5_000u64).map(|i| format!("key:{i}").into()).collect();
        let got = store.get_many(&keys).await.unwrap();
        assert!(got[0].is_none(), "the delete reached SQLite");
        for (i, e) in got.iter().enumerate().skip(1) {
            assert_eq!(
                e.as_ref().unwrap().value.as_ref(),
                value_of(i as u64).as_slice()
            );
        }
    });
    let journal: u64 = std::fs::read_dir(data.join("journal/default"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(journal, 0, "nothing left to replay after a clean shutdown");
}

#[test]
fn shutdown_command_flushes_to_sqlite_and_exits_zero() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    for i in 0..100u64 {
        let r = client.call(&[b"SET", format!("key:{i}").as_bytes(), &value_of(i)]);
        assert_eq!(r, Reply::Simple("OK".into()));
    }
    // Not inside a transaction; bad options are refused and change nothing.
    assert_eq!(client.call(&[b"MULTI"]), Reply::Simple("OK".into()));
    let r = client.call(&[b"SHUTDOWN"]);
    assert_eq!(
        r,
        Reply::Error("ERR Command not allowed inside a transaction".into())
    );
    assert!(matches!(client.call(&[b"EXEC"]), Reply::Error(e) if e.starts_with("EXECABORT")));
    let r = client.call(&[b"SHUTDOWN", b"NOSAVE", b"SAVE"]);
    assert_eq!(r, Reply::Error("ERR syntax error".into()));
    assert_eq!(client.call(&[b"PING"]), Reply::Simple("PONG".into()));
    // Success: no reply, the connection closes and the process exits.
    client.send_raw(&command(&[b"SHUTDOWN"])).unwrap();
    assert!(
        client.read().is_err(),
        "the connection closes without a reply"
    );
    let status = server.wait_exit(Duration::from_secs(10));
    assert!(status.success(), "exit status {status:?}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        use tiercache::Store;
        let store = tiercache::stores::SqliteStore::open("check", &data.join("tiercache.db"), "kv")
            .unwrap();
        assert_eq!(store.count().await.unwrap(), 100, "flushed before exiting");
    });
}

#[test]
fn a_second_server_on_the_same_data_directory_refuses_to_start() {
    // Two servers appending to one journal would corrupt it.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let first = Server::start(&data);
    let port = support::free_port();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tiercache"))
        .args(["serve", "--data-dir"])
        .arg(&data)
        .args(["--resp", &format!("127.0.0.1:{port}")])
        .args(["--memcache", "off", "--admin", "off"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "the second server must exit: {stderr}"
    );
    assert!(
        stderr.contains("in use by another process") && stderr.contains("LOCK"),
        "{stderr}"
    );
    // The first one is unharmed.
    let mut client = first.client();
    assert_eq!(
        client.call(&[b"SET", b"k", b"v"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(first.sigterm(Duration::from_secs(60)).code(), Some(0));
}

#[test]
fn an_acknowledged_transaction_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let server = Server::start(&data);
    let mut client = server.client();
    // One request per batch: the writes are made by the batch holding EXEC.
    assert_eq!(
        client.call(&[b"SET", b"n", b"41"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(client.call(&[b"MULTI"]), Reply::Simple("OK".into()));
    for args in [
        &[&b"INCR"[..], b"n"][..],
        &[b"SET", b"tx", b"done"],
        &[b"HSET", b"h", b"f", b"v"],
        &[b"DEL", b"gone"],
    ] {
        assert_eq!(client.call(args), Reply::Simple("QUEUED".into()));
    }
    assert_eq!(
        client.call(&[b"EXEC"]),
        Reply::Array(Some(vec![
            Reply::Int(42),
            Reply::Simple("OK".into()),
            Reply::Int(1),
            Reply::Int(0),
        ]))
    );
    // Queued and never run: not written.
    assert_eq!(client.call(&[b"MULTI"]), Reply::Simple("OK".into()));
    assert_eq!(
        client.call(&[b"SET", b"discarded", b"x"]),
        Reply::Simple("QUEUED".into())
    );
    server.kill9();
    let server = Server::start(&data);
    let mut client = server.client();
    assert_eq!(
        client.call(&[b"MGET", b"n", b"tx", b"discarded"]),
        Reply::Array(Some(vec![
            Reply::Bulk(Some(b"42".to_vec())),
            Reply::Bulk(Some(b"done".to_vec())),
            Reply::Bulk(None),
        ]))
    );
    assert_eq!(
        client.call(&[b"HGET", b"h", b"f"]),
        Reply::Bulk(Some(b"v".to_vec()))
    );
    assert!(server.sigterm(Duration::from_secs(10)).success());
}
