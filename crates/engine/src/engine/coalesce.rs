//! Consecutive writes of one key in one call: only the last is written.
//!
//! A multi-key write ([`super::Session::set_many`]: `MSET`, a pipelined run
//! of plain `SET`s) is applied at once, under its keys' locks, and
//! acknowledged together, so no reader can see a value that a later entry
//! of the same call replaces. Journaling and caching such values would only
//! cost: each is a journal record (encoded, checksummed, written) and a
//! memory-tier insert. Only *adjacent* repeats are merged: that is one
//! comparison per entry and no allocation, where finding every repeat
//! would cost a comparison per pair (or a hash per key) on every batch,
//! for batches that almost never repeat a key far apart. A repeat further
//! apart is simply written twice, in order. Measured on `redis-benchmark
//! -t set -P 16`, whose requests all name one key: see BENCHMARKS.md.

use bytes::Bytes;

/// Merges each run of entries for one key into its last value, in place.
pub(super) fn merge_repeats<E>(mut entries: Vec<(Bytes, E)>) -> Vec<(Bytes, E)> {
    // `dedup_by` keeps the first of a run: move the later value into it.
    entries.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            std::mem::swap(&mut later.1, &mut kept.1);
        }
        same
    });
    entries
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(keys: &[&str]) -> Vec<(Bytes, usize)> {
        keys.iter()
            .enumerate()
            .map(|(i, k)| (Bytes::from(k.to_string()), i))
            .collect()
    }

    fn merged(keys: &[&str]) -> Vec<(String, usize)> {
        merge_repeats(batch(keys))
            .into_iter()
            .map(|(k, v)| (String::from_utf8(k.to_vec()).unwrap(), v))
            .collect()
    }

    #[test]
    fn a_run_of_one_key_keeps_its_last_value() {
        assert_eq!(merged(&["k"; 16]), vec![("k".into(), 15)]);
        assert_eq!(
            merged(&["a", "b", "b", "b", "c", "c"]),
            vec![("a".into(), 0), ("b".into(), 3), ("c".into(), 5)]
        );
        assert_eq!(merged(&[]), vec![]);
    }

    #[test]
    fn repeats_further_apart_stay_in_order() {
        // Applied in order, the last write of "a" still wins.
        assert_eq!(
            merged(&["a", "b", "a"]),
            vec![("a".into(), 0), ("b".into(), 1), ("a".into(), 2)]
        );
    }
}
