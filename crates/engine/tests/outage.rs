//! A store that fails for a while loses nothing in write-back mode: writes
//! keep being acknowledged, reads are answered from the tiers above, the
//! flusher retries with backoff, and once the store returns it holds every
//! acknowledged write — sets and deletes — exactly, and the journal empties.

mod support;

use bytes::Bytes;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{Engine, NamespaceConfig, WriteMode};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn write_back_survives_a_store_outage() {
    let dir = tempfile::tempdir().unwrap();
    let sor = Arc::new(MemoryStore::new("sor"));
    let flaky = Arc::new(FlakyStore::new(sor.clone()));
    let engine = Engine::builder(dir.path())
        .memory_bytes(64 << 20)
        .namespace(
            NamespaceConfig::new("default", WriteMode::Back)
                .store(flaky.clone())
                .flush(Duration::from_millis(20), 500),
        )
        .build()
        .await
        .unwrap();

    flaky.set_down(true);
    for i in 0..5_000u32 {
        engine
            .set(format!("k{i}"), format!("v{i}"))
            .await
            .expect("acknowledged while the store is down");
    }
    let deleted: Vec<Bytes> = (0..5_000u32)
        .step_by(7)
        .map(|i| Bytes::from(format!("k{i}")))
        .collect();
    assert_eq!(engine.delete(&deleted).await.unwrap(), deleted.len() as u64);
    // Overwrites coalesce: only the last value may reach the store.
    engine.set("k1", "final").await.unwrap();

    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(
        flaky.failures.load(Ordering::Relaxed) > 0,
        "the flusher tried and failed"
    );
    assert!(engine.stats().flush_errors > 0);
    assert!(
        sor.is_empty(),
        "nothing reached the store while it was down"
    );
    assert_eq!(
        engine.get(b"k2").await.unwrap().unwrap().value,
        "v2",
        "reads served while down"
    );
    assert!(
        engine.get(b"k7").await.unwrap().is_none(),
        "a tombstone hides the key while down"
    );

    flaky.set_down(false);
    engine
        .flush()
        .await
        .expect("flush succeeds once the store is back");
    let snap = sor.snapshot();
    let expected = 5_000 - deleted.len();
    assert_eq!(snap.len(), expected);
    for i in 0..5_000u32 {
        let got = snap
            .get(format!("k{i}").as_bytes())
            .map(|e| e.value.clone());
        let want = if i % 7 == 0 {
            None
        } else if i == 1 {
            Some(Bytes::from("final"))
        } else {
            Some(Bytes::from(format!("v{i}")))
        };
        assert_eq!(got, want, "key k{i}");
    }
    assert_eq!(engine.stats().writeback_pending, 0);
    assert!(
        !engine.memory().is_pinned(b"k2"),
        "flushed entries are unpinned"
    );
    engine.shutdown().await.unwrap();
    drop(engine); // closes the journal, trimming the space allocated ahead
    let journal_bytes: u64 = std::fs::read_dir(dir.path().join("journal/default"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert_eq!(journal_bytes, 0, "flushed segments are deleted");
}

#[tokio::test]
async fn backpressure_reports_a_full_buffer_instead_of_growing_without_bound() {
    let dir = tempfile::tempdir().unwrap();
    let flaky = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("sor"))));
    flaky.set_down(true);
    let engine = Engine::builder(dir.path())
        .memory_bytes(2 << 20) // high water = 1 MiB of dirty data
        .backpressure_wait(Duration::from_millis(200))
        .namespace(NamespaceConfig::new("default", WriteMode::Back).store(flaky.clone()))
        .build()
        .await
        .unwrap();
    let value = vec![b'x'; 64 << 10];
    let mut acked = 0;
    let err = loop {
        match engine.set(format!("k{acked}"), value.clone()).await {
            Ok(()) => acked += 1,
            Err(e) => break e,
        }
        assert!(acked < 100, "writes never pushed back");
    };
    assert!(err.to_string().contains("write-back buffer full"), "{err}");
    assert!(engine.memory().used_bytes() <= engine.memory().max_bytes());
    // Everything acknowledged is still there once the store returns.
    flaky.set_down(false);
    engine.shutdown().await.unwrap();
    assert_eq!(flaky.inner().len(), acked);
}

/// A flush makes room for writers batch by batch: a writer held at the
/// backpressure mark goes on as soon as the first batch is stored, not
/// when the whole flush is (under a sustained load of distinct keys, a
/// flush of a million keys took seconds, and so did such a write).
#[tokio::test]
async fn a_writer_held_by_backpressure_goes_on_after_the_first_stored_batch() {
    let dir = tempfile::tempdir().unwrap();
    let gated = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("sor"))));
    let engine = support::on_demand_in_chunks(dir.path(), gated.clone(), 100)
        .memory_bytes(4 << 20) // high water = 2 MiB of dirty data
        .backpressure_wait(Duration::from_secs(60))
        .build()
        .await
        .unwrap();
    // The flush that pressure starts stops before its first batch.
    gated.hold_writes();
    let value = vec![b'x'; 1024];
    // Write until a write waits: the dirty data has passed the mark.
    let mut written = 0;
    let mut held = loop {
        let mut write = Box::pin(engine.set(format!("k{written}"), value.clone()));
        if tokio::time::timeout(Duration::from_millis(200), &mut write)
            .await
            .is_err()
        {
            break write;
        }
        written += 1;
        assert!(written < 100_000, "writes never waited");
    };
    assert!(written > 1_000, "a write waited after {written} of 1 KiB");
    assert_eq!(gated.inner().len(), 0);
    gated.allow_writes(1);
    tokio::time::timeout(Duration::from_secs(20), &mut held)
        .await
        .expect("the held write went on after one stored batch")
        .unwrap();
    assert_eq!(
        gated.inner().len(),
        100,
        "the flush is held at its second batch"
    );
    gated.allow_writes(1 << 20);
    engine.flush().await.unwrap();
    assert_eq!(gated.inner().len(), written + 1);
}
