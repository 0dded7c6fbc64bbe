//! Value kinds through every tier: a hash-kind entry keeps its kind in the
//! memory tier, across a crash (journal replay) and in the store after the
//! flush, and through the engine's own rewrites (`expire`, `rename`).

use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{
    Engine, EngineError, Entry, NamespaceConfig, SetOptions, ValueKind, WriteMode,
};

async fn open(dir: &Path, store: &Arc<MemoryStore>) -> Engine {
    Engine::builder(dir)
        .namespace(NamespaceConfig::new("default", WriteMode::Back).store(store.clone()))
        .build()
        .await
        .unwrap()
}

fn hash(v: &'static str) -> Entry {
    Entry::with_kind(v, None, 0, ValueKind::Hash)
}

#[tokio::test]
async fn kinds_survive_a_crash_through_the_journal_and_reach_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store).await;
    let mut s = engine.session();
    s.set_many(vec![
        ("h".into(), hash("fields")),
        ("s".into(), Entry::new("str")),
    ])
    .await
    .unwrap();
    assert!(s.expire(b"h", Some(u64::MAX / 2)).await.unwrap());
    s.commit().await.unwrap();
    assert_eq!(s.get(b"h").await.unwrap().unwrap().kind, ValueKind::Hash);
    drop(s);
    drop(engine); // a crash: nothing flushed
    tokio::time::sleep(Duration::from_millis(5)).await;
    assert!(
        store.is_empty(),
        "nothing reached the store before the crash"
    );

    let engine = open(dir.path(), &store).await;
    let e = engine.get(b"h").await.unwrap().unwrap();
    assert_eq!((e.kind, &e.value[..]), (ValueKind::Hash, &b"fields"[..]));
    assert_eq!(
        e.expires_at,
        Some(u64::MAX / 2),
        "expire kept the kind and set the expiry"
    );
    assert_eq!(
        engine.get(b"s").await.unwrap().unwrap().kind,
        ValueKind::String
    );
    engine.shutdown().await.unwrap();
    let stored = store.snapshot();
    assert_eq!(stored[&Bytes::from("h")].kind, ValueKind::Hash);
    assert_eq!(stored[&Bytes::from("s")].kind, ValueKind::String);
}

#[tokio::test]
async fn string_operations_refuse_other_kinds_and_rename_keeps_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(MemoryStore::new("sor"));
    let engine = open(dir.path(), &store).await;
    let mut s = engine.session();
    s.set_many(vec![("h".into(), hash("x"))]).await.unwrap();
    assert!(matches!(
        s.incr_by("h".into(), 1).await,
        Err(EngineError::WrongType)
    ));
    let get = SetOptions {
        return_old: true,
        ..Default::default()
    };
    assert!(matches!(
        s.set("h".into(), "v".into(), get).await,
        Err(EngineError::WrongType)
    ));
    assert_eq!(
        s.get(b"h").await.unwrap(),
        Some(hash("x")),
        "SET ... GET left it alone"
    );
    s.rename("h".into(), "h2".into(), false).await.unwrap();
    assert_eq!(s.get(b"h2").await.unwrap(), Some(hash("x")));
    // A plain SET replaces a hash with a string, as in Redis.
    s.set("h2".into(), "v".into(), SetOptions::default())
        .await
        .unwrap();
    assert_eq!(s.get(b"h2").await.unwrap().unwrap().kind, ValueKind::String);
    s.commit().await.unwrap();
    drop(s);
    engine.shutdown().await.unwrap();
}
