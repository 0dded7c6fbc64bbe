//! [`BucketStore`]: sharding — every key lives in exactly one of N child
//! stores (Scribe's bucket store, Sphinx's distributed index).
//!
//! # Which bucket
//!
//! The *routing key* is the key, or with a `delimiter` the part of the key
//! before the delimiter's first occurrence (so `user:42:name` and
//! `user:42:mail` share a bucket with `delimiter = ":"`... only if the part
//! before it is what should group them; Scribe's rule, kept as is).
//!
//! - [`BucketHash::KeyHash`]: `fnv1a64(routing key) % N`, with
//!   [`fnv1a64`] the 64-bit FNV-1a hash (offset basis
//!   `0xcbf29ce484222325`, prime `0x100000001b3`) over the routing key's
//!   bytes. It is fixed forever: it depends on no platform, seed or crate
//!   version, so data written by one build is found by the next. Changing N
//!   moves keys (it is a modulo, not a consistent hash).
//! - [`BucketHash::KeyModulo`]: the routing key read as an unsigned decimal
//!   integer (ASCII digits only, any length) modulo N. A routing key that
//!   is not a number is an error naming the key; the whole batch fails.
//!
//! # Fan-out
//!
//! A batch is split by bucket (keeping each key's input position), the
//! buckets are called concurrently, and the answers are put back in input
//! order. `count` and `purge_expired` add up, `key_stats` merges,
//! `scan_keys` merges the buckets' sorted pages (a k-way merge; each bucket
//! is asked for `limit` keys, so the first `limit` of the merge are exact),
//! `clear` clears every bucket.
//!
//! A write that fails in some buckets has still been applied in the others
//! (like any non-transactional store); the error names the failed buckets,
//! and retrying the whole batch is safe because writes are idempotent.

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::join_all;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::ops::Bound;
use std::sync::Arc;
use tiercache_engine::{Entry, KeyStats, Mutation, Store, StoreError};

/// Per bucket: input positions and the items at them.
type Groups<T> = Vec<(Vec<usize>, Vec<T>)>;

/// How a [`BucketStore`] maps a key to a bucket.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BucketHash {
    /// [`fnv1a64`] of the routing key, modulo the number of buckets.
    #[default]
    KeyHash,
    /// The routing key as an unsigned decimal number, modulo the number of
    /// buckets.
    KeyModulo,
}

/// 64-bit FNV-1a: the stable hash behind [`BucketHash::KeyHash`].
///
/// ```
/// use tiercache_stores::bucket::fnv1a64;
/// assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
/// assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
/// assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
/// ```
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Shards keys over child stores.
///
/// ```
/// use std::sync::Arc;
/// use tiercache_engine::{testing::MemoryStore, Entry, Store};
/// use tiercache_stores::{BucketHash, BucketStore};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let shards: Vec<Arc<MemoryStore>> =
///     (0..4).map(|i| Arc::new(MemoryStore::new(&format!("s.buckets[{i}]")))).collect();
/// let store = BucketStore::new(
///     "s",
///     shards.iter().map(|s| s.clone() as Arc<dyn Store>).collect(),
///     BucketHash::KeyHash,
///     None,
/// )
/// .unwrap();
/// store
///     .set_many(&[("a".into(), Entry::new("1")), ("b".into(), Entry::new("2"))])
///     .await
///     .unwrap();
/// // Answers come back in input order, whichever bucket holds each key.
/// let got = store.get_many(&["b".into(), "zz".into(), "a".into()]).await.unwrap();
/// assert_eq!(got, vec![Some(Entry::new("2")), None, Some(Entry::new("1"))]);
/// // Each key is in exactly one bucket: the one `bucket_of` names.
/// let i = store.bucket_of(b"a").unwrap();
/// assert_eq!(shards[i].len(), shards.iter().filter(|s| s.snapshot().contains_key(b"a".as_slice())).map(|s| s.len()).sum::<usize>());
/// assert_eq!(store.count().await.unwrap(), 2);
/// # });
/// ```
pub struct BucketStore {
    name: String,
    buckets: Vec<Arc<dyn Store>>,
    hash: BucketHash,
    delimiter: Option<Bytes>,
}

impl BucketStore {
    /// Shards over `buckets` (at least one). An empty `delimiter` is the
    /// same as none.
    pub fn new(
        name: &str,
        buckets: Vec<Arc<dyn Store>>,
        hash: BucketHash,
        delimiter: Option<&[u8]>,
    ) -> Result<BucketStore, StoreError> {
        if buckets.is_empty() {
            return Err(StoreError::new(
                name,
                "a bucket store needs at least one bucket",
            ));
        }
        Ok(BucketStore {
            name: name.to_owned(),
            buckets,
            hash,
            delimiter: delimiter
                .filter(|d| !d.is_empty())
                .map(Bytes::copy_from_slice),
        })
    }

    /// The buckets, in configuration order.
    pub fn buckets(&self) -> &[Arc<dyn Store>] {
        &self.buckets
    }

    /// The part of `key` that chooses its bucket.
    pub fn routing_key<'k>(&self, key: &'k [u8]) -> &'k [u8] {
        match &self.delimiter {
            Some(d) => key
                .windows(d.len())
                .position(|w| w == &d[..])
                .map_or(key, |at| &key[..at]),
            None => key,
        }
    }

    /// The index of the bucket that holds `key`.
    pub fn bucket_of(&self, key: &[u8]) -> Result<usize, StoreError> {
        let n = self.buckets.len() as u64;
        let r = self.routing_key(key);
        match self.hash {
            BucketHash::KeyHash => Ok((fnv1a64(r) % n) as usize),
            BucketHash::KeyModulo => {
                if r.is_empty() || !r.iter().all(u8::is_ascii_digit) {
                    return Err(StoreError::new(
                        &self.name,
                        format!(
                            "key_modulo needs a decimal number before the delimiter, got key {:?}",
                            String::from_utf8_lossy(key)
                        ),
                    ));
                }
                // Digit by digit, so numbers of any length work.
                Ok(r.iter()
                    .fold(0u64, |acc, d| (acc * 10 + (d - b'0') as u64) % n)
                    as usize)
            }
        }
    }

    /// `items` grouped by bucket, each with its input position.
    fn split<T: Clone>(
        &self,
        items: &[T],
        key: impl Fn(&T) -> &[u8],
    ) -> Result<Groups<T>, StoreError> {
        let mut groups = vec![(Vec::new(), Vec::new()); self.buckets.len()];
        for (i, item) in items.iter().enumerate() {
            let g = &mut groups[self.bucket_of(key(item))?];
            g.0.push(i);
            g.1.push(item.clone());
        }
        Ok(groups)
    }

    /// The error for the buckets that failed, or `Ok` when none did.
    fn combine<T>(
        &self,
        results: Vec<(usize, Result<T, StoreError>)>,
    ) -> Result<Vec<T>, StoreError> {
        let mut ok = Vec::with_capacity(results.len());
        let mut failed = Vec::new();
        for (i, r) in results {
            match r {
                Ok(v) => ok.push(v),
                Err(e) => failed.push(format!("buckets[{i}] failed: {e}")),
            }
        }
        if failed.is_empty() {
            Ok(ok)
        } else {
            Err(StoreError::new(&self.name, failed.join("; ")))
        }
    }

    /// Runs `op` on every bucket that has items, concurrently.
    async fn write<T: Clone + Sync>(
        &self,
        items: &[T],
        key: impl Fn(&T) -> &[u8],
        op: impl Fn(
            Arc<dyn Store>,
            Vec<T>,
        ) -> futures::future::BoxFuture<'static, Result<(), StoreError>>,
    ) -> Result<(), StoreError> {
        if self.buckets.len() == 1 {
            // Still validate the keys (key_modulo) before writing.
            for item in items {
                self.bucket_of(key(item))?;
            }
            return op(self.buckets[0].clone(), items.to_vec()).await;
        }
        let groups = self.split(items, key)?;
        let calls = groups
            .into_iter()
            .enumerate()
            .filter(|(_, (_, batch))| !batch.is_empty())
            .map(|(i, (_, batch))| {
                let fut = op(self.buckets[i].clone(), batch);
                async move { (i, fut.await) }
            });
        self.combine(join_all(calls).await).map(|_| ())
    }

    /// Runs `op` on every bucket concurrently.
    async fn each<'a, T>(
        &'a self,
        op: impl Fn(&'a dyn Store) -> futures::future::BoxFuture<'a, Result<T, StoreError>>,
    ) -> Result<Vec<T>, StoreError> {
        let calls = self.buckets.iter().enumerate().map(|(i, b)| {
            let fut = op(b.as_ref());
            async move { (i, fut.await) }
        });
        self.combine(join_all(calls).await)
    }
}

#[async_trait]
impl Store for BucketStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        let groups = self.split(keys, |k| k)?;
        if self.buckets.len() == 1 {
            return self.buckets[0].get_many(keys).await;
        }
        let calls = groups
            .iter()
            .enumerate()
            .filter(|(_, (_, ks))| !ks.is_empty())
            .map(|(i, (_, ks))| async move { (i, self.buckets[i].get_many(ks).await) });
        let results = join_all(calls).await;
        let mut out = vec![None; keys.len()];
        let mut failed = Vec::new();
        for (i, r) in results {
            match r {
                Ok(got) => {
                    let positions = &groups[i].0;
                    if got.len() != positions.len() {
                        failed.push(format!(
                            "buckets[{i}] answered {} entries for {} keys",
                            got.len(),
                            positions.len()
                        ));
                        continue;
                    }
                    for (&pos, e) in positions.iter().zip(got) {
                        out[pos] = e;
                    }
                }
                Err(e) => failed.push(format!("buckets[{i}] failed: {e}")),
            }
        }
        if failed.is_empty() {
            Ok(out)
        } else {
            Err(StoreError::new(&self.name, failed.join("; ")))
        }
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.write(
            entries,
            |(k, _)| k,
            |s, batch| Box::pin(async move { s.set_many(&batch).await }),
        )
        .await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.write(
            keys,
            |k| k,
            |s, batch| Box::pin(async move { s.delete_many(&batch).await }),
        )
        .await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        // Splitting keeps the relative order of each bucket's mutations,
        // and a key's mutations all go to one bucket.
        self.write(
            batch,
            |m| m.key(),
            |s, batch| Box::pin(async move { s.apply(&batch).await }),
        )
        .await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        Ok(self.each(|b| b.count()).await?.into_iter().sum())
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.each(|b| b.clear()).await.map(|_| ())
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let pages = self
            .each(|b| b.scan_keys(start, prefix, limit, now_ms))
            .await?;
        Ok(merge_sorted(pages, limit))
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        Ok(self
            .each(|b| b.key_stats(now_ms))
            .await?
            .into_iter()
            .fold(KeyStats::default(), KeyStats::merge))
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        Ok(self
            .each(|b| b.purge_expired(now_ms))
            .await?
            .into_iter()
            .sum())
    }
}

/// The first `limit` keys of the union of sorted `pages` (a k-way merge;
/// duplicates, which disjoint buckets never produce, are kept once).
pub(crate) fn merge_sorted(pages: Vec<Vec<Bytes>>, limit: usize) -> Vec<Bytes> {
    let mut iters: Vec<std::vec::IntoIter<Bytes>> = pages.into_iter().map(Vec::into_iter).collect();
    let mut heap = BinaryHeap::new();
    for (i, it) in iters.iter_mut().enumerate() {
        if let Some(k) = it.next() {
            heap.push(Reverse((k, i)));
        }
    }
    let mut out: Vec<Bytes> = Vec::with_capacity(limit.min(1024));
    while out.len() < limit {
        let Some(Reverse((k, i))) = heap.pop() else {
            break;
        };
        if let Some(next) = iters[i].next() {
            heap.push(Reverse((next, i)));
        }
        if out.last() != Some(&k) {
            out.push(k);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiercache_engine::testing::MemoryStore;

    fn store(n: usize, hash: BucketHash, delimiter: Option<&[u8]>) -> BucketStore {
        BucketStore::new(
            "shards",
            (0..n)
                .map(|i| {
                    Arc::new(MemoryStore::new(&format!("shards.buckets[{i}]"))) as Arc<dyn Store>
                })
                .collect(),
            hash,
            delimiter,
        )
        .unwrap()
    }

    #[test]
    fn known_keys_map_to_known_buckets() {
        // These values are part of the on-disk contract: a change here moves
        // existing data to other buckets.
        let s = store(4, BucketHash::KeyHash, None);
        let got: Vec<usize> = ["", "a", "foobar", "user:1", "user:2", "station:008814001"]
            .iter()
            .map(|k| s.bucket_of(k.as_bytes()).unwrap())
            .collect();
        // FNV-1a 64 computed independently (Python reference):
        // "" 0xcbf29ce484222325, "a" 0xaf63dc4c8601ec8c, "foobar"
        // 0x85944171f73967e8, "user:1" 0xf7fd9aaa75081ceb, "user:2"
        // 0xf7fd9baa75081e9e, "station:008814001" 0xc98213e6636217ad.
        assert_eq!(fnv1a64(b"user:1"), 0xf7fd9aaa75081ceb);
        assert_eq!(fnv1a64(b"station:008814001"), 0xc98213e6636217ad);
        assert_eq!(got, vec![1, 0, 0, 3, 2, 1]);
    }

    #[test]
    fn delimiter_routes_by_the_part_before_it() {
        let s = store(8, BucketHash::KeyHash, Some(b"::"));
        assert_eq!(s.routing_key(b"user::42::name"), b"user");
        assert_eq!(s.routing_key(b"nodelim"), b"nodelim");
        assert_eq!(
            s.bucket_of(b"user::1").unwrap(),
            s.bucket_of(b"user::2::x").unwrap()
        );
        assert_eq!(
            s.bucket_of(b"user").unwrap(),
            (fnv1a64(b"user") % 8) as usize
        );
    }

    #[test]
    fn key_modulo_reads_decimal_numbers_of_any_length() {
        let s = store(7, BucketHash::KeyModulo, Some(b":"));
        assert_eq!(s.bucket_of(b"15").unwrap(), 1);
        assert_eq!(s.bucket_of(b"15:profile").unwrap(), 1);
        assert_eq!(s.bucket_of(b"0").unwrap(), 0);
        // 10^30 mod 7 = 1 (10^6 ≡ 1 mod 7)
        assert_eq!(
            s.bucket_of(format!("1{}", "0".repeat(30)).as_bytes())
                .unwrap(),
            1
        );
        for bad in [&b"user:1"[..], b"", b"-3", b"+3", b" 3", b"3a", b":3"] {
            let e = s.bucket_of(bad).unwrap_err();
            assert_eq!(e.store, "shards");
            assert!(
                e.message.contains("key_modulo needs a decimal number"),
                "{e}"
            );
        }
    }

    #[tokio::test]
    async fn a_non_numeric_key_fails_the_batch_and_writes_nothing() {
        let s = store(3, BucketHash::KeyModulo, None);
        let err = s
            .set_many(&[("1".into(), Entry::new("a")), ("x".into(), Entry::new("b"))])
            .await
            .unwrap_err();
        assert!(err.message.contains("\"x\""), "{err}");
        assert_eq!(s.count().await.unwrap(), 0);
        assert!(s.get_many(&["2".into(), "y".into()]).await.is_err());
    }

    #[test]
    fn merge_takes_the_smallest_keys_across_pages() {
        let p = |v: &[&str]| {
            v.iter()
                .map(|s| Bytes::copy_from_slice(s.as_bytes()))
                .collect::<Vec<_>>()
        };
        let merged = merge_sorted(vec![p(&["a", "d", "e"]), p(&[]), p(&["b", "c", "f"])], 4);
        assert_eq!(merged, p(&["a", "b", "c", "d"]));
        assert_eq!(
            merge_sorted(vec![p(&["a"]), p(&["a", "b"])], 10),
            p(&["a", "b"])
        );
    }

    #[tokio::test]
    async fn conformance() {
        for n in [1, 3] {
            tiercache_engine::testing::conformance::check_store(
                &store(n, BucketHash::KeyHash, None),
                tiercache_engine::testing::conformance::Capabilities::FULL,
            )
            .await;
        }
    }
}
