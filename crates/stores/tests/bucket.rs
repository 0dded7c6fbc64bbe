//! Parity: a 4-bucket store answers exactly what one store with the same
//! writes answers — every multi-get, every scan page, every count. Not
//! "mostly": Sphinx's sharded index matched its single index on 94%.

use bytes::Bytes;
use proptest::prelude::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::ops::Bound;
use std::sync::Arc;
use tiercache_engine::testing::MemoryStore;
use tiercache_engine::{now_ms, Entry, Mutation, Store};
use tiercache_stores::{BucketHash, BucketStore, SqliteStore};

fn memory_buckets(n: usize, hash: BucketHash, delimiter: Option<&[u8]>) -> BucketStore {
    BucketStore::new(
        "shards",
        (0..n)
            .map(|i| Arc::new(MemoryStore::new(&format!("shards.buckets[{i}]"))) as Arc<dyn Store>)
            .collect(),
        hash,
        delimiter,
    )
    .unwrap()
}

fn key(rng: &mut StdRng, space: u32) -> Bytes {
    Bytes::from(format!("k{}", rng.gen_range(0..space)))
}

/// Random sets (some expiring, some with flags) and deletes, in batches.
fn random_writes(rng: &mut StdRng, batches: usize, space: u32) -> Vec<Vec<Mutation>> {
    let now = now_ms();
    (0..batches)
        .map(|_| {
            let n = rng.gen_range(1..50);
            let mut seen = std::collections::HashSet::new();
            (0..n)
                .filter_map(|_| {
                    let k = key(rng, space);
                    // `apply` batches hold each key once (the engine's contract).
                    if !seen.insert(k.clone()) {
                        return None;
                    }
                    Some(if rng.gen_bool(0.2) {
                        Mutation::Delete(k)
                    } else {
                        let expiry = match rng.gen_range(0..10) {
                            0 => Some(now - 1),
                            1 => Some(now + 3_600_000),
                            _ => None,
                        };
                        let value: Vec<u8> = (0..rng.gen_range(0..20)).map(|_| rng.gen()).collect();
                        Mutation::Set(k, Entry::with_flags(value, expiry, rng.gen_range(0..3)))
                    })
                })
                .collect()
        })
        .collect()
}

async fn parity(sharded: &dyn Store, single: &dyn Store, seed: u64) {
    let mut rng = StdRng::seed_from_u64(seed);
    let space = 3_000;
    for batch in random_writes(&mut rng, 400, space) {
        sharded.apply(&batch).await.unwrap();
        single.apply(&batch).await.unwrap();
    }
    let mut matched = 0;
    let total = 10_000;
    for _ in 0..total {
        let n = rng.gen_range(0..64);
        let mut keys: Vec<Bytes> = (0..n).map(|_| key(&mut rng, space + 500)).collect();
        if n > 2 && rng.gen_bool(0.3) {
            let dup = keys[rng.gen_range(0..n)].clone();
            keys.push(dup); // duplicates answer twice, in place
        }
        let a = sharded.get_many(&keys).await.unwrap();
        let b = single.get_many(&keys).await.unwrap();
        assert_eq!(a.len(), keys.len());
        if a == b {
            matched += 1;
        } else {
            panic!("multi-get over {keys:?}: sharded {a:?} != single {b:?}");
        }
    }
    assert_eq!(matched, total, "100% of multi-gets agree");

    // Counts and every scan page agree too.
    assert_eq!(
        sharded.count().await.unwrap(),
        single.count().await.unwrap()
    );
    let now = now_ms();
    assert_eq!(
        sharded.key_stats(now).await.unwrap().keys,
        single.key_stats(now).await.unwrap().keys
    );
    for (prefix, limit) in [(&b""[..], 10), (b"k1", 37), (b"k2", 1_000), (b"zz", 5)] {
        let mut cursor: Option<Bytes> = None;
        loop {
            let start = cursor.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let a = sharded.scan_keys(start, prefix, limit, now).await.unwrap();
            let b = single.scan_keys(start, prefix, limit, now).await.unwrap();
            assert_eq!(a, b, "scan page after {cursor:?} prefix {prefix:?}");
            if a.len() < limit {
                break;
            }
            cursor = a.last().cloned();
        }
    }
}

#[tokio::test]
async fn ten_thousand_multi_gets_over_four_buckets_match_one_store() {
    let sharded = memory_buckets(4, BucketHash::KeyHash, None);
    let single = MemoryStore::new("single");
    parity(&sharded, &single, 1).await;
    // Every bucket got a share.
    for b in sharded.buckets() {
        assert!(b.count().await.unwrap() > 300, "{}", b.name());
    }
}

#[tokio::test]
async fn parity_with_a_delimiter_and_with_key_modulo() {
    let sharded = memory_buckets(4, BucketHash::KeyHash, Some(b"1"));
    parity(&sharded, &MemoryStore::new("single"), 2).await;

    // key_modulo over numeric keys ("k" stripped by making keys numbers).
    let sharded = memory_buckets(4, BucketHash::KeyModulo, None);
    let single = MemoryStore::new("single");
    let mut rng = StdRng::seed_from_u64(3);
    for _ in 0..200 {
        let batch: Vec<(Bytes, Entry)> = (0..20)
            .map(|_| {
                let k = rng.gen_range(0..5_000u32);
                (Bytes::from(k.to_string()), Entry::new(format!("v{k}")))
            })
            .collect();
        sharded.set_many(&batch).await.unwrap();
        single.set_many(&batch).await.unwrap();
    }
    for _ in 0..2_000 {
        let keys: Vec<Bytes> = (0..rng.gen_range(0..40))
            .map(|_| Bytes::from(rng.gen_range(0..6_000u32).to_string()))
            .collect();
        assert_eq!(
            sharded.get_many(&keys).await.unwrap(),
            single.get_many(&keys).await.unwrap()
        );
    }
}

#[tokio::test]
async fn parity_over_sqlite_buckets() {
    let dir = tempfile::tempdir().unwrap();
    let sharded = BucketStore::new(
        "shards",
        (0..4)
            .map(|i| {
                Arc::new(
                    SqliteStore::open(
                        &format!("shards.buckets[{i}]"),
                        &dir.path().join(format!("s{i}.db")),
                        "kv",
                    )
                    .unwrap(),
                ) as Arc<dyn Store>
            })
            .collect(),
        BucketHash::KeyHash,
        None,
    )
    .unwrap();
    let single = SqliteStore::open("single", &dir.path().join("single.db"), "kv").unwrap();
    parity(&sharded, &single, 4).await;
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Any writes, any reads, any bucket count: the sharded answers equal
    /// the single store's.
    #[test]
    fn sharded_reads_equal_single_reads(
        buckets in 1usize..9,
        writes in prop::collection::vec((0u16..200, prop::option::of(prop::collection::vec(any::<u8>(), 0..8))), 0..200),
        reads in prop::collection::vec(prop::collection::vec(0u16..260, 0..30), 1..20),
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let sharded = memory_buckets(buckets, BucketHash::KeyHash, None);
            let single = MemoryStore::new("single");
            for (k, v) in &writes {
                let k = Bytes::from(format!("key{k}"));
                let m = match v {
                    Some(v) => Mutation::Set(k, Entry::new(v.clone())),
                    None => Mutation::Delete(k),
                };
                sharded.apply(std::slice::from_ref(&m)).await.unwrap();
                single.apply(std::slice::from_ref(&m)).await.unwrap();
            }
            for r in &reads {
                let keys: Vec<Bytes> = r.iter().map(|k| Bytes::from(format!("key{k}"))).collect();
                prop_assert_eq!(sharded.get_many(&keys).await.unwrap(), single.get_many(&keys).await.unwrap());
            }
            prop_assert_eq!(sharded.count().await.unwrap(), single.count().await.unwrap());
            let now = now_ms();
            prop_assert_eq!(
                sharded.scan_keys(Bound::Unbounded, b"", 50, now).await.unwrap(),
                single.scan_keys(Bound::Unbounded, b"", 50, now).await.unwrap()
            );
            Ok(())
        })?;
    }
}
