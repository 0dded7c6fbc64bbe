//! Lists, sets and sorted sets over real TCP, beyond the differential script
//! (`redis_diff.rs`): concurrent writers lose no update, moves between
//! keys neither lose nor duplicate an element, a corrupt stored value
//! answers an error (the server stays up), a collection cannot grow past
//! the value size limit, a watched list aborts `EXEC` when another client
//! pushes, and memcached does not see lists or sets as items.

mod common;
mod mc;

use common::{Client, Reply, TestServer};
use mc::{resp_call, McServer};
use tiercache_engine::{Entry, ValueKind};
use tiercache_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_pushes_and_adds_lose_no_update() {
    let server = TestServer::start().await;
    let addr = server.addr;
    let clients: Vec<_> = (0..4)
        .map(|c| {
            tokio::spawn(async move {
                let mut client = Client::connect(addr).await;
                for i in 0..250 {
                    let item = format!("{c}-{i}");
                    let end = if i % 2 == 0 { "LPUSH" } else { "RPUSH" };
                    let r = client.cmd(&[end, "list", &item]).await;
                    assert!(matches!(r, Reply::Int(_)), "{r:?}");
                    let r = client.cmd(&["SADD", "set", &item, "shared"]).await;
                    assert!(matches!(r, Reply::Int(_)), "{r:?}");
                    let r = client.cmd(&["ZINCRBY", "board", "0.5", "shared"]).await;
                    assert!(matches!(r, Reply::Bulk(_)), "{r:?}");
                    let r = client.cmd(&["ZADD", "board", "1", &item]).await;
                    assert!(matches!(r, Reply::Int(1)), "{r:?}");
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["LLEN", "list"]).await, Reply::Int(1000));
    assert_eq!(c.cmd(&["SCARD", "set"]).await, Reply::Int(1001));
    assert_eq!(c.cmd(&["ZCARD", "board"]).await, Reply::Int(1001));
    assert_eq!(
        c.cmd(&["ZSCORE", "board", "shared"]).await,
        Reply::bulk("500")
    );
    server.shutdown().await;
}

fn items(r: Reply) -> Vec<String> {
    match r {
        Reply::Array(Some(v)) => v.iter().map(Reply::text).collect(),
        other => panic!("not an array: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moves_between_keys_keep_every_element_exactly_once() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let all: Vec<String> = (0..100).map(|i| i.to_string()).collect();
    let mut push = vec!["RPUSH", "a"];
    push.extend(all.iter().map(String::as_str));
    c.cmd(&push).await;
    let mut add = vec!["SADD", "x"];
    add.extend(all.iter().map(String::as_str));
    c.cmd(&add).await;
    let addr = server.addr;
    // Two clients move a -> b, two move b -> a, at both ends; the sets
    // move members back and forth the same way.
    let movers: Vec<_> = (0..4)
        .map(|m| {
            tokio::spawn(async move {
                let mut client = Client::connect(addr).await;
                let (from, to, sfrom, sto) = if m % 2 == 0 {
                    ("a", "b", "x", "y")
                } else {
                    ("b", "a", "y", "x")
                };
                for i in 0..200 {
                    let (wf, wt) = if i % 2 == 0 {
                        ("LEFT", "RIGHT")
                    } else {
                        ("RIGHT", "LEFT")
                    };
                    let r = client.cmd(&["LMOVE", from, to, wf, wt]).await;
                    assert!(matches!(r, Reply::Bulk(_)), "{r:?}");
                    let member = ((i * 7 + m) % 100).to_string();
                    let r = client.cmd(&["SMOVE", sfrom, sto, &member]).await;
                    assert!(matches!(r, Reply::Int(0 | 1)), "{r:?}");
                }
            })
        })
        .collect();
    for m in movers {
        m.await.unwrap();
    }
    let mut seen = items(c.cmd(&["LRANGE", "a", "0", "-1"]).await);
    seen.extend(items(c.cmd(&["LRANGE", "b", "0", "-1"]).await));
    seen.sort_by_key(|s| s.parse::<u32>().unwrap());
    assert_eq!(seen, all, "the lists hold every element once");
    let mut members = items(c.cmd(&["SMEMBERS", "x"]).await);
    members.extend(items(c.cmd(&["SMEMBERS", "y"]).await));
    members.sort_by_key(|s| s.parse::<u32>().unwrap());
    assert_eq!(members, all, "the sets hold every member once");
    server.shutdown().await;
}

#[tokio::test]
async fn corrupt_list_set_and_zset_values_are_error_replies_not_crashes() {
    let server = TestServer::start().await;
    let mut s = server.engine.session();
    // Counts that claim more items than the bytes hold.
    s.set_many(vec![
        (
            "badlist".into(),
            Entry::with_kind(&b"\x01\x09\x01f"[..], None, 0, ValueKind::List),
        ),
        (
            "badset".into(),
            Entry::with_kind(&b"\x01\x09\x01f"[..], None, 0, ValueKind::Set),
        ),
        // A score of 7 bytes instead of 8.
        (
            "badzset".into(),
            Entry::with_kind(&b"\x01\x01\x01m\x07abcdefg"[..], None, 0, ValueKind::ZSet),
        ),
    ])
    .await
    .unwrap();
    s.commit().await.unwrap();
    drop(s);
    let mut c = server.client().await;
    for cmd in [
        &["LRANGE", "badlist", "0", "-1"][..],
        &["LPUSH", "badlist", "x"],
        &["LPOP", "badlist"],
        &["LMOVE", "badlist", "other", "LEFT", "LEFT"],
        &["LMPOP", "1", "badlist", "LEFT"],
    ] {
        let r = c.cmd(cmd).await;
        assert!(
            r.is_error_starting("ERR corrupt list value"),
            "{cmd:?}: {r:?}"
        );
    }
    for cmd in [
        &["SMEMBERS", "badset"][..],
        // Looked up without decoding: the scan for a member not there
        // reads to the damage.
        &["SISMEMBER", "badset", "absent"],
        &["SADD", "badset", "x"],
        &["SMOVE", "badset", "other", "f"],
        &["SUNIONSTORE", "dst", "badset"],
        &["OBJECT", "ENCODING", "badset"],
    ] {
        let r = c.cmd(cmd).await;
        assert!(
            r.is_error_starting("ERR corrupt set value"),
            "{cmd:?}: {r:?}"
        );
    }
    for cmd in [
        &["ZSCORE", "badzset", "m"][..],
        &["ZRANGE", "badzset", "0", "-1"],
        &["ZADD", "badzset", "1", "x"],
    ] {
        let r = c.cmd(cmd).await;
        assert!(
            r.is_error_starting("ERR corrupt zset value"),
            "{cmd:?}: {r:?}"
        );
    }
    assert_eq!(
        c.cmd(&["TYPE", "badlist"]).await,
        Reply::Simple("list".into())
    );
    assert_eq!(c.cmd(&["EXISTS", "other", "dst"]).await, Reply::Int(0));
    assert_eq!(
        c.cmd(&["DEL", "badlist", "badset", "badzset"]).await,
        Reply::Int(3)
    );
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}

#[tokio::test]
async fn a_collection_cannot_grow_past_the_value_limit() {
    let mut config = ServerConfig::default();
    config.limits.max_bulk_len = 1000;
    let server = TestServer::start_with(config).await;
    let mut c = server.client().await;
    // Three of these encode to 939 bytes (a 17-byte header, one 16-byte
    // node record, three 302-byte elements): a fourth is over.
    let item = "x".repeat(300);
    for n in 1..=3 {
        assert_eq!(c.cmd(&["RPUSH", "l", &item]).await, Reply::Int(n));
    }
    let r = c.cmd(&["RPUSH", "l", &item]).await;
    assert!(
        r.is_error_starting("ERR list would exceed the maximum value size (1000 bytes)"),
        "{r:?}"
    );
    assert_eq!(c.cmd(&["LLEN", "l"]).await, Reply::Int(3), "left as it was");
    let members: Vec<String> = (0..3).map(|i| format!("{i}{}", "x".repeat(300))).collect();
    for m in &members {
        assert_eq!(c.cmd(&["SADD", "s", m]).await, Reply::Int(1));
    }
    let r = c
        .cmd(&["SADD", "s", "one-too-many", &"x".repeat(330)])
        .await;
    assert!(r.is_error_starting("ERR set would exceed"), "{r:?}");
    assert_eq!(c.cmd(&["SCARD", "s"]).await, Reply::Int(3));
    // Moving into a full list refuses and keeps both lists whole.
    // 71 more bytes would make 1,010.
    c.cmd(&["RPUSH", "small", &"y".repeat(70)]).await;
    let r = c.cmd(&["LMOVE", "small", "l", "LEFT", "LEFT"]).await;
    assert!(r.is_error_starting("ERR list would exceed"), "{r:?}");
    assert_eq!(c.cmd(&["LLEN", "small"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["LLEN", "l"]).await, Reply::Int(3));
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_from_another_client_aborts_a_watching_exec() {
    let server = TestServer::start().await;
    let mut a = server.client().await;
    let mut b = server.client().await;
    a.cmd(&["RPUSH", "jobs", "1"]).await;
    assert_eq!(a.cmd(&["WATCH", "jobs", "seen"]).await, Reply::ok());
    assert_eq!(b.cmd(&["RPUSH", "jobs", "2"]).await, Reply::Int(2));
    a.cmd(&["MULTI"]).await;
    a.cmd(&["LPOP", "jobs"]).await;
    assert_eq!(a.cmd(&["EXEC"]).await, Reply::Array(None));
    // Without a write in between, the transaction runs.
    a.cmd(&["WATCH", "jobs", "seen"]).await;
    assert_eq!(b.cmd(&["SISMEMBER", "seen", "1"]).await, Reply::Int(0));
    a.cmd(&["MULTI"]).await;
    a.cmd(&["LPOP", "jobs"]).await;
    a.cmd(&["SADD", "seen", "1"]).await;
    assert_eq!(
        a.cmd(&["EXEC"]).await,
        Reply::Array(Some(vec![Reply::bulk("1"), Reply::Int(1)]))
    );
    // An SMOVE of a member the watched set already has does not change it.
    b.cmd(&["SADD", "src", "1"]).await;
    a.cmd(&["WATCH", "seen"]).await;
    assert_eq!(b.cmd(&["SMOVE", "src", "seen", "1"]).await, Reply::Int(1));
    a.cmd(&["MULTI"]).await;
    a.cmd(&["SCARD", "seen"]).await;
    assert_eq!(
        a.cmd(&["EXEC"]).await,
        Reply::Array(Some(vec![Reply::Int(1)]))
    );
    // An SADD from another client counts as a write too.
    a.cmd(&["WATCH", "seen"]).await;
    b.cmd(&["SADD", "seen", "2"]).await;
    a.cmd(&["MULTI"]).await;
    a.cmd(&["SCARD", "seen"]).await;
    assert_eq!(a.cmd(&["EXEC"]).await, Reply::Array(None));
    server.shutdown().await;
}

#[tokio::test]
async fn memcached_does_not_see_lists_or_sets_as_items() {
    let server = McServer::start().await;
    let resp = server.resp_addr;
    assert_eq!(resp_call(resp, &[b"RPUSH", b"l", b"1"]).await, b":1\r\n");
    assert_eq!(resp_call(resp, &[b"SADD", b"s", b"1"]).await, b":1\r\n");
    let mut c = server.client().await;
    assert_eq!(
        c.script("get l\nget s\nmg l v\nincr l 1\nappend s 0 0 1\nx\n")
            .await,
        "END\r\nEND\r\nEN\r\n\
         CLIENT_ERROR cannot increment or decrement non-numeric value\r\n\
         NOT_STORED\r\n"
    );
    assert_eq!(
        resp_call(resp, &[b"LRANGE", b"l", b"0", b"-1"]).await,
        b"*1\r\n$1\r\n1\r\n"
    );
    // A memcached set replaces the list with a string, as for a hash.
    assert_eq!(c.script("set l 0 0 1\nv\n").await, "STORED\r\n");
    assert_eq!(resp_call(resp, &[b"TYPE", b"l"]).await, b"+string\r\n");
    server.shutdown().await;
}
