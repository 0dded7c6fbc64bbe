//! The key space as a whole: `scan_keys` pages through every place a key
//! can live (the system of record, write-back queues with their tombstones,
//! the memory tier of pure-cache namespaces, a store shared by two
//! namespaces) in byte order; `key_stats` counts the same keys; `update`
//! and `set_many_if_absent` are atomic.

mod support;

use bytes::Bytes;
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{now_ms, Engine, Entry, NamespaceConfig, Update, WriteMode};

struct Setup {
    engine: Engine,
    _dir: tempfile::TempDir,
}

/// `default` (write-back) and `s:` (write-back) share store `a`; `t:` is
/// write-through to store `b`; `c:` is a pure cache. Flushes only on demand.
async fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let a = Arc::new(MemoryStore::new("a"));
    let b = Arc::new(MemoryStore::new("b"));
    let slow = Duration::from_secs(3600);
    let engine = Engine::builder(dir.path())
        .memory_bytes(16 << 20)
        .namespace(
            NamespaceConfig::new("default", WriteMode::Back)
                .store(a.clone())
                .flush(slow, 1_000_000),
        )
        .namespace(
            NamespaceConfig::new("s:", WriteMode::Back)
                .store(a)
                .flush(slow, 1_000_000),
        )
        .namespace(NamespaceConfig::new("t:", WriteMode::Through).store(b))
        .namespace(NamespaceConfig::new("c:", WriteMode::Back))
        .build()
        .await
        .unwrap();
    Setup { engine, _dir: dir }
}

async fn all_keys(engine: &Engine, prefix: &[u8], page: usize) -> Vec<Bytes> {
    let mut s = engine.session();
    let mut out = Vec::new();
    let mut after: Option<Bytes> = None;
    loop {
        let p = s.scan_keys(after.as_deref(), prefix, page).await.unwrap();
        assert!(p.keys.len() <= page);
        out.extend(p.keys);
        match p.next {
            Some(n) => after = Some(n),
            None => return out,
        }
    }
}

fn b(s: &str) -> Bytes {
    Bytes::from(s.to_string())
}

#[tokio::test]
async fn scan_covers_every_tier_once_in_order() {
    let Setup { engine, _dir } = setup().await;
    let mut expected = BTreeSet::new();
    for i in 0..50 {
        for p in ["", "s:", "t:", "c:"] {
            let k = format!("{p}k{i:02}");
            engine.set(k.clone(), "v").await.unwrap();
            expected.insert(b(&k));
        }
    }
    // Half of the write-back keys reach the store; then some of those are
    // deleted (tombstones in the queue) and some rewritten (in both).
    engine.flush().await.unwrap();
    for i in 50..60 {
        engine.set(format!("k{i:02}"), "queued").await.unwrap();
        expected.insert(b(&format!("k{i:02}")));
    }
    let gone: Vec<Bytes> = ["k03", "s:k04", "t:k05", "c:k06"].map(b).to_vec();
    assert_eq!(engine.delete(&gone).await.unwrap(), 4);
    for k in &gone {
        expected.remove(k);
    }
    engine.set("k07", "rewritten").await.unwrap();
    // Expired keys are not listed.
    let mut s = engine.session();
    s.set_entry(b("k99"), Entry::with_expiry("x", Some(now_ms() + 30)))
        .await
        .unwrap();
    s.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let expected: Vec<Bytes> = expected.into_iter().collect();
    for page in [1, 3, 7, 1000] {
        assert_eq!(all_keys(&engine, b"", page).await, expected, "page {page}");
    }
    let t: Vec<Bytes> = expected
        .iter()
        .filter(|k| k.starts_with(b"t:"))
        .cloned()
        .collect();
    assert_eq!(all_keys(&engine, b"t:", 4).await, t);
    assert!(all_keys(&engine, b"zzz", 4).await.is_empty());

    let stats = engine.session().key_stats().await.unwrap();
    assert_eq!(stats.keys, expected.len() as u64);
    assert_eq!(stats.expires, 0);
}

#[tokio::test]
async fn scan_returns_keys_present_throughout_despite_writes() {
    let Setup { engine, _dir } = setup().await;
    let mut stable = BTreeSet::new();
    for i in 0..200 {
        let k = format!("{}k{i:03}", ["", "s:", "t:", "c:"][i % 4]);
        engine.set(k.clone(), "v").await.unwrap();
        stable.insert(b(&k));
    }
    engine.flush().await.unwrap();
    let mut s = engine.session();
    let mut seen = Vec::new();
    let mut after: Option<Bytes> = None;
    let mut round = 0;
    loop {
        let p = s.scan_keys(after.as_deref(), b"", 5).await.unwrap();
        seen.extend(p.keys);
        // Between pages: inserts everywhere, deletes of inserted keys, and
        // a flush now and then.
        round += 1;
        for j in 0..5 {
            let k = format!("{}n{round}-{j}", ["", "s:", "t:", "c:"][j % 4]);
            engine.set(k.clone(), "new").await.unwrap();
            if j % 2 == 0 {
                engine.delete(&[b(&k)]).await.unwrap();
            }
        }
        if round % 7 == 0 {
            engine.flush().await.unwrap();
        }
        match p.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let seen_set: BTreeSet<Bytes> = seen.iter().cloned().collect();
    assert_eq!(seen_set.len(), seen.len(), "a key was returned twice");
    for k in &stable {
        assert!(seen_set.contains(k), "{k:?} missed");
    }
}

#[tokio::test]
async fn key_stats_count_expiring_keys_in_every_tier() {
    let Setup { engine, _dir } = setup().await;
    let mut s = engine.session();
    let later = now_ms() + 100_000;
    for k in ["a", "s:a", "t:a", "c:a"] {
        s.set_entry(b(k), Entry::with_expiry("v", Some(later)))
            .await
            .unwrap();
    }
    for k in ["b", "s:b", "t:b", "c:b", "c:c"] {
        s.set_entry(b(k), Entry::new("v")).await.unwrap();
    }
    s.commit().await.unwrap();
    let st = s.key_stats().await.unwrap();
    assert_eq!((st.keys, st.expires), (9, 4));
    assert!(st.avg_ttl_ms > 90_000 && st.avg_ttl_ms <= 100_000, "{st:?}");
}

#[tokio::test]
async fn update_is_read_modify_write() {
    let Setup { engine, _dir } = setup().await;
    let mut s = engine.session();
    let append = |v: &'static str| {
        move |old: Option<&Entry>| {
            let mut x = old.map_or_else(Vec::new, |e| e.value.to_vec());
            x.extend_from_slice(v.as_bytes());
            let n = x.len();
            (
                match old {
                    Some(e) => Update::SetEntry(Entry::with_expiry(x, e.expires_at)),
                    None => Update::Set(x.into()),
                },
                n,
            )
        }
    };
    assert_eq!(s.update(b"k", append("ab")).await.unwrap(), 2);
    assert_eq!(s.update(b"k", append("cd")).await.unwrap(), 4);
    assert_eq!(s.get(b"k").await.unwrap().unwrap().value, "abcd");
    // An expiry in the past deletes; Keep and Delete of a missing key do nothing.
    let r = s
        .update(b"k", |_| {
            (Update::SetEntry(Entry::with_expiry("z", Some(1))), ())
        })
        .await;
    r.unwrap();
    assert_eq!(s.get(b"k").await.unwrap(), None);
    s.update(b"k", |_| (Update::Delete, ())).await.unwrap();
    s.update(b"k", |_| (Update::Keep, ())).await.unwrap();
    assert_eq!(s.get(b"k").await.unwrap(), None);

    let e = |v: &str| Entry::new(Bytes::from(v.to_string()));
    assert!(s
        .set_many_if_absent(vec![(b("x"), e("1")), (b("t:y"), e("2"))])
        .await
        .unwrap());
    assert!(!s
        .set_many_if_absent(vec![(b("z"), e("3")), (b("x"), e("4"))])
        .await
        .unwrap());
    assert_eq!(s.get(b"x").await.unwrap().unwrap().value, "1");
    assert_eq!(s.get(b"z").await.unwrap(), None);
    s.commit().await.unwrap();
}

/// `key_stats` corrects the store's count with the write-back queue instead
/// of flushing it: nothing is written, the queue stays as it was, and the
/// answer is the one a flush and then a count give.
#[tokio::test]
async fn key_stats_count_the_queue_without_flushing_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = support::flushing_on_demand(dir.path(), store.clone()).await;
    let later = now_ms() + 100_000;
    let mut s = engine.session();
    // Stored: k00..k39, the even ones expiring.
    for i in 0..40u64 {
        let expiry = (i % 2 == 0).then_some(later + i * 1000);
        s.set_entry(b(&format!("k{i:02}")), Entry::with_expiry("v", expiry))
            .await
            .unwrap();
    }
    s.commit().await.unwrap();
    engine.flush().await.unwrap();
    // Queued: deletes of stored and absent keys; overwrites that drop,
    // add and change an expiry; new keys with and without one; a new key
    // deleted again; a stored key overwritten with an entry that expires
    // before the count.
    engine
        .delete(&[b("k00"), b("k01"), b("absent")])
        .await
        .unwrap();
    s.set_entry(b("k02"), Entry::new("no expiry now"))
        .await
        .unwrap();
    s.set_entry(b("k03"), Entry::with_expiry("expiring now", Some(later)))
        .await
        .unwrap();
    s.set_entry(b("k04"), Entry::with_expiry("later", Some(later + 50_000)))
        .await
        .unwrap();
    s.set_entry(b("new1"), Entry::new("v")).await.unwrap();
    s.set_entry(b("new2"), Entry::with_expiry("v", Some(later)))
        .await
        .unwrap();
    s.set_entry(b("new3"), Entry::new("v")).await.unwrap();
    s.set_entry(b("k05"), Entry::with_expiry("soon", Some(now_ms() + 20)))
        .await
        .unwrap();
    s.commit().await.unwrap();
    engine.delete(&[b("new3")]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;

    let writes = store.write_calls.load(Ordering::Relaxed);
    let pending = engine.stats().writeback_pending;
    assert!(pending >= 9, "{pending} keys queued");
    let counted = engine.session().key_stats().await.unwrap();
    assert_eq!(
        store.write_calls.load(Ordering::Relaxed),
        writes,
        "counting wrote to the store"
    );
    assert_eq!(
        engine.stats().writeback_pending,
        pending,
        "counting flushed"
    );
    // 40 stored, k00 and k01 deleted, new1 and new2 added, k05 expired.
    assert_eq!(counted.keys, 39);
    // 20 stored expiring; k00 deleted and k02 no longer expiring, k03 and
    // new2 now expiring.
    assert_eq!(counted.expires, 20);

    engine.flush().await.unwrap();
    assert_eq!(engine.stats().writeback_pending, 0);
    let flushed = engine.session().key_stats().await.unwrap();
    assert_eq!((flushed.keys, flushed.expires), (39, 20));
    assert!(
        counted.avg_ttl_ms.abs_diff(flushed.avg_ttl_ms) < 1000,
        "{counted:?} {flushed:?}"
    );
}
