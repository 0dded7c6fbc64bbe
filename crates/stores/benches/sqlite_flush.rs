//! What a write-back flush costs the SQLite store: `set_many` of a batch of
//! 10,000 dirty keys drawn at random from a 100,000-key table (the shape of
//! `scripts/bench-vs-memcached.sh`'s SET load: every flush rewrites most of
//! the key space), 3-byte and 100-byte values.
//!
//! `cargo bench -p tiercache-stores --bench sqlite_flush`

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::seq::SliceRandom;
use rand::{rngs::StdRng, SeedableRng};
use std::time::Duration;
use tiercache_engine::{Entry, Store};
use tiercache_stores::SqliteStore;

const KEYS: usize = 100_000;
const BATCH: usize = 10_000;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("sqlite_flush");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5))
        .throughput(Throughput::Elements(BATCH as u64));
    for value_len in [3usize, 100] {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open("bench", &dir.path().join("flush.db"), "kv").unwrap();
        let value = Bytes::from(vec![b'v'; value_len]);
        let keys: Vec<Bytes> = (0..KEYS)
            .map(|i| Bytes::from(format!("key:{i:012}")))
            .collect();
        let all: Vec<(Bytes, Entry)> = keys
            .iter()
            .map(|k| (k.clone(), Entry::new(value.clone())))
            .collect();
        rt.block_on(store.set_many(&all)).unwrap();
        let mut rng = StdRng::seed_from_u64(7);
        group.bench_function(BenchmarkId::new("random_10k_of_100k", value_len), |b| {
            b.iter_batched(
                || {
                    let mut batch = all.clone();
                    batch.shuffle(&mut rng);
                    batch.truncate(BATCH);
                    batch
                },
                |batch| rt.block_on(store.set_many(&batch)).unwrap(),
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
