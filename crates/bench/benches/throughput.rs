//! Get-hit and insert throughput on 1 and 2 threads: tiercache vs moka vs
//! quick_cache (sync) vs foyer (its default config: LRU, 8 shards).
//!
//! `cargo bench -p tiercache-bench --bench throughput`
//!
//! Keys and values are `u64`; every cache is bounded by entry count (weight 1)
//! and built with its crate's default sharding (this is the concurrent case).
//!
//! - `get_hit/{threads}/{cache}`: a cache of capacity 200k pre-filled with the
//!   keys `0..100k` (so nothing is evicted), then `get`s of uniformly random
//!   keys among them. Setup checks that they all hit.
//! - `insert/{threads}/{cache}`: a cache of capacity 100k pre-filled with
//!   `0..100k`, then `insert`s of uniformly random keys in `0..200k`: about
//!   half replace an entry, half are new and make the cache evict (or reject).
//!
//! Each iteration is a batch of 1,000 operations per thread; the 2-thread
//! variant runs both threads under `std::thread::scope` for the whole sample
//! (`iter_custom`) and reports the wall time, so throughput is
//! `2 × batch / time`. Each thread walks the same random key sequence from a
//! different offset.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use std::time::{Duration, Instant};

const PREFILL: u64 = 100_000;
const BATCH: u64 = 1_000;
const KEYS: usize = 1 << 16;

/// The operations measured, over `&self` (all four caches are concurrent).
trait Kv: Sync {
    fn get(&self, key: u64) -> bool;
    fn insert(&self, key: u64, value: u64);
    /// Lets deferred bookkeeping settle after the pre-fill.
    fn settle(&self) {}
}

impl Kv for tiercache_cache::Cache<u64, u64> {
    fn get(&self, key: u64) -> bool {
        tiercache_cache::Cache::get(self, &key).is_some()
    }
    fn insert(&self, key: u64, value: u64) {
        tiercache_cache::Cache::insert(self, key, value);
    }
}

impl Kv for moka::sync::Cache<u64, u64> {
    fn get(&self, key: u64) -> bool {
        moka::sync::Cache::get(self, &key).is_some()
    }
    fn insert(&self, key: u64, value: u64) {
        moka::sync::Cache::insert(self, key, value);
    }
    fn settle(&self) {
        self.run_pending_tasks();
    }
}

impl Kv for quick_cache::sync::Cache<u64, u64> {
    fn get(&self, key: u64) -> bool {
        quick_cache::sync::Cache::get(self, &key).is_some()
    }
    fn insert(&self, key: u64, value: u64) {
        quick_cache::sync::Cache::insert(self, key, value);
    }
}

impl Kv for foyer_memory::Cache<u64, u64> {
    fn get(&self, key: u64) -> bool {
        foyer_memory::Cache::get(self, &key).is_some()
    }
    fn insert(&self, key: u64, value: u64) {
        drop(foyer_memory::Cache::insert(self, key, value));
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    GetHit,
    Insert,
}

/// Runs one (op, cache) pair on 1 and 2 threads.
fn bench_cache<C: Kv>(c: &mut Criterion, label: &str, cache: C, keys: &[u64], op: Op) {
    for k in 0..PREFILL {
        cache.insert(k, k);
    }
    cache.settle();
    if op == Op::GetHit {
        let misses = (0..PREFILL).filter(|k| !cache.get(*k)).count();
        assert_eq!(misses, 0, "{label}: pre-filled keys must all hit");
    }
    let name = match op {
        Op::GetHit => "get_hit",
        Op::Insert => "insert",
    };
    let mut group = c.benchmark_group(name);
    group.measurement_time(Duration::from_secs(3));
    group.warm_up_time(Duration::from_secs(1));
    for threads in [1u64, 2] {
        group.throughput(Throughput::Elements(BATCH * threads));
        group.bench_with_input(BenchmarkId::new(label, threads), &threads, |b, &threads| {
            b.iter_custom(|iters| run(&cache, keys, op, threads, iters));
        });
    }
    group.finish();
}

/// `iters` batches per thread on `threads` threads; the wall time.
fn run<C: Kv>(cache: &C, keys: &[u64], op: Op, threads: u64, iters: u64) -> Duration {
    let worker = |offset: usize| {
        let mut hits = 0u64;
        for i in offset..offset + (iters * BATCH) as usize {
            let key = keys[i & (KEYS - 1)];
            match op {
                Op::GetHit => hits += u64::from(cache.get(black_box(key))),
                Op::Insert => cache.insert(black_box(key), key),
            }
        }
        black_box(hits);
    };
    let start = Instant::now();
    if threads == 1 {
        worker(0);
    } else {
        std::thread::scope(|s| {
            for t in 0..threads as usize {
                s.spawn(move || worker(t * KEYS / threads as usize));
            }
        });
    }
    start.elapsed()
}

fn random_keys(range: u64, seed: u64) -> Vec<u64> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    (0..KEYS).map(|_| rng.gen_range(0..range)).collect()
}

fn benches(c: &mut Criterion) {
    for (op, capacity, keys) in [
        (Op::GetHit, 2 * PREFILL, random_keys(PREFILL, 1)),
        (Op::Insert, PREFILL, random_keys(2 * PREFILL, 2)),
    ] {
        bench_cache(
            c,
            "tiercache",
            tiercache_cache::Cache::<u64, u64>::new(capacity),
            &keys,
            op,
        );
        bench_cache(
            c,
            "moka",
            moka::sync::Cache::<u64, u64>::new(capacity),
            &keys,
            op,
        );
        bench_cache(
            c,
            "quick_cache",
            quick_cache::sync::Cache::<u64, u64>::new(capacity as usize),
            &keys,
            op,
        );
        bench_cache(
            c,
            "foyer",
            foyer_memory::CacheBuilder::<u64, u64, _>::new(capacity as usize).build(),
            &keys,
            op,
        );
    }
}

criterion_group!(throughput, benches);
criterion_main!(throughput);
