//! Replaying a trace through a cache: the [`ReplayCache`] adapter trait, the
//! timed [`replay`] loop and its [`ReplayResult`], and [`TierCache`], the
//! adapter for tiercache's in-process cache.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// A cache under test, seen as "look the key up, and on a miss insert it".
///
/// Adapters decide how a miss is handled (normally: `get`, then `insert` on a
/// miss, with weight 1), so that the replay loop measures the same thing for
/// every cache.
pub trait ReplayCache {
    /// The label printed in reports, e.g. `tiercache` or `moka (sync)`.
    fn name(&self) -> String;

    /// Requests `key`: returns `true` on a hit. On a miss the adapter inserts
    /// the key (the cache may still decline to admit it).
    fn get_or_insert(&mut self, key: u64) -> bool;
}

/// What one [`replay`] measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReplayResult {
    /// The capacity the cache was built with (entries), as reported by the caller.
    pub capacity: u64,
    /// Requests replayed.
    pub requests: u64,
    /// Requests that hit.
    pub hits: u64,
    /// Wall time of the whole replay loop.
    pub elapsed: Duration,
}

impl ReplayResult {
    /// Hits over requests, in `[0, 1]` (0 for an empty trace).
    pub fn hit_ratio(&self) -> f64 {
        if self.requests == 0 {
            0.0
        } else {
            self.hits as f64 / self.requests as f64
        }
    }

    /// Requests per second of wall time (0 if nothing was timed).
    pub fn ops_per_sec(&self) -> f64 {
        let secs = self.elapsed.as_secs_f64();
        if secs > 0.0 {
            self.requests as f64 / secs
        } else {
            0.0
        }
    }
}

/// Replays `keys` through `cache`, counting hits and timing the whole loop.
///
/// `capacity` is only recorded in the result; the caller built the cache.
/// Each key and each outcome go through [`black_box`], so the optimiser can
/// neither precompute the keys nor drop the lookups.
///
/// ```
/// use tiercache_lab::{replay, ReplayCache};
///
/// /// A cache that remembers everything.
/// struct Unbounded(std::collections::HashSet<u64>);
/// impl ReplayCache for Unbounded {
///     fn name(&self) -> String { "unbounded".into() }
///     fn get_or_insert(&mut self, key: u64) -> bool { !self.0.insert(key) }
/// }
///
/// let r = replay(&mut Unbounded(Default::default()), &[1, 2, 1, 2, 3], 0);
/// assert_eq!((r.requests, r.hits), (5, 2));
/// ```
pub fn replay(cache: &mut impl ReplayCache, keys: &[u64], capacity: u64) -> ReplayResult {
    let mut hits = 0u64;
    let start = Instant::now();
    for &key in keys {
        if black_box(cache.get_or_insert(black_box(key))) {
            hits += 1;
        }
    }
    let elapsed = start.elapsed();
    ReplayResult {
        capacity,
        requests: keys.len() as u64,
        hits,
        elapsed,
    }
}

/// tiercache's in-process cache (`tiercache_cache::Cache<u64, ()>`, unit
/// weight) as a [`ReplayCache`]: `get`, and on a miss `insert(key, ())`.
pub struct TierCache(pub tiercache_cache::Cache<u64, ()>);

impl TierCache {
    /// A cache bounded to `capacity` entries, with the crate's default sharding.
    pub fn new(capacity: u64) -> Self {
        TierCache(tiercache_cache::Cache::new(capacity))
    }

    /// A cache bounded to `capacity` entries in `shards` shards (1 gives the
    /// policy the whole capacity, the fairest setting for hit-ratio replays).
    pub fn with_shards(capacity: u64, shards: usize) -> Self {
        TierCache(
            tiercache_cache::Cache::<u64, ()>::builder(capacity)
                .shards(shards)
                .build(),
        )
    }
}

impl ReplayCache for TierCache {
    fn name(&self) -> String {
        "tiercache".to_owned()
    }

    fn get_or_insert(&mut self, key: u64) -> bool {
        if self.0.get(&key).is_some() {
            true
        } else {
            self.0.insert(key, ());
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hits_on_a_hand_checked_sequence() {
        // Capacity 10 never evicts here: misses are exactly first sightings.
        let keys = [1, 2, 1, 2, 3, 1, 4, 4, 2, 5];
        // hits:    -  -  h  h  -  h  -  h  h  -   => 5
        let r = replay(&mut TierCache::new(10), &keys, 10);
        assert_eq!(r.capacity, 10);
        assert_eq!(r.requests, 10);
        assert_eq!(r.hits, 5);
        assert_eq!(r.hit_ratio(), 0.5);
        assert!(r.ops_per_sec() > 0.0);
    }

    #[test]
    fn one_shard_variant_counts_the_same() {
        let keys = [1, 2, 1, 2, 3];
        let r = replay(&mut TierCache::with_shards(10, 1), &keys, 10);
        assert_eq!((r.requests, r.hits), (5, 2));
        assert_eq!(r.hit_ratio(), 0.4);
        assert_eq!(TierCache::new(1).name(), "tiercache");
    }

    #[test]
    fn empty_trace_is_zero_not_nan() {
        let r = replay(&mut TierCache::new(1), &[], 1);
        assert_eq!(r.hit_ratio(), 0.0);
        let r = ReplayResult {
            elapsed: Duration::ZERO,
            ..r
        };
        assert_eq!(r.ops_per_sec(), 0.0);
    }

    #[test]
    fn the_adapter_respects_the_bound() {
        let mut c = TierCache::new(2);
        for k in 0..100 {
            c.get_or_insert(k);
        }
        assert!(c.0.len() <= 2);
        assert_eq!(c.0.capacity(), 2);
    }
}
