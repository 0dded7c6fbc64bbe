//! The key filter of a namespace whose stores are all exclusive: misses on
//! keys the stores cannot hold skip them, and no key that is in a store is
//! ever answered absent — keys found by the startup scan, keys written
//! since (through every write mode), keys replayed from the journal after a
//! crash.

mod support;

use bytes::Bytes;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Engine, Entry, NamespaceConfig, Store, WriteMode};

async fn open(dir: &Path, store: &Arc<MemoryStore>, mode: WriteMode) -> Engine {
    let engine = Engine::builder(dir)
        .namespace(NamespaceConfig::new("default", mode).store(store.clone()))
        .build()
        .await
        .unwrap();
    wait_for_filters(&engine).await;
    engine
}

/// Waits (up to 5 s) for the startup scans of the key filters.
async fn wait_for_filters(engine: &Engine) {
    for _ in 0..500 {
        if engine.key_filters_ready() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn reads(store: &MemoryStore) -> u64 {
    store.keys_read.load(Ordering::Relaxed)
}

#[tokio::test]
async fn misses_on_never_written_keys_skip_an_exclusive_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new_exclusive("sor"));
    for i in 0..30_000 {
        store
            .set_many(&[(format!("old{i}").into(), Entry::new("before"))])
            .await
            .unwrap();
    }
    let engine = open(dir.path(), &store, WriteMode::Back).await;
    assert!(engine.key_filters_ready());

    let before = reads(&store);
    let mut absent = 0;
    for i in 0..1000 {
        assert!(engine
            .get(format!("never{i}").as_bytes())
            .await
            .unwrap()
            .is_none());
        absent += 1;
    }
    let asked = reads(&store) - before;
    assert!(
        asked < 50,
        "{asked} of {absent} absent keys went to the store"
    );
    assert_eq!(
        engine.stats().store_lookups_skipped,
        absent - asked,
        "every skipped lookup is counted"
    );

    // Every key the store held at start is still found (the scan saw it).
    let keys: Vec<Bytes> = (0..30_000).map(|i| format!("old{i}").into()).collect();
    let found = engine.session().get_many(&keys).await.unwrap();
    assert!(found.iter().all(|e| e.as_ref().unwrap().value == "before"));
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn keys_written_after_start_are_found_below_the_memory_tier() {
    for mode in [WriteMode::Back, WriteMode::Through, WriteMode::Around] {
        let dir = tempfile::tempdir().unwrap();
        let store = Arc::new(MemoryStore::new_exclusive("sor"));
        let engine = open(dir.path(), &store, mode).await;
        engine.set("fresh", "v").await.unwrap();
        engine.flush().await.unwrap();
        engine.memory().clear(); // the next read must come from the store
        assert_eq!(
            engine.get(b"fresh").await.unwrap().map(|e| e.value),
            Some(Bytes::from("v")),
            "{mode:?}"
        );
        engine.delete(&["fresh".into()]).await.unwrap();
        engine.flush().await.unwrap();
        engine.memory().clear();
        assert!(engine.get(b"fresh").await.unwrap().is_none(), "{mode:?}");
        engine.shutdown().await.unwrap();
    }
}

#[tokio::test]
async fn keys_replayed_from_the_journal_after_a_crash_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new_exclusive("sor"));
    let engine = open(dir.path(), &store, WriteMode::Back).await;
    let mut s = engine.session();
    for i in 0..100 {
        s.set(
            format!("j{i}").into(),
            "journaled".into(),
            Default::default(),
        )
        .await
        .unwrap();
    }
    s.commit().await.unwrap();
    drop(s);
    drop(engine); // a crash: nothing flushed
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(store.is_empty());

    let engine = open(dir.path(), &store, WriteMode::Back).await;
    engine.flush().await.unwrap();
    assert_eq!(store.len(), 100, "the replay reached the store");
    engine.memory().clear();
    for i in 0..100 {
        let e = engine.get(format!("j{i}").as_bytes()).await.unwrap();
        assert_eq!(e.unwrap().value, "journaled");
    }
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_shared_store_is_always_asked() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("shared"));
    let engine = open(dir.path(), &store, WriteMode::Back).await;
    assert!(engine.get(b"k").await.unwrap().is_none());
    // Another client writes the store behind the engine's back.
    store
        .set_many(&[("k".into(), Entry::new("external"))])
        .await
        .unwrap();
    assert_eq!(engine.get(b"k").await.unwrap().unwrap().value, "external");
    assert_eq!(engine.stats().store_lookups_skipped, 0);
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn namespaces_sharing_an_exclusive_store_share_its_filter_and_identity() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new_exclusive("sor"));
    let engine = Engine::builder(dir.path())
        .namespace(NamespaceConfig::new("default", WriteMode::Back).store(store.clone()))
        .namespace(NamespaceConfig::new("user:", WriteMode::Through).store(store.clone()))
        .build()
        .await
        .unwrap();
    wait_for_filters(&engine).await;
    assert!(engine.key_filters_ready());
    engine.set("plain", "a").await.unwrap();
    engine.set("user:1", "b").await.unwrap();
    engine.flush().await.unwrap();
    // One store below two namespaces is counted and scanned once.
    assert_eq!(engine.session().key_stats().await.unwrap().keys, 2);
    engine.memory().clear();
    assert_eq!(engine.get(b"plain").await.unwrap().unwrap().value, "a");
    assert_eq!(engine.get(b"user:1").await.unwrap().unwrap().value, "b");
    let before = reads(&store);
    assert!(engine.get(b"user:absent").await.unwrap().is_none());
    assert!(engine.get(b"absent").await.unwrap().is_none());
    assert!(
        reads(&store) - before <= 1,
        "absent keys of both namespaces skip the store"
    );
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_namespace_with_one_shared_store_is_never_filtered() {
    let dir = tempfile::tempdir().unwrap();
    let exclusive = Arc::new(MemoryStore::new_exclusive("cache"));
    let shared = Arc::new(MemoryStore::new("sor"));
    let engine = Engine::builder(dir.path())
        .namespace(
            NamespaceConfig::new("default", WriteMode::Through)
                .store(exclusive.clone())
                .store(shared.clone()),
        )
        .build()
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    shared
        .set_many(&[("k".into(), Entry::new("external"))])
        .await
        .unwrap();
    assert_eq!(engine.get(b"k").await.unwrap().unwrap().value, "external");
    assert_eq!(engine.stats().store_lookups_skipped, 0);
    engine.shutdown().await.unwrap();
}

/// A key count looks up the stored state of dirty keys, except of those
/// the filter rules out: keys written since the last flush that were never
/// in the store cost no lookup.
#[tokio::test]
async fn key_stats_skip_lookups_of_dirty_keys_the_filter_rules_out() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new_exclusive("sor"));
    let engine = support::flushing_on_demand(dir.path(), store.clone()).await;
    wait_for_filters(&engine).await;
    assert!(engine.key_filters_ready());
    engine.set("old", "v").await.unwrap();
    engine.flush().await.unwrap();
    engine.set("old", "rewritten").await.unwrap();
    for i in 0..200 {
        engine.set(format!("new{i}"), "v").await.unwrap();
    }
    let before = reads(&store);
    assert_eq!(engine.session().key_stats().await.unwrap().keys, 201);
    let read = reads(&store) - before;
    // "old" must be read; a false positive of the filter (about 1%) may
    // add a few.
    assert!((1..=12).contains(&read), "{read} keys read for 201 dirty");
    engine.shutdown().await.unwrap();
}
