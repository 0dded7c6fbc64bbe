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

/// Recency-heavy traffic from the LRU stack model (as the bench crate's
/// `recency` workload): each request is a new key (5%) or re-reads the key
/// at a geometric LRU stack distance of mean 1,000. LRU hits exactly the
/// re-reads at distance < capacity, and is the best policy here; the
/// window must grow to (nearly) the whole cache to match it. Before the
/// window could take probation's share too it stayed 1.1 points behind.
#[test]
fn recency_heavy_traffic_matches_lru() {
    let capacity = 265;
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    let mut uniform = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        (rng >> 11) as f64 / (1u64 << 53) as f64
    };
    let (mut stack, mut next, mut keys, mut lru_hits) = (Vec::new(), 0u64, Vec::new(), 0u64);
    for _ in 0..400_000 {
        let d = if uniform() < 0.05 {
            usize::MAX
        } else {
            ((1.0 - uniform()).ln() / (1.0 - 1.0 / 1001.0f64).ln()) as usize
        };
        let key = if d < stack.len() {
            lru_hits += u64::from(d < capacity);
            stack.remove(stack.len() - 1 - d)
        } else {
            next += 1;
            next
        };
        stack.push(key);
        keys.push(key);
    }
    let lru = lru_hits as f64 / keys.len() as f64;
    let cache = Cache::<u64, ()>::builder(capacity as u64).shards(1).build();
    let ratio = replay(&cache, keys.into_iter());
    assert!(
        ratio > lru - 0.006,
        "recency hit ratio {ratio:.4}, LRU {lru:.4}"
    );
}

/// A key the window let go that comes back soon (a recent-ghost hit) has
/// proven its reuse and enters main even against a more popular victim.
#[test]
fn a_key_returning_from_the_window_ghost_is_admitted() {
    let cache = Cache::<u64, ()>::builder(100).shards(1).build();
    for k in 0..100u64 {
        cache.insert(k, ());
    }
    for _ in 0..20 {
        for k in 0..100u64 {
            assert!(cache.get(&k).is_some(), "key {k} resident while filling");
        }
    }
    // 1000 enters the window, loses to main's popular victim and goes to
    // the window ghost; it comes back at once.
    cache.insert(1000, ());
    cache.insert(1001, ());
    assert_eq!(
        cache.peek(&1000),
        None,
        "a newcomer seen once is not admitted"
    );
    cache.insert(1000, ());
    for k in 1002..1010u64 {
        cache.insert(k, ());
    }
    assert_eq!(
        cache.peek(&1000),
        Some(()),
        "the returning key was admitted"
    );
    assert_eq!(cache.len(), 100);
}

/// The popular set moves: Zipf 0.99 over 20,000 keys, the ranks re-mapped
/// to other keys every 50,000 requests. From a cold start the cache learns
/// the first phase's popular keys; after each move it must re-learn them
/// about as well, not keep main full of keys popular before the move (their
/// counts in the sketch win every admission contest until it has aged).
/// Measured (deterministic: one thread, fixed seeds): the second halves of
/// later phases score 2.3 points below the first phase's without the shift
/// detector, 1.4 with it; the bar sits between.
#[test]
fn after_the_popular_set_moves_the_cache_relearns_as_from_cold() {
    const ITEMS: usize = 20_000;
    const PHASE: usize = 50_000;
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    let mut cdf = Vec::with_capacity(ITEMS);
    let mut sum = 0.0;
    for r in 1..=ITEMS {
        sum += 1.0 / (r as f64).powf(0.99);
        cdf.push(sum);
    }
    let mut mapping: Vec<u64> = (0..ITEMS as u64).collect();
    let cache = Cache::<u64, ()>::builder(1000).shards(1).seed(7).build();
    // Hit ratio over the second half of each phase.
    let mut late = Vec::new();
    for _ in 0..6 {
        for i in (1..ITEMS).rev() {
            mapping.swap(i, (next() % (i as u64 + 1)) as usize);
        }
        let keys: Vec<u64> = (0..PHASE)
            .map(|_| {
                let u = (next() >> 11) as f64 / (1u64 << 53) as f64 * sum;
                mapping[cdf.partition_point(|&c| c < u).min(ITEMS - 1)]
            })
            .collect();
        replay(&cache, keys[..PHASE / 2].iter().copied());
        late.push(replay(&cache, keys[PHASE / 2..].iter().copied()));
    }
    let cold = late[0];
    let after_moves = late[1..].iter().sum::<f64>() / (late.len() - 1) as f64;
    eprintln!("late-phase hit ratios: {late:.4?}");
    assert!(
        after_moves > cold - 0.0185,
        "after a move {after_moves:.4}, from cold {cold:.4}: want within 1.85 points"
    );
}
