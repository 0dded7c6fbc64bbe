//! `DUMP`/`RESTORE` against a real redis-server 7: values of every type
//! and encoding Redis picks move from Redis into tiercache and back, byte
//! for byte as clients read them; Redis's own `MIGRATE` moves keys into
//! tiercache; a restored key is journaled like any write (it survives
//! `kill -9`); bad payloads get Redis's errors and the server stays up.

mod support;

use support::{Client, Reply, Server};
use tiercache_testkit::RedisServer;

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

/// The error message of `r`, which must be an error.
fn err(r: Reply) -> String {
    match r {
        Reply::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

fn ok(r: Reply) {
    assert_eq!(r, Reply::Simple("OK".into()));
}

/// Everything a client can read of `key`, in an order that does not depend
/// on the server's encoding (sets and hashes sorted).
fn contents(c: &mut Client, key: &str) -> (String, Vec<String>) {
    let k = key.as_bytes();
    let Reply::Simple(ty) = c.call(&[b"TYPE", k]) else {
        panic!("TYPE {key}")
    };
    if ty == "stream" {
        return (ty, stream_contents(c, key));
    }
    let reply = match ty.as_str() {
        "string" => c.call(&[b"GET", k]),
        "list" => c.call(&[b"LRANGE", k, b"0", b"-1"]),
        "set" => c.call(&[b"SMEMBERS", k]),
        "zset" => c.call(&[b"ZRANGE", k, b"0", b"-1", b"WITHSCORES"]),
        "hash" => c.call(&[b"HGETALL", k]),
        other => panic!("{key} is a {other}"),
    };
    let mut items: Vec<Vec<u8>> = match reply {
        Reply::Bulk(Some(v)) => vec![v],
        Reply::Array(Some(items)) => items
            .into_iter()
            .map(|r| match r {
                Reply::Bulk(Some(v)) => v,
                other => panic!("{key}: {other:?}"),
            })
            .collect(),
        other => panic!("{key}: {other:?}"),
    };
    match ty.as_str() {
        "set" => items.sort(),
        "hash" => {
            let mut pairs: Vec<Vec<u8>> = items.chunks(2).map(|p| p.concat()).collect();
            pairs.sort();
            items = pairs;
        }
        _ => {}
    }
    (
        ty,
        items
            .iter()
            .map(|i| String::from_utf8_lossy(i).into_owned())
            .collect(),
    )
}

/// A reply as readable text (bulk strings as text, not bytes).
fn show(r: &Reply) -> String {
    match r {
        Reply::Bulk(Some(b)) => format!("{:?}", String::from_utf8_lossy(b)),
        Reply::Array(Some(items)) => {
            format!(
                "[{}]",
                items.iter().map(show).collect::<Vec<_>>().join(", ")
            )
        }
        other => format!("{other:?}"),
    }
}

/// A stream's entries, metadata and groups (pending entries by consumer;
/// not their idle times, which depend on when each server was asked).
fn stream_contents(c: &mut Client, key: &str) -> Vec<String> {
    let k = key.as_bytes();
    let mut out = vec![show(&c.call(&[b"XRANGE", k, b"-", b"+"]))];
    let Reply::Array(Some(info)) = c.call(&[b"XINFO", b"STREAM", k]) else {
        panic!("XINFO STREAM {key}")
    };
    for pair in info.chunks(2) {
        let Reply::Bulk(Some(name)) = &pair[0] else {
            continue;
        };
        if [
            &b"length"[..],
            b"last-generated-id",
            b"max-deleted-entry-id",
            b"entries-added",
            b"groups",
        ]
        .contains(&name.as_slice())
        {
            out.push(format!("{} {}", show(&pair[0]), show(&pair[1])));
        }
    }
    let groups = c.call(&[b"XINFO", b"GROUPS", k]);
    out.push(show(&groups));
    if let Reply::Array(Some(groups)) = groups {
        for g in groups {
            let Reply::Array(Some(fields)) = g else {
                panic!()
            };
            let name = match &fields[1] {
                Reply::Bulk(Some(n)) => n.clone(),
                other => panic!("{other:?}"),
            };
            out.push(show(&c.call(&[b"XPENDING", k, &name])));
            let consumers = c.call(&[b"XINFO", b"CONSUMERS", k, &name]);
            // Name and pending count of each consumer.
            if let Reply::Array(Some(list)) = consumers {
                for consumer in list {
                    let Reply::Array(Some(f)) = consumer else {
                        panic!()
                    };
                    out.push(format!("{} {}", show(&f[1]), show(&f[3])));
                }
            }
        }
    }
    out
}

/// Fills `c` (a redis-server) with one key per encoding Redis 7.0 picks.
fn fill(c: &mut Client) -> Vec<&'static str> {
    let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
    let mut cmd =
        |parts: Vec<String>| cmds.push(parts.into_iter().map(String::into_bytes).collect());
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    cmd(s(&["SET", "str:short", "bar"]));
    cmd(s(&["SET", "str:int", "-4242"]));
    cmd(s(&["SET", "str:long", &"abc".repeat(700)])); // LZF-compressed
    cmd(s(&["SET", "str:ttl", "expiring", "PX", "500000"]));
    cmd(s(&["RPUSH", "list:small", "a", "12", "-7", ""]));
    let mut big_list = s(&["RPUSH", "list:big"]);
    big_list.extend((0..3000).map(|i| format!("element {i}")));
    cmd(big_list); // several listpack nodes
    cmd(s(&["SADD", "set:intset", "3", "-1", "100000"]));
    let mut big_ints = s(&["SADD", "set:ints"]);
    big_ints.extend((0..700).map(|i| (i * 37).to_string()));
    cmd(big_ints); // past set-max-intset-entries: a hashtable
    cmd(s(&["SADD", "set:words", "apple", "pear", ""]));
    cmd(s(&[
        "ZADD",
        "zset:small",
        "1.5",
        "a",
        "-2",
        "b",
        "inf",
        "c",
    ]));
    let mut big_zset = s(&["ZADD", "zset:big"]);
    for i in 0..300 {
        big_zset.push(format!("{}", i as f64 / 7.0));
        big_zset.push(format!("member:{i}"));
    }
    cmd(big_zset); // a skiplist
    cmd(s(&["HSET", "hash:small", "f1", "v1", "n", "42"]));
    let mut big_hash = s(&["HSET", "hash:big"]);
    for i in 0..400 {
        big_hash.push(format!("field:{i}"));
        big_hash.push("x".repeat(i % 90));
    }
    cmd(big_hash); // a hashtable
    for (id, fields) in [
        ("1-1", "f v"),
        ("1-2", "a 1 b 2"),
        ("5-0", "f v2"),
        ("7-3", "x 0123 y -5"),
    ] {
        let mut xadd = s(&["XADD", "stream:small", id]);
        xadd.extend(fields.split(' ').map(String::from));
        cmd(xadd);
    }
    cmd(s(&["XDEL", "stream:small", "1-2"]));
    cmd(s(&["XGROUP", "CREATE", "stream:small", "readers", "0"]));
    cmd(s(&[
        "XREADGROUP",
        "GROUP",
        "readers",
        "alice",
        "COUNT",
        "2",
        "STREAMS",
        "stream:small",
        ">",
    ]));
    cmd(s(&["XGROUP", "CREATE", "stream:small", "late", "$"]));
    cmd(s(&[
        "XGROUP",
        "CREATECONSUMER",
        "stream:small",
        "late",
        "bob",
    ]));
    for i in 0..300 {
        let value = "v".repeat(i % 50);
        cmd(s(&[
            "XADD",
            "stream:big",
            "*",
            "seq",
            &i.to_string(),
            "payload",
            &value,
        ]));
    }
    let refs: Vec<Vec<&[u8]>> = cmds
        .iter()
        .map(|c| c.iter().map(|a| a.as_slice()).collect())
        .collect();
    let args: Vec<&[&[u8]]> = refs.iter().map(|c| c.as_slice()).collect();
    for r in c.pipeline(&args) {
        assert!(!matches!(r, Reply::Error(_)), "{r:?}");
    }
    vec![
        "str:short",
        "str:int",
        "str:long",
        "str:ttl",
        "list:small",
        "list:big",
        "set:intset",
        "set:ints",
        "set:words",
        "zset:small",
        "zset:big",
        "hash:small",
        "hash:big",
        "stream:small",
        "stream:big",
    ]
}

fn dump(c: &mut Client, key: &str) -> Vec<u8> {
    match c.call(&[b"DUMP", key.as_bytes()]) {
        Reply::Bulk(Some(p)) => p,
        other => panic!("DUMP {key}: {other:?}"),
    }
}

fn pttl(c: &mut Client, key: &str) -> i64 {
    match c.call(&[b"PTTL", key.as_bytes()]) {
        Reply::Int(n) => n,
        other => panic!("PTTL {key}: {other:?}"),
    }
}

fn restore(c: &mut Client, key: &str, ttl: i64, payload: &[u8]) -> Reply {
    let ttl = ttl.max(0).to_string();
    c.call(&[b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload])
}

/// A tiercache (in its own data directory), a client, and `k` set to `v`.
fn one_with_k() -> (tempfile::TempDir, Server, Client) {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    let mut c = server.client();
    ok(c.call(&[b"SET", b"k", b"v"]));
    (dir, server, c)
}

/// A redis-server and a tiercache (in its own data directory); `None`
/// when redis-server is not installed (said loudly, or a failure under
/// `TIERCACHE_REQUIRE_BACKENDS=1`).
fn pair() -> Option<(RedisServer, tempfile::TempDir, Server)> {
    let redis = RedisServer::start(&[])?;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    Some((redis, dir, server))
}

#[test]
fn values_move_between_redis_and_tiercache_both_ways() {
    let Some((redis, dir, server)) = pair() else {
        return;
    };
    let mut theirs = Client::connect(redis.port());
    let mut ours = server.client();
    let keys = fill(&mut theirs);

    for key in &keys {
        // Redis -> tiercache.
        let payload = dump(&mut theirs, key);
        ok(restore(&mut ours, key, pttl(&mut theirs, key), &payload));
        assert_eq!(
            contents(&mut ours, key),
            contents(&mut theirs, key),
            "{key} restored here"
        );
        // tiercache -> Redis, under another name.
        let back = format!("{key}:back");
        let payload = dump(&mut ours, key);
        ok(restore(&mut theirs, &back, pttl(&mut ours, key), &payload));
        assert_eq!(
            contents(&mut theirs, &back),
            contents(&mut theirs, key),
            "{key} back in Redis"
        );
    }
    let ttl = pttl(&mut ours, "str:ttl");
    assert!((400_000..=500_000).contains(&ttl), "TTL kept: {ttl}");
    assert_eq!(pttl(&mut ours, "hash:big"), -1);

    // Written like any other write: in the journal before the reply.
    let before: Vec<_> = keys.iter().map(|k| contents(&mut ours, k)).collect();
    drop(ours);
    server.kill9();
    let server = Server::start(&dir.path().join("data"));
    let mut ours = server.client();
    let after: Vec<_> = keys.iter().map(|k| contents(&mut ours, k)).collect();
    assert_eq!(before, after, "restored keys survive kill -9");
}

#[test]
fn redis_migrate_moves_keys_into_tiercache() {
    let Some((redis, _dir, server)) = pair() else {
        return;
    };
    let mut theirs = Client::connect(redis.port());
    let mut ours = server.client();
    let keys = fill(&mut theirs);
    let expected: Vec<_> = keys.iter().map(|k| contents(&mut theirs, k)).collect();

    let port = server.port.to_string();
    let mut args: Vec<&[u8]> = vec![
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"",
        b"0",
        b"5000",
        b"KEYS",
    ];
    args.extend(keys.iter().map(|k| k.as_bytes()));
    ok(theirs.call(&args));
    assert_eq!(
        theirs.call(&[b"DBSIZE"]),
        Reply::Int(0),
        "MIGRATE deletes what it moved"
    );
    let got: Vec<_> = keys.iter().map(|k| contents(&mut ours, k)).collect();
    assert_eq!(got, expected);
    let ttl = pttl(&mut ours, "str:ttl");
    assert!((400_000..=500_000).contains(&ttl), "TTL kept: {ttl}");

    // A key already here: Redis's MIGRATE reports tiercache's BUSYKEY.
    theirs.call(&[b"SET", b"str:short", b"again"]);
    let r = theirs.call(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"str:short",
        b"0",
        b"5000",
    ]);
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("BUSYKEY")),
        "{r:?}"
    );
    ok(theirs.call(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"str:short",
        b"0",
        b"5000",
        b"REPLACE",
    ]));
    assert_eq!(ours.call(&[b"GET", b"str:short"]), bulk("again"));
}

#[test]
fn bad_restores_get_redis_errors_and_change_nothing() {
    let (_dir, _server, mut c) = one_with_k();
    let good = dump(&mut c, "k");

    assert_eq!(
        err(c.call(&[b"RESTORE", b"k", b"0", &good])),
        "BUSYKEY Target key name already exists."
    );
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"-1", &good])),
        "ERR Invalid TTL value, must be >= 0"
    );
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"x", &good])),
        "ERR value is not an integer or out of range"
    );
    let mut flipped = good.clone();
    flipped[1] ^= 1;
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"0", &flipped])),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"0", b"garbage that is long enough"])),
        "ERR DUMP payload version or checksum are wrong"
    );
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"0", &good, b"FREQ", b"300"])),
        "ERR Invalid FREQ value, must be >= 0 and <= 255"
    );
    assert_eq!(
        err(c.call(&[
            b"RESTORE",
            b"n",
            b"0",
            &good,
            b"IDLETIME",
            b"1",
            b"FREQ",
            b"1"
        ])),
        "ERR syntax error"
    );
    assert_eq!(
        err(c.call(&[b"RESTORE", b"n", b"0"])),
        "ERR wrong number of arguments for 'restore' command"
    );
    assert_eq!(c.call(&[b"EXISTS", b"n"]), Reply::Int(0), "nothing written");

    // REPLACE with a TTL already past deletes the key, as in Redis.
    ok(c.call(&[b"RESTORE", b"k", b"1", &good, b"ABSTTL", b"REPLACE"]));
    assert_eq!(c.call(&[b"EXISTS", b"k"]), Reply::Int(0));
    ok(c.call(&[b"RESTORE", b"k", b"0", &good, b"REPLACE", b"IDLETIME", b"5"]));
    assert_eq!(c.call(&[b"GET", b"k"]), bulk("v"));
    assert_eq!(c.call(&[b"DUMP", b"nope"]), Reply::Bulk(None));
    assert_eq!(c.call(&[b"PING"]), Reply::Simple("PONG".into()));
}

#[test]
fn migrate_moves_keys_out_of_tiercache() {
    let (Some(redis), Some(locked)) = (
        RedisServer::start(&[]),
        RedisServer::start(&["--requirepass", "secret"]),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    let mut ours = server.client();
    let mut theirs = Client::connect(redis.port());
    let keys = fill(&mut ours);
    let expected: Vec<_> = keys.iter().map(|k| contents(&mut ours, k)).collect();
    let port = redis.port().to_string();
    let migrate = |extra: &[&[u8]], keys: &[&str]| {
        let mut args: Vec<Vec<u8>> = [
            &b"MIGRATE"[..],
            b"127.0.0.1",
            port.as_bytes(),
            b"",
            b"0",
            b"5000",
        ]
        .iter()
        .map(|a| a.to_vec())
        .collect();
        args.extend(extra.iter().map(|a| a.to_vec()));
        args.push(b"KEYS".to_vec());
        args.extend(keys.iter().map(|k| k.as_bytes().to_vec()));
        args
    };
    let call = |c: &mut Client, args: Vec<Vec<u8>>| {
        let refs: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        c.call(&refs)
    };

    // COPY leaves them here; then a plain MIGRATE moves them.
    ok(call(&mut ours, migrate(&[b"COPY"], &keys)));
    assert_eq!(ours.call(&[b"EXISTS", b"hash:big"]), Reply::Int(1));
    let r = call(&mut ours, migrate(&[], &["str:short"]));
    assert!(
        matches!(&r, Reply::Error(e) if e.starts_with("ERR Target instance replied with error: BUSYKEY")),
        "{r:?}"
    );
    ok(call(&mut ours, migrate(&[b"REPLACE"], &keys)));
    assert_eq!(ours.call(&[b"DBSIZE"]), Reply::Int(0), "moved, not copied");
    let got: Vec<_> = keys.iter().map(|k| contents(&mut theirs, k)).collect();
    assert_eq!(got, expected);
    let ttl = pttl(&mut theirs, "str:ttl");
    assert!((400_000..=500_000).contains(&ttl), "TTL kept: {ttl}");

    // Nothing left to move.
    assert_eq!(
        call(&mut ours, migrate(&[], &keys)),
        Reply::Simple("NOKEY".into())
    );

    // AUTH: a wrong password is the target's error, the key stays here.
    ok(ours.call(&[b"SET", b"k", b"v"]));
    let lport = locked.port().to_string();
    fn to_locked<'a>(port: &'a str, pass: &'a [u8]) -> Vec<&'a [u8]> {
        vec![
            b"MIGRATE",
            b"127.0.0.1",
            port.as_bytes(),
            b"k",
            b"0",
            b"5000",
            b"AUTH",
            pass,
        ]
    }
    let r = ours.call(&to_locked(&lport, b"wrong"));
    assert!(
        matches!(&r, Reply::Error(e) if e.contains("WRONGPASS")),
        "{r:?}"
    );
    assert_eq!(ours.call(&[b"GET", b"k"]), bulk("v"));
    ok(ours.call(&to_locked(&lport, b"secret")));
    assert_eq!(ours.call(&[b"EXISTS", b"k"]), Reply::Int(0));
    let mut l = Client::connect(locked.port());
    ok(l.call(&[b"AUTH", b"secret"]));
    assert_eq!(l.call(&[b"GET", b"k"]), bulk("v"));
}

#[test]
fn migrate_reports_unreachable_and_silent_targets() {
    let (_dir, _server, mut c) = one_with_k();
    // Nothing listens there.
    let closed = support::free_port().to_string();
    assert_eq!(
        err(c.call(&[
            b"MIGRATE",
            b"127.0.0.1",
            closed.as_bytes(),
            b"k",
            b"0",
            b"500"
        ])),
        "IOERR error or timeout connecting to the client"
    );
    // A target that accepts and never answers: the timeout, then an error.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    let started = std::time::Instant::now();
    assert_eq!(
        err(c.call(&[
            b"MIGRATE",
            b"127.0.0.1",
            port.as_bytes(),
            b"k",
            b"0",
            b"300"
        ])),
        "IOERR error or timeout reading to target instance"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5));
    assert_eq!(
        c.call(&[b"GET", b"k"]),
        bulk("v"),
        "nothing moved, nothing deleted"
    );
    assert_eq!(
        err(c.call(&[
            b"MIGRATE",
            b"127.0.0.1",
            port.as_bytes(),
            b"k",
            b"0",
            b"300",
            b"KEYS",
            b"k"
        ])),
        "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string"
    );
    assert_eq!(
        err(c.call(&[b"MIGRATE", b"h", b"1", b"k", b"x", b"300"])),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        c.call(&[b"MIGRATE", b"h", b"1", b"nokey", b"0", b"300"]),
        Reply::Simple("NOKEY".into())
    );
    drop(silent);
}

#[test]
fn migrate_never_deletes_a_value_written_while_it_ran() {
    use std::io::{Read, Write};
    use std::sync::mpsc;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(&dir.path().join("data"));
    let mut a = server.client();
    let mut b = server.client();
    ok(a.call(&[b"SET", b"k", b"old"]));
    // A target that takes the request, waits for our go, then says OK to
    // SELECT and to RESTORE.
    let target = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = target.local_addr().unwrap().port().to_string();
    let (got_request, request_seen) = mpsc::channel();
    let (go, wait_for_go) = mpsc::channel::<()>();
    let fake = std::thread::spawn(move || {
        let (mut s, _) = target.accept().unwrap();
        let mut buf = [0u8; 4096];
        let n = s.read(&mut buf).unwrap();
        got_request.send(n).unwrap();
        wait_for_go.recv().unwrap();
        s.write_all(b"+OK\r\n+OK\r\n").unwrap();
    });
    a.send_raw(&support::command(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"k",
        b"0",
        b"5000",
    ]))
    .unwrap();
    assert!(request_seen.recv().unwrap() > 0);
    ok(b.call(&[b"SET", b"k", b"new"])); // written while MIGRATE waits
    go.send(()).unwrap();
    ok(a.read().unwrap());
    fake.join().unwrap();
    assert_eq!(
        b.call(&[b"GET", b"k"]),
        bulk("new"),
        "the newer value stays"
    );
}

#[test]
fn a_migrate_waiting_on_its_target_does_not_hold_up_a_transaction() {
    let (_dir, server, mut a) = one_with_k();
    let mut b = server.client();
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = silent.local_addr().unwrap().port().to_string();
    a.send_raw(&support::command(&[
        b"MIGRATE",
        b"127.0.0.1",
        port.as_bytes(),
        b"k",
        b"0",
        b"3000",
    ]))
    .unwrap();
    let _accepted = silent.accept().unwrap(); // MIGRATE is waiting on it now
    let started = std::time::Instant::now();
    ok(b.call(&[b"MULTI"]));
    b.call(&[b"SET", b"x", b"1"]);
    assert!(matches!(b.call(&[b"EXEC"]), Reply::Array(Some(_))));
    assert!(
        started.elapsed() < std::time::Duration::from_millis(2000),
        "EXEC waited {:?} for MIGRATE's target",
        started.elapsed()
    );
    assert_eq!(
        err(a.read().unwrap()),
        "IOERR error or timeout reading to target instance"
    );
}
