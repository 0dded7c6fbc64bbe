//! The memory tier (L1): the engine's view of [`tiercache_cache::Cache`].
//!
//! The cache core does the hard parts (sharding, the adaptive W-TinyLFU
//! policy, the timer wheel, pinning); this module decides what an entry
//! costs, what "dirty" means and how expiry is read:
//!
//! - **Bound.** Every entry is charged `key + value + ENTRY_OVERHEAD` bytes,
//!   and the core never holds more than `max_bytes` of charges.
//! - **Pinning.** Entries written in write-back mode are *dirty* until the
//!   flusher reports them durable in the stores. They are inserted pinned,
//!   so eviction never sees them, and unpinned only by the flush of the
//!   exact write they hold ([`MemoryTier::mark_clean`] with its sequence
//!   number). The write-back queue keeps only their keys and reads the
//!   values from here when it flushes. A dirty entry past its expiry is
//!   not read, but stays until it is flushed. When a shard is full of
//!   dirty entries a new entry is not admitted (the write-back queue then
//!   keeps the write itself).
//! - **Expiry.** Lazy (an expired entry is never returned) and active:
//!   [`MemoryTier::expire_due`] drains the core's timer wheel.

use crate::entry::Entry;
use bytes::Bytes;
use tiercache_cache::{Cache, Insertion, Measure};

/// Bytes charged per entry beyond its key and value: the core's per-entry
/// fixed cost (slot and table share, from `size_of`), two heap-allocation
/// headers for the key and value buffers, and the shared-buffer header
/// `Bytes` allocates once a value is handed out.
pub const ENTRY_OVERHEAD: u64 =
    Cache::<Bytes, Cached, EntryMeasure>::FIXED_BYTES_PER_ENTRY as u64 + 2 * 16 + 32;

/// Smallest share of the bound a shard gets: small caches use fewer shards
/// so that one ordinary entry always fits in a shard.
const MIN_SHARD_BYTES: u64 = 1 << 20;
const MAX_SHARDS: usize = 64;
/// Typical small entry, used to size the policy's statistics.
const TYPICAL_ENTRY: u64 = ENTRY_OVERHEAD + 64;

/// What the core stores per key.
#[doc(hidden)]
#[derive(Clone)]
pub struct Cached {
    entry: Entry,
    /// Non-zero while dirty: the write-back sequence number of the write it
    /// holds. Only a flush of that exact write may unpin it.
    dirty_seq: u64,
}

/// How the core weighs and times entries.
#[doc(hidden)]
pub struct EntryMeasure;

impl Measure<Bytes, Cached> for EntryMeasure {
    #[inline]
    fn weight(&self, key: &Bytes, value: &Cached) -> u64 {
        MemoryTier::charge(key, &value.entry)
    }

    #[inline]
    fn expires_at(&self, value: &Cached) -> Option<u64> {
        value.entry.expires_at
    }
}

/// What [`MemoryTier::put_dirty`] did.
pub struct DirtyPut {
    /// Whether the tier holds the write.
    pub admission: Admission,
    /// The entry the key held before, if it was dirty too.
    pub displaced: Option<Entry>,
    /// The entry, handed back when it was not admitted.
    pub rejected: Option<Entry>,
    /// Whether the entry is dirty now: false when it was not admitted, or
    /// (with `unless_unchanged`) when it equals the clean entry it replaced.
    pub dirty: bool,
}

/// What [`MemoryTier::mark_clean`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cleaned {
    /// The entry held the write and is clean now; its charge in bytes.
    Unpinned(u64),
    /// The entry holds a newer write, still dirty.
    StillDirty,
    /// The key is absent or clean (deleted, or replaced by a write the
    /// tier did not admit).
    NotDirty,
}

/// Outcome of an admission attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// The entry is in the tier.
    Admitted,
    /// The entry did not fit (larger than a shard, or the shard is full of
    /// pinned entries); any older value of the key was removed.
    Rejected,
}

/// The in-process memory tier. See the module documentation.
///
/// ```
/// use tiercache_engine::{MemoryTier, Entry};
/// let l1 = MemoryTier::new(1 << 20);
/// l1.put(bytes::Bytes::from_static(b"k"), Entry::new("v"), 0);
/// assert_eq!(l1.get(b"k", 0).unwrap().value, "v");
/// assert!(l1.used_bytes() <= l1.max_bytes());
/// ```
pub struct MemoryTier {
    cache: Cache<Bytes, Cached, EntryMeasure>,
    max_bytes: u64,
}

impl MemoryTier {
    /// A tier that never holds more than `max_bytes` (charged bytes).
    pub fn new(max_bytes: u64) -> Self {
        let wanted = (max_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS as u64) as usize;
        let shards = if wanted.is_power_of_two() {
            wanted
        } else {
            wanted.next_power_of_two() / 2
        };
        let cache = Cache::<Bytes, Cached>::builder(max_bytes)
            .shards(shards)
            .expected_entries((max_bytes / TYPICAL_ENTRY).max(1))
            .measure(EntryMeasure)
            .build();
        MemoryTier { cache, max_bytes }
    }

    /// Bytes an entry is charged.
    pub fn charge(key: &[u8], entry: &Entry) -> u64 {
        key.len() as u64 + entry.value.len() as u64 + ENTRY_OVERHEAD
    }

    /// Starts loading the memory tier's table line for `key` into the CPU
    /// cache (see [`tiercache_cache::Cache::prefetch`]): a write calls it
    /// before journaling, so the load overlaps the journal's work.
    #[inline]
    pub fn prefetch(&self, key: &[u8]) {
        self.cache.prefetch(key);
    }

    /// The second step after [`MemoryTier::prefetch`]: starts loading the
    /// entry itself (see [`tiercache_cache::Cache::prefetch_entry`]).
    #[inline]
    pub fn prefetch_entry(&self, key: &[u8]) {
        self.cache.prefetch_entry(key);
    }

    /// The third step: starts loading the key bytes of the entries found
    /// by [`MemoryTier::prefetch_entry`], which the lookup compares.
    #[inline]
    pub fn prefetch_key(&self, key: &[u8]) {
        self.cache
            .prefetch_with(key, |k, _| tiercache_cache::prefetch_line(k.as_ptr()));
    }

    /// The live entry for `key` at `now`, recording the access.
    pub fn get(&self, key: &[u8], now: u64) -> Option<Entry> {
        self.cache.get_at(key, now).map(|c| c.entry)
    }

    /// [`MemoryTier::get`], telling a miss on an expired entry still held
    /// (`Err(true)`: [`MemoryTier::reclaim_expired`] may drop it) from one
    /// on no entry (`Err(false)`).
    #[inline]
    pub fn lookup(&self, key: &[u8], now: u64) -> Result<Entry, bool> {
        self.cache.lookup_at(key, now).map(|c| c.entry)
    }

    /// Inserts or replaces `key`. `dirty_seq` non-zero pins the entry until
    /// [`MemoryTier::mark_clean`] is called with the same sequence number.
    pub fn put(&self, key: Bytes, entry: Entry, dirty_seq: u64) -> Admission {
        if dirty_seq != 0 {
            return self.put_dirty(key, entry, dirty_seq, false).admission;
        }
        admission(self.cache.insert(
            key,
            Cached {
                entry,
                dirty_seq: 0,
            },
        ))
    }

    /// Inserts or replaces `key` dirty (pinned) with the write-back
    /// sequence number `seq` (non-zero), handing back what the caller
    /// keeps account of: the dirty entry it replaced, and the entry itself
    /// if it was not admitted. With `unless_unchanged`, an entry equal
    /// (value, expiry, flags, kind) to the clean one it replaces is stored
    /// clean: the stores hold it already.
    ///
    /// ```
    /// use tiercache_engine::{Cleaned, Entry, MemoryTier};
    /// let l1 = MemoryTier::new(1 << 20);
    /// let put = l1.put_dirty("k".into(), Entry::new("v1"), 1, false);
    /// assert!(put.dirty && put.displaced.is_none());
    /// // A second write replaces the first, which was dirty too.
    /// let put = l1.put_dirty("k".into(), Entry::new("v2"), 2, false);
    /// assert_eq!(put.displaced.unwrap().value, "v1");
    /// // The flush of write 1 finds write 2: the key stays dirty.
    /// assert_eq!(l1.mark_clean(b"k", 1), Cleaned::StillDirty);
    /// assert_eq!(l1.dirty_entry(b"k").unwrap().1, 2);
    /// assert!(matches!(l1.mark_clean(b"k", 2), Cleaned::Unpinned(_)));
    /// // Clean now, and what the stores hold: the same write stays clean.
    /// assert!(!l1.put_dirty("k".into(), Entry::new("v2"), 3, true).dirty);
    /// assert!(l1.dirty_entry(b"k").is_none());
    /// ```
    pub fn put_dirty(
        &self,
        key: Bytes,
        entry: Entry,
        seq: u64,
        unless_unchanged: bool,
    ) -> DirtyPut {
        debug_assert_ne!(seq, 0);
        let value = Cached {
            entry,
            dirty_seq: seq,
        };
        let out = if unless_unchanged {
            self.cache
                .insert_pinned_unless_same(key, value, |old, new| old.entry == new.entry)
        } else {
            self.cache.insert_pinned(key, value)
        };
        DirtyPut {
            admission: admission(out.insertion),
            displaced: out.displaced.map(|c| c.entry),
            rejected: out.rejected.map(|c| c.entry),
            dirty: out.pinned,
        }
    }

    /// The dirty entry of `key` and the sequence number of the write it
    /// holds, expired or not, without recording an access.
    pub fn dirty_entry(&self, key: &[u8]) -> Option<(Entry, u64)> {
        self.cache.peek_pinned(key).map(|c| (c.entry, c.dirty_seq))
    }

    /// Inserts a clean copy read from a lower tier, unless the key is
    /// already present (a concurrent write is newer than any read).
    pub fn fill(&self, key: Bytes, entry: Entry) -> Admission {
        admission(self.cache.insert_if_absent(
            key,
            Cached {
                entry,
                dirty_seq: 0,
            },
        ))
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&self, key: &[u8]) -> bool {
        self.cache.remove(key).is_some()
    }

    /// Removes `key`; returns its entry if it was dirty.
    pub fn remove_dirty(&self, key: &[u8]) -> Option<Entry> {
        match self.cache.remove_reporting_pin(key) {
            Some((c, true)) => Some(c.entry),
            _ => None,
        }
    }

    /// Unpins `key` if it still holds the write with sequence number `seq`.
    pub fn mark_clean(&self, key: &[u8], seq: u64) -> Cleaned {
        let mut outcome = Cleaned::NotDirty;
        // The predicate runs only for a pinned entry.
        self.cache.unpin_if(key, |c| {
            if c.dirty_seq == seq {
                outcome = Cleaned::Unpinned(Self::charge(key, &c.entry));
                true
            } else {
                outcome = Cleaned::StillDirty;
                false
            }
        });
        outcome
    }

    /// Drops every entry due at `now`, at most `limit` in total; returns how many.
    pub fn expire_due(&self, now: u64, limit: usize) -> usize {
        self.cache.expire_due(now, limit)
    }

    /// [`MemoryTier::expire_due`], appending the keys it dropped to `keys`.
    pub fn expire_due_into(&self, now: u64, limit: usize, keys: &mut Vec<Bytes>) -> usize {
        self.cache.expire_due_into(now, limit, keys)
    }

    /// Lazy expiry: drops `key` if it expired at `now` and is clean (a
    /// dirty one stays until flushed); returns the dropped key.
    pub fn reclaim_expired(&self, key: &[u8], now: u64) -> Option<Bytes> {
        self.cache.remove_expired(key, now)
    }

    /// Number of entries held that are expired at `now` and not yet
    /// dropped (a scan).
    pub fn count_expired(&self, now: u64) -> u64 {
        let mut n = 0;
        self.cache.for_each(|_, c| {
            if c.entry.is_expired_at(now) {
                n += 1;
            }
        });
        n
    }

    /// The entry held for `key`, expired or not, without recording an
    /// access (Redis's `DEBUG OBJECT` finds a key not yet reclaimed).
    pub fn peek(&self, key: &[u8]) -> Option<Entry> {
        self.cache.peek(key).map(|c| c.entry)
    }

    /// Where `key`'s entry lives in the tier (see
    /// [`tiercache_cache::Cache::value_address`]), if it is held.
    pub fn entry_address(&self, key: &[u8]) -> Option<usize> {
        self.cache.value_address(key)
    }

    /// Removes everything, pinned entries included.
    pub fn clear(&self) {
        self.cache.clear();
    }

    /// Removes every clean entry (`FLUSHALL`, after each write-back queue
    /// has dropped its own dirty entries: a dirty entry left is a write
    /// that came after).
    pub fn clear_clean(&self) {
        self.cache.clear_unpinned();
    }

    /// Number of entries held (expired but not yet collected ones included).
    pub fn len(&self) -> usize {
        self.cache.len()
    }

    /// Number of live entries at `now` whose key satisfies `pred` (a scan).
    pub fn count_matching(&self, now: u64, pred: impl Fn(&[u8]) -> bool) -> u64 {
        let mut n = 0;
        self.cache.for_each(|k, c| {
            if !c.entry.is_expired_at(now) && pred(k) {
                n += 1;
            }
        });
        n
    }

    /// Calls `f` with every live entry at `now` (a scan under each shard's
    /// read lock in turn: keep `f` short).
    pub fn for_each_live(&self, now: u64, mut f: impl FnMut(&Bytes, &Entry)) {
        self.cache.for_each(|k, c| {
            if !c.entry.is_expired_at(now) {
                f(k, &c.entry);
            }
        });
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Charged bytes in use; never above [`MemoryTier::max_bytes`].
    pub fn used_bytes(&self) -> u64 {
        self.cache.weight()
    }

    /// Charged bytes of pinned (dirty) entries.
    pub fn pinned_bytes(&self) -> u64 {
        self.cache.pinned_weight()
    }

    /// The bound.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Entries evicted to stay within the bound, since creation.
    pub fn evictions(&self) -> u64 {
        self.cache.stats().evictions
    }

    /// Entries removed by active expiry, since creation.
    pub fn expired(&self) -> u64 {
        self.cache.stats().expired
    }

    /// Lookups answered (`hits`) and not (`misses`) by the tier.
    pub fn hits_and_misses(&self) -> (u64, u64) {
        let st = self.cache.stats();
        (st.hits, st.misses)
    }

    /// True if `key` is present and pinned (for tests and invariants).
    pub fn is_pinned(&self, key: &[u8]) -> bool {
        self.cache.is_pinned(key)
    }
}

fn admission(outcome: Insertion) -> Admission {
    match outcome {
        Insertion::Stored => Admission::Admitted,
        Insertion::Rejected | Insertion::Present => Admission::Rejected,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn k(i: u32) -> Bytes {
        Bytes::from(format!("key{i}"))
    }

    #[test]
    fn never_exceeds_bound_and_evicts() {
        let l1 = MemoryTier::new(10_000);
        for i in 0..1000 {
            l1.put(k(i), Entry::new(vec![0u8; 50]), 0);
            assert!(l1.used_bytes() <= 10_000);
        }
        assert!(l1.evictions() > 0);
        assert!(l1.len() < 1000);
    }

    /// A key may share its allocation with its value (`copy_key_value`):
    /// an overwrite must let go of the old key too, or every overwritten
    /// entry would keep its first value's bytes alive. Checked for a large
    /// value (a `Vec` buffer, probed with `is_unique`) and a small one (an
    /// inline buffer, counted).
    #[test]
    fn an_overwrite_releases_the_old_key_and_value_allocation() {
        let l1 = MemoryTier::new(1 << 20);
        let (key, value) = crate::copy_key_value(b"k", &[1u8; 1000]);
        let probe = key.clone();
        l1.put(key, Entry::new(value), 0);
        assert!(!probe.is_unique(), "the tier holds the first write");
        let (key, value) = crate::copy_key_value(b"k", &[2u8; 1000]);
        l1.put(key, Entry::new(value), 0);
        assert!(
            probe.is_unique(),
            "the tier still holds the first write's buffer"
        );
        assert_eq!(l1.get(b"k", 0).unwrap().value[0], 2);

        use crate::keyvalue::tests::live_inline;
        let before = live_inline();
        let (key, value) = crate::copy_key_value(b"small", &[1u8; 100]);
        l1.put(key, Entry::new(value), 0);
        assert_eq!(live_inline(), before + 1);
        let (key, value) = crate::copy_key_value(b"small", &[2u8; 100]);
        l1.put(key, Entry::new(value), 0);
        assert_eq!(
            live_inline(),
            before + 1,
            "the tier still holds the first small write's buffer"
        );
        assert_eq!(l1.get(b"small", 0).unwrap().value[0], 2);
    }

    #[test]
    fn pinned_entries_survive_pressure_and_unpin_exactly() {
        let l1 = MemoryTier::new(10_000);
        l1.put(k(0), Entry::new("dirty"), 7);
        for i in 1..1000 {
            l1.put(k(i), Entry::new(vec![0u8; 50]), 0);
        }
        assert!(l1.is_pinned(b"key0"));
        l1.mark_clean(b"key0", 6); // an older write's flush must not unpin
        assert!(l1.is_pinned(b"key0"));
        l1.mark_clean(b"key0", 7);
        assert!(!l1.is_pinned(b"key0"));
        assert_eq!(l1.pinned_bytes(), 0);
    }

    #[test]
    fn full_of_pinned_rejects_and_drops_stale_value() {
        let l1 = MemoryTier::new(1_000);
        let mut i = 0;
        while l1.put(k(i), Entry::new("x"), 1) == Admission::Admitted {
            i += 1;
        }
        assert!(l1.used_bytes() <= 1_000);
        assert_eq!(l1.fill(k(999), Entry::new("y")), Admission::Rejected);
    }

    #[test]
    fn expiry_lazy_and_active() {
        let l1 = MemoryTier::new(1 << 20);
        l1.put(k(1), Entry::with_expiry("v", Some(100)), 0);
        l1.put(k(2), Entry::with_expiry("v", Some(200)), 0);
        assert!(l1.get(b"key1", 99).is_some());
        assert!(l1.get(b"key1", 100).is_none());
        assert_eq!(l1.expire_due(150, 10), 1);
        assert_eq!(l1.len(), 1);
        assert_eq!(l1.expire_due(1000, 10), 1);
        assert_eq!(l1.used_bytes(), 0);
    }

    #[test]
    fn overwrite_in_place_keeps_accounting_and_expiry_index_exact() {
        let l1 = MemoryTier::new(1 << 20);
        l1.put(k(1), Entry::with_expiry("short", Some(100)), 5);
        l1.put(k(1), Entry::with_expiry("a longer value", Some(10_000)), 0);
        assert_eq!(
            l1.used_bytes(),
            MemoryTier::charge(b"key1", &Entry::new("a longer value"))
        );
        assert_eq!(l1.pinned_bytes(), 0, "the clean overwrite released the pin");
        assert_eq!(
            l1.expire_due(500, 10),
            0,
            "the old expiry no longer applies"
        );
        assert_eq!(l1.get(b"key1", 500).unwrap().value, "a longer value");
        l1.put(k(1), Entry::new("forever"), 9);
        assert_eq!(l1.expire_due(u64::MAX, 10), 0);
        assert!(l1.is_pinned(b"key1"));
        for i in 0..100 {
            l1.put(k(1), Entry::new(vec![b'x'; i]), 0);
        }
        assert_eq!(l1.len(), 1);
        assert_eq!(
            l1.used_bytes(),
            MemoryTier::charge(b"key1", &Entry::new(vec![b'x'; 99]))
        );
    }

    #[test]
    fn fill_never_overwrites() {
        let l1 = MemoryTier::new(1 << 20);
        l1.put(k(1), Entry::new("new"), 3);
        assert_eq!(l1.fill(k(1), Entry::new("old")), Admission::Rejected);
        assert_eq!(l1.get(b"key1", 0).unwrap().value, "new");
    }
}
