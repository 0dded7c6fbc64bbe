//! Deterministic synthetic traces.
//!
//! Each generator is a pure function of its arguments: the same seed gives the
//! same keys on every machine (`rand`'s `StdRng` seeded with `seed_from_u64`,
//! and `rand_distr`'s rejection-inversion Zipf sampler). Each trace is built to
//! favour one kind of eviction policy, so that a policy tuned on one of them
//! cannot hide a weakness on another:
//!
//! | generator | rewards | punishes |
//! | --- | --- | --- |
//! | [`zipf`] | frequency (LFU, TinyLFU) | pure recency |
//! | [`zipf_with_scans`] | scan resistance (admission, probation) | LRU, which lets a scan flush the hot set |
//! | [`loop_trace`] | anything that keeps *some* of the loop | LRU and FIFO (0 hits when the loop is larger than the cache) |
//! | [`shifting_zipf`] | fast adaptation to a new hot set | stale frequency counts |
//! | [`recency`] | LRU | frequency-heavy admission |
//!
//! In the Zipf traces, key `r - 1` is the item of popularity rank `r` (key `0`
//! is the most popular) unless said otherwise.

use crate::Trace;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_distr::{Distribution, Geometric, Zipf};

fn zipf_sampler(items: u64, s: f64) -> Zipf<f64> {
    assert!(items >= 1, "a Zipf workload needs at least one item");
    Zipf::new(items, s).unwrap_or_else(|e| panic!("bad Zipf parameters ({items}, {s}): {e}"))
}

/// Independent requests over `items` keys with Zipf popularity of exponent `s`:
/// the probability of the key of rank `r` is proportional to `1 / r^s`. Key
/// `r - 1` has rank `r`. Named `zipf-{s}` (e.g. `zipf-0.99`).
///
/// The classic skewed workload (web objects, CDN, KV stores: `s` of 0.6 to
/// 1.2). With independent requests the optimal online policy is "keep the most
/// frequent", so it measures how well a policy estimates frequency.
///
/// ```
/// let t = tiercache_lab::workload::zipf(1000, 0.99, 10_000, 7);
/// assert_eq!(t.name, "zipf-0.99");
/// assert_eq!(t.keys.len(), 10_000);
/// assert!(t.keys.iter().all(|k| *k < 1000));
/// ```
pub fn zipf(items: u64, s: f64, requests: usize, seed: u64) -> Trace {
    let dist = zipf_sampler(items, s);
    let mut rng = StdRng::seed_from_u64(seed);
    let keys = (0..requests).map(|_| rank0(&dist, &mut rng)).collect();
    Trace {
        name: format!("zipf-{s}"),
        keys,
    }
}

/// A 0-based Zipf rank.
fn rank0(dist: &Zipf<f64>, rng: &mut StdRng) -> u64 {
    dist.sample(rng) as u64 - 1
}

/// Zipf traffic as in [`zipf`], interrupted after every `scan_every` Zipf
/// requests by a sequential scan of `scan_len` fresh keys, never requested
/// before nor after (they count up from `items`). `requests` is the total
/// length, scans included. Named `zipf-{s}+scan`.
///
/// Models a batch job or crawler walking the key space alongside live
/// traffic. A scan is pure pollution: a policy that admits every new key
/// (LRU, FIFO) loses up to `scan_len` hot entries per scan; one with an
/// admission filter or a probation queue keeps its hot set.
pub fn zipf_with_scans(
    items: u64,
    s: f64,
    requests: usize,
    scan_every: usize,
    scan_len: usize,
    seed: u64,
) -> Trace {
    assert!(scan_every >= 1, "scan_every must be at least 1");
    let dist = zipf_sampler(items, s);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut keys = Vec::with_capacity(requests);
    let mut next_fresh = items;
    while keys.len() < requests {
        for _ in 0..scan_every.min(requests - keys.len()) {
            keys.push(rank0(&dist, &mut rng));
        }
        for _ in 0..scan_len.min(requests - keys.len()) {
            keys.push(next_fresh);
            next_fresh += 1;
        }
    }
    Trace {
        name: format!("zipf-{s}+scan"),
        keys,
    }
}

/// The keys `0, 1, ..., items - 1, 0, 1, ...` cycled until `requests` keys.
/// Named `loop`.
///
/// LRU's (and FIFO's) worst case: with a cache smaller than `items`, each key
/// is evicted just before it comes back, so they never hit. The best possible
/// hit ratio for a cache of `c < items` entries is about `c / items` (keep any
/// fixed `c` keys), which frequency- or admission-based policies approach.
///
/// ```
/// let t = tiercache_lab::workload::loop_trace(3, 7);
/// assert_eq!(t.keys, [0, 1, 2, 0, 1, 2, 0]);
/// ```
pub fn loop_trace(items: u64, requests: usize) -> Trace {
    assert!(items >= 1, "a loop needs at least one item");
    Trace {
        name: "loop".to_owned(),
        keys: (0..requests as u64).map(|i| i % items).collect(),
    }
}

/// Zipf traffic over `items` keys whose popularity ranks are re-mapped to the
/// keys by a fresh random permutation every `phase_len` requests. Named
/// `shifting-zipf-{s}`.
///
/// The skew is the same in every phase but the hot keys change: yesterday's
/// favourites become cold. A policy must forget stale frequency counts
/// (ageing, decay, a recency window) to follow; here recency beats old
/// frequency. The key space stays `0..items`.
pub fn shifting_zipf(items: u64, s: f64, requests: usize, phase_len: usize, seed: u64) -> Trace {
    assert!(phase_len >= 1, "phase_len must be at least 1");
    let dist = zipf_sampler(items, s);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut mapping: Vec<u64> = (0..items).collect();
    let mut keys = Vec::with_capacity(requests);
    while keys.len() < requests {
        mapping.shuffle(&mut rng);
        for _ in 0..phase_len.min(requests - keys.len()) {
            keys.push(mapping[rank0(&dist, &mut rng) as usize]);
        }
    }
    Trace {
        name: format!("shifting-zipf-{s}"),
        keys,
    }
}

/// An LRU-friendly trace built from the LRU stack model. Each request is,
/// with probability `p_new`, a brand-new key (never seen before); otherwise it
/// re-references the key at LRU stack distance `d` (0 = the most recently
/// used key), with `d` geometric of mean `mean_stack_distance`. If the stack is
/// shallower than `d` the request is a new key. Named `recency`.
///
/// Models session-like access (a user's objects are hot while the session
/// lasts, then never again). Recent keys are the likeliest to come back and
/// past frequency says nothing, so LRU is near-optimal: a cache of `c` entries
/// hits about `P(d < c)` of re-references. Policies that demand a key prove
/// its frequency before admission lose here.
///
/// ```
/// let t = tiercache_lab::workload::recency(10_000, 0.1, 50.0, 1);
/// assert_eq!(t.name, "recency");
/// assert!(t.distinct_keys() < 2_000); // ~10% new keys
/// ```
pub fn recency(requests: usize, p_new: f64, mean_stack_distance: f64, seed: u64) -> Trace {
    assert!(
        (0.0..=1.0).contains(&p_new),
        "p_new must be in [0, 1], got {p_new}"
    );
    assert!(
        mean_stack_distance >= 0.0,
        "mean_stack_distance must be >= 0, got {mean_stack_distance}"
    );
    // Geometric(p) counts failures before the first success: mean (1 - p) / p.
    let distance = Geometric::new(1.0 / (mean_stack_distance + 1.0)).expect("valid probability");
    let mut rng = StdRng::seed_from_u64(seed);
    // The LRU stack, most recent last, so a re-reference at distance d moves
    // d entries (cheap for the small distances this model favours).
    let mut stack: Vec<u64> = Vec::new();
    let mut next_new = 0u64;
    let mut keys = Vec::with_capacity(requests);
    for _ in 0..requests {
        let d = if rng.gen_bool(p_new) {
            u64::MAX
        } else {
            distance.sample(&mut rng)
        };
        let key = if (d as usize) < stack.len() && d != u64::MAX {
            stack.remove(stack.len() - 1 - d as usize)
        } else {
            next_new += 1;
            next_new - 1
        };
        stack.push(key);
        keys.push(key);
    }
    Trace {
        name: "recency".to_owned(),
        keys,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::{HashMap, HashSet};

    fn counts(keys: &[u64]) -> HashMap<u64, usize> {
        let mut c = HashMap::new();
        for k in keys {
            *c.entry(*k).or_default() += 1;
        }
        c
    }

    #[test]
    fn generators_are_deterministic_per_seed() {
        assert_eq!(zipf(1000, 0.99, 5000, 1), zipf(1000, 0.99, 5000, 1));
        assert_ne!(zipf(1000, 0.99, 5000, 1), zipf(1000, 0.99, 5000, 2));
        assert_eq!(
            zipf_with_scans(1000, 0.99, 5000, 100, 50, 3),
            zipf_with_scans(1000, 0.99, 5000, 100, 50, 3)
        );
        assert_eq!(
            shifting_zipf(1000, 0.99, 5000, 1000, 4),
            shifting_zipf(1000, 0.99, 5000, 1000, 4)
        );
        assert_eq!(recency(5000, 0.1, 20.0, 5), recency(5000, 0.1, 20.0, 5));
        assert_ne!(recency(5000, 0.1, 20.0, 5), recency(5000, 0.1, 20.0, 6));
    }

    #[test]
    fn zipf_top_key_is_the_most_frequent() {
        let t = zipf(10_000, 1.2, 100_000, 42);
        assert_eq!(t.name, "zipf-1.2");
        assert_eq!(t.keys.len(), 100_000);
        let c = counts(&t.keys);
        let (top, _) = c.iter().max_by_key(|(_, n)| **n).unwrap();
        assert_eq!(*top, 0);
        assert!(c[&0] > c[&1] && c[&1] > c[&9]);
        assert!(t.keys.iter().all(|k| *k < 10_000));
    }

    #[test]
    fn loop_cycles_exactly() {
        let t = loop_trace(5, 23);
        assert_eq!(t.keys.len(), 23);
        for (i, k) in t.keys.iter().enumerate() {
            assert_eq!(*k, i as u64 % 5);
        }
    }

    #[test]
    fn scans_are_sequential_fresh_keys() {
        let items = 1000;
        let t = zipf_with_scans(items, 0.99, 10_000, 200, 100, 9);
        assert_eq!(t.name, "zipf-0.99+scan");
        assert_eq!(t.keys.len(), 10_000);
        // 33 full rounds of 200 + 100 = 9_900 keys, then 100 Zipf keys: 33 scans.
        let scan: Vec<u64> = t.keys.iter().copied().filter(|k| *k >= items).collect();
        assert_eq!(scan.len(), 33 * 100);
        assert!(t.keys[9_900..].iter().all(|k| *k < items));
        // Fresh: each scan key occurs once, in increasing order, from `items`.
        for (i, k) in scan.iter().enumerate() {
            assert_eq!(*k, items + i as u64);
        }
        // And at the expected places.
        assert!(t.keys[200..300].iter().all(|k| *k >= items));
        assert!(t.keys[..200].iter().all(|k| *k < items));
    }

    #[test]
    fn shifting_zipf_moves_the_hot_key_each_phase() {
        let items = 1000;
        let t = shifting_zipf(items, 1.2, 40_000, 10_000, 11);
        assert_eq!(t.keys.len(), 40_000);
        assert!(t.keys.iter().all(|k| *k < items));
        let tops: Vec<u64> = t
            .keys
            .chunks(10_000)
            .map(|phase| *counts(phase).iter().max_by_key(|(_, n)| **n).unwrap().0)
            .collect();
        let distinct: HashSet<_> = tops.iter().collect();
        assert!(distinct.len() >= 3, "hot keys per phase: {tops:?}");
    }

    #[test]
    fn recency_rereferences_recent_keys() {
        let t = recency(50_000, 0.05, 10.0, 3);
        let new = t.distinct_keys();
        // ~5% new keys (plus the few early requests whose distance fell off the stack).
        assert!((2_000..3_500).contains(&new), "{new}");
        // New keys are numbered in order of first appearance.
        let mut max = 0;
        for k in &t.keys {
            assert!(*k <= max + 1 || (*k == 0 && max == 0));
            max = max.max(*k);
        }
        // Small stack distances dominate: most re-references are to keys seen
        // in the last 50 requests.
        let mut last_seen = HashMap::new();
        let (mut near, mut rerefs) = (0, 0);
        for (i, k) in t.keys.iter().enumerate() {
            if let Some(j) = last_seen.insert(*k, i) {
                rerefs += 1;
                near += usize::from(i - j <= 50);
            }
        }
        assert!(near * 10 > rerefs * 8, "{near}/{rerefs}");
    }
}
