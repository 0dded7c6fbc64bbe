//! `tiercache serve` over Redis and memcached stores from the config file:
//! reads go through to the store, writes reach it (through and back), and
//! the key space commands see Redis's keys. Servers are started by testkit.

mod support;

use std::time::{Duration, Instant};
use support::{Client, Reply, Server};
use tiercache_testkit::{Memcached, RedisServer};

fn bulk(s: &str) -> Reply {
    Reply::Bulk(Some(s.as_bytes().to_vec()))
}

fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_reads_through_and_writes_back_to_redis() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[namespace.default]
tiers = ["redis"]
write = "through"

[namespace."wb:"]
tiers = ["redis"]
write = "back"
flush_interval = "50ms"

[store.redis]
type = "redis"
url = "unix:{socket}"
pool_size = 2
timeout = "1s"
"#,
        socket = redis.socket().display(),
    );
    let path = dir.path().join("tiercache.toml");
    std::fs::write(&path, config).unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", path.to_str().unwrap()],
    );
    let mut c = server.client();
    let mut r = Client::connect(redis.port());

    // Read through: a key only Redis has.
    assert_eq!(
        r.call(&[b"SET", b"seeded", b"from-redis"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.call(&[b"GET", b"seeded"]), bulk("from-redis"));

    // Write through, with the expiry kept to the millisecond.
    assert_eq!(
        c.call(&[b"SET", b"k", b"v", b"PXAT", b"32503680000123"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(r.call(&[b"GET", b"k"]), bulk("v"));
    assert_eq!(
        r.call(&[b"PEXPIRETIME", b"k"]),
        Reply::Int(32_503_680_000_123)
    );
    assert_eq!(c.call(&[b"DEL", b"k"]), Reply::Int(1));
    assert_eq!(r.call(&[b"EXISTS", b"k"]), Reply::Int(0));

    // Write back: the flusher applies the batch to Redis.
    assert_eq!(
        c.call(&[b"SET", b"wb:1", b"later"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(
        c.call(&[b"MSET", b"wb:2", b"a", b"wb:3", b"b"]),
        Reply::Simple("OK".into())
    );
    wait_for("write-back to Redis", || {
        r.call(&[b"GET", b"wb:3"]) == bulk("b")
    });
    assert_eq!(r.call(&[b"GET", b"wb:1"]), bulk("later"));
    assert_eq!(c.call(&[b"DEL", b"wb:1"]), Reply::Int(1));
    wait_for("write-back delete", || {
        r.call(&[b"EXISTS", b"wb:1"]) == Reply::Int(0)
    });

    // The key space is Redis's.
    assert_eq!(c.call(&[b"DBSIZE"]), Reply::Int(3));
    let Reply::Array(Some(keys)) = c.call(&[b"KEYS", b"wb:*"]) else {
        panic!("KEYS")
    };
    assert_eq!(keys, vec![bulk("wb:2"), bulk("wb:3")]);

    // Redis down: a clear error, not a hang; back up: served again.
    drop(r);
    let mut redis = redis;
    redis.kill();
    let t = Instant::now();
    let reply = c.call(&[b"GET", b"not-cached"]);
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    assert!(
        matches!(&reply, Reply::Error(e) if e.contains("redis")),
        "{reply:?}"
    );
    // Write-through SETs pipelined into one batch (one engine write):
    // each gets the store's error, and the connection stays.
    c.send_raw(b"SET down:1 a\r\nSET down:2 b\r\n").unwrap();
    for _ in 0..2 {
        let reply = c.read().unwrap();
        assert!(
            matches!(&reply, Reply::Error(e) if e.starts_with("ERR store 'redis'")),
            "{reply:?}"
        );
    }
    assert_eq!(c.call(&[b"PING"]), Reply::Simple("PONG".into()));
    redis.restart();
    let mut r = Client::connect(redis.port());
    assert_eq!(
        r.call(&[b"SET", b"after", b"restart"]),
        Reply::Simple("OK".into())
    );
    assert_eq!(c.call(&[b"GET", b"after"]), bulk("restart"));
    drop(server);
}

#[test]
fn serve_over_memcached() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = format!(
        r#"
[namespace."mc:"]
tiers = [{{ type = "memcached", servers = ["{mc}"], timeout = "1s" }}]
write = "through"
"#,
        mc = mc.addr(),
    );
    let path = dir.path().join("tiercache.toml");
    std::fs::write(&path, config).unwrap();
    let server = Server::start_with(
        &dir.path().join("data"),
        &["--config", path.to_str().unwrap()],
    );
    let mut c = server.client();
    // Written through: memcached holds the value behind its header byte.
    assert_eq!(c.call(&[b"SET", b"mc:x", b"y"]), Reply::Simple("OK".into()));
    let mut m = support::McText::connect(mc.port());
    assert_eq!(m.get("mc:x"), Some((0, b"\0y".to_vec())));
    assert_eq!(c.call(&[b"GET", b"mc:x"]), bulk("y"));
    // memcached cannot list its keys: DBSIZE says so instead of guessing.
    let reply = c.call(&[b"DBSIZE"]);
    assert!(
        matches!(&reply, Reply::Error(e) if e.contains("memcached cannot")),
        "{reply:?}"
    );
    drop(server);
}
