//! Batched vs one-at-a-time operations on the key/value stores, against
//! servers started by testkit (skipped with a message when missing).
//!
//! `cargo bench -p tiercache-stores --bench kv_stores`
//!
//! - `get/{store}/{batch,single}/{n}`: `get_many` of `n` present keys in
//!   one call, vs `n` calls of one key each (sequential).
//! - `set/{store}/{batch,single}/{n}`: the same for `set_many`.
//! - stores: `redis_tcp` (127.0.0.1), `redis_unix` (unix socket),
//!   `memcached`; one connection each in use at a time.
//! - `layout/*/100`: the Redis layout choice, 100 keys read in one round
//!   trip: the store's layout (`MGET` + `PEXPIRETIME` per key in
//!   `MULTI`/`EXEC`), the same without `MULTI`, and the rejected hash layout
//!   (`HMGET key v f` + `PEXPIRETIME` per key in `MULTI`/`EXEC`).
//!
//! Values are 100 bytes, keys ~10 bytes.

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use std::time::Duration;
use tiercache_engine::{Entry, Store};
use tiercache_stores::{MemcachedStore, RedisStore};
use tiercache_testkit::{Memcached, RedisServer};

const SIZES: [usize; 4] = [1, 10, 100, 1000];

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

fn keys(n: usize) -> Vec<Bytes> {
    (0..n)
        .map(|i| Bytes::from(format!("bench:{i:05}")))
        .collect()
}

fn entries(n: usize) -> Vec<(Bytes, Entry)> {
    let value = Bytes::from(vec![b'v'; 100]);
    keys(n)
        .into_iter()
        .map(|k| (k, Entry::new(value.clone())))
        .collect()
}

fn bench_store(c: &mut Criterion, rt: &tokio::runtime::Runtime, label: &str, store: &dyn Store) {
    let all = entries(1000);
    rt.block_on(store.set_many(&all)).unwrap();
    let mut get = c.benchmark_group(format!("get/{label}"));
    get.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let ks = keys(n);
        get.throughput(Throughput::Elements(n as u64));
        get.bench_with_input(BenchmarkId::new("batch", n), &ks, |b, ks| {
            b.to_async(rt).iter(|| async {
                let got = store.get_many(ks).await.unwrap();
                assert!(got[0].is_some());
            })
        });
        get.bench_with_input(BenchmarkId::new("single", n), &ks, |b, ks| {
            b.to_async(rt).iter(|| async {
                for k in ks {
                    store.get_many(std::slice::from_ref(k)).await.unwrap();
                }
            })
        });
    }
    get.finish();
    let mut set = c.benchmark_group(format!("set/{label}"));
    set.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for n in SIZES {
        let es = entries(n);
        set.throughput(Throughput::Elements(n as u64));
        set.bench_with_input(BenchmarkId::new("batch", n), &es, |b, es| {
            b.to_async(rt)
                .iter(|| async { store.set_many(es).await.unwrap() })
        });
        set.bench_with_input(BenchmarkId::new("single", n), &es, |b, es| {
            b.to_async(rt).iter(|| async {
                for e in es {
                    store.set_many(std::slice::from_ref(e)).await.unwrap();
                }
            })
        });
    }
    set.finish();
}

/// The layouts weighed for Redis, measured with raw commands.
fn bench_layouts(c: &mut Criterion, rt: &tokio::runtime::Runtime, redis: &RedisServer) {
    let client = redis::Client::open(redis.url()).unwrap();
    let mut conn = rt
        .block_on(client.get_multiplexed_async_connection())
        .unwrap();
    let ks = keys(100);
    rt.block_on(async {
        let mut pipe = redis::pipe();
        for k in &ks {
            let hk = [&b"h:"[..], k].concat();
            pipe.cmd("SET").arg(&k[..]).arg(vec![b'v'; 100]).ignore();
            pipe.cmd("HSET")
                .arg(hk)
                .arg("v")
                .arg(vec![b'v'; 100])
                .arg("f")
                .arg(0)
                .ignore();
        }
        pipe.query_async::<()>(&mut conn).await.unwrap();
    });
    let mut group = c.benchmark_group("layout");
    group
        .sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .throughput(Throughput::Elements(100));
    let string_get = |atomic: bool| {
        let mut pipe = redis::pipe();
        if atomic {
            pipe.atomic();
        }
        let mut mget = redis::cmd("MGET");
        for k in &ks {
            mget.arg(&k[..]);
        }
        pipe.add_command(mget);
        for k in &ks {
            pipe.cmd("PEXPIRETIME").arg(&k[..]);
        }
        pipe
    };
    let hash_get = {
        let mut pipe = redis::pipe();
        pipe.atomic();
        for k in &ks {
            let hk = [&b"h:"[..], k].concat();
            pipe.cmd("HMGET").arg(&hk[..]).arg("v").arg("f");
            pipe.cmd("PEXPIRETIME").arg(&hk[..]);
        }
        pipe
    };
    for (label, pipe) in [
        ("string_mget_multi", string_get(true)),
        ("string_mget_plain", string_get(false)),
        ("hash_hmget_multi", hash_get),
    ] {
        group.bench_function(BenchmarkId::new(label, 100), |b| {
            b.to_async(rt).iter(|| {
                let mut conn = conn.clone();
                let pipe = &pipe;
                async move {
                    pipe.query_async::<Vec<redis::Value>>(&mut conn)
                        .await
                        .unwrap()
                }
            })
        });
    }
    group.finish();
}

fn kv(c: &mut Criterion) {
    let rt = runtime();
    match RedisServer::start(&[]) {
        Some(redis) => {
            let tcp = RedisStore::open("redis_tcp", &redis.url(), 1, None).unwrap();
            bench_store(c, &rt, "redis_tcp", &tcp);
            let unix = format!("unix:{}", redis.socket().display());
            let unix = RedisStore::open("redis_unix", &unix, 1, None).unwrap();
            bench_store(c, &rt, "redis_unix", &unix);
            bench_layouts(c, &rt, &redis);
        }
        None => eprintln!("kv_stores: redis-server missing, Redis benches skipped"),
    }
    match Memcached::start() {
        Some(mc) => {
            let store = MemcachedStore::open("memcached", &[mc.addr().to_string()], None).unwrap();
            bench_store(c, &rt, "memcached", &store);
        }
        None => eprintln!("kv_stores: memcached missing, memcached benches skipped"),
    }
}

criterion_group!(benches, kv);
criterion_main!(benches);
