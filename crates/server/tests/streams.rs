//! Streams across connections (the differential script checks the
//! one-connection answers against redis-server): blocked `XREAD` and
//! `XREADGROUP` served by another client's `XADD`, `$` meaning "after the
//! last entry when the read blocked", what a woken group read answers when
//! its group or key went away, timeouts and `MULTI`, the default count of
//! a woken read, concurrent producers and consumers losing nothing, and a
//! damaged stored value answered with an error.

mod common;

use common::{blocked_clients, send, until_blocked, Client, Reply, TestServer};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};
use tiercache_engine::{Entry, ValueKind};

/// The entry IDs of a one-stream read reply (`[[key, [[id, fields]...]]]`).
fn read_ids(r: &Reply) -> Vec<String> {
    let Reply::Array(Some(streams)) = r else {
        panic!("not a read reply: {r:?}")
    };
    let Reply::Array(Some(pair)) = &streams[0] else {
        panic!("not a stream: {r:?}")
    };
    let Reply::Array(Some(entries)) = &pair[1] else {
        panic!("no entries: {r:?}")
    };
    entries
        .iter()
        .map(|e| match e {
            Reply::Array(Some(parts)) => parts[0].text(),
            other => panic!("not an entry: {other:?}"),
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_xread_is_served_entries_added_after_it_blocked() {
    let server = TestServer::start().await;
    let mut reader = server.client().await;
    let mut writer = server.client().await;
    writer.cmd(&["XADD", "s", "1-1", "a", "1"]).await;
    reader
        .send_raw(&send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
        .await;
    until_blocked(&mut writer, 1).await;
    // A write that adds nothing wakes the reader, which blocks again.
    assert_eq!(
        writer.cmd(&["XGROUP", "CREATE", "s", "g", "$"]).await,
        Reply::ok()
    );
    until_blocked(&mut writer, 1).await;
    // Two entries in one transaction: the woken reader must serve both,
    // reading after the last ID it saw when it blocked (not the one now).
    writer.send_raw(&send(&["MULTI"])).await;
    writer.read().await;
    for id in ["2-1", "3-1"] {
        writer.cmd(&["XADD", "s", id, "a", "1"]).await;
    }
    writer.cmd(&["EXEC"]).await;
    assert_eq!(read_ids(&reader.read().await), ["2-1", "3-1"]);
    assert_eq!(blocked_clients(&mut writer).await, 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_blocked_xread_sees_the_new_entry() {
    let server = TestServer::start().await;
    let mut readers = Vec::new();
    for _ in 0..3 {
        let mut r = server.client().await;
        r.send_raw(&send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
            .await;
        readers.push(r);
    }
    let mut writer = server.client().await;
    until_blocked(&mut writer, 3).await;
    writer.cmd(&["XADD", "s", "5-5", "f", "v"]).await;
    for r in &mut readers {
        assert_eq!(read_ids(&r.read().await), ["5-5"]);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_group_read_delivers_to_one_consumer_and_records_it() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["XGROUP", "CREATE", "jobs", "workers", "$", "MKSTREAM"])
        .await;
    let mut alice = server.client().await;
    let mut bob = server.client().await;
    for (n, (client, name)) in [(&mut alice, "alice"), (&mut bob, "bob")]
        .into_iter()
        .enumerate()
    {
        client
            .send_raw(&send(&[
                "XREADGROUP",
                "GROUP",
                "workers",
                name,
                "BLOCK",
                "0",
                "STREAMS",
                "jobs",
                ">",
            ]))
            .await;
        until_blocked(&mut c, n as u64 + 1).await;
    }
    c.cmd(&["XADD", "jobs", "1-1", "job", "one"]).await;
    // Alice blocked first: she gets it, Bob keeps waiting.
    assert_eq!(read_ids(&alice.read().await), ["1-1"]);
    until_blocked(&mut c, 1).await;
    c.cmd(&["XADD", "jobs", "2-1", "job", "two"]).await;
    assert_eq!(read_ids(&bob.read().await), ["2-1"]);
    let pending = c
        .cmd(&["XPENDING", "jobs", "workers", "-", "+", "10"])
        .await;
    let Reply::Array(Some(rows)) = pending else {
        panic!("{pending:?}")
    };
    let owners: Vec<(String, String)> = rows
        .iter()
        .map(|r| match r {
            Reply::Array(Some(p)) => (p[0].text(), p[1].text()),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        owners,
        [("1-1".into(), "alice".into()), ("2-1".into(), "bob".into())]
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_group_read_learns_its_group_or_stream_went_away() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let block = send(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    let cases: [(&[&str], &str); 4] = [
        (
            &["XGROUP", "DESTROY", "s", "g"],
            "NOGROUP the consumer group this client was blocked on no longer exists",
        ),
        (&["DEL", "s"], "UNBLOCKED the stream key no longer exists"),
        (
            &["SET", "s", "now a string"],
            "UNBLOCKED the stream key no longer exists",
        ),
        (&["FLUSHALL"], "UNBLOCKED the stream key no longer exists"),
    ];
    for (change, error) in cases {
        c.cmd(&["DEL", "s"]).await;
        c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
            .await;
        let mut w = server.client().await;
        w.send_raw(&block).await;
        until_blocked(&mut c, 1).await;
        c.cmd(change).await;
        assert_eq!(
            w.read().await,
            Reply::Error(error.into()),
            "after {change:?}"
        );
        assert_eq!(blocked_clients(&mut c).await, 0);
    }
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocked_xread_passes_over_a_key_of_another_type() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut w = server.client().await;
    w.send_raw(&send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
        .await;
    until_blocked(&mut c, 1).await;
    c.cmd(&["SET", "s", "x"]).await;
    until_blocked(&mut c, 1).await;
    c.cmd(&["DEL", "s"]).await;
    c.cmd(&["XADD", "s", "1-1", "a", "1"]).await;
    assert_eq!(read_ids(&w.read().await), ["1-1"]);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn block_times_out_and_never_blocks_inside_exec() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let started = Instant::now();
    let r = c.cmd(&["XREAD", "BLOCK", "200", "STREAMS", "s", "$"]).await;
    assert_eq!(r, Reply::Array(None));
    assert!(started.elapsed() >= Duration::from_millis(190));
    c.cmd(&["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"])
        .await;
    c.send_raw(&send(&["MULTI"])).await;
    c.read().await;
    c.cmd(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]).await;
    c.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ])
    .await;
    let exec = c.cmd(&["EXEC"]).await;
    assert_eq!(
        exec,
        Reply::Array(Some(vec![Reply::Array(None), Reply::Array(None)]))
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_woken_read_without_count_serves_at_most_a_thousand() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut w = server.client().await;
    w.send_raw(&send(&["XREAD", "BLOCK", "0", "STREAMS", "s", "0"]))
        .await;
    until_blocked(&mut c, 1).await;
    let mut tx = send(&["MULTI"]);
    for i in 1..=1500 {
        tx.extend(send(&["XADD", "s", &format!("{i}-1"), "n", &i.to_string()]));
    }
    tx.extend(send(&["EXEC"]));
    c.send_raw(&tx).await;
    for _ in 0..1502 {
        c.read().await;
    }
    let ids = read_ids(&w.read().await);
    assert_eq!(ids.len(), 1000);
    assert_eq!(ids[999], "1000-1");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_producers_and_group_consumers_lose_and_repeat_nothing() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.cmd(&["XGROUP", "CREATE", "q", "g", "$", "MKSTREAM"])
        .await;
    let mut tasks = Vec::new();
    for p in 0..3 {
        let addr = server.addr;
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            for i in 0..200 {
                let r = c
                    .cmd(&["XADD", "q", "*", "item", &format!("{p}:{i}")])
                    .await;
                assert!(matches!(r, Reply::Bulk(Some(_))), "{r:?}");
            }
            Vec::new()
        }));
    }
    for name in ["c1", "c2", "c3"] {
        let addr = server.addr;
        tasks.push(tokio::spawn(async move {
            let mut c = Client::connect(addr).await;
            let mut got = Vec::new();
            loop {
                let r = c
                    .cmd(&[
                        "XREADGROUP",
                        "GROUP",
                        "g",
                        name,
                        "COUNT",
                        "7",
                        "BLOCK",
                        "300",
                        "STREAMS",
                        "q",
                        ">",
                    ])
                    .await;
                if r == Reply::Array(None) {
                    return got;
                }
                got.extend(read_ids(&r));
            }
        }));
    }
    let mut seen = Vec::new();
    for t in tasks {
        seen.extend(t.await.unwrap());
    }
    let unique: BTreeSet<&String> = seen.iter().collect();
    assert_eq!(seen.len(), 600, "every entry delivered once");
    assert_eq!(unique.len(), 600);
    assert_eq!(c.cmd(&["XLEN", "q"]).await, Reply::Int(600));
    let summary = c.cmd(&["XPENDING", "q", "g"]).await;
    let Reply::Array(Some(parts)) = summary else {
        panic!()
    };
    assert_eq!(parts[0], Reply::Int(600));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_stream_value_is_an_error_not_a_crash() {
    let server = TestServer::start().await;
    let mut s = server.engine.session();
    s.set_many(vec![(
        "bad".into(),
        Entry::with_kind(
            &b"\x01\x05\x00\x00\x00\x02\xff\xff\xff\x0f"[..],
            None,
            0,
            ValueKind::Stream,
        ),
    )])
    .await
    .unwrap();
    s.commit().await.unwrap();
    drop(s);
    let mut c = server.client().await;
    for cmd in [
        &["XLEN", "bad"][..],
        &["XRANGE", "bad", "-", "+"],
        &["XADD", "bad", "*", "a", "1"],
        &["XINFO", "STREAM", "bad"],
        &["XREAD", "STREAMS", "bad", "0"],
    ] {
        let r = c.cmd(cmd).await;
        assert!(
            r.is_error_starting("ERR corrupt stream value"),
            "{cmd:?}: {r:?}"
        );
    }
    assert_eq!(
        c.cmd(&["TYPE", "bad"]).await,
        Reply::Simple("stream".into())
    );
    assert_eq!(c.cmd(&["DEL", "bad"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}
