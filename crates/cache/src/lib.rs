//! tiercache's in-process cache core: a concurrent, weight-bounded map with
//! adaptive, scan-resistant eviction, per-entry expiry and pinning.
//!
//! **What it is.** [`Cache`] is split into shards, each a slab of entries
//! behind a reader-writer lock of its own that also counts lookups (see
//! `lock.rs`). Reads take the read lock only (a hit sets a referenced bit
//! and a hit count in the entry's state byte), so readers never serialise. Writes take the shard's write lock and run the
//! policy: W-TinyLFU with a ghost-sized window (see `shard.rs`). Each
//! shard gets an equal part of the capacity and never holds more.
//!
//! **What it is not.** It knows nothing of bytes on the wire, stores,
//! write-back or durability: the engine builds its memory tier on top of it
//! (values carry their own expiry and dirty state, and the engine decides
//! what to pin). No background threads: expiry runs when
//! [`Cache::expire_due`] is called, and maintenance piggybacks on writes.
//!
//! ```
//! use tiercache_cache::Cache;
//!
//! let cache: Cache<u64, &str> = Cache::new(2);
//! cache.insert(1, "one");
//! cache.insert(2, "two");
//! assert_eq!(cache.get(&1), Some("one"));
//! cache.insert(3, "three"); // over capacity: something is evicted
//! assert_eq!(cache.len(), 2);
//! assert!(cache.weight() <= cache.capacity());
//! ```

mod ghost;
mod lock;
mod lookups;
mod shard;
mod sketch;
mod slab;
mod wheel;

use lock::ShardLock;
use shard::{Put, Shard};
use std::borrow::Borrow;
use std::hash::Hash;

pub use shard::{Insertion, PinnedInsertion};
pub use slab::prefetch_line;

/// How the cache measures an entry: its weight against the capacity, and
/// when it expires. Both must be pure functions of the key and value.
pub trait Measure<K, V> {
    /// The entry's weight (bytes, or 1 for an entry-count bound).
    fn weight(&self, key: &K, value: &V) -> u64;

    /// Absolute expiry time in milliseconds, if the entry has one. An
    /// entry is expired at `now >= at`.
    fn expires_at(&self, _value: &V) -> Option<u64> {
        None
    }
}

/// Every entry weighs 1 and never expires: the capacity is an entry count.
#[derive(Clone, Copy, Debug, Default)]
pub struct UnitWeight;

impl<K, V> Measure<K, V> for UnitWeight {
    #[inline]
    fn weight(&self, _: &K, _: &V) -> u64 {
        1
    }
}

/// Cumulative counters, summed over shards.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Lookups that found a live entry.
    pub hits: u64,
    /// Lookups that did not.
    pub misses: u64,
    /// Insertions (new keys and overwrites).
    pub inserts: u64,
    /// Entries evicted by the policy to respect the capacity.
    pub evictions: u64,
    /// Entries removed by [`Cache::expire_due`].
    pub expired: u64,
    /// Insertions that could not be stored (see [`Insertion::Rejected`]).
    pub rejected: u64,
}

/// Configures a [`Cache`].
pub struct CacheBuilder<M> {
    capacity: u64,
    shards: Option<usize>,
    expected_entries: Option<u64>,
    seed: Option<u64>,
    measure: M,
}

/// Fewest entries (by expectation) a shard is given before the cache is
/// split further: small shards hurt the hit ratio, and the policy's
/// statistics need a population to work on.
const MIN_ENTRIES_PER_SHARD: u64 = 4096;
const MAX_SHARDS: usize = 64;

impl<M> CacheBuilder<M> {
    /// Fixes the number of shards (rounded up to a power of two). The
    /// default scales with the expected entry count and the machine's cores.
    pub fn shards(mut self, n: usize) -> Self {
        self.shards = Some(n.clamp(1, MAX_SHARDS).next_power_of_two());
        self
    }

    /// How many entries the cache will hold when full; sizes the frequency
    /// sketch and the shard count. Defaults to the capacity, which is right
    /// for an entry-count bound; give it for a byte bound.
    pub fn expected_entries(mut self, n: u64) -> Self {
        self.expected_entries = Some(n.max(1));
        self
    }

    /// Fixes the hash seed, so that a replay gives the same hit ratio every
    /// run (the policy's choices depend on the hashes through the sketch and
    /// the ghosts). The default is a random seed per cache, which keeps an
    /// attacker from choosing colliding keys; fix it only for experiments.
    ///
    /// ```
    /// use tiercache_cache::Cache;
    ///
    /// let a = Cache::<u64, ()>::builder(8).seed(7).build();
    /// a.insert(1, ());
    /// assert!(a.get(&1).is_some());
    /// ```
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Replaces how entries are weighed and timed.
    pub fn measure<M2>(self, measure: M2) -> CacheBuilder<M2> {
        CacheBuilder {
            capacity: self.capacity,
            shards: self.shards,
            expected_entries: self.expected_entries,
            seed: self.seed,
            measure,
        }
    }

    /// Builds the cache.
    pub fn build<K: Hash + Eq, V>(self) -> Cache<K, V, M>
    where
        M: Measure<K, V>,
    {
        let entries = self.expected_entries.unwrap_or(self.capacity).max(1);
        let count = self.shards.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
            let by_size = (entries / MIN_ENTRIES_PER_SHARD).max(1) as usize;
            by_size.min(cores * 4).min(MAX_SHARDS).next_power_of_two()
        });
        let hasher = match self.seed {
            Some(s) => {
                ahash::RandomState::with_seeds(s, s ^ 0x243F_6A88_85A3_08D3, !s, s.rotate_left(32))
            }
            None => ahash::RandomState::new(),
        };
        let seed = hasher.hash_one(0u64);
        let shards = (0..count)
            .map(|i| {
                let cap = self.capacity / count as u64;
                ShardLock::new(Shard::new(
                    cap,
                    entries / count as u64,
                    seed.wrapping_add(i as u64),
                ))
            })
            .collect();
        Cache {
            shards,
            shard_mask: count - 1,
            hasher,
            measure: self.measure,
            capacity: self.capacity,
        }
    }
}

/// A concurrent cache bounded by total weight. See the crate documentation.
pub struct Cache<K, V, M = UnitWeight> {
    shards: Box<[ShardLock<Shard<K, V>>]>,
    /// Shard index = bits 32 and up of the hash, masked (the shard uses
    /// the low 32 bits). The count is a power of two.
    shard_mask: usize,
    hasher: ahash::RandomState,
    measure: M,
    capacity: u64,
}

impl<K: Hash + Eq, V> Cache<K, V, UnitWeight> {
    /// A cache of at most `capacity` entries.
    pub fn new(capacity: u64) -> Self {
        Self::builder(capacity).build()
    }

    /// A builder for a cache of at most `capacity` total weight.
    pub fn builder(capacity: u64) -> CacheBuilder<UnitWeight> {
        CacheBuilder {
            capacity,
            shards: None,
            expected_entries: None,
            seed: None,
            measure: UnitWeight,
        }
    }
}

impl<K, V, M> Cache<K, V, M> {
    /// The cache's own bytes per entry, beyond what the key and value point
    /// to: the slab slot, its share of the index (64 bytes per 12 places,
    /// at most 10 of them used), and the entry's share of the frequency
    /// sketch and ghost lists.
    pub const FIXED_BYTES_PER_ENTRY: usize = std::mem::size_of::<slab::Slot<K, V>>() + 7 + 8 + 1;
}

impl<K: Hash + Eq, V, M: Measure<K, V>> Cache<K, V, M> {
    #[inline]
    fn locate<Q: Hash + ?Sized>(&self, key: &Q) -> (&ShardLock<Shard<K, V>>, u32) {
        let h = self.hasher.hash_one(key);
        let shard = (h >> 32) as usize & self.shard_mask;
        (&self.shards[shard], h as u32)
    }

    /// Starts loading, into the CPU cache, the part of the table a lookup of
    /// `key` reads first; nothing else. For a caller with other work to do
    /// before a lookup or insert of `key` (a server journaling a write):
    /// the load then overlaps that work instead of stalling the lookup.
    ///
    /// ```
    /// let cache = tiercache_cache::Cache::new(100);
    /// cache.prefetch("a");
    /// cache.insert("a".to_string(), 1);
    /// assert_eq!(cache.get("a"), Some(1));
    /// ```
    #[inline]
    pub fn prefetch<Q: Hash + ?Sized>(&self, key: &Q) {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().prefetch(hash);
    }

    /// The step after [`Cache::prefetch`]: reads the table line a lookup of
    /// `key` starts with (a stall if it has not arrived yet) and starts
    /// loading the entries it points at. Call it between the prefetch and
    /// the lookup, with work on both sides.
    ///
    /// ```
    /// let cache = tiercache_cache::Cache::new(100);
    /// cache.insert("a".to_string(), 1);
    /// cache.prefetch("a");
    /// cache.prefetch_entry("a");
    /// assert_eq!(cache.get("a"), Some(1));
    /// ```
    #[inline]
    pub fn prefetch_entry<Q: Hash + ?Sized>(&self, key: &Q) {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().prefetch_entry(hash);
    }

    /// The step after [`Cache::prefetch_entry`]: calls `f` with the key and
    /// value of each entry a lookup of `key` would compare first (a stall
    /// if they have not arrived yet), for it to prefetch what they point
    /// at (with [`prefetch_line`]). `f` may see entries of other keys.
    #[inline]
    pub fn prefetch_with<Q: Hash + ?Sized>(&self, key: &Q, f: impl FnMut(&K, &V)) {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().prefetch_with(hash, f);
    }

    /// The value for `key` as of time 0 (so, for clocks in Unix ms, ignoring
    /// expiry), counting a hit or a miss.
    #[inline]
    pub fn get<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        self.get_at(key, 0)
    }

    /// The value for `key` unless it has expired at `now` (milliseconds, the
    /// clock of [`Measure::expires_at`]). Counts a hit or a miss.
    #[inline]
    pub fn get_at<Q>(&self, key: &Q, now: u64) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        let (shard, hash) = self.locate(key);
        shard.read().get(hash, key, now, &self.measure).cloned()
    }

    /// [`Cache::get_at`], telling the two misses apart: `Err(true)` when
    /// `key` is held but expired at `now` (for the caller's lazy expiry:
    /// [`Cache::remove_expired`]), `Err(false)` when it is not held.
    ///
    /// ```
    /// use tiercache_cache::{Cache, Measure};
    /// struct Expiring;
    /// impl Measure<String, u64> for Expiring {
    ///     fn weight(&self, _: &String, _: &u64) -> u64 { 1 }
    ///     fn expires_at(&self, at: &u64) -> Option<u64> { Some(*at) }
    /// }
    /// let cache: Cache<String, u64, _> = Cache::<String, u64>::builder(100).measure(Expiring).build();
    /// cache.insert("k".to_string(), 10);
    /// assert_eq!(cache.lookup_at("k", 9), Ok(10));
    /// assert_eq!(cache.lookup_at("k", 10), Err(true));
    /// assert_eq!(cache.lookup_at("other", 10), Err(false));
    /// ```
    #[inline]
    pub fn lookup_at<Q>(&self, key: &Q, now: u64) -> Result<V, bool>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        let (shard, hash) = self.locate(key);
        shard.read().lookup(hash, key, now, &self.measure).cloned()
    }

    /// The value for `key` without recording an access or a hit.
    pub fn peek<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().peek(hash, key).cloned()
    }

    /// Inserts or replaces `key`. The entry may be evicted later; it is
    /// rejected at once only if heavier than a shard, or if everything else
    /// in its shard is pinned.
    #[inline]
    pub fn insert(&self, key: K, value: V) -> Insertion {
        self.insert_with(key, value, Put::Plain).insertion
    }

    /// Inserts or replaces `key` as a pinned entry: never evicted until
    /// [`Cache::unpin_if`] releases it, and not removed by
    /// [`Cache::expire_due`] while pinned (reads still do not see it once
    /// expired; [`Cache::remove`] and [`Cache::clear`] still apply).
    /// Hands back the value it replaced if that one was pinned too, and
    /// the new value if it was rejected, for an owner that keeps account of
    /// what it pinned.
    pub fn insert_pinned(&self, key: K, value: V) -> PinnedInsertion<V> {
        self.insert_with(key, value, Put::Pinned { unless_same: None })
    }

    /// [`Cache::insert_pinned`], except that a value `same` as the unpinned
    /// value it replaces is stored unpinned ([`PinnedInsertion::pinned`]
    /// false): for an owner whose pin means "differs from what is stored
    /// elsewhere", a write of what is already there changes nothing.
    pub fn insert_pinned_unless_same(
        &self,
        key: K,
        value: V,
        same: fn(&V, &V) -> bool,
    ) -> PinnedInsertion<V> {
        self.insert_with(
            key,
            value,
            Put::Pinned {
                unless_same: Some(same),
            },
        )
    }

    /// Inserts `key` only if it is absent; [`Insertion::Present`] otherwise.
    pub fn insert_if_absent(&self, key: K, value: V) -> Insertion {
        self.insert_with(key, value, Put::IfAbsent).insertion
    }

    fn insert_with(&self, key: K, value: V, how: Put<V>) -> PinnedInsertion<V> {
        let (shard, hash) = self.locate(&key);
        let mut shard = shard.write();
        let lookups = shard.lookups();
        shard.maintain(lookups);
        shard.insert(key, value, hash, how, &self.measure)
    }

    /// Releases the pin on `key` if `pred` accepts its current value.
    /// Returns true if the entry was pinned and is no longer.
    pub fn unpin_if<Q>(&self, key: &Q, pred: impl FnOnce(&V) -> bool) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        shard.write().unpin_if(hash, key, pred, &self.measure)
    }

    /// True if `key` is present and pinned.
    pub fn is_pinned<Q>(&self, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().is_pinned(hash, key)
    }

    /// Removes `key`, returning its value.
    pub fn remove<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        shard.write().remove(hash, key, &self.measure)
    }

    /// Removes `key`, returning its value and whether it was pinned.
    pub fn remove_reporting_pin<Q>(&self, key: &Q) -> Option<(V, bool)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        shard.write().remove_reporting_pin(hash, key, &self.measure)
    }

    /// The value of `key` if it is pinned (expired or not), without
    /// recording an access.
    pub fn peek_pinned<Q>(&self, key: &Q) -> Option<V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        V: Clone,
    {
        let (shard, hash) = self.locate(key);
        shard.read_uncounted().peek_pinned(hash, key).cloned()
    }

    /// Lazy expiry: removes `key` if it expired at `now` and is not pinned,
    /// returning the removed key. It takes the shard's write lock: call it
    /// when [`Cache::lookup_at`] found the entry expired.
    ///
    /// ```
    /// use tiercache_cache::{Cache, Measure};
    /// struct Expiring;
    /// impl Measure<String, u64> for Expiring {
    ///     fn weight(&self, _: &String, _: &u64) -> u64 { 1 }
    ///     fn expires_at(&self, at: &u64) -> Option<u64> { Some(*at) }
    /// }
    /// let cache: Cache<String, u64, _> = Cache::<String, u64>::builder(100).measure(Expiring).build();
    /// cache.insert("k".to_string(), 10);
    /// assert_eq!(cache.remove_expired("k", 9), None); // still live at 9
    /// assert_eq!(cache.remove_expired("k", 10), Some("k".to_string()));
    /// assert_eq!(cache.len(), 0);
    /// ```
    pub fn remove_expired<Q>(&self, key: &Q, now: u64) -> Option<K>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        shard.write().remove_expired(hash, key, now, &self.measure)
    }

    /// Where `key`'s value lives in the cache (its slot), for diagnostics
    /// such as Redis's `DEBUG OBJECT`. It stays put while the key is
    /// overwritten; it moves when other removals compact the shard or the
    /// shard grows.
    pub fn value_address<Q>(&self, key: &Q) -> Option<usize>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let (shard, hash) = self.locate(key);
        let guard = shard.read_uncounted();
        guard.peek(hash, key).map(|v| v as *const V as usize)
    }

    /// Removes entries expired at `now`, at most `limit`; returns how many.
    /// Pinned entries are left until they are unpinned.
    pub fn expire_due(&self, now: u64, limit: usize) -> usize {
        self.expire_due_inner(now, limit, None)
    }

    /// [`Cache::expire_due`], appending the removed keys to `expired` (for
    /// whoever reports expirations).
    pub fn expire_due_into(&self, now: u64, limit: usize, expired: &mut Vec<K>) -> usize {
        self.expire_due_inner(now, limit, Some(expired))
    }

    fn expire_due_inner(&self, now: u64, limit: usize, mut expired: Option<&mut Vec<K>>) -> usize {
        let mut removed = 0;
        for shard in self.shards.iter() {
            if removed >= limit {
                break;
            }
            removed += shard.write().expire_due(
                now,
                limit - removed,
                &self.measure,
                expired.as_deref_mut(),
            );
        }
        removed
    }

    /// Removes every entry, pinned ones included.
    pub fn clear(&self) {
        for shard in self.shards.iter() {
            shard.write().clear();
        }
    }

    /// Removes every entry that is not pinned.
    pub fn clear_unpinned(&self) {
        for shard in self.shards.iter() {
            shard.write().clear_unpinned(&self.measure);
        }
    }

    /// Calls `f` on every entry, one shard (read-locked) at a time.
    pub fn for_each(&self, mut f: impl FnMut(&K, &V)) {
        for shard in self.shards.iter() {
            shard.read_uncounted().for_each(&mut f);
        }
    }

    /// Number of entries held (expired ones not yet collected included).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read_uncounted().len()).sum()
    }

    /// True when no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Total weight held; never above [`Cache::capacity`].
    pub fn weight(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.read_uncounted().weight())
            .sum()
    }

    /// Weight of pinned entries.
    pub fn pinned_weight(&self) -> u64 {
        self.shards
            .iter()
            .map(|s| s.read_uncounted().pinned_weight())
            .sum()
    }

    /// The bound on [`Cache::weight`].
    pub fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The largest single entry that can be stored (one shard's share).
    pub fn max_entry_weight(&self) -> u64 {
        self.capacity / self.shards.len() as u64
    }

    /// Number of shards.
    pub fn shard_count(&self) -> usize {
        self.shards.len()
    }

    /// Heap bytes held by the cache's own structures (slabs, tables,
    /// sketches), not counting what keys and values point to.
    pub fn heap_bytes(&self) -> usize {
        self.shards
            .iter()
            .map(|s| s.read_uncounted().heap_bytes())
            .sum()
    }

    /// Cumulative counters.
    pub fn stats(&self) -> CacheStats {
        let mut st = CacheStats::default();
        for shard in self.shards.iter() {
            let s = shard.read_uncounted();
            let misses = s.misses.count();
            st.hits += shard.lookups().saturating_sub(misses);
            st.misses += misses;
            st.inserts += s.counters.inserts;
            st.evictions += s.counters.evictions;
            st.expired += s.counters.expired;
            st.rejected += s.counters.rejected;
        }
        st
    }
}
