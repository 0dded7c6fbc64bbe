//! End to end: a real server on 127.0.0.1:0, real TCP clients.

mod common;

use common::{encode, Reply, TestServer};
use std::time::Duration;
use tiercache_engine::Store;
use tiercache_server::{Limits, ServerConfig};

fn int(n: i64) -> Reply {
    Reply::Int(n)
}

#[tokio::test]
async fn strings_and_keys() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    assert_eq!(c.cmd(&["ping", "hi"]).await, Reply::bulk("hi"));
    assert_eq!(c.cmd(&["ECHO", "x y"]).await, Reply::bulk("x y"));
    assert_eq!(c.cmd(&["GET", "k"]).await, Reply::Bulk(None));
    assert_eq!(c.cmd(&["SET", "k", "v1"]).await, Reply::ok());
    assert_eq!(c.cmd(&["get", "k"]).await, Reply::bulk("v1"));
    assert_eq!(c.cmd(&["SET", "k", "v2", "NX"]).await, Reply::Bulk(None));
    assert_eq!(
        c.cmd(&["SET", "k", "v2", "XX", "GET"]).await,
        Reply::bulk("v1")
    );
    assert_eq!(c.cmd(&["SET", "new", "x", "XX"]).await, Reply::Bulk(None));
    assert_eq!(
        c.cmd(&["SET", "new", "x", "NX", "GET"]).await,
        Reply::Bulk(None)
    );
    assert_eq!(c.cmd(&["GET", "new"]).await, Reply::bulk("x"));
    assert_eq!(c.cmd(&["MSET", "a", "1", "b", "2"]).await, Reply::ok());
    assert_eq!(
        c.cmd(&["MGET", "a", "missing", "b", "k"]).await,
        Reply::Array(Some(vec![
            Reply::bulk("1"),
            Reply::Bulk(None),
            Reply::bulk("2"),
            Reply::bulk("v2")
        ]))
    );
    assert_eq!(c.cmd(&["EXISTS", "a", "a", "missing"]).await, int(2));
    assert_eq!(c.cmd(&["DBSIZE"]).await, int(4));
    assert_eq!(c.cmd(&["DEL", "a", "missing", "b"]).await, int(2));
    assert_eq!(c.cmd(&["EXISTS", "a"]).await, int(0));
    assert_eq!(c.cmd(&["INCR", "n"]).await, int(1));
    assert_eq!(c.cmd(&["INCRBY", "n", "41"]).await, int(42));
    assert_eq!(c.cmd(&["DECR", "n"]).await, int(41));
    assert_eq!(c.cmd(&["DECRBY", "n", "1"]).await, int(40));
    assert_eq!(c.cmd(&["GET", "n"]).await, Reply::bulk("40"));
    assert_eq!(
        c.cmd(&["INCR", "k"]).await,
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["INCRBY", "n", "x"]).await,
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["SET", "big", "9223372036854775807"]).await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["INCR", "big"]).await,
        Reply::Error("ERR increment or decrement would overflow".into())
    );
    assert_eq!(c.cmd(&["SELECT", "0"]).await, Reply::ok());
    assert_eq!(
        c.cmd(&["SELECT", "1"]).await,
        Reply::Error("ERR DB index is out of range".into())
    );
    assert_eq!(c.cmd(&["FLUSHALL"]).await, Reply::ok());
    assert_eq!(c.cmd(&["DBSIZE"]).await, int(0));
    server.shutdown().await;
}

#[tokio::test]
async fn set_options_errors() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let syntax = Reply::Error("ERR syntax error".into());
    let invalid = Reply::Error("ERR invalid expire time in 'set' command".into());
    let not_int = Reply::Error("ERR value is not an integer or out of range".into());
    assert_eq!(c.cmd(&["SET", "k", "v", "NX", "XX"]).await, syntax);
    assert_eq!(c.cmd(&["SET", "k", "v", "EX"]).await, syntax);
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "10", "PX", "100"]).await,
        syntax
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v", "KEEPTTL", "EX", "10"]).await,
        syntax
    );
    assert_eq!(c.cmd(&["SET", "k", "v", "BOGUS"]).await, syntax);
    assert_eq!(c.cmd(&["SET", "k", "v", "EX", "0"]).await, invalid);
    assert_eq!(c.cmd(&["SET", "k", "v", "PX", "-5"]).await, invalid);
    assert_eq!(
        c.cmd(&["SET", "k", "v", "EX", "9223372036854775807"]).await,
        invalid
    );
    assert_eq!(c.cmd(&["SET", "k", "v", "EX", "ten"]).await, not_int);
    assert_eq!(
        c.cmd(&["GET", "k"]).await,
        Reply::Bulk(None),
        "no failed SET may write"
    );
    assert_eq!(c.cmd(&["SET", "k", "v", "ex", "100"]).await, Reply::ok());
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(100));
    assert_eq!(c.cmd(&["SET", "k", "v2", "KEEPTTL"]).await, Reply::ok());
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(100));
    assert_eq!(c.cmd(&["SET", "k", "v3"]).await, Reply::ok());
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(-1));
    let at = tiercache_engine::now_ms() + 50_000;
    assert_eq!(
        c.cmd(&["SET", "k", "v", "PXAT", &at.to_string()]).await,
        Reply::ok()
    );
    let pttl = match c.cmd(&["PTTL", "k"]).await {
        Reply::Int(n) => n,
        other => panic!("{other:?}"),
    };
    assert!((49_000..=50_000).contains(&pttl), "{pttl}");
    // The absolute expiry, to the millisecond (what a `network` store reads).
    assert_eq!(c.cmd(&["PEXPIRETIME", "k"]).await, int(at as i64));
    assert_eq!(
        c.cmd(&["EXPIRETIME", "k"]).await,
        int(((at + 500) / 1000) as i64)
    );
    assert_eq!(c.cmd(&["PERSIST", "k"]).await, int(1));
    assert_eq!(c.cmd(&["PEXPIRETIME", "k"]).await, int(-1));
    assert_eq!(c.cmd(&["PEXPIRETIME", "missing"]).await, int(-2));
    server.shutdown().await;
}

#[tokio::test]
async fn expiry() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["TTL", "missing"]).await, int(-2));
    assert_eq!(c.cmd(&["PTTL", "missing"]).await, int(-2));
    assert_eq!(c.cmd(&["EXPIRE", "missing", "10"]).await, int(0));
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(-1));
    assert_eq!(c.cmd(&["EXPIRE", "k", "100"]).await, int(1));
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(100));
    assert_eq!(c.cmd(&["EXPIRE", "k", "50", "GT"]).await, int(0));
    assert_eq!(c.cmd(&["EXPIRE", "k", "50", "LT"]).await, int(1));
    assert_eq!(c.cmd(&["EXPIRE", "k", "50", "NX"]).await, int(0));
    assert!(c
        .cmd(&["EXPIRE", "k", "5", "NX", "XX"])
        .await
        .is_error_starting("ERR NX and XX"));
    assert_eq!(
        c.cmd(&["EXPIRE", "k", "x"]).await,
        Reply::Error("ERR value is not an integer or out of range".into())
    );
    assert_eq!(
        c.cmd(&["EXPIRE", "k", "9223372036854775807"]).await,
        Reply::Error("ERR invalid expire time in 'expire' command".into())
    );
    assert_eq!(c.cmd(&["PEXPIRE", "k", "1500"]).await, int(1));
    let pttl = match c.cmd(&["PTTL", "k"]).await {
        Reply::Int(n) => n,
        other => panic!("{other:?}"),
    };
    assert!((1000..=1500).contains(&pttl), "{pttl}");
    // TTL rounds the remaining milliseconds, Redis-style; time passes between
    // the two commands, so allow the rounding of anything up to 100 ms later.
    let ttl = match c.cmd(&["TTL", "k"]).await {
        Reply::Int(n) => n,
        other => panic!("{other:?}"),
    };
    assert!(
        ((pttl - 100 + 500) / 1000..=(pttl + 500) / 1000).contains(&ttl),
        "TTL {ttl} after PTTL {pttl}"
    );
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(c.cmd(&["GET", "k"]).await, Reply::Bulk(None));
    assert_eq!(c.cmd(&["TTL", "k"]).await, int(-2));
    // A non-positive time deletes the key and still answers 1.
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(c.cmd(&["EXPIRE", "k", "0"]).await, int(1));
    assert_eq!(c.cmd(&["EXISTS", "k"]).await, int(0));
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(c.cmd(&["PEXPIRE", "k", "-100"]).await, int(1));
    assert_eq!(c.cmd(&["GET", "k"]).await, Reply::Bulk(None));
    server.shutdown().await;
}

#[tokio::test]
async fn pipelined_thousand_commands_in_one_write() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut bytes = Vec::new();
    for i in 0..1000 {
        let (k, v) = (format!("key{i}"), format!("value{i}"));
        if i % 2 == 0 {
            bytes.extend(encode(&[b"SET", k.as_bytes(), v.as_bytes()]));
        } else {
            bytes.extend(encode(&[b"INCR", b"counter"]));
        }
    }
    c.send_raw(&bytes).await;
    for i in 0..1000 {
        let r = c.read().await;
        if i % 2 == 0 {
            assert_eq!(r, Reply::ok(), "reply {i}");
        } else {
            assert_eq!(r, int(i / 2 + 1), "reply {i}");
        }
    }
    assert_eq!(c.cmd(&["GET", "key998"]).await, Reply::bulk("value998"));
    server.shutdown().await;
}

#[tokio::test]
async fn protocol_error_closes_only_that_client() {
    let server = TestServer::start().await;
    let mut good = server.client().await;
    assert_eq!(good.cmd(&["SET", "k", "v"]).await, Reply::ok());
    let mut bad = server.client().await;
    bad.send_raw(b"*2\r\n$x\r\n").await;
    assert_eq!(
        bad.read().await,
        Reply::Error("ERR Protocol error: invalid bulk length".into())
    );
    assert!(bad.is_closed().await);
    let mut huge = server.client().await;
    huge.send_raw(b"*1\r\n$999999999999\r\n").await;
    assert_eq!(
        huge.read().await,
        Reply::Error("ERR Protocol error: invalid bulk length".into())
    );
    assert!(huge.is_closed().await);
    let mut quotes = server.client().await;
    quotes.send_raw(b"SET \"a b\n").await;
    assert_eq!(
        quotes.read().await,
        Reply::Error("ERR Protocol error: unbalanced quotes in request".into())
    );
    // Complete requests before the garbage still run and get their replies.
    let mut mixed = server.client().await;
    mixed.send_raw(b"*1\r\n$4\r\nPING\r\n*1\r\nfoo\r\n").await;
    assert_eq!(mixed.read().await, Reply::Simple("PONG".into()));
    assert_eq!(
        mixed.read().await,
        Reply::Error("ERR Protocol error: expected '$', got 'f'".into())
    );
    assert!(mixed.is_closed().await);
    assert_eq!(good.cmd(&["GET", "k"]).await, Reply::bulk("v"));
    let mut fresh = server.client().await;
    assert_eq!(fresh.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    server.shutdown().await;
}

#[tokio::test]
async fn command_errors_keep_the_connection() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["FOO", "a", "b"]).await,
        Reply::Error("ERR unknown command 'FOO', with args beginning with: 'a' 'b' ".into())
    );
    assert_eq!(
        c.cmd(&["foo"]).await,
        Reply::Error("ERR unknown command 'foo', with args beginning with: ".into())
    );
    assert_eq!(
        c.cmd(&["GET"]).await,
        Reply::Error("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(
        c.cmd(&["GET", "a", "b"]).await,
        Reply::Error("ERR wrong number of arguments for 'get' command".into())
    );
    assert_eq!(
        c.cmd(&["MSET", "a", "1", "b"]).await,
        Reply::Error("ERR wrong number of arguments for 'mset' command".into())
    );
    assert_eq!(
        c.cmd(&["PING", "a", "b"]).await,
        Reply::Error("ERR wrong number of arguments for 'ping' command".into())
    );
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(c.cmd(&["GET", "k"]).await, Reply::bulk("v"));
    server.shutdown().await;
}

#[tokio::test]
async fn inline_commands_work() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    c.send_raw(b"PING\r\n").await;
    assert_eq!(c.read().await, Reply::Simple("PONG".into()));
    c.send_raw(b"\r\nSET a b\r\nGET a\nSET \"sp ace\" 'x y'\r\nGET \"sp ace\"\r\n")
        .await;
    assert_eq!(c.read().await, Reply::ok());
    assert_eq!(c.read().await, Reply::bulk("b"));
    assert_eq!(c.read().await, Reply::ok());
    assert_eq!(c.read().await, Reply::bulk("x y"));
    server.shutdown().await;
}

#[tokio::test]
async fn key_over_limit_is_an_error_and_connection_stays() {
    let limits = Limits {
        max_key_len: 16,
        ..Limits::default()
    };
    let server = TestServer::start_with(ServerConfig {
        limits,
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    let long = "k".repeat(17);
    assert!(c
        .cmd(&["SET", &long, "v"])
        .await
        .is_error_starting("ERR key too long"));
    assert!(c
        .cmd(&["MSET", "ok", "v", &long, "v"])
        .await
        .is_error_starting("ERR key too long"));
    assert!(c
        .cmd(&["MGET", "ok", &long])
        .await
        .is_error_starting("ERR key too long"));
    assert_eq!(c.cmd(&["EXISTS", "ok"]).await, int(0));
    assert_eq!(c.cmd(&["SET", &long[..16], "v"]).await, Reply::ok());
    assert_eq!(c.cmd(&["GET", &long[..16]]).await, Reply::bulk("v"));
    server.shutdown().await;
}

#[tokio::test]
async fn large_value_roundtrip() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let value = "x".repeat(3 << 20);
    assert_eq!(c.cmd(&["SET", "big", &value]).await, Reply::ok());
    assert_eq!(c.cmd(&["GET", "big"]).await, Reply::bulk(&value));
    server.shutdown().await;
}

#[tokio::test]
async fn quit_closes() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    // Requests after QUIT in the same write are not run.
    c.send_raw(&[encode(&[b"QUIT"]), encode(&[b"SET", b"after", b"quit"])].concat())
        .await;
    assert_eq!(c.read().await, Reply::ok());
    assert!(c.is_closed().await);
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["EXISTS", "after"]).await, int(0));
    server.shutdown().await;
}

#[tokio::test]
async fn introspection_commands() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let info = c.cmd(&["INFO"]).await.text();
    for field in [
        "# Server",
        "redis_version:",
        "tcp_port:",
        "connected_clients:1",
        "# Memory",
        "used_memory:",
        "# Stats",
        "keyspace_hits:",
        "# Keyspace",
        "# Tiercache",
        "writeback_pending:",
    ] {
        assert!(info.contains(field), "INFO lacks {field}:\n{info}");
    }
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    let keyspace = c.cmd(&["INFO", "keyspace"]).await.text();
    assert!(keyspace.contains("db0:keys=1,"), "{keyspace}");
    assert!(!keyspace.contains("# Server"));
    let Reply::Array(Some(pairs)) = c.cmd(&["CONFIG", "GET", "*max*"]).await else {
        panic!()
    };
    assert!(
        pairs.contains(&Reply::bulk("maxmemory")) && pairs.contains(&Reply::bulk("maxclients")),
        "{pairs:?}"
    );
    assert_eq!(
        c.cmd(&["CONFIG", "GET", "save", "appendonly"]).await,
        Reply::Array(Some(vec![
            Reply::bulk("save"),
            Reply::bulk(""),
            Reply::bulk("appendonly"),
            // A write-back namespace journals every write: an append-only file.
            Reply::bulk("yes")
        ]))
    );
    let Reply::Int(count) = c.cmd(&["COMMAND", "COUNT"]).await else {
        panic!()
    };
    assert!(count > 20);
    let Reply::Array(Some(all)) = c.cmd(&["COMMAND"]).await else {
        panic!()
    };
    assert_eq!(all.len() as i64, count);
    let Reply::Array(Some(docs)) = c.cmd(&["COMMAND", "DOCS", "get", "nosuch"]).await else {
        panic!()
    };
    assert_eq!(docs.len(), 2, "unknown names are left out");
    assert_eq!(docs[0], Reply::bulk("get"));
    let Reply::Array(Some(get_doc)) = &docs[1] else {
        panic!()
    };
    assert_eq!(
        &get_doc[..2],
        &[
            Reply::bulk("summary"),
            Reply::bulk("Get the value of a key")
        ]
    );
    let Reply::Int(id) = c.cmd(&["CLIENT", "ID"]).await else {
        panic!()
    };
    assert!(id > 0);
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]).await, Reply::Bulk(None));
    assert_eq!(c.cmd(&["CLIENT", "SETNAME", "worker-1"]).await, Reply::ok());
    assert_eq!(c.cmd(&["CLIENT", "GETNAME"]).await, Reply::bulk("worker-1"));
    assert!(c
        .cmd(&["CLIENT", "SETNAME", "a b"])
        .await
        .is_error_starting("ERR Client names cannot"));
    assert!(c
        .cmd(&["CLIENT", "BOGUS"])
        .await
        .is_error_starting("ERR unknown subcommand 'BOGUS'"));
    server.shutdown().await;
}

#[tokio::test]
async fn max_clients_is_enforced() {
    let server = TestServer::start_with(ServerConfig {
        max_clients: 1,
        ..ServerConfig::default()
    })
    .await;
    let mut first = server.client().await;
    assert_eq!(first.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    let mut second = server.client().await;
    assert_eq!(
        second.read().await,
        Reply::Error("ERR max number of clients reached".into())
    );
    assert!(second.is_closed().await);
    drop(first);
    // The permit comes back once the first connection's task ends.
    let mut ok = false;
    for _ in 0..50 {
        let mut c = server.client().await;
        if c.cmd(&["PING"]).await == Reply::Simple("PONG".into()) {
            ok = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(ok, "slot never freed");
    server.shutdown().await;
}

#[tokio::test]
async fn shutdown_completes_with_clients_connected() {
    let server = TestServer::start().await;
    let mut idle = server.client().await;
    let mut busy = server.client().await;
    assert_eq!(busy.cmd(&["SET", "k", "v"]).await, Reply::ok());
    // A half-sent request must not hold shutdown up either.
    idle.send_raw(b"*2\r\n$3\r\nGET\r\n").await;
    let addr = server.addr;
    let store = server.store.clone();
    server.shutdown().await;
    assert!(idle.is_closed().await);
    assert!(busy.is_closed().await);
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "still accepting after shutdown"
    );
    // The acknowledged write reached the store when the engine shut down.
    assert_eq!(store.len(), 1);
}

#[tokio::test]
async fn idle_clients_are_closed() {
    let config = ServerConfig {
        idle_timeout: Duration::from_millis(200),
        ..ServerConfig::default()
    };
    let server = TestServer::start_with(config).await;
    let mut c = server.client().await;
    assert_eq!(c.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(c.is_closed().await);
    server.shutdown().await;
}

#[tokio::test]
async fn a_half_sent_request_is_closed_but_an_idle_client_is_not() {
    let config = ServerConfig {
        partial_request_timeout: Duration::from_millis(300),
        ..ServerConfig::default()
    };
    let server = TestServer::start_with(config).await;
    let mut quiet = server.client().await;
    assert_eq!(quiet.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    let mut stalled = server.client().await;
    // A bulk length promising bytes that never come (slowloris).
    stalled
        .send_raw(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$10\r\nabc")
        .await;
    tokio::time::sleep(Duration::from_millis(700)).await;
    assert!(
        stalled.is_closed().await,
        "a stalled request holds its slot"
    );
    // No idle timeout is set: a client between requests stays connected.
    assert_eq!(quiet.cmd(&["PING"]).await, Reply::Simple("PONG".into()));
    assert_eq!(quiet.cmd(&["EXISTS", "k"]).await, Reply::Int(0));
    server.shutdown().await;
}

#[tokio::test]
async fn unix_socket_listener() {
    use std::sync::Arc;
    use tiercache_engine::{Engine, NamespaceConfig, WriteMode};
    use tiercache_server::{serve, ListenAddr, Listener};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let dir = tempfile::tempdir().unwrap();
    let engine = Arc::new(
        Engine::builder(dir.path().join("data"))
            .namespace(NamespaceConfig::new("default", WriteMode::Back))
            .build()
            .await
            .unwrap(),
    );
    let path = dir.path().join("tc.sock");
    let addr: ListenAddr = format!("unix:{}", path.display()).parse().unwrap();
    let listener = Listener::bind(&addr).await.unwrap();
    assert_eq!(listener.local_addr().unwrap(), addr);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(serve(
        listener,
        engine.clone(),
        ServerConfig::default(),
        async {
            let _ = rx.await;
        },
    ));
    let mut s = tokio::net::UnixStream::connect(&path).await.unwrap();
    s.write_all(b"SET a 1\r\nGET a\r\n").await.unwrap();
    let mut got = Vec::new();
    while got.len() < b"+OK\r\n$1\r\n1\r\n".len() {
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).await.unwrap();
        assert!(n > 0);
        got.extend_from_slice(&buf[..n]);
    }
    assert_eq!(got, b"+OK\r\n$1\r\n1\r\n");
    tx.send(()).unwrap();
    task.await.unwrap().unwrap();
    assert!(!path.exists(), "socket file left behind");
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn requests_split_across_many_writes() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let mut bytes = Vec::new();
    for i in 0..100 {
        let v = format!("value-{i}-{}", "z".repeat(i));
        bytes.extend(encode(&[b"SET", format!("k{i}").as_bytes(), v.as_bytes()]));
        bytes.extend(format!("GET k{i}\r\n").into_bytes());
    }
    for chunk in bytes.chunks(7) {
        c.send_raw(chunk).await;
        tokio::time::sleep(Duration::from_micros(200)).await;
    }
    for i in 0..100 {
        assert_eq!(c.read().await, Reply::ok(), "SET {i}");
        let v = format!("value-{i}-{}", "z".repeat(i));
        assert_eq!(c.read().await, Reply::bulk(&v), "GET {i}");
    }
    server.shutdown().await;
}

/// Runs of plain `SET key value` in one pipelined batch are written as one
/// engine batch; the replies, the final values and what reaches the store
/// must be those of running them one by one, and anything that is not a
/// plain SET (options, an error, a read, NOAUTH) keeps its place in order.
#[tokio::test]
async fn pipelined_plain_sets_act_like_sets_run_one_by_one() {
    let mut config = ServerConfig::default();
    config.limits.max_key_len = 16;
    let server = TestServer::start_with(config).await;
    let mut c = server.client().await;
    let long_key = "k".repeat(17);
    let requests: Vec<Vec<&[u8]>> = vec![
        vec![b"SET", b"a", b"1"],
        vec![b"SET", b"b", b"2"],
        vec![b"SET", b"a", b"3"],
        vec![b"GET", b"a"],
        vec![b"set", b"c", b"4"],
        vec![b"SET", b"a", b"5"],
        vec![b"SET", long_key.as_bytes(), b"x"],
        vec![b"SET", b"d", b"6"],
        vec![b"SET", b"e", b"7", b"EX", b"100"],
        vec![b"SET", b"f", b"8"],
        vec![b"SET", b"f", b"9"],
        vec![b"SET", b"only-two"],
        vec![b"GET", b"f"],
    ];
    let mut bytes = Vec::new();
    for r in &requests {
        bytes.extend(encode(r));
    }
    c.send_raw(&bytes).await;
    let ok = Reply::ok();
    let expected = [
        ok.clone(),
        ok.clone(),
        ok.clone(),
        Reply::bulk("3"),
        ok.clone(),
        ok.clone(),
        Reply::Error("ERR key too long (17 bytes, the limit is 16)".into()),
        ok.clone(),
        ok.clone(),
        ok.clone(),
        ok.clone(),
        Reply::Error("ERR wrong number of arguments for 'set' command".into()),
        Reply::bulk("9"),
    ];
    for (i, want) in expected.iter().enumerate() {
        assert_eq!(&c.read().await, want, "reply {i}");
    }
    for (k, v) in [("a", "5"), ("b", "2"), ("c", "4"), ("d", "6"), ("f", "9")] {
        assert_eq!(c.cmd(&["GET", k]).await, Reply::bulk(v), "{k}");
    }
    assert!(matches!(c.cmd(&["TTL", "e"]).await, Reply::Int(95..=100)));
    assert_eq!(c.cmd(&["TTL", "a"]).await, Reply::Int(-1));
    // Through the write-back queue to the store, last value per key.
    server.engine.flush().await.unwrap();
    let keys: Vec<bytes::Bytes> = ["a", "b", "f"].iter().map(|k| (*k).into()).collect();
    let stored = server.store.get_many(&keys).await.unwrap();
    let values: Vec<_> = stored
        .iter()
        .map(|e| e.as_ref().unwrap().value.clone())
        .collect();
    assert_eq!(values, vec!["5", "2", "9"]);
    server.shutdown().await;
}

#[tokio::test]
async fn pipelined_plain_sets_before_auth_are_refused_one_by_one() {
    let config = ServerConfig {
        requirepass: Some("pw".into()),
        ..Default::default()
    };
    let server = TestServer::start_with(config).await;
    let mut c = server.client().await;
    let mut bytes = Vec::new();
    bytes.extend(encode(&[b"SET", b"a", b"1"]));
    bytes.extend(encode(&[b"SET", b"b", b"2"]));
    bytes.extend(encode(&[b"AUTH", b"pw"]));
    bytes.extend(encode(&[b"SET", b"a", b"3"]));
    bytes.extend(encode(&[b"SET", b"b", b"4"]));
    c.send_raw(&bytes).await;
    let noauth = Reply::Error("NOAUTH Authentication required.".into());
    assert_eq!(c.read().await, noauth);
    assert_eq!(c.read().await, noauth);
    for _ in 0..3 {
        assert_eq!(c.read().await, Reply::ok());
    }
    assert_eq!(c.cmd(&["GET", "a"]).await, Reply::bulk("3"));
    assert_eq!(c.cmd(&["GET", "b"]).await, Reply::bulk("4"));
    server.shutdown().await;
}

#[tokio::test]
async fn busy_polling_serves_requests() {
    let poll = tiercache_server::BusyPoll::start(Duration::from_millis(5));
    let server = TestServer::start_with(ServerConfig {
        busy_poll: Some(poll.clone()),
        ..ServerConfig::default()
    })
    .await;
    let mut c = server.client().await;
    for i in 0..20 {
        assert_eq!(
            c.cmd(&["SET", &format!("k{i}"), &i.to_string()]).await,
            Reply::ok()
        );
    }
    assert_eq!(c.cmd(&["GET", "k13"]).await, Reply::bulk("13"));
    assert!(poll.spins() > 0, "requests must start the polling");
    server.shutdown().await;
}
