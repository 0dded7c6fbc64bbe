//! Lazy expiry: a read that comes across an expired entry in the memory
//! tier drops it and reports it to the expiry listeners, as Redis's
//! `expireIfNeeded` does, also while active expiry is paused. Until then
//! the key still counts in `key_stats` when active expiry is paused (what
//! Redis's `DBSIZE` counts). A session's frozen clock holds for its batched
//! reads too. And a key's slot stays put when it is overwritten.

use bytes::Bytes;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{now_ms, Engine, Entry, ExpiryListener, NamespaceConfig, WriteMode};

/// Collects the keys it is told of.
#[derive(Default)]
struct Collect(Mutex<Vec<Bytes>>);

impl ExpiryListener for Collect {
    fn wants_expired(&self) -> bool {
        true
    }
    fn expired(&self, keys: &[Bytes]) {
        self.0.lock().unwrap().extend_from_slice(keys);
    }
}

async fn write_through(dir: &std::path::Path) -> Engine {
    Engine::builder(dir)
        .memory_bytes(16 << 20)
        .namespace(
            NamespaceConfig::new("default", WriteMode::Through)
                .store(Arc::new(MemoryStore::new("sor"))),
        )
        .build()
        .await
        .unwrap()
}

/// Writes `keys` expiring 100 ms from now and waits until they have
/// expired. (A write already expired when it is made is a delete: the
/// margin keeps a loaded machine from making one.)
async fn write_expired(s: &mut tiercache_engine::Session<'_>, keys: &[&str]) {
    let soon = Some(now_ms() + 100);
    for k in keys {
        s.set_entry(
            Bytes::copy_from_slice(k.as_bytes()),
            Entry::with_expiry("v", soon),
        )
        .await
        .unwrap();
    }
    s.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
}

#[tokio::test]
async fn a_read_drops_an_expired_entry_and_reports_it() {
    let dir = tempfile::tempdir().unwrap();
    let engine = write_through(dir.path()).await;
    let heard = Arc::new(Collect::default());
    let listener: Arc<dyn ExpiryListener> = heard.clone();
    engine.add_expiry_listener(Arc::downgrade(&listener));
    engine.set_active_expiry(false);

    let mut s = engine.session();
    s.set_entry(Bytes::from("live"), Entry::new("v"))
        .await
        .unwrap();
    write_expired(&mut s, &["a", "b", "c"]).await;

    // Expired, but held: counted, as Redis counts keys not yet reclaimed.
    assert_eq!(s.key_stats().await.unwrap().keys, 4);
    assert_eq!(engine.memory().len(), 4);
    assert!(heard.0.lock().unwrap().is_empty());

    // One read alone, then a batched read of the other two.
    assert_eq!(s.get(b"a").await.unwrap(), None);
    assert_eq!(engine.memory().len(), 3);
    assert_eq!(s.key_stats().await.unwrap().keys, 3);
    let got = s
        .get_many(&[Bytes::from("b"), Bytes::from("c"), Bytes::from("live")])
        .await
        .unwrap();
    assert!(got[0].is_none() && got[1].is_none() && got[2].is_some());
    assert_eq!(s.key_stats().await.unwrap().keys, 1);
    assert_eq!(engine.memory().len(), 1);
    let mut heard_keys = heard.0.lock().unwrap().clone();
    heard_keys.sort();
    assert_eq!(heard_keys, ["a", "b", "c"]);

    // A second read of a dropped key reports nothing more.
    assert_eq!(s.get(b"a").await.unwrap(), None);
    assert_eq!(heard.0.lock().unwrap().len(), 3);
}

#[tokio::test]
async fn with_active_expiry_running_key_stats_count_live_keys() {
    let dir = tempfile::tempdir().unwrap();
    let engine = write_through(dir.path()).await;
    engine.set_active_expiry(false);
    let mut s = engine.session();
    write_expired(&mut s, &["k"]).await;
    assert_eq!(s.key_stats().await.unwrap().keys, 1, "held while paused");
    engine.set_active_expiry(true);
    assert_eq!(
        s.key_stats().await.unwrap().keys,
        0,
        "live keys only while active expiry runs"
    );
}

#[tokio::test]
async fn get_or_load_drops_an_expired_entry_before_loading() {
    let dir = tempfile::tempdir().unwrap();
    let engine = write_through(dir.path()).await;
    engine.set_active_expiry(false);
    let heard = Arc::new(Collect::default());
    let listener: Arc<dyn ExpiryListener> = heard.clone();
    engine.add_expiry_listener(Arc::downgrade(&listener));
    let mut s = engine.session();
    write_expired(&mut s, &["k"]).await;
    let v = engine
        .get_or_load(b"k", || async { Ok(Some(Entry::new("loaded"))) })
        .await
        .unwrap();
    assert_eq!(v.unwrap().value, "loaded");
    assert_eq!(*heard.0.lock().unwrap(), ["k"]);
}

#[tokio::test]
async fn an_overwrite_keeps_the_keys_slot() {
    let dir = tempfile::tempdir().unwrap();
    let engine = write_through(dir.path()).await;
    engine.set("n", "20000").await.unwrap();
    let before = engine.memory_address(b"n").expect("held in memory");
    engine.set("n", "20001").await.unwrap();
    assert_eq!(engine.memory_address(b"n"), Some(before));
    assert_eq!(engine.memory_address(b"absent"), None);
}

#[tokio::test]
async fn batched_reads_check_expiry_against_the_frozen_clock() {
    let dir = tempfile::tempdir().unwrap();
    let engine = write_through(dir.path()).await;
    engine.set_active_expiry(false);
    let mut s = engine.session();
    s.freeze_clock();
    write_expired(&mut s, &["k"]).await;
    // Expired by the wall clock, live at the frozen time (a script's run).
    let keys = [Bytes::from("k")];
    assert!(s.get_many(&keys).await.unwrap()[0].is_some());
    assert_eq!(s.exists_many(&keys).await.unwrap(), 1);
    let mut fresh = engine.session();
    assert_eq!(fresh.exists_many(&keys).await.unwrap(), 0);
    assert!(fresh.get_many(&keys).await.unwrap()[0].is_none());
}
