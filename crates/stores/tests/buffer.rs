//! `BufferStore` under failure: writes keep being accepted while the
//! primary is down, reads see them (deletes too), and once the primary is
//! back it holds every set and delete exactly — also across a restart and
//! with writes arriving during the replay.

use async_trait::async_trait;
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::conformance::{check_store, Capabilities};
use tiercache_engine::testing::{FlakyStore, MemoryStore};
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, Store, StoreError};
use tiercache_stores::{
    BufferMode, BufferOptions, BufferStore, FileStore, SqliteStore, TimeoutStore,
};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

fn spool(dir: &Path) -> Arc<FileStore> {
    Arc::new(FileStore::open("shared.secondary", &dir.join("spool"), Default::default()).unwrap())
}

fn quick() -> BufferOptions {
    BufferOptions {
        max_queue_length: 1_000_000,
        retry_interval: Duration::from_millis(60),
        retry_interval_range: Duration::from_millis(30),
    }
}

/// A store that takes `delay` per write and can hang.
struct Slow {
    inner: Arc<MemoryStore>,
    delay_ms: AtomicU64,
    hang: AtomicBool,
}

impl Slow {
    fn new(name: &str, delay_ms: u64) -> Arc<Slow> {
        Arc::new(Slow {
            inner: Arc::new(MemoryStore::new(name)),
            delay_ms: AtomicU64::new(delay_ms),
            hang: AtomicBool::new(false),
        })
    }
    async fn wait(&self) {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        let d = self.delay_ms.load(Ordering::SeqCst);
        if d > 0 {
            tokio::time::sleep(Duration::from_millis(d)).await;
        }
    }
}

#[async_trait]
impl Store for Slow {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        if self.hang.load(Ordering::SeqCst) {
            std::future::pending::<()>().await;
        }
        self.inner.get_many(keys).await
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.wait().await;
        self.inner.set_many(entries).await
    }
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.wait().await;
        self.inner.delete_many(keys).await
    }
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.wait().await;
        self.inner.apply(batch).await
    }
    async fn count(&self) -> Result<u64, StoreError> {
        self.inner.count().await
    }
    async fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear().await
    }
    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.inner.scan_keys(start, prefix, limit, now).await
    }
    async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        self.inner.key_stats(now).await
    }
}

async fn wait_for_primary_mode(buffer: &BufferStore) {
    for _ in 0..200 {
        if buffer.status().mode == BufferMode::Primary {
            return;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("never went back to the primary: {:?}", buffer.status());
}

#[tokio::test]
async fn conformance_in_primary_mode() {
    let dir = tempfile::tempdir().unwrap();
    let buffer = BufferStore::open(
        "shared",
        Arc::new(MemoryStore::new("shared.primary")),
        spool(dir.path()),
        quick(),
    )
    .await
    .unwrap();
    check_store(&buffer, Capabilities::FULL).await;
    assert_eq!(buffer.status().failovers, 0);
}

#[tokio::test]
async fn conformance_while_failed_over() {
    // max_queue_length = 0: every write fails over, and the retry is far
    // away, so the whole contract runs through the log-over-primary path.
    let dir = tempfile::tempdir().unwrap();
    let primary = Arc::new(MemoryStore::new("shared.primary"));
    let buffer = BufferStore::open(
        "shared",
        primary.clone(),
        spool(dir.path()),
        BufferOptions {
            max_queue_length: 0,
            retry_interval: Duration::from_secs(3_600),
            retry_interval_range: Duration::ZERO,
        },
    )
    .await
    .unwrap();
    check_store(&buffer, Capabilities::FULL).await;
    assert!(buffer.status().failovers >= 1);
    assert!(primary.is_empty());
}

/// Random sets and deletes against a buffer whose primary is down,
/// checked against a model; then the primary returns and must hold the
/// model exactly.
async fn outage(primary: Arc<dyn Store>, set_down: impl Fn(bool), dir: &Path, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut model: HashMap<Bytes, Entry> = HashMap::new();
    // Data in the primary before the outage, some of which the outage deletes.
    let before: Vec<(Bytes, Entry)> = (0..200)
        .map(|i| (Bytes::from(format!("k{i}")), Entry::new(format!("old{i}"))))
        .collect();
    primary.set_many(&before).await.unwrap();
    model.extend(before);

    let buffer = BufferStore::open("shared", primary.clone(), spool(dir), quick())
        .await
        .unwrap();
    set_down(true);
    for step in 0..300 {
        let batch: Vec<Mutation> = {
            let mut keys = std::collections::HashSet::new();
            (0..rng.gen_range(1..10))
                .filter_map(|_| {
                    let k = Bytes::from(format!("k{}", rng.gen_range(0..300)));
                    keys.insert(k.clone()).then(|| {
                        if rng.gen_bool(0.3) {
                            Mutation::Delete(k)
                        } else {
                            Mutation::Set(k, Entry::with_flags(format!("v{step}"), None, step))
                        }
                    })
                })
                .collect()
        };
        buffer
            .apply(&batch)
            .await
            .expect("accepted while the primary is down");
        for m in &batch {
            match m {
                Mutation::Set(k, e) => {
                    model.insert(k.clone(), e.clone());
                }
                Mutation::Delete(k) => {
                    model.remove(k);
                }
            }
        }
    }
    assert_eq!(buffer.status().mode, BufferMode::FailedOver);
    // Reads of logged keys are answered while the primary is down; deleted
    // keys stay deleted (the primary's old value does not come back).
    let logged: Vec<Bytes> = (0..300).map(|i| Bytes::from(format!("k{i}"))).collect();
    let got = buffer.get_many(&logged).await;
    if let Ok(got) = got {
        for (k, g) in logged.iter().zip(got) {
            assert_eq!(g.as_ref(), model.get(k), "{k:?}");
        }
    }

    set_down(false);
    // While failed over with the primary reachable, reads, count and scans
    // merge log and primary exactly.
    let got = buffer.get_many(&logged).await.unwrap();
    for (k, g) in logged.iter().zip(got) {
        assert_eq!(g.as_ref(), model.get(k), "{k:?}");
    }
    wait_for_primary_mode(&buffer).await;
    let status = buffer.status();
    assert_eq!(status.queued, 0, "{status:?}");
    assert_eq!(status.failovers, 1);
    assert!(status.replayed > 0);
    // Every set and delete is in the primary, exactly.
    assert_eq!(primary.count().await.unwrap(), model.len() as u64);
    let got = primary.get_many(&logged).await.unwrap();
    for (k, g) in logged.iter().zip(got) {
        assert_eq!(g.as_ref(), model.get(k), "{k:?}");
    }
}

#[tokio::test]
async fn memory_primary_outage_loses_and_resurrects_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let primary = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new(
        "shared.primary",
    ))));
    let p = primary.clone();
    outage(primary, move |d| p.set_down(d), dir.path(), 1).await;
}

#[tokio::test]
async fn sqlite_primary_outage_loses_and_resurrects_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = SqliteStore::open("shared.primary", &dir.path().join("p.db"), "kv").unwrap();
    let primary = Arc::new(FlakyStore::new(Arc::new(sqlite)));
    let p = primary.clone();
    outage(primary, move |d| p.set_down(d), dir.path(), 2).await;
}

#[tokio::test]
async fn merged_count_and_scan_while_failed_over() {
    let dir = tempfile::tempdir().unwrap();
    let primary = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new(
        "shared.primary",
    ))));
    primary
        .set_many(&[
            (b("a"), Entry::new("1")),
            (b("b"), Entry::new("1")),
            (b("c"), Entry::new("1")),
        ])
        .await
        .unwrap();
    let buffer = BufferStore::open(
        "shared",
        primary.clone(),
        spool(dir.path()),
        BufferOptions {
            retry_interval: Duration::from_secs(3_600),
            ..quick()
        },
    )
    .await
    .unwrap();
    primary.set_down(true);
    buffer.delete_many(&[b("b")]).await.unwrap();
    buffer
        .set_many(&[
            (b("d"), Entry::new("2")),
            (b("a"), Entry::with_expiry("gone", Some(now_ms() - 1))),
        ])
        .await
        .unwrap();
    // A key only the log knows is answered with the primary down; others fail.
    assert_eq!(
        buffer.get_many(&[b("d"), b("b"), b("a")]).await.unwrap(),
        vec![Some(Entry::new("2")), None, None],
        "an expired logged set hides the primary's value"
    );
    assert!(buffer.get_many(&[b("c")]).await.is_err());
    primary.set_down(false);
    assert_eq!(buffer.count().await.unwrap(), 2); // c, d
    assert_eq!(
        buffer
            .scan_keys(Bound::Unbounded, b"", 10, now_ms())
            .await
            .unwrap(),
        vec![b("c"), b("d")]
    );
    assert_eq!(
        buffer
            .scan_keys(Bound::Unbounded, b"", 1, now_ms())
            .await
            .unwrap(),
        vec![b("c")]
    );
    assert_eq!(buffer.status().mode, BufferMode::FailedOver);
    // clear replays first, then clears: nothing comes back.
    buffer.clear().await.unwrap();
    assert_eq!(buffer.status().mode, BufferMode::Primary);
    assert_eq!(buffer.count().await.unwrap(), 0);
    assert!(primary.inner().is_empty());
}

#[tokio::test]
async fn a_restart_with_the_primary_still_down_replays_later() {
    let dir = tempfile::tempdir().unwrap();
    let primary = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new(
        "shared.primary",
    ))));
    primary
        .set_many(&[(b("old"), Entry::new("1"))])
        .await
        .unwrap();
    primary.set_down(true);
    {
        let buffer = BufferStore::open("shared", primary.clone(), spool(dir.path()), quick())
            .await
            .unwrap();
        buffer
            .set_many(&[(b("new"), Entry::new("2"))])
            .await
            .unwrap();
        buffer.delete_many(&[b("old")]).await.unwrap();
        // The process goes away here (the spool is durable).
    }
    let buffer = BufferStore::open("shared", primary.clone(), spool(dir.path()), quick())
        .await
        .unwrap();
    assert_eq!(buffer.status().mode, BufferMode::FailedOver);
    assert_eq!(buffer.status().queued, 2);
    assert_eq!(
        buffer.get_many(&[b("new"), b("old")]).await.unwrap(),
        vec![Some(Entry::new("2")), None]
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        buffer.status().mode,
        BufferMode::FailedOver,
        "primary still down"
    );
    primary.set_down(false);
    wait_for_primary_mode(&buffer).await;
    let snap = primary.inner().snapshot();
    assert_eq!(snap.len(), 1);
    assert_eq!(snap.get(&b"new"[..]), Some(&Entry::new("2")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_the_replay_keep_per_key_order() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Slow::new("shared.primary", 0);
    let primary = Arc::new(FlakyStore::new(slow.clone()));
    let buffer = Arc::new(
        BufferStore::open("shared", primary.clone(), spool(dir.path()), quick())
            .await
            .unwrap(),
    );
    primary.set_down(true);
    // Each writer owns its keys and writes them in sequence; the last write
    // of each key is what the primary must end with.
    let writers: Vec<_> = (0..4)
        .map(|t| {
            let buffer = buffer.clone();
            tokio::spawn(async move {
                let mut last = HashMap::new();
                for i in 0..400u32 {
                    let k = Bytes::from(format!("w{t}:{}", i % 17));
                    let m = if i % 5 == 4 {
                        Mutation::Delete(k.clone())
                    } else {
                        Mutation::Set(k.clone(), Entry::new(format!("{i}")))
                    };
                    buffer.apply(std::slice::from_ref(&m)).await.unwrap();
                    last.insert(k, m);
                    tokio::time::sleep(Duration::from_micros(300)).await;
                }
                last
            })
        })
        .collect();
    // Bring the primary back while writes continue, slowly, so the replay
    // overlaps new writes.
    tokio::time::sleep(Duration::from_millis(60)).await;
    slow.delay_ms.store(2, Ordering::SeqCst);
    primary.set_down(false);
    let mut want: HashMap<Bytes, Option<Entry>> = HashMap::new();
    for w in writers {
        for (k, m) in w.await.unwrap() {
            want.insert(
                k,
                match m {
                    Mutation::Set(_, e) => Some(e),
                    Mutation::Delete(_) => None,
                },
            );
        }
    }
    wait_for_primary_mode(&buffer).await;
    assert!(buffer.status().replayed > 0);
    let snap = slow.inner.snapshot();
    for (k, v) in &want {
        assert_eq!(snap.get(k), v.as_ref(), "{k:?}");
    }
    assert_eq!(snap.len(), want.values().filter(|v| v.is_some()).count());
}

#[tokio::test]
async fn a_long_queue_fails_over_and_replays() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Slow::new("shared.primary", 100);
    let buffer = Arc::new(
        BufferStore::open(
            "shared",
            slow.clone(),
            spool(dir.path()),
            BufferOptions {
                max_queue_length: 10,
                ..quick()
            },
        )
        .await
        .unwrap(),
    );
    let tasks: Vec<_> = (0..5)
        .map(|t| {
            let buffer = buffer.clone();
            tokio::spawn(async move {
                let batch: Vec<(Bytes, Entry)> = (0..4)
                    .map(|i| (Bytes::from(format!("k{t}-{i}")), Entry::new("v")))
                    .collect();
                buffer.set_many(&batch).await.unwrap();
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let status = buffer.status();
    assert_eq!(status.failovers, 1, "{status:?}");
    assert!(status.last_error.unwrap().contains("max_queue_length = 10"));
    slow.delay_ms.store(0, Ordering::SeqCst);
    wait_for_primary_mode(&buffer).await;
    assert_eq!(slow.inner.len(), 20);
}

#[tokio::test]
async fn a_hung_primary_with_a_timeout_fails_over() {
    let dir = tempfile::tempdir().unwrap();
    let slow = Slow::new("shared.primary", 0);
    let primary = Arc::new(TimeoutStore::new(slow.clone(), Duration::from_millis(50)));
    let buffer = BufferStore::open("shared", primary, spool(dir.path()), quick())
        .await
        .unwrap();
    slow.hang.store(true, Ordering::SeqCst);
    let started = std::time::Instant::now();
    buffer.set_many(&[(b("k"), Entry::new("v"))]).await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(2));
    let status = buffer.status();
    assert_eq!(status.mode, BufferMode::FailedOver);
    assert!(status.last_error.unwrap().contains("timed out after 50ms"));
    slow.hang.store(false, Ordering::SeqCst);
    wait_for_primary_mode(&buffer).await;
    assert_eq!(slow.inner.len(), 1);
}
