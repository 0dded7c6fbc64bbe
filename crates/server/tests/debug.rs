//! `DEBUG` over real TCP: refused unless `enable_debug_command` allows it
//! (Redis 7's default), and what its subcommands do here: `OBJECT`'s line,
//! `RELOAD`/`LOADAOF` reloading from the stores without losing anything,
//! `SLEEP`, `PROTOCOL` and `SET-DISABLE-DENY-SCRIPTS`, and Redis's wording
//! for what it does not take.

mod common;

use common::{Reply, TestServer};
use std::time::{Duration, Instant};
use tiercache_server::{DebugCommand, ServerConfig};

fn debug_server(access: DebugCommand) -> ServerConfig {
    ServerConfig {
        debug_command: access,
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_is_refused_unless_enabled() {
    let server = TestServer::start().await;
    let mut c = server.client().await;
    let refused = c.cmd(&["DEBUG", "OBJECT", "k"]).await;
    assert!(
        refused.is_error_starting("ERR DEBUG command not allowed."),
        "{refused:?}"
    );
    server.shutdown().await;
    // `local` lets a loopback client in.
    let server = TestServer::start_with(debug_server(DebugCommand::Local)).await;
    let mut c = server.client().await;
    assert_eq!(
        c.cmd(&["DEBUG", "OBJECT", "k"]).await,
        Reply::Error("ERR no such key".into())
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_object_reload_and_sleep() {
    let server = TestServer::start_with(debug_server(DebugCommand::Yes)).await;
    let mut c = server.client().await;
    c.cmd(&["SET", "foo", "bar", "EX", "100"]).await;
    c.cmd(&["HSET", "h", "f", "v"]).await;
    let line = c.cmd(&["DEBUG", "OBJECT", "foo"]).await.text();
    assert!(line.starts_with("Value at:0x"), "{line}");
    assert!(
        line.contains(" refcount:1 encoding:embstr serializedlength:4 lru:"),
        "{line}"
    );
    assert!(c
        .cmd(&["DEBUG", "OBJECT", "h"])
        .await
        .text()
        .contains("encoding:listpack"));

    // A reload writes everything back and empties the memory tier of it;
    // the data, expiry included, comes back from the store.
    assert!(server.engine.memory().len() >= 2);
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]).await, Reply::ok());
    assert_eq!(server.engine.memory().len(), 0);
    assert_eq!(c.cmd(&["GET", "foo"]).await, Reply::bulk("bar"));
    assert!(matches!(c.cmd(&["TTL", "foo"]).await, Reply::Int(t) if (90..=100).contains(&t)));
    assert_eq!(c.cmd(&["HGET", "h", "f"]).await, Reply::bulk("v"));
    assert_eq!(c.cmd(&["DEBUG", "LOADAOF"]).await, Reply::ok());
    assert_eq!(c.cmd(&["GET", "foo"]).await, Reply::bulk("bar"));

    // Digests: a copy digests as its source; the data set's digest is the
    // same after a reload, and changes with a write.
    c.cmd(&["COPY", "h", "h2"]).await;
    let Reply::Array(Some(d)) = c.cmd(&["DEBUG", "DIGEST-VALUE", "h", "h2", "nope"]).await else {
        panic!()
    };
    assert_eq!(d[0], d[1]);
    assert_eq!(d[2], Reply::Simple("0".repeat(40)));
    assert_ne!(d[0], d[2]);
    let before = c.cmd(&["DEBUG", "DIGEST"]).await;
    assert_eq!(c.cmd(&["DEBUG", "RELOAD"]).await, Reply::ok());
    assert_eq!(c.cmd(&["DEBUG", "DIGEST"]).await, before);
    c.cmd(&["HSET", "h2", "f", "w"]).await;
    assert_ne!(c.cmd(&["DEBUG", "DIGEST"]).await, before);

    let t = Instant::now();
    assert_eq!(c.cmd(&["DEBUG", "SLEEP", "0.1"]).await, Reply::ok());
    assert!(t.elapsed() >= Duration::from_millis(100));
    assert_eq!(
        c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "1"]).await,
        Reply::ok()
    );
    // Checked as Redis checks it (it changes nothing here): a memory value
    // up to 4 GB less 1 MB.
    for ok in ["0", "1k", "100mb", "4095mb"] {
        assert_eq!(
            c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", ok]).await,
            Reply::ok(),
            "{ok}"
        );
    }
    for bad in ["4gb", "-1", "lots"] {
        assert_eq!(
            c.cmd(&["DEBUG", "QUICKLIST-PACKED-THRESHOLD", bad]).await,
            Reply::Error(
                "ERR argument must be a memory value bigger than 1 and smaller than 4gb".into()
            ),
            "{bad}"
        );
    }
    for bad in [&["DEBUG", "NOPE"][..], &["DEBUG", "OBJECT"]] {
        assert_eq!(
            c.cmd(bad).await,
            Reply::Error(format!(
                "ERR unknown subcommand or wrong number of arguments for '{}'. Try DEBUG HELP.",
                bad[1]
            ))
        );
    }
    server.shutdown().await;
}

/// `DEBUG OBJECT`'s address is the key's slot in the memory tier: an
/// `INCR` keeps it, as Redis's in-place `INCR` keeps its object's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_object_reports_the_slot_an_incr_keeps() {
    let server = TestServer::start_with(debug_server(DebugCommand::Yes)).await;
    let mut c = server.client().await;
    let at = |line: String| line.split(' ').nth(1).unwrap().to_string();
    c.cmd(&["SET", "n", "20000"]).await;
    c.cmd(&["INCR", "n"]).await;
    let before = at(c.cmd(&["DEBUG", "OBJECT", "n"]).await.text());
    assert!(before.starts_with("at:0x"), "{before}");
    assert_eq!(c.cmd(&["INCR", "n"]).await, Reply::Int(20002));
    assert_eq!(at(c.cmd(&["DEBUG", "OBJECT", "n"]).await.text()), before);

    // An expired key still held (active expiry paused) is found, as Redis
    // finds it, until a read drops it.
    c.cmd(&["DEBUG", "SET-ACTIVE-EXPIRE", "0"]).await;
    // Long enough to be written live on a loaded machine (a write that
    // is already expired is a delete).
    c.cmd(&["SET", "gone", "v", "PX", "50"]).await;
    tokio::time::sleep(Duration::from_millis(120)).await;
    server.engine.flush().await.unwrap();
    let line = c.cmd(&["DEBUG", "OBJECT", "gone"]).await.text();
    assert!(line.starts_with("Value at:"), "{line}");
    assert_eq!(c.cmd(&["GET", "gone"]).await, Reply::Bulk(None));
    assert_eq!(
        c.cmd(&["DEBUG", "OBJECT", "gone"]).await,
        Reply::Error("ERR no such key".into())
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_protocol_replies_each_type_and_scripts_may_call_it_when_allowed() {
    let server = TestServer::start_with(debug_server(DebugCommand::Yes)).await;
    let mut c = server.client().await;
    // RESP2: the RESP3 types fall back to their RESP2 forms.
    assert_eq!(
        c.cmd(&["DEBUG", "PROTOCOL", "bignum"]).await,
        Reply::bulk("1234567999999999999999999999999999999")
    );
    assert_eq!(c.cmd(&["DEBUG", "PROTOCOL", "true"]).await, Reply::Int(1));
    assert_eq!(
        c.cmd(&["DEBUG", "PROTOCOL", "push"]).await,
        Reply::Error("ERR RESP2 is not supported by this command".into())
    );
    assert!(c
        .cmd(&["DEBUG", "PROTOCOL", "nope"])
        .await
        .is_error_starting("ERR Wrong protocol type name"));
    // RESP3: the types themselves; an attribute comes before its reply.
    c.cmd(&["HELLO", "3"]).await;
    assert_eq!(
        c.cmd(&["DEBUG", "PROTOCOL", "false"]).await,
        Reply::Bool(false)
    );
    assert_eq!(
        c.cmd(&["DEBUG", "PROTOCOL", "map"]).await,
        Reply::Map(vec![
            (Reply::Int(0), Reply::Bool(false)),
            (Reply::Int(1), Reply::Bool(true)),
            (Reply::Int(2), Reply::Bool(false)),
        ])
    );
    drop(c);
    // A RESP3 connection read raw: the attribute map, then the reply.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    s.write_all(b"HELLO 3\r\nDEBUG PROTOCOL attrib\r\nPING\r\n")
        .await
        .unwrap();
    let (mut raw, mut byte) = (Vec::new(), [0u8; 1]);
    while !raw.ends_with(b"+PONG\r\n") {
        s.read_exact(&mut byte).await.unwrap();
        raw.push(byte[0]);
    }
    let text = String::from_utf8_lossy(&raw);
    assert!(
        text.contains("|1\r\n$14\r\nkey-popularity\r\n*2\r\n$7\r\nkey:123\r\n:90\r\n$39\r\nSome real reply following the attribute\r\n+PONG"),
        "{text}"
    );
    // Scripts may call DEBUG only once allowed, and never QUIT.
    let mut c = server.client().await;
    let script = "return redis.call('debug', 'protocol', 'bignum')";
    assert!(c
        .cmd(&["EVAL", script, "0"])
        .await
        .text()
        .contains("This Redis command is not allowed from script"));
    assert_eq!(
        c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "1"]).await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["EVAL", script, "0"]).await,
        Reply::bulk("1234567999999999999999999999999999999")
    );
    assert!(c
        .cmd(&["EVAL", "return redis.call('quit')", "0"])
        .await
        .text()
        .contains("This Redis command is not allowed from script"));
    c.cmd(&["DEBUG", "SET-DISABLE-DENY-SCRIPTS", "0"]).await;
    assert!(c
        .cmd(&["EVAL", script, "0"])
        .await
        .text()
        .contains("This Redis command is not allowed from script"));
    server.shutdown().await;
}
