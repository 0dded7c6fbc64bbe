//! `RedisStore` against real servers started by testkit: one `redis-server`
//! (TCP and unix socket) and a 3-master Redis Cluster.

use bytes::Bytes;
use std::time::{Duration, Instant};
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::{now_ms, Entry, Store};
use tiercache_stores::RedisStore;
use tiercache_testkit::{RedisCluster, RedisServer};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn raw(v: redis::Value) -> Option<Vec<u8>> {
    match v {
        redis::Value::BulkString(b) => Some(b),
        _ => None,
    }
}

#[tokio::test]
async fn conformance_over_tcp() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let store = RedisStore::open("redis", &format!("{}/0", redis.url()), 4, None).unwrap();
    check_store(&store, Capabilities::FULL).await;
}

#[tokio::test]
async fn conformance_over_unix_socket() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let url = format!("unix:{}", redis.socket().display());
    let store = RedisStore::open("redis-unix", &url, 2, None).unwrap();
    assert!(store.target().starts_with("unix:/"), "{}", store.target());
    check_store(&store, Capabilities::FULL).await;
}

#[tokio::test]
async fn layout_is_readable_by_other_clients() {
    let Some(redis) = RedisServer::start(&["--requirepass", "s3cret"]) else {
        return;
    };
    let url = format!("redis://:s3cret@127.0.0.1:{}/2", redis.port());
    let store = RedisStore::open("redis", &url, 1, None).unwrap();
    assert!(!store.target().contains("s3cret"));
    let at = now_ms() + 60_000;
    store
        .set_many(&[
            (b("plain"), Entry::with_expiry("hello", Some(at))),
            (b("flagged"), Entry::with_flags("v", None, 0x0102_0304)),
        ])
        .await
        .unwrap();
    // A plain entry is the value's bytes with the key's own expiry.
    let get = |k: &str| redis::cmd("GET").arg(k).clone();
    assert_eq!(
        raw(store.command(&get("plain")).await.unwrap()),
        Some(b"hello".to_vec())
    );
    let pexpiretime = store
        .command(redis::cmd("PEXPIRETIME").arg("plain"))
        .await
        .unwrap();
    assert_eq!(pexpiretime, redis::Value::Int(at as i64));
    // A flagged one is the documented 8-byte envelope.
    assert_eq!(
        raw(store.command(&get("flagged")).await.unwrap()),
        Some(vec![0xFF, b't', b'c', 1, 1, 2, 3, 4, b'v'])
    );
    // A value written by another client reads with flags 0.
    store
        .command(redis::cmd("SET").arg("foreign").arg("abc"))
        .await
        .unwrap();
    let got = store.get_many(&[b("foreign")]).await.unwrap();
    assert_eq!(got[0], Some(Entry::new("abc")));
    // Database 2 was used, not 0.
    let select0 = RedisStore::open(
        "r0",
        &format!("redis://:s3cret@127.0.0.1:{}/0", redis.port()),
        1,
        None,
    )
    .unwrap();
    assert_eq!(select0.count().await.unwrap(), 0);
    assert_eq!(store.count().await.unwrap(), 3);
}

#[tokio::test]
async fn wrong_password_is_a_clear_error() {
    let Some(redis) = RedisServer::start(&["--requirepass", "right"]) else {
        return;
    };
    let url = format!("redis://:wrong@127.0.0.1:{}", redis.port());
    let store = RedisStore::open("auth", &url, 1, None).unwrap();
    let err = store.get_many(&[b("k")]).await.unwrap_err();
    assert_eq!(err.store, "auth");
    assert!(!err.message.contains("wrong@"), "{err}");
    assert!(
        err.message.to_lowercase().contains("auth") || err.message.contains("password"),
        "{err}"
    );
}

#[tokio::test]
async fn outage_fails_fast_and_recovers_after_restart() {
    let Some(mut redis) = RedisServer::start(&[]) else {
        return;
    };
    let timeout = Duration::from_millis(500);
    let store = RedisStore::open("redis", &redis.url(), 2, Some(timeout)).unwrap();
    // Built while the server is down: fine, and the first operation fails.
    redis.kill();
    let t = Instant::now();
    let err = store.get_many(&[b("k")]).await.unwrap_err();
    assert!(t.elapsed() < timeout * 2, "took {:?}", t.elapsed());
    assert_eq!(err.store, "redis");
    assert!(err.message.contains(&redis.addr().to_string()), "{err}");
    redis.restart();
    store.set_many(&[(b("k"), Entry::new("1"))]).await.unwrap();
    // Kill it with connections open: every pooled connection fails, once.
    redis.kill();
    for _ in 0..4 {
        let t = Instant::now();
        let err = store.set_many(&[(b("k"), Entry::new("2"))]).await;
        assert!(err.is_err(), "write while down succeeded");
        assert!(t.elapsed() < timeout * 2, "took {:?}", t.elapsed());
        assert!(store.get_many(&[b("k")]).await.is_err());
    }
    redis.restart();
    // Data is gone (no persistence) but the store works again without
    // being rebuilt, on every pooled connection.
    for i in 0..4 {
        let v = format!("{i}");
        store
            .set_many(&[(b("k"), Entry::new(v.clone()))])
            .await
            .unwrap();
        let got = store.get_many(&[b("k")]).await.unwrap();
        assert_eq!(got[0], Some(Entry::new(v)));
    }
}

#[tokio::test]
async fn a_hung_server_times_out() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let timeout = Duration::from_millis(300);
    let store = RedisStore::open("redis", &redis.url(), 1, Some(timeout)).unwrap();
    store.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    redis.pause();
    let t = Instant::now();
    let err = store.get_many(&[b("k")]).await.unwrap_err();
    let took = t.elapsed();
    redis.resume();
    assert!(took >= timeout && took < timeout * 3, "took {took:?}");
    assert!(err.message.contains("timed out"), "{err}");
    // The connection is still good once the server answers again.
    let got = store.get_many(&[b("k")]).await.unwrap();
    assert_eq!(got[0], Some(Entry::new("v")));
}

#[tokio::test]
async fn cluster_conformance_and_spread() {
    let Some(cluster) = RedisCluster::start() else {
        return;
    };
    let store = RedisStore::open_cluster("cluster", &cluster.nodes(), None).unwrap();
    check_store(&store, Capabilities::FULL).await;
    // Keys land on every master, and a batch across slots round-trips.
    let entries: Vec<(Bytes, Entry)> = (0..300)
        .map(|i| {
            (
                Bytes::from(format!("spread:{i}")),
                Entry::with_flags(format!("{i}"), Some(now_ms() + 60_000), i),
            )
        })
        .collect();
    store.set_many(&entries).await.unwrap();
    for port in cluster.ports() {
        let n = cluster.dbsize(port);
        assert!(n > 50, "master {port} holds {n} of 300 keys");
    }
    let keys: Vec<Bytes> = entries.iter().rev().map(|(k, _)| k.clone()).collect();
    let got = store.get_many(&keys).await.unwrap();
    for (g, (_, want)) in got.iter().zip(entries.iter().rev()) {
        assert_eq!(g.as_ref(), Some(want));
    }
    assert_eq!(store.count().await.unwrap(), 300);
    let page = store
        .scan_keys(std::ops::Bound::Unbounded, b"spread:1", 3, now_ms())
        .await
        .unwrap();
    assert_eq!(page, vec![b("spread:1"), b("spread:10"), b("spread:100")]);

    // Resharding: the store's slot map goes stale; the slot's keys are
    // redirected and still read and written correctly.
    let slot: u16 = cluster
        .cli(cluster.ports()[0], &["CLUSTER", "KEYSLOT", "spread:1"])
        .trim()
        .parse()
        .unwrap();
    let owner = cluster
        .ports()
        .into_iter()
        .find(|&p| {
            cluster
                .cli(p, &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()])
                .trim()
                != "0"
        })
        .expect("an owner");
    let other = cluster.ports().into_iter().find(|&p| p != owner).unwrap();
    cluster.move_slot(slot, owner, other);
    let got = store.get_many(&keys).await.unwrap();
    for (g, (_, want)) in got.iter().zip(entries.iter().rev()) {
        let g = g.as_ref().expect("every key is still found after the move");
        assert_eq!((&g.value, g.flags), (&want.value, want.flags));
        // MIGRATE carries a key's TTL as time *remaining*, so the moved
        // keys' absolute expiry may shift by a millisecond or two.
        match (g.expires_at, want.expires_at) {
            (Some(a), Some(b)) => assert!(a.abs_diff(b) <= 5, "expiry {a} vs {b}"),
            (a, b) => assert_eq!(a, b),
        }
    }
    store
        .set_many(&[(b("spread:1"), Entry::new("moved"))])
        .await
        .unwrap();
    assert_eq!(
        store.get_many(&[b("spread:1")]).await.unwrap()[0],
        Some(Entry::new("moved"))
    );
    assert!(cluster.cli(other, &["GET", "spread:1"]).contains("moved"));
    store.delete_many(&keys).await.unwrap();
    assert_eq!(store.count().await.unwrap(), 0);
}
