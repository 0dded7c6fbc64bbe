//! Write-back vs write-through into SQLite, and get hit/miss latency.
//!
//! `cargo bench -p tiercache --bench write_modes`
//!
//! - `sqlite_writes/{back,through}/single`: one durable `set` at a time
//!   (write-back: journal append + `write(2)`; write-through: one SQLite
//!   transaction per write).
//! - `sqlite_writes/{back,through}/pipelined_100`: 100 sets in one session,
//!   committed once, as the RESP server does for a pipelined batch.
//! - `sqlite_writes/{back,through}/pipelined_100_hot1k`: the same over 1,000
//!   hot keys (write-back coalesces repeated writes; write-through cannot).
//! - `get/hit`: answered by the memory tier. `get/miss_sqlite`: a key absent
//!   from memory, looked up in SQLite (and not found, so never cached).
//!
//! Values are 16 bytes, keys ~12 bytes (the "small values" of issue 2).

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiercache::stores::SqliteStore;
use tiercache::{Engine, NamespaceConfig, WriteMode};
use tiercache_engine::SetOptions;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

async fn engine(dir: &std::path::Path, mode: WriteMode) -> Engine {
    let sqlite = SqliteStore::open("main", &dir.join("bench.db"), "kv").unwrap();
    Engine::builder(dir)
        .memory_bytes(1 << 30)
        .namespace(NamespaceConfig::new("default", mode).store(Arc::new(sqlite)))
        .build()
        .await
        .unwrap()
}

const VALUE: &[u8; 16] = b"0123456789abcdef";

fn writes(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("sqlite_writes");
    group.measurement_time(Duration::from_secs(5));
    for (label, mode) in [("back", WriteMode::Back), ("through", WriteMode::Through)] {
        let dir = tempfile::tempdir().unwrap();
        let engine = rt.block_on(engine(dir.path(), mode));
        // Keys cycle over 100k so the table and memory tier stay bounded.
        let n = AtomicU64::new(0);
        let next_key = || {
            Bytes::from(format!(
                "key:{:07}",
                n.fetch_add(1, Ordering::Relaxed) % 100_000
            ))
        };
        group.throughput(Throughput::Elements(1));
        group.bench_function(BenchmarkId::new(label, "single"), |b| {
            b.to_async(&rt).iter(|| async {
                engine
                    .set(next_key(), Bytes::from_static(VALUE))
                    .await
                    .unwrap()
            })
        });
        group.throughput(Throughput::Elements(100));
        group.bench_function(BenchmarkId::new(label, "pipelined_100"), |b| {
            b.to_async(&rt).iter(|| async {
                let mut s = engine.session();
                for _ in 0..100 {
                    s.set(next_key(), Bytes::from_static(VALUE), SetOptions::default())
                        .await
                        .unwrap();
                }
                s.commit().await.unwrap();
            })
        });
        // Hot keys: 100 sets cycling over 1,000 keys. Write-back coalesces
        // repeated writes to a key; write-through writes every one.
        let hot = AtomicU64::new(0);
        group.bench_function(BenchmarkId::new(label, "pipelined_100_hot1k"), |b| {
            b.to_async(&rt).iter(|| async {
                let mut s = engine.session();
                for _ in 0..100 {
                    let k = Bytes::from(format!(
                        "hot:{:04}",
                        hot.fetch_add(1, Ordering::Relaxed) % 1_000
                    ));
                    s.set(k, Bytes::from_static(VALUE), SetOptions::default())
                        .await
                        .unwrap();
                }
                s.commit().await.unwrap();
            })
        });
        rt.block_on(engine.shutdown()).unwrap();
    }
    group.finish();
}

fn gets(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().unwrap();
    let engine = rt.block_on(engine(dir.path(), WriteMode::Back));
    rt.block_on(async {
        for i in 0..10_000 {
            engine
                .set(format!("key:{i:07}"), Bytes::from_static(VALUE))
                .await
                .unwrap();
        }
        engine.flush().await.unwrap();
    });
    let mut group = c.benchmark_group("get");
    group.throughput(Throughput::Elements(1));
    let i = AtomicU64::new(0);
    group.bench_function("hit", |b| {
        b.to_async(&rt).iter(|| async {
            let k = format!("key:{:07}", i.fetch_add(1, Ordering::Relaxed) % 10_000);
            assert!(engine.get(k.as_bytes()).await.unwrap().is_some());
        })
    });
    group.bench_function("miss_sqlite", |b| {
        b.to_async(&rt).iter(|| async {
            let k = format!("absent:{:07}", i.fetch_add(1, Ordering::Relaxed));
            assert!(engine.get(k.as_bytes()).await.unwrap().is_none());
        })
    });
    group.finish();
    rt.block_on(engine.shutdown()).unwrap();
}

criterion_group!(benches, writes, gets);
criterion_main!(benches);
