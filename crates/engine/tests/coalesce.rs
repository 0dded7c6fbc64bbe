//! A multi-key write that repeats a key in consecutive entries journals
//! only the run's last value: the batch is applied and acknowledged at once, so the
//! values in between are never visible, and writing them is waste.

use bytes::Bytes;
use std::path::Path;
use std::sync::Arc;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Engine, Entry, NamespaceConfig, WriteMode};

async fn open(dir: &Path) -> Engine {
    Engine::builder(dir)
        .namespace(
            NamespaceConfig::new("default", WriteMode::Back)
                .store(Arc::new(MemoryStore::new("sor"))),
        )
        .build()
        .await
        .unwrap()
}

/// Bytes of every file under `dir` (the journal's segments).
fn bytes_under(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| {
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                bytes_under(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

#[tokio::test]
async fn a_key_set_many_times_in_one_batch_is_journaled_once() {
    let one = tempfile::tempdir().unwrap();
    let many = tempfile::tempdir().unwrap();
    let (e1, e16) = (open(one.path()).await, open(many.path()).await);

    let mut s1 = e1.session();
    s1.set_many(vec![(Bytes::from("k"), Entry::new("v15"))])
        .await
        .unwrap();
    s1.commit().await.unwrap();
    let batch = (0..16)
        .map(|i| (Bytes::from("k"), Entry::new(format!("v{i}"))))
        .collect();
    let mut s16 = e16.session();
    s16.set_many(batch).await.unwrap();
    s16.commit().await.unwrap();

    assert_eq!(
        e16.session().get(b"k").await.unwrap().map(|e| e.value),
        Some(Bytes::from("v15")),
        "the last value wins"
    );
    // Sixteen writes of "k" journal what one write of its last value does.
    let j1 = bytes_under(&one.path().join("journal"));
    let j16 = bytes_under(&many.path().join("journal"));
    assert!(j1 > 0, "the journal holds the write");
    assert_eq!(j16, j1, "16 writes of one key in one batch: one record");
}
