//! Bucket fan-out: `get_many` / `set_many` of 1,000 keys over a bucket
//! store of 1, 2, 4 and 8 buckets, against one store.
//!
//! - `latency`: each bucket is a `MemoryStore` behind a 1 ms round trip
//!   (a networked store), so the time shows whether buckets are called in
//!   parallel (≈ 1 ms whatever the count) or one after another (N ms).
//! - `sqlite`: each bucket is its own SQLite file (real work on the
//!   blocking pool; this machine has 2 cores).
//!
//! ```sh
//! cargo bench -p tiercache-stores --bench bucket_fanout
//! ```

use async_trait::async_trait;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{Entry, Store, StoreError};
use tiercache_stores::{BucketHash, BucketStore, SqliteStore};

const KEYS: usize = 1_000;

/// A memory store one round trip away.
struct Remote {
    inner: MemoryStore,
    rtt: Duration,
}

#[async_trait]
impl Store for Remote {
    fn name(&self) -> &str {
        self.inner.name()
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        tokio::time::sleep(self.rtt).await;
        self.inner.get_many(keys).await
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        tokio::time::sleep(self.rtt).await;
        self.inner.set_many(entries).await
    }
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        tokio::time::sleep(self.rtt).await;
        self.inner.delete_many(keys).await
    }
    async fn count(&self) -> Result<u64, StoreError> {
        self.inner.count().await
    }
    async fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear().await
    }
}

fn keys() -> Vec<Bytes> {
    (0..KEYS)
        .map(|i| Bytes::from(format!("station:{i:08}")))
        .collect()
}

fn entries() -> Vec<(Bytes, Entry)> {
    keys()
        .into_iter()
        .map(|k| (k, Entry::new(Bytes::from_static(b"0123456789abcdef"))))
        .collect()
}

fn bucketed(children: Vec<Arc<dyn Store>>) -> Arc<dyn Store> {
    Arc::new(BucketStore::new("bench", children, BucketHash::KeyHash, None).unwrap())
}

fn bench(c: &mut Criterion, group: &str, make: &dyn Fn(usize) -> Vec<Arc<dyn Store>>) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group(group);
    g.throughput(Throughput::Elements(KEYS as u64));
    g.sample_size(20);
    g.measurement_time(Duration::from_secs(3));
    g.warm_up_time(Duration::from_millis(500));
    let keys = keys();
    let entries = entries();
    let mut cases: Vec<(String, Arc<dyn Store>)> = vec![("single".into(), make(1).remove(0))];
    for n in [1, 2, 4, 8] {
        cases.push((format!("bucket/{n}"), bucketed(make(n))));
    }
    for (name, store) in &cases {
        rt.block_on(store.set_many(&entries)).unwrap();
        g.bench_with_input(BenchmarkId::new("get_many", name), store, |b, s| {
            b.to_async(&rt).iter(|| async {
                let got = s.get_many(&keys).await.unwrap();
                assert!(got[KEYS - 1].is_some());
            })
        });
        g.bench_with_input(BenchmarkId::new("set_many", name), store, |b, s| {
            b.to_async(&rt)
                .iter(|| async { s.set_many(&entries).await.unwrap() })
        });
    }
    g.finish();
}

fn fanout(c: &mut Criterion) {
    bench(c, "latency_1ms", &|n| {
        (0..n)
            .map(|i| {
                Arc::new(Remote {
                    inner: MemoryStore::new(&format!("b{i}")),
                    rtt: Duration::from_millis(1),
                }) as Arc<dyn Store>
            })
            .collect()
    });
    let dir = tempfile::tempdir().unwrap();
    let next = std::sync::atomic::AtomicUsize::new(0);
    bench(c, "sqlite", &|n| {
        (0..n)
            .map(|_| {
                let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Arc::new(
                    SqliteStore::open(
                        &format!("b{id}"),
                        &dir.path().join(format!("{id}.db")),
                        "kv",
                    )
                    .unwrap(),
                ) as Arc<dyn Store>
            })
            .collect()
    });
}

criterion_group!(benches, fanout);
criterion_main!(benches);
