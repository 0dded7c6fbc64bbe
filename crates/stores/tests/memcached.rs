//! `MemcachedStore` against real `memcached` servers started by testkit.

use bytes::Bytes;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::{now_ms, Entry, Store};
use tiercache_stores::MemcachedStore;
use tiercache_testkit::Memcached;

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

const CAPS: Capabilities = Capabilities {
    lists_keys: false,
    clears: true,
    big_batch: 5_000,
};

/// `stats` → `curr_items` of one server, over a plain socket.
fn curr_items(server: &Memcached) -> u64 {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(b"stats\r\n").unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    loop {
        line.clear();
        r.read_line(&mut line).unwrap();
        if let Some(n) = line.strip_prefix("STAT curr_items ") {
            return n.trim().parse().unwrap();
        }
        assert!(line != "END\r\n" && !line.is_empty(), "no curr_items");
    }
}

/// `get key` over the plain text protocol: `(flags, data)`.
fn text_get(server: &Memcached, key: &str) -> Option<(u32, Vec<u8>)> {
    let mut s = TcpStream::connect(server.addr()).unwrap();
    s.write_all(format!("get {key}\r\n").as_bytes()).unwrap();
    let mut r = BufReader::new(s);
    let mut line = String::new();
    r.read_line(&mut line).unwrap();
    if line == "END\r\n" {
        return None;
    }
    let parts: Vec<&str> = line.split_whitespace().collect();
    let flags = parts[2].parse().unwrap();
    let len: usize = parts[3].parse().unwrap();
    let mut data = vec![0; len + 2];
    std::io::Read::read_exact(&mut r, &mut data).unwrap();
    data.truncate(len);
    Some((flags, data))
}

#[tokio::test]
async fn conformance_one_server() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let store = MemcachedStore::open("mc", &[mc.addr().to_string()], None).unwrap();
    check_store(&store, CAPS).await;
}

#[tokio::test]
async fn conformance_two_servers_spread_and_order() {
    let (Some(a), Some(b2)) = (Memcached::start(), Memcached::start()) else {
        return;
    };
    let servers = vec![a.addr().to_string(), b2.addr().to_string()];
    let store = MemcachedStore::open("mc2", &servers, None).unwrap();

    // Keys spread over both servers, and a multi-get mixing both (and
    // misses, and duplicates) answers in input order.
    let entries: Vec<(Bytes, Entry)> = (0..1000)
        .map(|i| {
            (
                Bytes::from(format!("k{i}")),
                Entry::with_flags(format!("v{i}"), None, i),
            )
        })
        .collect();
    store.set_many(&entries).await.unwrap();
    let (na, nb) = (curr_items(&a), curr_items(&b2));
    assert_eq!(na + nb, 1000);
    assert!(na > 300 && nb > 300, "spread {na}/{nb}");
    let mut keys: Vec<Bytes> = entries.iter().rev().map(|(k, _)| k.clone()).collect();
    keys.insert(10, b("missing"));
    keys.push(b("k5"));
    let got = store.get_many(&keys).await.unwrap();
    for (k, g) in keys.iter().zip(&got) {
        let want = entries.iter().find(|(ek, _)| ek == k).map(|(_, e)| e);
        assert_eq!(g.as_ref(), want, "key {k:?}");
    }
    // A key's server is the one the ring names.
    let on_a = (0..1000)
        .map(|i| format!("k{i}"))
        .find(|k| store.server_of(k.as_bytes()) == 0)
        .unwrap();
    assert!(text_get(&a, &on_a).is_some());
    assert!(text_get(&b2, &on_a).is_none());

    store.clear().await.unwrap();
    assert!(store
        .get_many(&keys)
        .await
        .unwrap()
        .iter()
        .all(Option::is_none));
    check_store(&store, CAPS).await;
}

#[tokio::test]
async fn layout_flags_expiry_and_odd_keys() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let store = MemcachedStore::open("mc", &[mc.addr().to_string()], None).unwrap();
    let at = now_ms() + 10 * 24 * 3600 * 1000;
    let far = now_ms() + 40 * 24 * 3600 * 1000; // absolute memcached exptime
    let long_key = Bytes::from(vec![b'x'; 300]);
    let long_binary = Bytes::from(vec![b' '; 200]);
    store
        .set_many(&[
            (b("plain"), Entry::with_flags("v", None, 42)),
            (b("ttl"), Entry::with_expiry("t", Some(at))),
            (b("far"), Entry::with_expiry("f", Some(far))),
            (long_key.clone(), Entry::new("long")),
            (long_binary.clone(), Entry::new("long binary")),
            (b("with space"), Entry::new("spaced")),
        ])
        .await
        .unwrap();
    // Native flags; the value behind a one-byte header.
    assert_eq!(text_get(&mc, "plain"), Some((42, b"\0v".to_vec())));
    let got = store
        .get_many(&[b("ttl"), b("far"), long_key, long_binary, b("with space")])
        .await
        .unwrap();
    assert_eq!(got[0], Some(Entry::with_expiry("t", Some(at))));
    assert_eq!(got[1], Some(Entry::with_expiry("f", Some(far))));
    assert_eq!(got[2], Some(Entry::new("long")));
    assert_eq!(got[3], Some(Entry::new("long binary")));
    assert_eq!(got[4], Some(Entry::new("spaced")));
    // Listing is refused with a reason.
    let err = store.count().await.unwrap_err();
    assert!(err.message.contains("cannot"), "{err}");
    let err = store
        .scan_keys(std::ops::Bound::Unbounded, b"", 10, now_ms())
        .await
        .unwrap_err();
    assert!(err.message.contains("cannot list"), "{err}");
}

#[tokio::test]
async fn big_values_in_a_batch_do_not_deadlock() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let store = MemcachedStore::open(
        "mc",
        &[mc.addr().to_string()],
        Some(Duration::from_secs(20)),
    )
    .unwrap();
    let value = Bytes::from(vec![7u8; 500_000]);
    let entries: Vec<(Bytes, Entry)> = (0..40)
        .map(|i| (Bytes::from(format!("big{i}")), Entry::new(value.clone())))
        .collect();
    store.set_many(&entries).await.unwrap();
    let keys: Vec<Bytes> = entries.iter().map(|(k, _)| k.clone()).collect();
    let got = store.get_many(&keys).await.unwrap();
    assert!(got
        .iter()
        .all(|g| g.as_ref().map(|e| e.value.len()) == Some(500_000)));
}

#[tokio::test]
async fn too_large_value_is_an_error_and_the_store_goes_on() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let store = MemcachedStore::open("mc", &[mc.addr().to_string()], None).unwrap();
    let huge = Bytes::from(vec![1u8; 2 << 20]); // over memcached's 1 MB items
    let err = store
        .set_many(&[(b("huge"), Entry::new(huge))])
        .await
        .unwrap_err();
    assert!(err.message.contains("SERVER_ERROR"), "{err}");
    store.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    assert_eq!(
        store.get_many(&[b("k")]).await.unwrap()[0],
        Some(Entry::new("v"))
    );
}

#[tokio::test]
async fn outage_fails_fast_and_recovers_after_restart() {
    let Some(mut mc) = Memcached::start() else {
        return;
    };
    let timeout = Duration::from_millis(500);
    let store = MemcachedStore::open("mc", &[mc.addr().to_string()], Some(timeout)).unwrap();
    store.set_many(&[(b("k"), Entry::new("1"))]).await.unwrap();
    mc.kill();
    for _ in 0..6 {
        let t = Instant::now();
        let err = store.get_many(&[b("k")]).await.unwrap_err();
        assert!(t.elapsed() < timeout * 2, "took {:?}", t.elapsed());
        assert_eq!(err.store, "mc");
        assert!(err.message.contains(&mc.addr().to_string()), "{err}");
    }
    mc.restart();
    for i in 0..6 {
        let v = format!("{i}");
        store
            .set_many(&[(b("k"), Entry::new(v.clone()))])
            .await
            .unwrap();
        assert_eq!(
            store.get_many(&[b("k")]).await.unwrap()[0],
            Some(Entry::new(v))
        );
    }
}

#[tokio::test]
async fn a_hung_server_times_out() {
    let Some(mc) = Memcached::start() else {
        return;
    };
    let timeout = Duration::from_millis(300);
    let store = MemcachedStore::open("mc", &[mc.addr().to_string()], Some(timeout)).unwrap();
    store.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    mc.pause();
    let t = Instant::now();
    let err = store.get_many(&[b("k")]).await.unwrap_err();
    let took = t.elapsed();
    mc.resume();
    assert!(took >= timeout && took < timeout * 3, "took {took:?}");
    assert!(err.message.contains("timed out"), "{err}");
    // The timed-out connection was dropped; a fresh one works.
    for _ in 0..8 {
        assert_eq!(
            store.get_many(&[b("k")]).await.unwrap()[0],
            Some(Entry::new("v"))
        );
    }
}
