//! The memory tier (L1): a sharded, byte-bounded map with per-entry TTL.
//!
//! - **Bound.** Every entry is charged `key + value + ENTRY_OVERHEAD` bytes.
//!   The bound is split evenly across shards and each shard evicts before it
//!   would exceed its share, so the sum never exceeds `max_bytes`.
//! - **Eviction.** CLOCK (second chance): a hit sets a `visited` bit under
//!   the shard's *read* lock; the eviction hand clears bits and evicts the
//!   first unvisited entry. A later issue replaces this with an adaptive,
//!   scan-resistant policy; CLOCK is correct and cheap.
//! - **Pinning.** Entries written in write-back mode are *dirty* until the
//!   flusher reports them durable in the stores; the hand skips them, so a
//!   dirty entry is never evicted. When a shard is full of dirty entries a
//!   new entry is simply not admitted (the write-back queue still holds it).
//! - **Expiry.** Lazy (an expired entry is never returned) and active: a
//!   per-shard index ordered by expiry lets [`MemoryTier::expire_due`] drop
//!   due entries in O(log n) each.

use crate::entry::Entry;
use bytes::Bytes;
use parking_lot::RwLock;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bytes charged per entry beyond its key and value: the map slot (key and
/// entry handles, generation, flags), the CLOCK queue slot, hash-table
/// control bytes at load factor, and two heap-allocation headers. An
/// estimate on 64-bit targets; the exact figure is a later issue's work.
pub const ENTRY_OVERHEAD: u64 = 160;

/// Smallest share of the bound a shard gets: small caches use fewer shards
/// so that one ordinary entry always fits in a shard.
const MIN_SHARD_BYTES: u64 = 1 << 20;
const MAX_SHARDS: usize = 64;

struct Slot {
    entry: Entry,
    /// Distinguishes this incarnation of the key in the CLOCK queue and expiry index.
    generation: u64,
    visited: AtomicBool,
    /// Non-zero while dirty: the write-back sequence number of the write it
    /// holds. Only a flush of that exact write may unpin it.
    dirty_seq: u64,
    charge: u64,
}

/// aHash rather than SipHash: keys are hashed several times per operation,
/// and a per-process random seed still resists collision flooding.
type Hasher = ahash::RandomState;

#[derive(Default)]
struct Shard {
    map: HashMap<Bytes, Slot, Hasher>,
    clock: VecDeque<(Bytes, u64)>,
    expiries: BTreeMap<(u64, u64), Bytes>,
    used: u64,
    pinned: u64,
    next_generation: u64,
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
    shards: Box<[RwLock<Shard>]>,
    shard_capacity: u64,
    max_bytes: u64,
    hasher: Hasher,
    evictions: AtomicU64,
    expired: AtomicU64,
}

impl MemoryTier {
    /// A tier that never holds more than `max_bytes` (charged bytes).
    pub fn new(max_bytes: u64) -> Self {
        let wanted = (max_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS as u64) as usize;
        let count = if wanted.is_power_of_two() {
            wanted
        } else {
            wanted.next_power_of_two() / 2
        };
        let shards = (0..count).map(|_| RwLock::new(Shard::default())).collect();
        MemoryTier {
            shards,
            shard_capacity: max_bytes / count as u64,
            max_bytes,
            hasher: Default::default(),
            evictions: AtomicU64::new(0),
            expired: AtomicU64::new(0),
        }
    }

    /// Bytes an entry is charged.
    pub fn charge(key: &[u8], entry: &Entry) -> u64 {
        key.len() as u64 + entry.value.len() as u64 + ENTRY_OVERHEAD
    }

    fn shard(&self, key: &[u8]) -> &RwLock<Shard> {
        let h = self.hasher.hash_one(key);
        // High bits pick the shard; the shard's own map hashes independently.
        &self.shards[(h >> 32) as usize & (self.shards.len() - 1)]
    }

    /// The live entry for `key` at `now`, marking it recently used.
    pub fn get(&self, key: &[u8], now: u64) -> Option<Entry> {
        let shard = self.shard(key).read();
        let slot = shard.map.get(key)?;
        if slot.entry.is_expired_at(now) {
            return None;
        }
        if !slot.visited.load(Ordering::Relaxed) {
            slot.visited.store(true, Ordering::Relaxed);
        }
        Some(slot.entry.clone())
    }

    /// Inserts or replaces `key`. `dirty_seq` non-zero pins the entry until
    /// [`MemoryTier::mark_clean`] is called with the same sequence number.
    pub fn put(&self, key: Bytes, entry: Entry, dirty_seq: u64) -> Admission {
        let mut guard = self.shard(&key).write();
        let shard = &mut *guard;
        let charge = Self::charge(&key, &entry);
        if let Some(slot) = shard.map.get_mut(&key) {
            if shard.used - slot.charge + charge <= self.shard_capacity {
                // Overwrite in place: one lookup, and the key keeps its CLOCK
                // slot instead of leaving a stale one behind.
                shard.used = shard.used - slot.charge + charge;
                if slot.dirty_seq != 0 {
                    shard.pinned -= slot.charge;
                }
                if dirty_seq != 0 {
                    shard.pinned += charge;
                }
                if slot.entry.expires_at != entry.expires_at {
                    if let Some(at) = slot.entry.expires_at {
                        shard.expiries.remove(&(at, slot.generation));
                    }
                    if let Some(at) = entry.expires_at {
                        shard.expiries.insert((at, slot.generation), key);
                    }
                }
                slot.entry = entry;
                slot.dirty_seq = dirty_seq;
                slot.charge = charge;
                slot.visited.store(true, Ordering::Relaxed);
                return Admission::Admitted;
            }
        }
        shard.remove_key(&key);
        self.admit(shard, key, entry, dirty_seq)
    }

    /// Inserts a clean copy read from a lower tier, unless the key is
    /// already present (a concurrent write is newer than any read).
    pub fn fill(&self, key: Bytes, entry: Entry) -> Admission {
        let mut shard = self.shard(&key).write();
        if shard.map.contains_key(&key) {
            return Admission::Rejected;
        }
        self.admit(&mut shard, key, entry, 0)
    }

    fn admit(&self, shard: &mut Shard, key: Bytes, entry: Entry, dirty_seq: u64) -> Admission {
        let charge = Self::charge(&key, &entry);
        if charge > self.shard_capacity {
            return Admission::Rejected;
        }
        while shard.used + charge > self.shard_capacity {
            if !shard.evict_one() {
                return Admission::Rejected;
            }
            self.evictions.fetch_add(1, Ordering::Relaxed);
        }
        shard.next_generation += 1;
        let generation = shard.next_generation;
        if let Some(at) = entry.expires_at {
            shard.expiries.insert((at, generation), key.clone());
        }
        shard.clock.push_back((key.clone(), generation));
        shard.used += charge;
        if dirty_seq != 0 {
            shard.pinned += charge;
        }
        let slot = Slot {
            entry,
            generation,
            visited: AtomicBool::new(false),
            dirty_seq,
            charge,
        };
        shard.map.insert(key, slot);
        shard.compact_clock_if_stale();
        Admission::Admitted
    }

    /// Removes `key`; returns whether it was present.
    pub fn remove(&self, key: &[u8]) -> bool {
        self.shard(key).write().remove_key(key)
    }

    /// Unpins `key` if it still holds the write with sequence number `seq`.
    pub fn mark_clean(&self, key: &[u8], seq: u64) {
        let mut shard = self.shard(key).write();
        let shard = &mut *shard;
        if let Some(slot) = shard.map.get_mut(key) {
            if slot.dirty_seq == seq {
                slot.dirty_seq = 0;
                shard.pinned -= slot.charge;
            }
        }
    }

    /// Drops every entry due at `now`, at most `limit` in total; returns how many.
    pub fn expire_due(&self, now: u64, limit: usize) -> usize {
        let mut removed = 0;
        for lock in self.shards.iter() {
            let mut shard = lock.write();
            while removed < limit {
                let Some((&(at, _), key)) = shard.expiries.first_key_value() else {
                    break;
                };
                if at > now {
                    break;
                }
                let key = key.clone();
                shard.remove_key(&key);
                removed += 1;
            }
        }
        self.expired.fetch_add(removed as u64, Ordering::Relaxed);
        removed
    }

    /// Removes everything, pinned entries included (`FLUSHALL`).
    pub fn clear(&self) {
        for lock in self.shards.iter() {
            *lock.write() = Shard::default();
        }
    }

    /// Number of entries held (expired but not yet collected ones included).
    pub fn len(&self) -> usize {
        self.shards.iter().map(|s| s.read().map.len()).sum()
    }

    /// Number of live entries at `now` whose key satisfies `pred` (a scan).
    pub fn count_matching(&self, now: u64, pred: impl Fn(&[u8]) -> bool) -> u64 {
        let mut n = 0;
        for lock in self.shards.iter() {
            let shard = lock.read();
            n += shard
                .map
                .iter()
                .filter(|(k, s)| !s.entry.is_expired_at(now) && pred(k))
                .count() as u64;
        }
        n
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Charged bytes in use; never above [`MemoryTier::max_bytes`].
    pub fn used_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.read().used).sum()
    }

    /// Charged bytes of pinned (dirty) entries.
    pub fn pinned_bytes(&self) -> u64 {
        self.shards.iter().map(|s| s.read().pinned).sum()
    }

    /// The bound.
    pub fn max_bytes(&self) -> u64 {
        self.max_bytes
    }

    /// Entries evicted to stay within the bound, since creation.
    pub fn evictions(&self) -> u64 {
        self.evictions.load(Ordering::Relaxed)
    }

    /// Entries removed by active expiry, since creation.
    pub fn expired(&self) -> u64 {
        self.expired.load(Ordering::Relaxed)
    }

    /// True if `key` is present and pinned (for tests and invariants).
    pub fn is_pinned(&self, key: &[u8]) -> bool {
        self.shard(key)
            .read()
            .map
            .get(key)
            .is_some_and(|s| s.dirty_seq != 0)
    }
}

impl Shard {
    fn remove_key(&mut self, key: &[u8]) -> bool {
        let Some(slot) = self.map.remove(key) else {
            return false;
        };
        self.used -= slot.charge;
        if slot.dirty_seq != 0 {
            self.pinned -= slot.charge;
        }
        if let Some(at) = slot.entry.expires_at {
            self.expiries.remove(&(at, slot.generation));
        }
        // The CLOCK queue slot goes stale and is skipped or compacted later.
        true
    }

    /// Advances the CLOCK hand until one unpinned, unvisited entry is evicted.
    /// Returns false when every entry is pinned.
    fn evict_one(&mut self) -> bool {
        let mut budget = 2 * self.clock.len() + 1;
        while budget > 0 {
            budget -= 1;
            let Some((key, generation)) = self.clock.pop_front() else {
                return false;
            };
            let Some(slot) = self.map.get(&key) else {
                continue;
            };
            if slot.generation != generation {
                continue;
            }
            if slot.dirty_seq != 0 || slot.visited.swap(false, Ordering::Relaxed) {
                self.clock.push_back((key, generation));
                continue;
            }
            self.remove_key(&key);
            return true;
        }
        false
    }

    fn compact_clock_if_stale(&mut self) {
        if self.clock.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.clock
                .retain(|(k, g)| map.get(k).is_some_and(|s| s.generation == *g));
        }
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
