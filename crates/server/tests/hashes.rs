//! Hashes over real TCP, beyond the differential script: concurrent
//! `HINCRBY`s are atomic, a one-field `HSET` (written on the stored bytes)
//! keeps the rules of any other write, a corrupt stored value answers an error (the
//! server stays up), and the memcached protocol treats a hash as Redis
//! says it does (reads miss, arithmetic and append refuse, set replaces).

mod common;
mod mc;

use common::{Reply, TestServer};
use mc::{resp_call, McServer};
use tiercache_engine::{Entry, ValueKind};
use tiercache_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_hincrby_loses_no_update() {
    let server = TestServer::start().await;
    let addr = server.addr;
    let clients: Vec<_> = (0..4)
        .map(|_| {
            tokio::spawn(async move {
                let mut c = common::Client::connect(addr).await;
                for _ in 0..250 {
                    let r = c.cmd(&["HINCRBY", "counters", "hits", "1"]).await;
                    assert!(matches!(r, Reply::Int(_)), "{r:?}");
                    c.cmd(&["HSET", "counters", "other", "x"]).await;
                }
            })
        })
        .collect();
    for c in clients {
        c.await.unwrap();
    }
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["HGET", "counters", "hits"]).await,
        Reply::bulk("1000")
    );
    assert_eq!(c.cmd(&["HLEN", "counters"]).await, Reply::Int(2));
    server.shutdown().await;
}

#[tokio::test]
async fn a_one_field_hset_keeps_expiry_type_and_size_rules() {
    let mut config = ServerConfig::default();
    config.limits.max_bulk_len = 4000;
    let server = TestServer::start_with(config).await;
    let mut c = server.client().await;
    // New field, new value for it, another new field: replies 1, 0, 1.
    assert_eq!(c.cmd(&["HSET", "h", "a", "1"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["HSET", "h", "a", "22"]).await, Reply::Int(0));
    assert_eq!(c.cmd(&["HSET", "h", "b", "3"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["HGET", "h", "a"]).await, Reply::bulk("22"));
    assert_eq!(
        c.cmd(&["HKEYS", "h"]).await,
        Reply::Array(Some(vec![Reply::bulk("a"), Reply::bulk("b")]))
    );
    // Its expiry survives a write, as Redis keeps it.
    assert_eq!(c.cmd(&["EXPIRE", "h", "1000"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["HSET", "h", "a", "4"]).await, Reply::Int(0));
    assert_eq!(c.cmd(&["HSET", "h", "c", "5"]).await, Reply::Int(1));
    assert!(
        matches!(c.cmd(&["TTL", "h"]).await, Reply::Int(t) if t > 990),
        "TTL kept"
    );
    // Another type: WRONGTYPE, the value untouched.
    c.cmd(&["SET", "s", "x"]).await;
    let r = c.cmd(&["HSET", "s", "f", "v"]).await;
    assert!(r.is_error_starting("WRONGTYPE"), "{r:?}");
    assert_eq!(c.cmd(&["GET", "s"]).await, Reply::bulk("x"));
    // Over the value limit: refused, the hash as it was.
    let big = "x".repeat(3000);
    assert_eq!(c.cmd(&["HSET", "h", "big", &big]).await, Reply::Int(1));
    let r = c.cmd(&["HSET", "h", "big2", &big]).await;
    assert!(
        r.is_error_starting("ERR hash would exceed the maximum value size"),
        "{r:?}"
    );
    let r = c.cmd(&["HSET", "h", "a", &big[..1500]]).await;
    assert!(r.is_error_starting("ERR hash would exceed"), "{r:?}");
    assert_eq!(c.cmd(&["HLEN", "h"]).await, Reply::Int(4));
    assert_eq!(c.cmd(&["HGET", "h", "a"]).await, Reply::bulk("4"));
    server.shutdown().await;
}

#[tokio::test]
async fn a_corrupt_hash_value_is_an_error_reply_not_a_crash() {
    let server = TestServer::start().await;
    let mut s = server.engine.session();
    // A hash whose count claims more fields than its bytes hold.
    s.set_many(vec![(
        "bad".into(),
        Entry::with_kind(&b"\x01\x09\x01f"[..], None, 0, ValueKind::Hash),
    )])
    .await
    .unwrap();
    s.commit().await.unwrap();
    drop(s);
    let mut c = server.client().await;
    for cmd in [
        &["HGET", "bad", "f"][..],
        &["HGETALL", "bad"],
        &["HEXISTS", "bad", "absent"],
        &["HSTRLEN", "bad", "f"],
        &["HSET", "bad", "f", "v"],
        &["HINCRBY", "bad", "f", "1"],
        &["OBJECT", "ENCODING", "bad"],
    ] {
        let r = c.cmd(cmd).await;
        assert!(
            r.is_error_starting("ERR corrupt hash value"),
            "{cmd:?}: {r:?}"
        );
    }
    assert_eq!(c.cmd(&["TYPE", "bad"]).await, Reply::Simple("hash".into()));
    // The failed writes left it as it was; DEL still works.
    assert_eq!(c.cmd(&["DEL", "bad"]).await, Reply::Int(1));
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}

#[tokio::test]
async fn memcached_sees_a_hash_as_redis_documents() {
    let server = McServer::start().await;
    let resp = server.resp_addr;
    assert_eq!(
        resp_call(resp, &[b"HSET", b"h", b"f", b"1"]).await,
        b":1\r\n"
    );
    let mut c = server.client().await;
    // Reads miss, and do not touch or vivify.
    assert_eq!(
        c.script("get h\ngets h\ngat 100 h\nmg h v\nmg h v N30\nme h\n")
            .await,
        "END\r\nEND\r\nEND\r\nEN\r\nEN\r\nEN\r\n"
    );
    assert_eq!(resp_call(resp, &[b"TTL", b"h"]).await, b":-1\r\n");
    // Arithmetic and append refuse; the hash is unchanged.
    assert_eq!(
        c.script("incr h 1\ndecr h 1\nappend h 0 0 1\nx\nprepend h 0 0 1\nx\nma h\n")
            .await,
        "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n\
         CLIENT_ERROR cannot increment or decrement non-numeric value\r\n\
         NOT_STORED\r\nNOT_STORED\r\n\
         CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"
    );
    assert_eq!(
        resp_call(resp, &[b"HGET", b"h", b"f"]).await,
        b"$1\r\n1\r\n"
    );
    // add sees the key; touch and delete act on it; set replaces it.
    assert_eq!(
        c.script("add h 0 0 1\nx\ntouch h 100\n").await,
        "NOT_STORED\r\nTOUCHED\r\n"
    );
    assert_eq!(resp_call(resp, &[b"TYPE", b"h"]).await, b"+hash\r\n");
    assert_eq!(
        c.script("set h 3 0 1\ns\nget h\n").await,
        "STORED\r\nVALUE h 3 1\r\ns\r\nEND\r\n"
    );
    assert_eq!(resp_call(resp, &[b"TYPE", b"h"]).await, b"+string\r\n");
    resp_call(resp, &[b"HSET", b"h2", b"f", b"1"]).await;
    assert_eq!(c.script("delete h2\n").await, "DELETED\r\n");
    assert_eq!(resp_call(resp, &[b"EXISTS", b"h2"]).await, b":0\r\n");
    server.shutdown().await;
}
