//! The key filter: answers "this key is in none of the namespace's stores"
//! without asking them.
//!
//! A GET of an absent key used to cost a store round trip every time (a
//! SQLite lookup on the blocking pool): 0.04x redis-server on pipelined GETs
//! of absent keys. When every store of a namespace is *exclusive* (only this
//! engine writes it, see [`Store::exclusive`]), the engine knows every key
//! that can be there: the ones a startup scan found, plus every key it wrote
//! since. A Bloom filter of those keys answers most misses from memory.
//!
//! Invariant (no false negatives): a key is inserted *before* any write of it
//! reaches a store ([`RecordingStore`] wraps the namespace's stores), and the
//! filter only answers once the startup scan has covered what the stores held
//! before. Deletes are not removed (a Bloom filter cannot): a deleted key
//! costs one store lookup, as before. False positives cost the same.
//!
//! The filter grows in layers, each four times the previous, so the false
//! positive rate stays near 1% however many keys arrive.
//!
//! Hand-written rather than a crate: fastbloom 0.17's `AtomicBloomFilter`
//! spreads a key's probes over the whole bit array, and on pipelined GETs
//! of absent keys its lookups took 12.8% of the server's samples (a cache
//! miss per probe). Here a key's bits share one cache line (a split-block
//! Bloom filter, as Parquet's and Impala's): one miss per lookup.

use crate::entry::Entry;
use crate::store::{KeyStats, Mutation, Store, StoreError};
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::RwLock;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Bits per key a layer is sized for: about 1% false positives with eight
/// bits per key in 512-bit blocks.
const BITS_PER_KEY: usize = 10;
/// Keys the first layer is sized for (about 1.3 MB of bits).
const FIRST_LAYER_KEYS: usize = 1 << 20;

/// One cache line of bits. A key sets one bit in each of the eight words.
#[repr(align(64))]
struct Block([AtomicU64; 8]);

struct Layer {
    blocks: Box<[Block]>,
    capacity: usize,
    items: AtomicUsize,
}

impl Layer {
    fn new(capacity: usize) -> Layer {
        let n = (capacity.saturating_mul(BITS_PER_KEY) / 512).max(1);
        Layer {
            blocks: (0..n).map(|_| Block(Default::default())).collect(),
            capacity,
            items: AtomicUsize::new(0),
        }
    }

    /// The key's block (from the hash's high bits) and its bit in each word
    /// (from six low bits each).
    #[inline]
    fn probe(&self, h: u64) -> (&Block, [u64; 8]) {
        let i = ((u128::from(h) * self.blocks.len() as u128) >> 64) as usize;
        let mut masks = [0u64; 8];
        for (w, m) in masks.iter_mut().enumerate() {
            *m = 1 << ((h >> (6 * w)) & 63);
        }
        (&self.blocks[i], masks)
    }

    #[inline]
    fn contains(&self, h: u64) -> bool {
        let (block, masks) = self.probe(h);
        block
            .0
            .iter()
            .zip(masks)
            .all(|(word, m)| word.load(Ordering::Acquire) & m != 0)
    }

    /// Sets the key's bits; true if they were all set already.
    fn insert(&self, h: u64) -> bool {
        let (block, masks) = self.probe(h);
        let mut all = true;
        for (word, m) in block.0.iter().zip(masks) {
            all &= word.fetch_or(m, Ordering::AcqRel) & m != 0;
        }
        all
    }
}

/// Which keys may be in a namespace's stores. See the module documentation.
pub(crate) struct KeyFilter {
    layers: RwLock<Vec<Layer>>,
    hasher: ahash::RandomState,
    /// Set once the startup scan has inserted every key the store held.
    ready: AtomicBool,
}

impl KeyFilter {
    pub(crate) fn new() -> Arc<KeyFilter> {
        Arc::new(KeyFilter {
            layers: RwLock::new(vec![Layer::new(FIRST_LAYER_KEYS)]),
            hasher: ahash::RandomState::new(),
            ready: AtomicBool::new(false),
        })
    }

    /// Records that `key` may be in the stores from now on.
    pub(crate) fn insert(&self, key: &[u8]) {
        let h = self.hasher.hash_one(key);
        let layers = self.layers.read();
        if layers.iter().any(|l| l.contains(h)) {
            return;
        }
        let last = layers.last().expect("at least one layer");
        if last.insert(h) {
            return;
        }
        if last.items.fetch_add(1, Ordering::Relaxed) + 1 < last.capacity {
            return;
        }
        let full = last.capacity;
        drop(layers);
        let mut layers = self.layers.write();
        if layers.last().is_some_and(|l| l.capacity == full) {
            layers.push(Layer::new(full.saturating_mul(4)));
        }
    }

    /// False only when `key` is certainly in none of the stores.
    pub(crate) fn may_contain(&self, key: &[u8]) -> bool {
        if !self.ready.load(Ordering::Acquire) {
            return true;
        }
        let h = self.hasher.hash_one(key);
        self.layers.read().iter().any(|l| l.contains(h))
    }

    /// The startup scan is complete: answers from now on.
    pub(crate) fn set_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    pub(crate) fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Inserts every live key of `store`, a page at a time.
    pub(crate) async fn scan(&self, store: &dyn Store) -> Result<u64, StoreError> {
        const PAGE: usize = 10_000;
        let mut after: Option<Bytes> = None;
        let mut n = 0u64;
        loop {
            let start = after.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let keys = store
                .scan_keys(start, b"", PAGE, crate::entry::now_ms())
                .await?;
            for k in &keys {
                self.insert(k);
            }
            n += keys.len() as u64;
            if keys.len() < PAGE {
                return Ok(n);
            }
            after = keys.last().cloned();
        }
    }
}

/// A store wrapper that records in a [`KeyFilter`] every key written
/// through it, before the write reaches the store.
pub(crate) struct RecordingStore {
    inner: Arc<dyn Store>,
    filter: Arc<KeyFilter>,
}

impl RecordingStore {
    pub(crate) fn wrap(inner: Arc<dyn Store>, filter: Arc<KeyFilter>) -> Arc<dyn Store> {
        Arc::new(RecordingStore { inner, filter })
    }
}

#[async_trait]
impl Store for RecordingStore {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn exclusive(&self) -> bool {
        self.inner.exclusive()
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.inner.get_many(keys).await
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        for (k, _) in entries {
            self.filter.insert(k);
        }
        self.inner.set_many(entries).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.inner.delete_many(keys).await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        for m in batch {
            if let Mutation::Set(k, _) = m {
                self.filter.insert(k);
            }
            // A write-back flush's batch is thousands of keys: let the
            // connections run every 128 (see `WriteBack::flush_locked`).
            tokio::task::coop::consume_budget().await;
        }
        self.inner.apply(batch).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        self.inner.count().await
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.inner.clear().await
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.inner.scan_keys(start, prefix, limit, now_ms).await
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        self.inner.key_stats(now_ms).await
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        self.inner.purge_expired(now_ms).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::MemoryStore;

    #[test]
    fn answers_only_when_ready_and_never_forgets_an_inserted_key() {
        let f = KeyFilter::new();
        assert!(f.may_contain(b"anything"), "not ready: must say maybe");
        f.insert(b"present");
        f.set_ready();
        assert!(f.may_contain(b"present"));
        let absent = (0..10_000)
            .filter(|i| !f.may_contain(format!("absent{i}").as_bytes()))
            .count();
        assert!(
            absent > 9_800,
            "only {absent} of 10000 absent keys filtered"
        );
    }

    #[test]
    fn grows_a_layer_when_full_and_keeps_every_key() {
        let f = KeyFilter::new();
        f.set_ready();
        let n = FIRST_LAYER_KEYS + FIRST_LAYER_KEYS / 2;
        for i in 0..n {
            f.insert(&(i as u64).to_le_bytes());
        }
        assert_eq!(f.layers.read().len(), 2);
        assert!((0..n).all(|i| f.may_contain(&(i as u64).to_le_bytes())));
        // The rate stays near the target after growth.
        let fp = (0..20_000u64)
            .filter(|i| f.may_contain(&(u64::MAX - i).to_le_bytes()))
            .count();
        assert!(fp < 20_000 / 25, "{fp} false positives in 20000");
    }

    #[tokio::test]
    async fn scan_and_recording_store_cover_every_key() {
        let inner = Arc::new(MemoryStore::new("m"));
        for i in 0..25_000 {
            inner
                .set_many(&[(Bytes::from(format!("old{i}")), Entry::new("v"))])
                .await
                .unwrap();
        }
        let f = KeyFilter::new();
        let store = RecordingStore::wrap(inner.clone(), f.clone());
        store
            .apply(&[
                Mutation::Set(Bytes::from_static(b"new"), Entry::new("v")),
                Mutation::Delete(Bytes::from_static(b"gone")),
            ])
            .await
            .unwrap();
        assert_eq!(f.scan(&*store).await.unwrap(), 25_001);
        f.set_ready();
        assert!((0..25_000).all(|i| f.may_contain(format!("old{i}").as_bytes())));
        assert!(f.may_contain(b"new"));
        let never = (0..1000)
            .filter(|i| !f.may_contain(format!("never{i}").as_bytes()))
            .count();
        assert!(
            never > 950,
            "only {never} of 1000 never-written keys filtered"
        );
    }
}
