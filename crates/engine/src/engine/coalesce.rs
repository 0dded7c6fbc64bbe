//! Writes in one call that a later write in the same call supersedes.
//!
//! A multi-key write ([`super::Session::set_many`]: `MSET`, a pipelined run
//! of plain `SET`s) is applied at once, under its keys' locks, and
//! acknowledged together, so no reader can see a value that a later entry
//! of the same call replaces. Journaling and caching such values would only
//! cost: each is a journal record (encoded, checksummed, written) and a
//! memory-tier insert. Measured on `redis-benchmark -t set -P 16`, whose
//! requests all name one key, default config: see BENCHMARKS.md.

use bytes::Bytes;
use std::collections::HashMap;

/// Batches up to this size are deduplicated by comparing keys pairwise
/// (a pipeline's worth: cheaper than hashing every key).
const PAIRWISE_MAX: usize = 32;

/// `entries` with each key once, holding its last value, in the order of
/// the keys' first appearance.
pub(super) fn last_value_per_key<E>(entries: Vec<(Bytes, E)>) -> Vec<(Bytes, E)> {
    if entries.len() < 2 {
        return entries;
    }
    let mut out: Vec<(Bytes, E)> = Vec::with_capacity(entries.len());
    if entries.len() <= PAIRWISE_MAX {
        for (key, value) in entries {
            match out.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = value,
                None => out.push((key, value)),
            }
        }
    } else {
        let mut index: HashMap<Bytes, usize> = HashMap::with_capacity(entries.len());
        for (key, value) in entries {
            match index.get(&key) {
                Some(&i) => out[i].1 = value,
                None => {
                    index.insert(key.clone(), out.len());
                    out.push((key, value));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys_and_values(n: usize, distinct: usize) -> Vec<(Bytes, usize)> {
        (0..n)
            .map(|i| (Bytes::from(format!("k{}", i % distinct)), i))
            .collect()
    }

    #[test]
    fn keeps_the_last_value_in_first_appearance_order() {
        for (n, distinct) in [(1, 1), (16, 1), (16, 3), (32, 32), (100, 7), (1000, 1000)] {
            let got = last_value_per_key(keys_and_values(n, distinct));
            let kept = distinct.min(n);
            assert_eq!(got.len(), kept, "n={n} distinct={distinct}");
            for (i, (k, v)) in got.iter().enumerate() {
                assert_eq!(k, &Bytes::from(format!("k{i}")), "first-appearance order");
                let last = (0..n).rev().find(|j| j % distinct == i).unwrap();
                assert_eq!(*v, last, "the last value of k{i}");
            }
        }
    }
}
