//! Client flags and cas uniques through every tier: the memory tier, the
//! write-back journal (crash replay), the stores (eviction, restart); and
//! `Session::modify` / `compare_and_set` atomicity.

use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{
    CasOutcome, Change, Engine, Entry, NamespaceConfig, SetOptions, Store, WriteMode,
};

async fn open(dir: &Path, store: &Arc<MemoryStore>, mode: WriteMode, memory: u64) -> Engine {
    Engine::builder(dir)
        .memory_bytes(memory)
        .namespace(NamespaceConfig::new("default", mode).store(store.clone()))
        .build()
        .await
        .unwrap()
}

fn key(i: usize) -> Bytes {
    Bytes::from(format!("key:{i}"))
}

#[tokio::test]
async fn flags_survive_eviction_to_the_store_in_every_write_mode() {
    for mode in [WriteMode::Back, WriteMode::Through, WriteMode::Around] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new("sor"));
        // A small memory tier: most of the 2000 keys are evicted.
        let engine = open(dir.path(), &store, mode, 1 << 20).await;
        let value = vec![b'v'; 2000];
        for i in 0..2000 {
            let mut s = engine.session();
            s.set_many(vec![(
                key(i),
                Entry::with_flags(value.clone(), None, i as u32 * 7),
            )])
            .await
            .unwrap();
            s.commit().await.unwrap();
        }
        engine.flush().await.unwrap();
        assert!(
            engine.memory().len() < 2000,
            "{mode:?}: some keys were evicted"
        );
        for i in 0..2000 {
            let e = engine.get(&key(i)).await.unwrap().unwrap();
            assert_eq!(e.flags, i as u32 * 7, "{mode:?} key {i}");
            assert_ne!(e.cas, 0, "an entry read back from a store gets a unique");
        }
        let stored = store.get_many(&[key(1)]).await.unwrap();
        assert_eq!(stored[0].as_ref().unwrap().flags, 7);
        engine.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn flags_survive_a_crash_through_the_journal() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, WriteMode::Back, 64 << 20).await;
    let mut s = engine.session();
    s.set_many(vec![
        ("flagged".into(), Entry::with_flags("a", None, u32::MAX)),
        ("plain".into(), Entry::new("b")),
    ])
    .await
    .unwrap();
    s.modify("flagged".into(), |old| {
        let old = old.unwrap();
        let v = [&old.value[..], b"c"].concat();
        (Change::Put(Entry::with_flags(v, None, old.flags)), ())
    })
    .await
    .unwrap();
    s.commit().await.unwrap();
    drop(s);
    drop(engine); // a crash: nothing flushed
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(
        store.is_empty(),
        "nothing reached the store before the crash"
    );
    let engine = open(dir.path(), &store, WriteMode::Back, 64 << 20).await;
    let e = engine.get(b"flagged").await.unwrap().unwrap();
    assert_eq!((&e.value[..], e.flags), (&b"ac"[..], u32::MAX));
    assert_ne!(e.cas, 0, "replayed entries get a unique");
    assert_eq!(engine.get(b"plain").await.unwrap().unwrap().flags, 0);
    engine.shutdown().await.unwrap();
    assert_eq!(store.snapshot()[&Bytes::from("flagged")].flags, u32::MAX);
}

#[tokio::test]
async fn every_write_gets_a_new_unique_and_touch_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let engine = Engine::builder(dir.path()).build().await.unwrap();
    let cas = |e: Option<Entry>| e.unwrap().cas;
    engine.set("k", "1").await.unwrap();
    let c1 = cas(engine.get(b"k").await.unwrap());
    let mut s = engine.session();
    // A Redis-style SET (flags reset to 0) is a write too.
    s.set("k".into(), "2".into(), SetOptions::default())
        .await
        .unwrap();
    let c2 = cas(s.get(b"k").await.unwrap());
    assert!(c2 > c1, "uniques increase");
    let far = tiercache_engine::now_ms() + 3_600_000;
    let m = s
        .modify("k".into(), |_| (Change::Touch(Some(far)), ()))
        .await
        .unwrap();
    let touched = m.entry.unwrap();
    assert_eq!((touched.cas, touched.expires_at), (c2, Some(far)));
    assert_eq!(s.get(b"k").await.unwrap().unwrap().cas, c2);
    // Touch of an absent key changes nothing; touch in the past deletes.
    let m = s
        .modify("absent".into(), |_| (Change::Touch(None), ()))
        .await
        .unwrap();
    assert!(m.entry.is_none());
    s.modify("k".into(), |_| (Change::Touch(Some(1)), ()))
        .await
        .unwrap();
    assert!(s.get(b"k").await.unwrap().is_none());
    // A Put already expired deletes, Keep reports the current entry.
    s.set_many(vec![("x".into(), Entry::new("v"))])
        .await
        .unwrap();
    let m = s
        .modify("x".into(), |_| {
            (Change::Put(Entry::with_expiry("w", Some(1))), ())
        })
        .await
        .unwrap();
    assert!(m.entry.is_none());
    assert!(s.get(b"x").await.unwrap().is_none());
    s.commit().await.unwrap();
}

#[tokio::test]
async fn compare_and_set_lets_exactly_one_of_racing_writers_win() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = Arc::new(open(dir.path(), &store, WriteMode::Back, 64 << 20).await);
    engine.set("counter", "0").await.unwrap();
    // 8 tasks each do 50 read-increment-cas loops; every success is one increment.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            let mut wins = 0u64;
            for _ in 0..50 {
                loop {
                    let e = engine.get(b"counter").await.unwrap().unwrap();
                    let n: u64 = std::str::from_utf8(&e.value).unwrap().parse().unwrap();
                    let mut s = engine.session();
                    let out = s
                        .compare_and_set("counter".into(), e.cas, Entry::new((n + 1).to_string()))
                        .await
                        .unwrap();
                    s.commit().await.unwrap();
                    match out {
                        CasOutcome::Stored(c) => {
                            assert!(c > e.cas);
                            wins += 1;
                            break;
                        }
                        CasOutcome::Exists => tokio::task::yield_now().await,
                        CasOutcome::NotFound => panic!("the counter vanished"),
                    }
                }
            }
            wins
        }));
    }
    let mut total = 0;
    for t in tasks {
        total += t.await.unwrap();
    }
    assert_eq!(total, 400);
    assert_eq!(engine.get(b"counter").await.unwrap().unwrap().value, "400");
    let mut s = engine.session();
    assert_eq!(
        s.compare_and_set("missing".into(), 1, Entry::new("x"))
            .await
            .unwrap(),
        CasOutcome::NotFound
    );
}

/// The per-key stripe locks serialise read-modify-writes across worker
/// threads: no increment is lost, on one hot key or on many keys that share
/// stripes (256 keys over the engine's 1,024 stripes collide often enough).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn increments_from_many_threads_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = Arc::new(open(dir.path(), &store, WriteMode::Back, 64 << 20).await);
    let mut tasks = Vec::new();
    for t in 0..16u64 {
        let engine = engine.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..200u64 {
                let mut s = engine.session();
                s.incr_by(Bytes::from_static(b"hot"), 1).await.unwrap();
                let other = Bytes::from(format!("k{}", (t * 200 + i) % 256));
                s.incr_by(other, 2).await.unwrap();
                s.commit().await.unwrap();
                if i % 16 == 0 {
                    tokio::task::yield_now().await;
                }
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let value = |e: Entry| -> u64 { std::str::from_utf8(&e.value).unwrap().parse().unwrap() };
    assert_eq!(value(engine.get(b"hot").await.unwrap().unwrap()), 16 * 200);
    let mut total = 0;
    for k in 0..256 {
        total += value(
            engine
                .get(format!("k{k}").as_bytes())
                .await
                .unwrap()
                .unwrap(),
        );
    }
    assert_eq!(total, 16 * 200 * 2);
}
