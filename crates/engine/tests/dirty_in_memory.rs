//! A write-back namespace keeps a dirty key's value only in the memory
//! tier, pinned, and queues just the key (see `writeback.rs`). These are
//! the cases where reading that tier alone, or flushing what it held at
//! one moment, would give a wrong answer.

mod support;

use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use support::{flushing_on_demand, on_demand_in_chunks};
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{now_ms, Entry};

fn stored(sor: &MemoryStore, key: &[u8]) -> Option<Bytes> {
    sor.snapshot().get(key).map(|e| e.value.clone())
}

/// The flush stores the value it read and unpins it only if no newer write
/// came meanwhile; that newer write's writer found the key dirty and did
/// not queue it, so the flush must.
#[tokio::test]
async fn a_write_that_lands_while_its_key_is_flushed_is_flushed_next() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let slow = Arc::new(FlakyStore::new(sor.clone()));
    slow.set_write_delay(Duration::from_millis(200));
    let engine = flushing_on_demand(dir.path(), slow.clone()).await;
    engine.set("k", "v1").await.unwrap();
    let (flushed, ()) = tokio::join!(engine.flush(), async {
        tokio::time::sleep(Duration::from_millis(50)).await;
        engine.set("k", "v2").await.unwrap();
    });
    flushed.unwrap();
    assert_eq!(stored(&sor, b"k").as_deref(), Some(&b"v1"[..]));
    assert!(engine.memory().is_pinned(b"k"), "v2 is not stored yet");
    slow.set_write_delay(Duration::ZERO);
    engine.flush().await.unwrap();
    assert_eq!(stored(&sor, b"k").as_deref(), Some(&b"v2"[..]));
    assert!(!engine.memory().is_pinned(b"k"));
    assert_eq!(engine.stats().writeback_pending, 0);
}

/// A dirty entry past its expiry is not read, and not dropped by active
/// expiry either: it still says the key is gone, over the older value the
/// store holds, until the flush has stored that.
#[tokio::test]
async fn a_dirty_write_that_expires_before_its_flush_hides_the_stored_value() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let engine = flushing_on_demand(dir.path(), sor.clone()).await;
    engine.set("k", "old").await.unwrap();
    engine.flush().await.unwrap();
    let mut s = engine.session();
    s.set_entry("k".into(), Entry::with_expiry("new", Some(now_ms() + 50)))
        .await
        .unwrap();
    s.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    engine.memory().expire_due(now_ms(), usize::MAX);
    assert!(engine.memory().is_pinned(b"k"), "kept until flushed");
    assert_eq!(
        engine.get(b"k").await.unwrap(),
        None,
        "not the stored value"
    );
    engine.flush().await.unwrap();
    // Clean now: active expiry drops it.
    assert_eq!(engine.memory().expire_due(now_ms(), usize::MAX), 1);
    assert_eq!(engine.memory().len(), 0);
    assert_eq!(engine.get(b"k").await.unwrap(), None);
}

/// A value larger than a memory-tier shard is never admitted: the queue
/// keeps the write itself, reads find it there, and a later write the tier
/// does admit supersedes it, also when the older one sits in a batch whose
/// flush failed.
#[tokio::test]
async fn a_write_the_memory_tier_rejects_is_read_and_flushed_from_the_queue() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let flaky = Arc::new(FlakyStore::new(sor.clone()));
    let engine = on_demand_in_chunks(dir.path(), flaky.clone(), 1_000_000)
        .memory_bytes(64 << 20) // 64 shards of 1 MiB
        .build()
        .await
        .unwrap();
    let big = Bytes::from(vec![7u8; 2 << 20]);
    engine.set("k", big.clone()).await.unwrap();
    assert!(engine.memory().get(b"k", 0).is_none(), "not admitted");
    assert_eq!(engine.get(b"k").await.unwrap().unwrap().value, big);

    flaky.set_down(true);
    assert!(engine.flush().await.is_err());
    engine.set("k", "small").await.unwrap();
    assert_eq!(
        &engine.get(b"k").await.unwrap().unwrap().value[..],
        b"small"
    );
    flaky.set_down(false);
    engine.flush().await.unwrap();
    assert_eq!(stored(&sor, b"k").as_deref(), Some(&b"small"[..]));

    engine.set("k", big.clone()).await.unwrap();
    engine.flush().await.unwrap();
    assert_eq!(stored(&sor, b"k"), Some(big));
    assert_eq!(engine.stats().writeback_pending, 0);
}

/// A write of exactly what the stores hold (the clean entry it replaces:
/// same value, expiry and flags) leaves the key clean and is not flushed,
/// when the stores are this server's alone. A store someone else writes
/// shows which writes reach it.
#[tokio::test]
async fn an_unchanged_write_is_not_flushed_again_to_an_exclusive_store() {
    use tiercache_engine::Store;
    for exclusive in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let sor = Arc::new(if exclusive {
            MemoryStore::new_exclusive("sor")
        } else {
            MemoryStore::new("sor")
        });
        let engine = flushing_on_demand(dir.path(), sor.clone()).await;
        engine.set("k", "v").await.unwrap();
        engine.flush().await.unwrap();
        let other = Entry::new("changed behind the cache's back");
        sor.set_many(&[(Bytes::from_static(b"k"), other)])
            .await
            .unwrap();

        engine.set("k", "v").await.unwrap();
        assert_eq!(engine.memory().is_pinned(b"k"), !exclusive);
        engine.flush().await.unwrap();
        let want: &[u8] = if exclusive {
            b"changed behind the cache's back"
        } else {
            b"v"
        };
        assert_eq!(
            stored(&sor, b"k").as_deref(),
            Some(want),
            "exclusive: {exclusive}"
        );

        engine.set("k", "w").await.unwrap();
        assert!(engine.memory().is_pinned(b"k"), "a changed value is dirty");
        engine.flush().await.unwrap();
        assert_eq!(stored(&sor, b"k").as_deref(), Some(&b"w"[..]));
        let mut s = engine.session();
        s.set_entry("k".into(), Entry::with_expiry("w", Some(now_ms() + 60_000)))
            .await
            .unwrap();
        s.commit().await.unwrap();
        assert!(engine.memory().is_pinned(b"k"), "a new expiry is a change");
        engine.flush().await.unwrap();
        assert!(sor.snapshot()[&b"k"[..]].expires_at.is_some());
        assert_eq!(engine.stats().writeback_pending, 0);
    }
}

/// A flush reads each chunk of `flush_batch` dirty values just before
/// storing it: a write that lands while an earlier chunk is being stored
/// goes out with its own chunk, not in the next flush.
#[tokio::test]
async fn a_flush_reads_each_chunk_when_it_stores_it() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let gated = Arc::new(FlakyStore::new(sor.clone()));
    let engine = on_demand_in_chunks(dir.path(), gated.clone(), 100)
        .build()
        .await
        .unwrap();
    for i in 0..200 {
        engine.set(format!("k{i:03}"), "old").await.unwrap();
    }
    gated.hold_writes();
    let (flushed, ()) = tokio::join!(engine.flush(), async {
        // Meanwhile the flush waits for the store with its first chunk
        // (k000..k099). (Were it slower to get there, the write below would
        // come before the flush took its keys, and the test would pass
        // without showing anything: it cannot fail because of timing.)
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(gated.inner().is_empty());
        engine.set("k150", "new").await.unwrap();
        gated.allow_writes(1 << 20);
    });
    flushed.unwrap();
    assert_eq!(stored(&sor, b"k150").as_deref(), Some(&b"new"[..]));
    assert!(!engine.memory().is_pinned(b"k150"), "stored in this flush");
    assert_eq!(engine.stats().writeback_pending, 0);
    assert_eq!(sor.len(), 200);
}

/// `reload_from_stores` (Redis's `DEBUG RELOAD`) writes everything back and
/// empties the memory tier of what the stores hold, so reads come from the
/// stores; a store-less namespace's entries are its data, and stay.
#[tokio::test]
async fn a_reload_leaves_only_what_the_stores_hold_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let engine = on_demand_in_chunks(dir.path(), sor.clone(), 1_000_000)
        .namespace(tiercache_engine::NamespaceConfig::new(
            "mem:",
            tiercache_engine::WriteMode::Through,
        ))
        .build()
        .await
        .unwrap();
    let mut s = engine.session();
    s.set_entry("k".into(), Entry::with_expiry("v", Some(now_ms() + 60_000)))
        .await
        .unwrap();
    s.set_entry("mem:k".into(), Entry::new("only here"))
        .await
        .unwrap();
    s.commit().await.unwrap();
    assert!(engine.memory().is_pinned(b"k"));
    engine.reload_from_stores().await.unwrap();
    assert_eq!(stored(&sor, b"k").as_deref(), Some(&b"v"[..]));
    assert_eq!(engine.memory().len(), 1, "only the store-less entry stays");
    let back = engine
        .get(b"k")
        .await
        .unwrap()
        .expect("read from the store");
    assert_eq!(back.value, "v");
    assert!(
        back.expires_at.is_some_and(|t| t > now_ms()),
        "the expiry survives"
    );
    assert_eq!(
        engine.get(b"mem:k").await.unwrap().unwrap().value,
        "only here"
    );
}

/// With active expiry paused (Redis's `DEBUG SET-ACTIVE-EXPIRE 0`) an
/// expired entry stays in the memory tier until read or resumed; it is
/// never returned either way.
#[tokio::test]
async fn paused_active_expiry_leaves_expired_entries_until_resumed() {
    let dir = tempfile::tempdir().unwrap();
    let engine = tiercache_engine::Engine::builder(dir.path())
        .namespace(tiercache_engine::NamespaceConfig::new(
            "default",
            tiercache_engine::WriteMode::Through,
        ))
        .build()
        .await
        .unwrap();
    engine.set_active_expiry(false);
    let mut s = engine.session();
    s.set_entry("k".into(), Entry::with_expiry("v", Some(now_ms() + 30)))
        .await
        .unwrap();
    s.commit().await.unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert_eq!(
        engine.memory().len(),
        1,
        "not expired actively while paused"
    );
    engine.set_active_expiry(true);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !engine.memory().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "never expired after resuming"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(engine.get(b"k").await.unwrap().is_none());
}
