//! Hit-ratio behaviour of the eviction policy on workloads with a known
//! best answer (the property tests cover correctness; these cover policy).

use tiercache_cache::Cache;

/// Replays `keys` get-then-insert-on-miss; returns the hit ratio.
fn replay(cache: &Cache<u64, ()>, keys: impl Iterator<Item = u64>) -> f64 {
    let (mut hits, mut n) = (0u64, 0u64);
    for k in keys {
        n += 1;
        if cache.get(&k).is_some() {
            hits += 1;
        } else {
            cache.insert(k, ());
        }
    }
    hits as f64 / n as f64
}

/// A loop over 20× more keys than the cache holds: LRU, FIFO and a policy
/// that keeps admitting newcomers hit nothing; the best a cache can do is
/// keep a fixed part of the loop (5% of requests here). The policy must
/// notice that admissions do not pay and freeze most of main.
#[test]
fn a_loop_larger_than_the_cache_keeps_a_fixed_part() {
    for (cap, keys) in [(1000u64, 20_000u64), (5000, 100_000)] {
        let cache = Cache::<u64, ()>::builder(cap).shards(1).build();
        let ratio = replay(&cache, (0..10 * keys).map(|i| i % keys));
        assert!(
            ratio > 0.03,
            "loop of {keys} at {cap}: hit ratio {ratio:.4}, want > 0.03"
        );
    }
}

/// Recency-heavy traffic (each key re-read a few times soon after it
/// appears, then never again) must still be cached: the loop defence must
/// not lock newcomers out.
#[test]
fn recent_keys_are_still_admitted() {
    let cache = Cache::<u64, ()>::builder(1000).shards(1).build();
    // Key k is read at steps k, k + 100 and k + 300: an LRU of 1,000
    // entries hits the 2 re-reads of every key (2/3 of all requests).
    let keys = (0..300_000u64).flat_map(|t| {
        [Some(t), t.checked_sub(100), t.checked_sub(300)]
            .into_iter()
            .flatten()
    });
    let ratio = replay(&cache, keys);
    assert!(ratio > 0.6, "recency hit ratio {ratio:.4}, want > 0.6");
}
