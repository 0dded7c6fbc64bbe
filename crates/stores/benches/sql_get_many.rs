//! Issue 5's bar, after the seed's "IN vs OR vs one query per row": one
//! `get_many` of N keys against N single-key `get_many` calls, for N = 1,
//! 10, 100, 1,000 and 10,000, on PostgreSQL, MariaDB and SQLite.
//!
//! The servers are temporary ones started by `tiercache-testkit` (a backend
//! that is not installed is skipped with a message). Each table holds
//! 10,000 entries of 100-byte values; keys are requested in a scattered
//! order. Results and the command are in BENCHMARKS.md ("Issue 5: batched
//! SQL lookups").
//!
//! ```text
//! cargo bench -p tiercache-stores --bench sql_get_many
//! ```

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Entry, Store};
use tiercache_stores::{MysqlStore, PostgresStore, SqlOptions, SqliteStore};
use tiercache_testkit::{Mariadb, Postgres};

const ENTRIES: usize = 10_000;
const SIZES: [usize; 5] = [1, 10, 100, 1_000, 10_000];

/// The keys in a scattered order (a stride coprime with the table size), so
/// a batch is not one contiguous index range.
fn keys() -> Vec<Bytes> {
    (0..ENTRIES)
        .map(|i| Bytes::from(format!("key:{:06}", (i * 7_919) % ENTRIES)))
        .collect()
}

async fn fill(store: &dyn Store) {
    let value = Bytes::from(vec![b'v'; 100]);
    let entries: Vec<(Bytes, Entry)> = (0..ENTRIES)
        .map(|i| {
            (
                Bytes::from(format!("key:{i:06}")),
                Entry::new(value.clone()),
            )
        })
        .collect();
    store.clear().await.expect("clear");
    store.set_many(&entries).await.expect("fill");
}

fn bench_store(
    c: &mut Criterion,
    rt: &tokio::runtime::Runtime,
    backend: &str,
    store: Arc<dyn Store>,
) {
    rt.block_on(fill(&*store));
    let keys = keys();
    let mut group = c.benchmark_group(format!("sql_get_many/{backend}"));
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let batch = &keys[..n];
        group.bench_with_input(BenchmarkId::new("batched", n), &n, |b, _| {
            b.to_async(rt).iter(|| async {
                let got = store.get_many(batch).await.expect("get_many");
                assert!(got.iter().all(Option::is_some));
            })
        });
        group.bench_with_input(BenchmarkId::new("single", n), &n, |b, _| {
            b.to_async(rt).iter(|| async {
                for k in batch {
                    let got = store.get_many(std::slice::from_ref(k)).await.expect("get");
                    assert!(got[0].is_some());
                }
            })
        });
    }
    group.finish();
}

fn sql_get_many(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    // SPEC's default pool (8). A sequential loop uses one connection at a
    // time, but mysql_async hands a connection back to its pool through a
    // background task: with a pool of one, each call would wait for it.
    let opts = SqlOptions {
        pool_size: 8,
        timeout: Some(Duration::from_secs(30)),
    };

    let dir = tempfile::tempdir().expect("temp dir");
    let sqlite = SqliteStore::open("sqlite", &dir.path().join("bench.db"), "kv").expect("sqlite");
    bench_store(c, &rt, "sqlite", Arc::new(sqlite));

    if let Some(pg) = Postgres::start() {
        let store = PostgresStore::new("pg", &pg.url(), "kv", opts);
        bench_store(c, &rt, "postgres", Arc::new(store.expect("postgres store")));
    }

    if let Some(db) = Mariadb::start() {
        let store = MysqlStore::new("my", &db.url(), "kv", opts);
        bench_store(c, &rt, "mariadb", Arc::new(store.expect("mysql store")));
    }
}

criterion_group!(benches, sql_get_many);
criterion_main!(benches);
