//! The primary's side of replication over real TCP: the stream a `SYNC`
//! reads matches redis-server's for the same commands (absolute TTLs,
//! rewritten pops, `MULTI`/`EXEC` blocks), a real redis-server replica
//! (`--replicaof`) follows tiercache to the same data, and
//! `min-replicas-to-write`, `WAIT`, `ROLE` and the refusals behave as in
//! Redis. (Redis's own suites check the streams too: docs/redis-compat.md.)

mod common;
mod mc;

use common::{Client, Reply, TestServer};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tiercache_testkit::RedisServer;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

/// A connection that sent `SYNC` and reads the stream.
struct Link {
    reader: BufReader<TcpStream>,
    /// The snapshot it got first (an RDB file).
    snapshot: Vec<u8>,
}

impl Link {
    async fn attach(addr: SocketAddr) -> Link {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"SYNC\r\n").await.unwrap();
        let mut reader = BufReader::new(s);
        let line = read_line(&mut reader).await;
        let len: usize = line
            .strip_prefix('$')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a bulk header: {line:?}"));
        let mut snapshot = vec![0; len];
        reader.read_exact(&mut snapshot).await.unwrap();
        Link { reader, snapshot }
    }

    /// The next command of the stream, lowercased name first.
    async fn next(&mut self) -> Vec<String> {
        let header = read_line(&mut self.reader).await;
        let n: usize = header
            .strip_prefix('*')
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("not a command: {header:?}"));
        let mut argv = Vec::with_capacity(n);
        for i in 0..n {
            let len: usize = read_line(&mut self.reader).await[1..].parse().unwrap();
            let mut arg = vec![0; len + 2];
            self.reader.read_exact(&mut arg).await.unwrap();
            arg.truncate(len);
            let arg = String::from_utf8_lossy(&arg).into_owned();
            argv.push(if i == 0 { arg.to_lowercase() } else { arg });
        }
        argv
    }

    /// Every command until `PUBLISH marker end` (excluded).
    async fn until_marker(&mut self) -> Vec<String> {
        let mut got = Vec::new();
        loop {
            let argv = tokio::time::timeout(Duration::from_secs(10), self.next())
                .await
                .expect("stream stalled");
            if argv == ["publish", "marker", "end"] {
                return got;
            }
            got.push(mask(&argv.join(" ")));
        }
    }
}

async fn read_line(r: &mut BufReader<TcpStream>) -> String {
    let mut line = String::new();
    let n = tokio::time::timeout(Duration::from_secs(10), r.read_line(&mut line))
        .await
        .expect("line timed out")
        .unwrap();
    assert!(n > 0 && line.ends_with("\r\n"), "bad line {line:?}");
    line.truncate(line.len() - 2);
    line
}

/// Times differ between servers: every 13-digit Unix-millisecond number
/// (alone, or as a stream ID's first part) reads `<ms>`.
fn mask(line: &str) -> String {
    line.split(' ')
        .map(|w| {
            let (head, tail) = w.split_once('-').unwrap_or((w, ""));
            if head.len() == 13 && head.bytes().all(|b| b.is_ascii_digit()) {
                if tail.is_empty() {
                    "<ms>".to_string()
                } else {
                    format!("<ms>-{tail}")
                }
            } else {
                w.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Commands whose propagated forms are compared.
fn script() -> Vec<Vec<String>> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let lines = [
        "SET foo1 bar EX 200".to_string(),
        "SET foo1 bar PX 100000 GET".into(),
        format!("SET foo1 bar EXAT {}", now + 100),
        "SETEX foo1 100 bar".into(),
        "PSETEX foo1 100000 bar".into(),
        "SET foo2 bar".into(),
        "EXPIRE foo2 100 NX".into(),
        "PEXPIRE foo2 100000".into(),
        format!("EXPIREAT foo2 {}", now - 100),
        "GETDEL nokey".into(),
        "SET foo4 bar".into(),
        "GETEX foo4".into(),
        "GETEX foo4 EX 100".into(),
        "GETEX foo4 PERSIST".into(),
        "GETEX foo4 PERSIST".into(),
        "GETDEL foo4".into(),
        "GETSET g 1".into(),
        "INCRBYFLOAT f 1.5".into(),
        "DEL missing".into(),
        "SET n 1 NX".into(),
        "SET n 1 NX".into(),
        "MULTI".into(),
        "SET a 1".into(),
        "INCR a".into(),
        "GET a".into(),
        "EXEC".into(),
        "MULTI".into(),
        "SET b 1".into(),
        "EXEC".into(),
        "EVAL \"redis.call('set','c','1') redis.call('incr','c')\" 0".into(),
        "EVAL \"return redis.call('get','c')\" 0".into(),
        "RPUSH l a b c d e".into(),
        "LMPOP 1 l LEFT COUNT 2".into(),
        "BLPOP l 0".into(),
        "BRPOP l 0".into(),
        "BLMPOP 0 2 nol l RIGHT COUNT 10".into(),
        "RPUSH l x y".into(),
        "BLMOVE l l2 LEFT RIGHT 0".into(),
        "BRPOPLPUSH l l2 0".into(),
        "ZADD z 1 a 2 b 3 c".into(),
        "ZMPOP 1 z MIN COUNT 1".into(),
        "BZPOPMAX z 0".into(),
        "BZMPOP 0 1 z MIN COUNT 5".into(),
        "SADD s1 only".into(),
        "SPOP s1".into(),
        "SADD s2 a b c".into(),
        "SPOP s2 10".into(),
        "XADD st 1-1 k v".into(),
        "XADD st 2-* k v".into(),
        "XADD st MAXLEN = 1 3-1 k v".into(),
        "XGROUP CREATE st g 0".into(),
        "XREADGROUP GROUP g c1 COUNT 1 STREAMS st >".into(),
        "XADD st 4-1 k v".into(),
        "XADD st 5-1 k v".into(),
        "XREADGROUP GROUP g c2 NOACK COUNT 1 STREAMS st >".into(),
        "XREADGROUP GROUP g c1 STREAMS st >".into(),
        "XREADGROUP GROUP g c1 STREAMS st 0".into(),
        "XCLAIM st g c3 0 5-1".into(),
        "XCLAIM st g c3 0 5-1 JUSTID".into(),
        "XAUTOCLAIM st g c4 0 0-0 COUNT 10".into(),
        "XACK st g 5-1".into(),
        "XGROUP SETID st g 0".into(),
        "XADD st MAXLEN ~ 1 6-1 k v".into(),
        "PFADD hll a b c".into(),
        "PFCOUNT hll".into(),
        "PFCOUNT hll".into(),
        "FUNCTION LOAD \"#!lua name=lib\nredis.register_function('setf', function(keys, args) return redis.call('set', keys[1], args[1]) end)\"".into(),
        "FCALL setf 1 fk fv".into(),
        "FUNCTION DELETE lib".into(),
        "PUBLISH chan hello".into(),
        "SET r bar".into(),
        // `RESTORE` of `DUMP r`, relative and absolute (see `stream_of`).
        "DUMP-RESTORE".into(),
        "FLUSHALL".into(),
    ];
    lines.iter().map(|l| split_args(l)).collect()
}

/// Splits a line into arguments: words, and double-quoted strings with
/// `\xHH`, `\n` and `\"` escapes (the few `redis-cli` ones used above).
fn split_args(line: &str) -> Vec<String> {
    let mut args = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c == ' ' {
            chars.next();
        } else if c == '"' {
            chars.next();
            let mut bytes = Vec::new();
            while let Some(c) = chars.next() {
                match c {
                    '"' => break,
                    '\\' => match chars.next().unwrap() {
                        'x' => {
                            let hex: String = [chars.next().unwrap(), chars.next().unwrap()]
                                .iter()
                                .collect();
                            bytes.push(u8::from_str_radix(&hex, 16).unwrap());
                        }
                        'n' => bytes.push(b'\n'),
                        other => bytes.push(other as u8),
                    },
                    other => bytes.extend(other.to_string().as_bytes()),
                }
            }
            args.push(unsafe_latin1(bytes));
        } else {
            let mut word = String::new();
            while let Some(&c) = chars.peek() {
                if c == ' ' {
                    break;
                }
                word.push(c);
                chars.next();
            }
            args.push(word);
        }
    }
    args
}

/// Bytes carried in a `String`, one char per byte (see `send_bytes`).
fn unsafe_latin1(bytes: Vec<u8>) -> String {
    bytes.into_iter().map(char::from).collect()
}

/// Sends `argv`, turning each char back into its byte, and reads the reply.
async fn send_bytes(c: &mut Client, argv: &[String]) -> Reply {
    let raw: Vec<Vec<u8>> = argv
        .iter()
        .map(|a| a.chars().map(|ch| ch as u32 as u8).collect())
        .collect();
    let refs: Vec<&[u8]> = raw.iter().map(|a| &a[..]).collect();
    c.send_raw(&common::encode(&refs)).await;
    c.read().await
}

/// The stream `script()` produces on the server at `addr`.
async fn stream_of(addr: SocketAddr) -> Vec<String> {
    let mut c = Client::connect(addr).await;
    c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "3600"])
        .await;
    c.cmd(&["FLUSHALL"]).await;
    let mut link = Link::attach(addr).await;
    assert!(link.snapshot.starts_with(b"REDIS00"), "an RDB file");
    for argv in script() {
        if argv == ["DUMP-RESTORE"] {
            let Reply::Bulk(Some(payload)) = c.cmd(&["DUMP", "r"]).await else {
                panic!("DUMP r")
            };
            let at = (std::time::SystemTime::now() + Duration::from_secs(100))
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_millis()
                .to_string();
            for restore in [
                &[&b"RESTORE"[..], b"r2", b"100000", &payload][..],
                &[b"RESTORE", b"r3", at.as_bytes(), &payload, b"ABSTTL"],
            ] {
                c.send_raw(&common::encode(restore)).await;
                assert_eq!(c.read().await, Reply::ok());
            }
            continue;
        }
        let reply = send_bytes(&mut c, &argv).await;
        assert!(!reply.is_error_starting(""), "{argv:?} answered {reply:?}");
    }
    c.cmd(&["PUBLISH", "marker", "end"]).await;
    link.until_marker().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stream_matches_redis_servers() {
    let Some(redis) = RedisServer::start(&["--databases", "1"]) else {
        return;
    };
    let ours = TestServer::start().await;
    let theirs = stream_of(redis.addr()).await;
    let got = stream_of(ours.addr).await;
    // Redis selects the database before the first command; this server as
    // the stream starts. Both streams begin with it.
    assert_eq!(theirs.first().map(String::as_str), Some("select 0"));
    assert_eq!(got, theirs);
    ours.shutdown().await;
}

/// Every key of the server at `addr` with its type, absolute expiry and
/// contents (sets and hashes in sorted order), one line per key, sorted.
async fn contents(addr: SocketAddr) -> Vec<String> {
    let mut c = Client::connect(addr).await;
    let Reply::Array(Some(keys)) = c.cmd(&["KEYS", "*"]).await else {
        panic!("KEYS")
    };
    let mut lines = Vec::new();
    for key in keys {
        let key = key.text();
        let kind = c.cmd(&["TYPE", &key]).await.text();
        let read: &[&str] = match kind.as_str() {
            "string" => &["GET"],
            "list" => &["LRANGE", "", "0", "-1"],
            "hash" => &["HGETALL"],
            "set" => &["SMEMBERS"],
            "zset" => &["ZRANGE", "", "0", "-1", "WITHSCORES"],
            "stream" => &["XRANGE", "", "-", "+"],
            other => panic!("type {other}"),
        };
        let mut argv = read.to_vec();
        if argv.len() == 1 {
            argv.push(&key);
        } else {
            argv[1] = &key;
        }
        let value = match c.cmd(&argv).await {
            Reply::Array(Some(mut items)) if kind == "set" || kind == "hash" => {
                let mut parts: Vec<String> = if kind == "hash" {
                    items
                        .chunks(2)
                        .map(|p| format!("{}={}", p[0].text(), p[1].text()))
                        .collect()
                } else {
                    items.drain(..).map(|m| m.text()).collect()
                };
                parts.sort();
                parts.join(",")
            }
            other => format!("{other:?}"),
        };
        let at = c.cmd(&["PEXPIRETIME", &key]).await;
        lines.push(format!("{key} {kind} {at:?} {value}"));
    }
    lines.sort();
    lines
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redis_replica_follows_this_server() {
    if !RedisServer::installed() {
        // `RedisServer::start` below says so loudly (or fails, when
        // backends are required).
        assert!(RedisServer::start(&[]).is_none());
        return;
    }
    let ours = TestServer::start().await;
    let mut c = ours.client().await;
    // Data before the replica attaches: in its snapshot.
    for cmd in [
        &["SET", "s1", "v1"][..],
        &["SET", "s2", "v2", "EX", "1000"],
        &["RPUSH", "l", "a", "b", "c"],
        &["HSET", "h", "f1", "1", "f2", "2"],
        &["SADD", "s", "x", "y", "z"],
        &["ZADD", "z", "1", "a", "2", "b"],
        &["XADD", "st", "1-1", "k", "v"],
        &["PFADD", "hll", "a", "b", "c"],
    ] {
        assert!(!c.cmd(cmd).await.is_error_starting(""), "{cmd:?}");
    }
    let port = ours.addr.port().to_string();
    let Some(replica) =
        RedisServer::start(&["--databases", "1", "--replicaof", "127.0.0.1", &port])
    else {
        return;
    };
    let mut r = Client::connect(replica.addr()).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while !r
        .cmd(&["INFO", "replication"])
        .await
        .text()
        .contains("master_link_status:up")
    {
        assert!(Instant::now() < deadline, "the replica never synced");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Writes after: in the stream.
    for cmd in [
        &["SET", "after", "x"][..],
        &["INCRBYFLOAT", "fl", "2.5"],
        &["LPUSH", "l", "z"],
        &["EXPIRE", "s1", "500"],
        &["HINCRBY", "h", "f1", "5"],
        &["SPOP", "s"],
        &["XADD", "st", "*", "k2", "v2"],
        &[
            "EVAL",
            "redis.call('set','ev','1') redis.call('incr','ev')",
            "0",
        ],
        &["GETDEL", "s2"],
        &["ZPOPMIN", "z"],
    ] {
        assert!(!c.cmd(cmd).await.is_error_starting(""), "{cmd:?}");
    }
    assert_eq!(c.cmd(&["WAIT", "1", "10000"]).await, Reply::Int(1));
    let ours_contents = contents(ours.addr).await;
    assert_eq!(ours_contents.len(), 10, "{ours_contents:#?}");
    assert_eq!(contents(replica.addr()).await, ours_contents);
    // ROLE and INFO list the replica; it detaches when it goes.
    let Reply::Array(Some(role)) = c.cmd(&["ROLE"]).await else {
        panic!("ROLE")
    };
    assert_eq!(role[0], Reply::bulk("master"));
    assert!(matches!(&role[2], Reply::Array(Some(list)) if list.len() == 1));
    assert!(c
        .cmd(&["INFO", "replication"])
        .await
        .text()
        .contains("connected_slaves:1"));
    drop(r);
    drop(replica);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !c
        .cmd(&["INFO", "replication"])
        .await
        .text()
        .contains("connected_slaves:0")
    {
        assert!(Instant::now() < deadline, "the replica never detached");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_few_good_replicas_refuse_writes() {
    let ours = TestServer::start().await;
    let mut c = ours.client().await;
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"])
            .await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["SET", "k", "v"]).await,
        Reply::Error("NOREPLICAS Not enough good replicas to write.".into())
    );
    assert_eq!(
        c.cmd(&["GET", "k"]).await,
        Reply::Bulk(None),
        "reads still run"
    );
    // Queued while refused: the transaction is discarded.
    c.cmd(&["MULTI"]).await;
    assert!(c
        .cmd(&["SET", "k", "v"])
        .await
        .is_error_starting("NOREPLICAS"));
    assert!(c.cmd(&["EXEC"]).await.is_error_starting("EXECABORT"));
    // Queued before: EXEC itself is refused.
    c.cmd(&["CONFIG", "SET", "min-replicas-to-write", "0"])
        .await;
    c.cmd(&["MULTI"]).await;
    assert_eq!(c.cmd(&["INCR", "k"]).await, Reply::Simple("QUEUED".into()));
    let mut admin = ours.client().await;
    admin
        .cmd(&["CONFIG", "SET", "min-replicas-to-write", "1"])
        .await;
    assert_eq!(
        c.cmd(&["EXEC"]).await,
        Reply::Error(
            "EXECABORT Transaction discarded because of: NOREPLICAS Not enough good replicas to write."
                .into()
        )
    );
    // A replica attached: writes go through, and reach it.
    let mut link = Link::attach(ours.addr).await;
    assert_eq!(c.cmd(&["SET", "k", "v"]).await, Reply::ok());
    assert_eq!(link.next().await, ["select", "0"]);
    assert_eq!(link.next().await, ["set", "k", "v"]);
    assert_eq!(
        c.cmd(&["WAIT", "1", "50"]).await,
        Reply::Int(0),
        "it never acknowledged"
    );
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replication_commands_refuse_what_they_cannot_do() {
    let ours = TestServer::start().await;
    let mut c = ours.client().await;
    assert_eq!(c.cmd(&["REPLICAOF", "NO", "ONE"]).await, Reply::ok());
    assert!(c
        .cmd(&["REPLICAOF", "127.0.0.1", "6379"])
        .await
        .is_error_starting("ERR this server does not replicate"));
    assert_eq!(
        c.cmd(&["REPLCONF", "listening-port", "6380"]).await,
        Reply::ok()
    );
    assert_eq!(
        c.cmd(&["REPLCONF", "bogus", "1"]).await,
        Reply::Error("ERR Unrecognized REPLCONF option: bogus".into())
    );
    assert_eq!(
        c.cmd(&["REPLCONF", "capa"]).await,
        Reply::Error("ERR syntax error".into())
    );
    assert!(c.cmd(&["MULTI"]).await == Reply::ok());
    assert_eq!(
        c.cmd(&["SYNC"]).await,
        Reply::Error("ERR Command not allowed inside a transaction".into())
    );
    c.cmd(&["DISCARD"]).await;
    // PSYNC: always a full resynchronisation.
    let mut s = TcpStream::connect(ours.addr).await.unwrap();
    s.write_all(&common::encode(&[b"PSYNC", b"?", b"-1"]))
        .await
        .unwrap();
    let mut reader = BufReader::new(s);
    let line = read_line(&mut reader).await;
    let parts: Vec<&str> = line.split(' ').collect();
    assert_eq!(parts[0], "+FULLRESYNC");
    assert_eq!(parts[1].len(), 40, "a replication id: {line}");
    assert!(read_line(&mut reader).await.starts_with('$'));
    ours.shutdown().await;
}

#[test]
fn masking_hides_times_only() {
    assert_eq!(
        mask("set foo1 bar PXAT 1795822811247"),
        "set foo1 bar PXAT <ms>"
    );
    assert_eq!(mask("xadd st 1795822811247-0 k v"), "xadd st <ms>-0 k v");
    assert_eq!(mask("xadd st 2-1 k 1234"), "xadd st 2-1 k 1234");
    assert_eq!(split_args("A \"b c\\x41\" d"), ["A", "b cA", "d"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_expire_reach_replicas_as_del() {
    let ours = TestServer::start().await;
    let mut c = ours.client().await;
    let mut link = Link::attach(ours.addr).await;
    assert_eq!(c.cmd(&["SET", "short", "v", "PX", "50"]).await, Reply::ok());
    assert_eq!(c.cmd(&["SET", "long", "v", "EX", "100"]).await, Reply::ok());
    assert_eq!(link.next().await, ["select", "0"]);
    assert_eq!(mask(&link.next().await.join(" ")), "set short v PXAT <ms>");
    assert_eq!(mask(&link.next().await.join(" ")), "set long v PXAT <ms>");
    // The engine's active expiry removes it; the replica is told.
    let del = tokio::time::timeout(Duration::from_secs(10), link.next())
        .await
        .expect("no DEL for the expired key");
    assert_eq!(del, ["del", "short"]);
    assert_eq!(c.cmd(&["EXISTS", "long"]).await, Reply::Int(1));
    ours.shutdown().await;
}

/// `PING`s reach an idle replica every `repl-ping-replica-period`, and a
/// `WAIT` with no timeout is answered as soon as the replica acknowledges.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replicas_are_pinged_and_wait_wakes_on_their_ack() {
    let ours = TestServer::start().await;
    let mut c = ours.client().await;
    assert_eq!(
        c.cmd(&["CONFIG", "SET", "repl-ping-replica-period", "1"])
            .await,
        Reply::ok()
    );
    let mut link = Link::attach(ours.addr).await;
    let started = Instant::now();
    let ping = tokio::time::timeout(Duration::from_secs(5), link.next())
        .await
        .expect("no PING to an idle replica");
    assert_eq!(ping, ["ping"]);
    assert!(started.elapsed() < Duration::from_secs(3));

    let waiting = tokio::spawn(async move { c.cmd(&["WAIT", "1", "0"]).await });
    loop {
        let argv = tokio::time::timeout(Duration::from_secs(5), link.next())
            .await
            .expect("no GETACK");
        if argv == ["replconf", "GETACK", "*"] {
            break;
        }
        assert_eq!(argv, ["ping"]);
    }
    assert!(!waiting.is_finished(), "WAIT answered before any ACK");
    let ack = b"*3\r\n$8\r\nREPLCONF\r\n$3\r\nACK\r\n$13\r\n1000000000000\r\n";
    link.reader.get_mut().write_all(ack).await.unwrap();
    let answered = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("WAIT not woken by the ACK")
        .unwrap();
    assert_eq!(answered, Reply::Int(1));
    ours.shutdown().await;
}

/// With active expiry paused, the read that drops an expired key sends
/// the replica its `DEL`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_a_read_finds_expired_reach_replicas_as_del() {
    let ours = TestServer::start().await;
    ours.engine.set_active_expiry(false);
    let mut c = ours.client().await;
    let mut link = Link::attach(ours.addr).await;
    assert_eq!(c.cmd(&["SET", "lazy", "v", "PX", "50"]).await, Reply::ok());
    assert_eq!(link.next().await, ["select", "0"]);
    assert_eq!(mask(&link.next().await.join(" ")), "set lazy v PXAT <ms>");
    tokio::time::sleep(Duration::from_millis(100)).await;
    ours.engine.flush().await.unwrap();
    assert_eq!(c.cmd(&["GET", "lazy"]).await, Reply::Bulk(None));
    let del = tokio::time::timeout(Duration::from_secs(10), link.next())
        .await
        .expect("no DEL for the key found expired");
    assert_eq!(del, ["del", "lazy"]);
    ours.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memcached_writes_reach_replicas_as_their_state() {
    let config = tiercache_server::ServerConfig {
        replicas: Some(Default::default()),
        ..Default::default()
    };
    let server = mc::McServer::start_with(config).await;
    let mut link = Link::attach(server.resp_addr).await;
    let mut m = server.client().await;
    let script = "set a 7 0 1\nx\nappend a 0 0 1\ny\nincr n 1\nset n 0 100 1\n5\nincr n 2\n\
                  touch n 0\nget a\nms b 2 T0\nhi\nmg b v\ndelete a\nflush_all\n";
    let replies = m.script(script).await;
    assert_eq!(
        replies,
        "STORED\r\nSTORED\r\nNOT_FOUND\r\nSTORED\r\n7\r\nTOUCHED\r\nVALUE a 7 2\r\nxy\r\nEND\r\n\
         HD\r\nVA 2\r\nhi\r\nDELETED\r\nOK\r\n"
    );
    let mut got = Vec::new();
    for _ in 0..10 {
        got.push(mask(&link.next().await.join(" ")));
    }
    assert_eq!(
        got,
        [
            "select 0",
            "set a x",
            "set a xy",
            "del n",
            "set n 5 PXAT <ms>",
            "set n 7 PXAT <ms>",
            "set n 7",
            "set b hi",
            "del a",
            "flushall",
        ],
        "reads (`get`, `mg` without T) feed nothing"
    );
    server.shutdown().await;
}
