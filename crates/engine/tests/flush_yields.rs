//! A write-back flush shares the request threads with the connections (on
//! one core, the only thread): its per-key bookkeeping (building the batch,
//! the key filter, unpinning, releasing the flushed entries) lets other
//! tasks run as it goes, instead of holding the thread for the whole batch.
//!
//! Counted, not timed: a task that records each time it runs, and how many
//! times it ran while one flush of 10,000 keys was in progress. The gap it
//! saw is printed (`--nocapture`) for information only.

mod support;

use async_trait::async_trait;
use bytes::Bytes;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;
use tiercache_engine::{Entry, Mutation, Store, StoreError};

/// A store that only counts what it is given, at once: whatever other
/// tasks get to run during a flush, the engine let them.
#[derive(Default)]
struct CountingStore {
    written: AtomicU64,
}

#[async_trait]
impl Store for CountingStore {
    fn name(&self) -> &str {
        "counting"
    }
    fn exclusive(&self) -> bool {
        true // so the key filter records the flushed keys, as for SQLite
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        Ok(vec![None; keys.len()])
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.written
            .fetch_add(entries.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    async fn delete_many(&self, _keys: &[Bytes]) -> Result<(), StoreError> {
        Ok(())
    }
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.written
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        Ok(())
    }
    async fn count(&self) -> Result<u64, StoreError> {
        Ok(self.written.load(Ordering::Relaxed))
    }
    async fn clear(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test(flavor = "current_thread")]
async fn a_flush_of_ten_thousand_keys_lets_other_tasks_run() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(CountingStore::default());
    let engine = support::flushing_on_demand(dir.path(), store.clone()).await;
    // A first flush warms up what a long-running server has warm (the key
    // filter's pages are touched for the first time, for one).
    for i in 0..10_000 {
        engine.set(format!("warm:{i}"), "value").await.unwrap();
    }
    engine.flush().await.unwrap();
    for i in 0..10_000 {
        engine.set(format!("key:{i}"), "value").await.unwrap();
    }

    let runs = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let longest_gap = Arc::new(AtomicU64::new(0));
    let ticker = tokio::spawn({
        let (runs, stop, longest_gap) = (runs.clone(), stop.clone(), longest_gap.clone());
        async move {
            let mut last = Instant::now();
            while !stop.load(Ordering::Relaxed) {
                runs.fetch_add(1, Ordering::Relaxed);
                let now = Instant::now();
                let gap = now.duration_since(last).as_micros() as u64;
                longest_gap.fetch_max(gap, Ordering::Relaxed);
                last = now;
                tokio::task::yield_now().await;
            }
        }
    });
    tokio::task::yield_now().await; // the ticker is running
    let before = runs.load(Ordering::Relaxed);
    longest_gap.store(0, Ordering::Relaxed);
    let started = Instant::now();
    engine.flush().await.unwrap();
    let took = started.elapsed();
    let during = runs.load(Ordering::Relaxed) - before;
    stop.store(true, Ordering::Relaxed);
    ticker.await.unwrap();

    assert_eq!(
        store.written.load(Ordering::Relaxed),
        20_000,
        "the flushes wrote every key"
    );
    assert_eq!(engine.stats().writeback_pending, 0);
    eprintln!(
        "flush of 10,000 keys: {took:?}; another task ran {during} times, longest gap {} µs",
        longest_gap.load(Ordering::Relaxed)
    );
    // Every 128 keys in each pass over the batch: well over 100 turns.
    // Before, none: the flush never waited for anything here.
    assert!(
        during >= 100,
        "another task ran only {during} times during the flush"
    );
    engine.shutdown().await.unwrap();
}
