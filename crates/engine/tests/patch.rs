//! Patched writes (`Change::Patch`): the write-back journal records the
//! patch instead of the whole value when the active segment already holds
//! a whole value of the key, and replay applies patches to the value
//! replayed before them. A crash loses nothing, whether it comes before a
//! flush, after one (patches after a rotation start from a whole value
//! again), after a `FLUSHALL`, or without a patcher registered.

mod support;

use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use support::on_demand_in_chunks;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Change, Engine, Entry, Patcher, ValueKind};

/// Patches that append their bytes.
struct Append;

impl Patcher for Append {
    fn apply(&self, kind: ValueKind, base: &Bytes, patch: &[u8]) -> Result<Bytes, String> {
        assert_eq!(kind, ValueKind::List, "the patch carries the value's kind");
        Ok([&base[..], patch].concat().into())
    }
}

async fn open(
    dir: &Path,
    store: &Arc<MemoryStore>,
    patcher: bool,
) -> tiercache_engine::Result<Engine> {
    let b = on_demand_in_chunks(dir, store.clone(), 1_000_000);
    let b = if patcher {
        b.patcher(Arc::new(Append))
    } else {
        b
    };
    b.build().await
}

/// Appends `tail` to the key's value (creating it), as a patch.
async fn append(engine: &Engine, key: &str, tail: &str) {
    let mut s = engine.session();
    s.modify(Bytes::copy_from_slice(key.as_bytes()), |old| {
        let base = old.map(|e| e.value.clone()).unwrap_or_default();
        let value: Bytes = [&base[..], tail.as_bytes()].concat().into();
        let entry = Entry::with_kind(value, None, 0, ValueKind::List);
        (
            Change::Patch(entry, Bytes::copy_from_slice(tail.as_bytes())),
            (),
        )
    })
    .await
    .unwrap();
    s.commit().await.unwrap();
}

async fn value(engine: &Engine, key: &str) -> Option<Bytes> {
    engine.get(key.as_bytes()).await.unwrap().map(|e| e.value)
}

#[tokio::test]
async fn patches_are_journaled_small_and_replayed_after_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    let base = "b".repeat(10_000);
    append(&engine, "k", &base).await;
    let after_base = engine.journal_bytes();
    for i in 0..200 {
        append(&engine, "k", &format!("<{i}>")).await;
    }
    let grown = engine.journal_bytes() - after_base;
    // 200 whole values would be over 2 MB; 200 patches are a few KB.
    assert!(grown < 20_000, "journal grew {grown} bytes for 200 patches");
    let expected = value(&engine, "k").await.unwrap();
    assert_eq!(
        expected.len(),
        10_000 + (0..200).map(|i| format!("<{i}>").len()).sum::<usize>()
    );
    drop(engine); // a crash: nothing flushed
    assert!(store.is_empty());
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(value(&engine, "k").await, Some(expected));
    let e = engine.get(b"k").await.unwrap().unwrap();
    assert_eq!(e.kind, ValueKind::List);
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn patches_after_a_flush_start_from_a_whole_value_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    append(&engine, "k", "base;").await;
    append(&engine, "k", "one;").await;
    // The flush stores the value and deletes the segments that hold it.
    engine.flush().await.unwrap();
    assert_eq!(
        store.snapshot().get(&b"k"[..]).map(|e| e.value.clone()),
        Some(Bytes::from("base;one;"))
    );
    append(&engine, "k", "two;").await;
    append(&engine, "k", "three;").await;
    drop(engine); // a crash after the flush
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(
        value(&engine, "k").await,
        Some(Bytes::from("base;one;two;three;"))
    );
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_flushall_between_patches_replays_to_the_new_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    append(&engine, "k", "old;").await;
    append(&engine, "k", "older;").await;
    engine.session().flush_all().await.unwrap();
    append(&engine, "k", "new;").await;
    append(&engine, "k", "newer;").await;
    drop(engine);
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(value(&engine, "k").await, Some(Bytes::from("new;newer;")));
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn without_a_patcher_patched_writes_journal_whole_values() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, false).await.unwrap();
    append(&engine, "k", &"b".repeat(10_000)).await;
    let after_base = engine.journal_bytes();
    append(&engine, "k", "x").await;
    assert!(
        engine.journal_bytes() - after_base > 10_000,
        "a whole value"
    );
    drop(engine);
    let engine = open(dir.path(), &store, false).await.unwrap();
    assert_eq!(value(&engine, "k").await.unwrap().len(), 10_001);
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_journal_holding_patches_does_not_open_without_a_patcher() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    // Created whole, then whole again (the first patched write of the
    // key in this segment), then a patch.
    append(&engine, "k", "base;").await;
    append(&engine, "k", "whole;").await;
    append(&engine, "k", "patch;").await;
    drop(engine);
    let err = open(dir.path(), &store, false)
        .await
        .err()
        .expect("refused");
    assert!(err.to_string().contains("no patcher"), "{err}");
    // With it, everything is there.
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(
        value(&engine, "k").await,
        Some(Bytes::from("base;whole;patch;"))
    );
    engine.shutdown().await.unwrap();
}

#[tokio::test]
async fn a_patch_of_an_absent_key_is_a_whole_value() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    // The closure's patch assumes a base; there is none, so the whole
    // value is written, and replay does not need one.
    append(&engine, "fresh", "whole").await;
    drop(engine);
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(value(&engine, "fresh").await, Some(Bytes::from("whole")));
    engine.shutdown().await.unwrap();
}

/// Appends `tail` to two keys in one `modify_many`, both as patches.
async fn append_both(engine: &Engine, keys: [&str; 2], tail: &str) {
    let mut s = engine.session();
    let keys: Vec<Bytes> = keys
        .iter()
        .map(|k| Bytes::copy_from_slice(k.as_bytes()))
        .collect();
    s.modify_many(keys, |found| {
        let changes = found
            .iter()
            .map(|old| {
                let base = old.as_ref().map(|e| e.value.clone()).unwrap_or_default();
                let value: Bytes = [&base[..], tail.as_bytes()].concat().into();
                let entry = Entry::with_kind(value, None, 0, ValueKind::List);
                Change::Patch(entry, Bytes::copy_from_slice(tail.as_bytes()))
            })
            .collect();
        (changes, ())
    })
    .await
    .unwrap();
    s.commit().await.unwrap();
}

#[tokio::test]
async fn multi_key_writes_journal_patches_too() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store, true).await.unwrap();
    let base = "b".repeat(10_000);
    append_both(&engine, ["x", "y"], &base).await;
    append_both(&engine, ["x", "y"], "whole;").await;
    let before = engine.journal_bytes();
    for i in 0..100 {
        append_both(&engine, ["x", "y"], &format!("<{i}>")).await;
    }
    let grown = engine.journal_bytes() - before;
    assert!(grown < 20_000, "journal grew {grown} bytes for 200 patches");
    let (x, y) = (value(&engine, "x").await, value(&engine, "y").await);
    assert_eq!(x, y);
    drop(engine);
    let engine = open(dir.path(), &store, true).await.unwrap();
    assert_eq!(value(&engine, "x").await, x);
    assert_eq!(value(&engine, "y").await, y);
    engine.shutdown().await.unwrap();
}
