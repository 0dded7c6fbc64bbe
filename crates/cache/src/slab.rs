//! Entry storage for one shard: a dense slab of slots, a hash table of slot
//! indices, and four intrusive circular lists threaded through the slots.
//!
//! Why hand-written rather than a `HashMap<K, Node>` plus a linked-list
//! crate: per-entry overhead. A slot is the key, the value, a 32-bit hash,
//! two 32-bit links and one byte of state; the index (`index.rs`) holds a
//! `u32` and a tag byte per place, in 64-byte chunks. That keeps the fixed
//! cost per entry near 24 bytes for small keys (see `benches/memory.rs` in
//! the bench crate), where a map of boxed nodes costs several times more.
//!
//! The slab stays dense: removing slot `i` moves the last slot into `i` and
//! repoints its table entry and list neighbours, so there is no free list
//! and no `Option` around keys and values.

mod index;

use index::IndexTable;
use std::borrow::Borrow;
use std::hash::Hash;
use std::sync::atomic::{AtomicU8, Ordering};

pub(crate) const NIL: u32 = u32::MAX;

/// A slab expecting at most this many entries gets a hash table with room
/// for four times its entries (and at least this many): 128 chunks (8 KiB)
/// up to 256 expected entries, at most 512 (32 KiB) at 1,024. This was
/// measured with hashbrown's table (before session 31), where, sized
/// exactly, a small table sat at 80% load with tombstones, and every
/// miss's removal and insertion rewrote control bytes in the same few
/// 16-byte groups the next probes load (`perf annotate` on recency at 53 entries: a quarter
/// of the time in `Slab::replace`, mostly on those group loads and the
/// compares that follow them). `replay_one`, best of 3, A/B in one run:
/// recency at 53 entries 17.0 → 20.6 Mops/s (quick_cache 25.0), web12 at
/// 100 19.2 → 22.3 (24.6), Zipf 0.99 at 82 25.5 → 27.2 (33.1) and at 820
/// 26.8 → 32.3 (33.3 and 25.3). Larger slabs keep the exact size: the
/// engine's memory tier, 64 shards over 100,000 keys, slowed by 40% per
/// overwrite (`l1_probe`) when every shard's table started at 8,192
/// buckets, the tables no longer fitting the CPU caches.
const SPARSE_BELOW: usize = 1024;

const REFERENCED: u8 = 1;
const QUEUE_SHIFT: u8 = 1;
const QUEUE_MASK: u8 = 0b110;
/// Bits 3..=6: hits while resident, saturating at 15 (see `Slot::touch`).
const COUNT_SHIFT: u8 = 3;
const COUNT_ONE: u8 = 1 << COUNT_SHIFT;
const COUNT_MASK: u8 = 0xF << COUNT_SHIFT;
/// Bit 7: in main, the entry entered it by winning an admission contest
/// and has not been hit there yet (see `Shard::admit_score`); in the
/// window, the key came back from the recent ghost and will be admitted.
const ADMITTED: u8 = 0x80;

/// The list a slot is on. Window, probation and protected are the three
/// segments of W-TinyLFU; pinned entries sit apart where eviction never
/// looks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub(crate) enum Queue {
    Window = 0,
    Probation = 1,
    Protected = 2,
    Pinned = 3,
}

impl Queue {
    fn from_bits(b: u8) -> Queue {
        match (b & QUEUE_MASK) >> QUEUE_SHIFT {
            0 => Queue::Window,
            1 => Queue::Probation,
            2 => Queue::Protected,
            _ => Queue::Pinned,
        }
    }
}

pub(crate) struct Slot<K, V> {
    pub(crate) key: K,
    pub(crate) value: V,
    /// Low 32 bits of the key's hash: the table, the sketch and the timer
    /// wheel all work from it, so a key is hashed once per operation.
    pub(crate) hash: u32,
    prev: u32,
    next: u32,
    /// Referenced bit and 4-bit hit count (set by readers under the shard's
    /// read lock) and the queue id (changed only under the write lock).
    meta: AtomicU8,
    /// The sketch's estimate for the key when it became resident (0..=15),
    /// halved whenever the sketch ages. While the key is resident its
    /// sketch counters change only by collisions and aging, so this plus
    /// the hit count *is* its frequency, and admission needs no sketch
    /// lookups. It sits in the slot's padding for small keys.
    pub(crate) history: u8,
}

impl<K, V> Slot<K, V> {
    pub(crate) fn queue(&self) -> Queue {
        Queue::from_bits(self.meta.load(Ordering::Relaxed))
    }

    /// Marks the slot recently used and counts the hit. Called under a read
    /// lock, so the byte is updated with a relaxed load and store rather
    /// than a locked instruction: readers racing on one slot can lose a
    /// count (it is a frequency estimate), but never the queue bits, which
    /// only change under the write lock. Counting here rather than in the
    /// sketch keeps the hit path on the cache line the lookup already read.
    #[inline]
    pub(crate) fn touch(&self) {
        let m = self.meta.load(Ordering::Relaxed);
        // Branch-free: whether an entry's count is saturated is data the
        // predictor cannot learn, and the early-out this replaces missed on
        // about a third of all hits (cachegrind's branch simulation, Zipf
        // 0.99). A referenced entry with a saturated count (the popular
        // ones) is still not written, or readers on other cores would take
        // its cache line from each other: its byte goes to a scratch byte
        // on the stack instead, the target picked by a conditional move
        // (`black_box` keeps the compiler from turning the dead store back
        // into a branch). `replay_one`, best of 3, three rounds, A/B in one
        // run: Zipf 1.2 at 4,647 entries 56.5 → 61.3 Mops/s (quick_cache
        // 70.2), Zipf 0.99 at 8,197 31.2 → 34.7 (42.8), recency at 13,251
        // 47.6 → 60.6 (58.4). The price is one store (to the scratch byte)
        // before the read unlock's locked increment when every hit is on a
        // saturated entry: criterion's `get_hit` (uniform keys, all
        // saturated), A/B interleaved, 1 thread: 57–78 → 50–55 M/s
        // (quick_cache 53–64). A thread-local scratch measured the same.
        let saturated = m & COUNT_MASK == COUNT_MASK;
        let new = (m | REFERENCED) + u8::from(!saturated) * COUNT_ONE;
        let scratch = AtomicU8::new(0);
        let target = std::hint::black_box(if new == m { &scratch } else { &self.meta });
        target.store(new, Ordering::Relaxed);
    }

    /// Hits counted while resident (0..=15).
    #[inline]
    pub(crate) fn hits(&self) -> u8 {
        (self.meta.load(Ordering::Relaxed) & COUNT_MASK) >> COUNT_SHIFT
    }

    /// Clears the hit count (folded into the sketch as it ages), returning it.
    pub(crate) fn take_hits(&mut self) -> u8 {
        let m = self.meta.get_mut();
        let c = (*m & COUNT_MASK) >> COUNT_SHIFT;
        *m &= !COUNT_MASK;
        c
    }

    /// Clears the referenced bit, returning whether it was set.
    pub(crate) fn take_referenced(&mut self) -> bool {
        let m = self.meta.get_mut();
        let was = *m & REFERENCED != 0;
        *m &= !REFERENCED;
        was
    }

    /// Marks the entry as admitted by contest.
    pub(crate) fn set_admitted(&mut self) {
        *self.meta.get_mut() |= ADMITTED;
    }

    /// Whether the admitted mark is set.
    pub(crate) fn is_admitted(&self) -> bool {
        self.meta.load(Ordering::Relaxed) & ADMITTED != 0
    }

    /// Clears the admitted mark, returning whether it was set.
    pub(crate) fn take_admitted(&mut self) -> bool {
        let m = self.meta.get_mut();
        let was = *m & ADMITTED != 0;
        *m &= !ADMITTED;
        was
    }

    fn set_queue(&mut self, q: Queue) {
        let m = self.meta.get_mut();
        *m = (*m & !QUEUE_MASK) | ((q as u8) << QUEUE_SHIFT);
    }
}

/// Asks the CPU to start loading the cache line holding `p`; a hint that
/// reads nothing (so `p` need not be dereferenceable).
#[inline]
pub fn prefetch_line(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86_64; a prefetch never faults.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Slot `i`, without a bounds check.
///
/// Every index the slab holds (in the table, in a list link or head) is
/// below `slots.len()`: `push` hands out `len`, `remove` repoints the moved
/// last slot, and nothing else changes the length. Callers outside pass
/// only indices they got from the slab (the timer wheel's hints are checked
/// against `len()` first). The checks cost 40 instructions per miss on the
/// Zipf 0.99 replay (cachegrind), the hand and list walks being made of
/// little else.
#[inline]
fn at<K, V>(slots: &[Slot<K, V>], i: u32) -> &Slot<K, V> {
    debug_assert!((i as usize) < slots.len(), "slot {i} of {}", slots.len());
    // SAFETY: in bounds by the invariant above (checked in debug builds).
    unsafe { slots.get_unchecked(i as usize) }
}

/// [`at`], mutably.
#[inline]
fn at_mut<K, V>(slots: &mut [Slot<K, V>], i: u32) -> &mut Slot<K, V> {
    debug_assert!((i as usize) < slots.len(), "slot {i} of {}", slots.len());
    // SAFETY: as for `at`.
    unsafe { slots.get_unchecked_mut(i as usize) }
}

pub(crate) struct Slab<K, V> {
    table: IndexTable,
    slots: Vec<Slot<K, V>>,
    heads: [u32; 4],
    weights: [u64; 4],
    /// The entry count the slab expects to reach (see [`Slab::push`]).
    expected: usize,
}

impl<K: Hash + Eq, V> Slab<K, V> {
    /// A slab with room for `n` slots, expecting to grow to `expected`.
    pub(crate) fn with_capacity(n: usize, expected: usize) -> Self {
        Slab {
            table: IndexTable::with_capacity(if expected <= SPARSE_BELOW {
                n.max(expected * 4).max(SPARSE_BELOW)
            } else {
                n
            }),
            slots: Vec::with_capacity(n),
            heads: [NIL; 4],
            weights: [0; 4],
            expected,
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.slots.len()
    }

    pub(crate) fn find<Q>(&self, hash: u32, key: &Q) -> Option<u32>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let slots = &self.slots;
        self.table.find(hash, |i| {
            let s = at(slots, i);
            s.hash == hash && s.key.borrow() == key
        })
    }

    /// See [`IndexTable::prefetch`].
    #[inline]
    pub(crate) fn prefetch(&self, hash: u32) {
        self.table.prefetch(hash);
    }

    /// Calls `f` with the slots a lookup of `hash` would compare first.
    #[inline]
    pub(crate) fn candidates(&self, hash: u32, mut f: impl FnMut(&Slot<K, V>)) {
        let slots = &self.slots;
        self.table.candidates(hash, |i| f(at(slots, i)));
    }

    /// Starts loading the slots a lookup of `hash` would compare first
    /// (every cache line of each): the second step after [`Slab::prefetch`],
    /// once the table's chunk has arrived.
    #[inline]
    pub(crate) fn prefetch_slots(&self, hash: u32) {
        let slots = &self.slots;
        self.table.candidates(hash, |i| {
            let first = std::ptr::from_ref(at(slots, i)).cast::<u8>();
            // Every 64-byte line the slot touches, from the one it starts in.
            let lines = (first as usize % 64 + std::mem::size_of::<Slot<K, V>>()).div_ceil(64);
            for line in 0..lines {
                prefetch_line(first.wrapping_add(line * 64));
            }
        });
    }

    #[inline]
    pub(crate) fn slot(&self, i: u32) -> &Slot<K, V> {
        at(&self.slots, i)
    }

    #[inline]
    pub(crate) fn slot_mut(&mut self, i: u32) -> &mut Slot<K, V> {
        at_mut(&mut self.slots, i)
    }

    pub(crate) fn head(&self, q: Queue) -> Option<u32> {
        let h = self.heads[q as usize];
        (h != NIL).then_some(h)
    }

    pub(crate) fn weight_of(&self, q: Queue) -> u64 {
        self.weights[q as usize]
    }

    /// Adds a new slot at the tail of `q`. The key must not be present.
    pub(crate) fn push(
        &mut self,
        key: K,
        value: V,
        hash: u32,
        history: u8,
        q: Queue,
        weight: u64,
    ) -> u32 {
        let i = u32::try_from(self.slots.len()).expect("shard holds fewer than 2^32 entries");
        assert!(i != NIL, "shard holds fewer than 2^32 - 1 entries");
        if self.slots.len() == self.slots.capacity() {
            self.grow();
        }
        self.slots.push(Slot {
            key,
            value,
            hash,
            prev: NIL,
            next: NIL,
            meta: AtomicU8::new(0),
            history,
        });
        let slots = &self.slots;
        self.table.insert_unique(hash, i, |j| at(slots, j).hash);
        self.link_tail(i, q, weight);
        i
    }

    /// Doubles the slots, but stops at the expected entry count on the
    /// way: `Vec`'s doubling would leave a full cache up to half empty
    /// (125,000 entries a shard in 131,072 slots at 1M entries, 8 shards:
    /// 1.6 of the 53.0 bytes per entry `benches/memory.rs` measured).
    /// Past the expected count (a byte bound with smaller entries than
    /// guessed) it doubles again, so growth stays amortised O(1).
    #[cold]
    fn grow(&mut self) {
        let len = self.slots.len();
        let target = if len < self.expected {
            (len * 2).clamp(len + 1, self.expected)
        } else {
            (len * 2).max(len + 1)
        };
        self.slots.reserve_exact(target - len);
    }

    /// Reuses slot `i` (already unlinked) for a different key: the eviction
    /// fast path, one table removal and one insertion, no slab movement.
    pub(crate) fn replace(&mut self, i: u32, key: K, value: V, hash: u32, history: u8) -> (K, V) {
        self.table_remove(i);
        let s = at_mut(&mut self.slots, i);
        let old_key = std::mem::replace(&mut s.key, key);
        let old_value = std::mem::replace(&mut s.value, value);
        s.hash = hash;
        s.history = history;
        *s.meta.get_mut() &= QUEUE_MASK;
        let slots = &self.slots;
        self.table.insert_unique(hash, i, |j| at(slots, j).hash);
        (old_key, old_value)
    }

    /// Removes slot `i` (already unlinked) and returns its key and value.
    pub(crate) fn remove(&mut self, i: u32) -> (K, V) {
        self.table_remove(i);
        let last = self.slots.len() as u32 - 1;
        let removed = self.slots.swap_remove(i as usize);
        if i != last {
            self.repoint(last, i);
        }
        (removed.key, removed.value)
    }

    fn table_remove(&mut self, i: u32) {
        let hash = at(&self.slots, i).hash;
        let removed = self.table.remove(hash, |j| j == i);
        debug_assert!(removed, "every slot has a table entry");
    }

    /// The slot formerly at `from` now lives at `to`: fix its table entry,
    /// its list neighbours and the list head.
    fn repoint(&mut self, from: u32, to: u32) {
        let hash = at(&self.slots, to).hash;
        *self
            .table
            .find_mut(hash, |j| j == from)
            .expect("moved slot has a table entry") = to;
        let (prev, next, q) = {
            let s = at(&self.slots, to);
            (s.prev, s.next, s.queue())
        };
        if prev == NIL {
            return; // not on a list (being moved between lists)
        }
        if prev == from {
            // Alone on its list: it links to itself.
            let s = at_mut(&mut self.slots, to);
            s.prev = to;
            s.next = to;
        } else {
            at_mut(&mut self.slots, prev).next = to;
            at_mut(&mut self.slots, next).prev = to;
        }
        if self.heads[q as usize] == from {
            self.heads[q as usize] = to;
        }
    }

    /// Appends `i` (not on any list) at the tail of `q`.
    pub(crate) fn link_tail(&mut self, i: u32, q: Queue, weight: u64) {
        let head = self.heads[q as usize];
        if head == NIL {
            let s = at_mut(&mut self.slots, i);
            s.prev = i;
            s.next = i;
            self.heads[q as usize] = i;
        } else {
            let tail = at(&self.slots, head).prev;
            at_mut(&mut self.slots, tail).next = i;
            at_mut(&mut self.slots, head).prev = i;
            let s = at_mut(&mut self.slots, i);
            s.prev = tail;
            s.next = head;
        }
        at_mut(&mut self.slots, i).set_queue(q);
        self.weights[q as usize] += weight;
    }

    /// Takes `i` off its list.
    pub(crate) fn unlink(&mut self, i: u32, weight: u64) -> Queue {
        let (prev, next, q) = {
            let s = at(&self.slots, i);
            (s.prev, s.next, s.queue())
        };
        debug_assert!(prev != NIL, "unlink of a slot on no list");
        if next == i {
            self.heads[q as usize] = NIL;
        } else {
            at_mut(&mut self.slots, prev).next = next;
            at_mut(&mut self.slots, next).prev = prev;
            if self.heads[q as usize] == i {
                self.heads[q as usize] = next;
            }
        }
        let s = at_mut(&mut self.slots, i);
        s.prev = NIL;
        s.next = NIL;
        self.weights[q as usize] -= weight;
        q
    }

    /// Moves `i` to the tail of `q` (which may be its own list).
    pub(crate) fn move_to_tail(&mut self, i: u32, q: Queue, weight: u64) {
        self.unlink(i, weight);
        self.link_tail(i, q, weight);
    }

    /// Advances `q`'s CLOCK hand by one: in a circular list, moving the
    /// head to the tail is moving the head pointer.
    pub(crate) fn rotate_head(&mut self, q: Queue) {
        let h = self.heads[q as usize];
        if h != NIL {
            self.heads[q as usize] = at(&self.slots, h).next;
        }
    }

    /// Adjusts the weight recorded for `q` after an in-place value change.
    pub(crate) fn reweigh(&mut self, q: Queue, old: u64, new: u64) {
        self.weights[q as usize] = self.weights[q as usize] - old + new;
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &Slot<K, V>> {
        self.slots.iter()
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut Slot<K, V>> {
        self.slots.iter_mut()
    }

    /// Heap bytes held by the slab and table (for memory accounting).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot<K, V>>() + self.table.allocation_size()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &Slab<u64, ()>, q: Queue) -> Vec<u64> {
        let mut out = vec![];
        if let Some(h) = s.head(q) {
            let mut i = h;
            loop {
                out.push(s.slot(i).key);
                i = s.slot(i).next;
                if i == h {
                    break;
                }
            }
        }
        out
    }

    /// The branch-free hit: counts up to 15, sets the referenced bit, never
    /// touches the queue or admitted bits, and leaves a saturated,
    /// referenced entry's byte exactly as it was.
    #[test]
    fn a_hit_counts_to_saturation_and_keeps_the_other_bits() {
        let mut s = Slab::with_capacity(4, 4);
        let i = s.push(7u64, (), 7, 0, Queue::Protected, 1);
        s.slot_mut(i).set_admitted();
        let before = s.slot(i).meta.load(Ordering::Relaxed);
        for n in 1..=20u8 {
            s.slot(i).touch();
            let slot = s.slot(i);
            assert_eq!(slot.hits(), n.min(15), "after {n} hits");
            assert_eq!(slot.queue(), Queue::Protected);
            assert!(slot.is_admitted());
        }
        let saturated = s.slot(i).meta.load(Ordering::Relaxed);
        assert_eq!(saturated, before | REFERENCED | COUNT_MASK);
        s.slot(i).touch();
        assert_eq!(s.slot(i).meta.load(Ordering::Relaxed), saturated);
        // Unreferenced but saturated (the hand cleared the bit): the next
        // hit sets the bit again and the count stays at 15.
        assert!(s.slot_mut(i).take_referenced());
        s.slot(i).touch();
        assert_eq!(s.slot(i).meta.load(Ordering::Relaxed), saturated);
    }

    #[test]
    fn lists_survive_swap_remove() {
        let mut s = Slab::with_capacity(4, 5);
        for k in 0..6u64 {
            let q = if k % 2 == 0 {
                Queue::Window
            } else {
                Queue::Probation
            };
            s.push(k, (), k as u32 * 7919, 0, q, 1);
        }
        assert_eq!(list(&s, Queue::Window), vec![0, 2, 4]);
        let i = s.find(0, &0).unwrap();
        s.unlink(i, 1);
        s.remove(i); // slot of key 5 moves into slot 0
        assert_eq!(list(&s, Queue::Window), vec![2, 4]);
        assert_eq!(list(&s, Queue::Probation), vec![1, 3, 5]);
        for k in 1..6u64 {
            assert_eq!(s.slot(s.find(k as u32 * 7919, &k).unwrap()).key, k);
        }
        let i = s.find(3 * 7919, &3).unwrap();
        s.move_to_tail(i, Queue::Window, 1);
        assert_eq!(list(&s, Queue::Window), vec![2, 4, 3]);
        assert_eq!(s.weight_of(Queue::Window), 3);
        assert_eq!(s.weight_of(Queue::Probation), 2);
        // A single-element list whose slot moves keeps pointing at itself.
        let i = s.find(3 * 7919, &3).unwrap();
        s.move_to_tail(i, Queue::Protected, 1);
        let last = s.len() as u32 - 1;
        let j = s.find(2 * 7919, &2).unwrap();
        s.unlink(j, 1);
        s.remove(j);
        assert_eq!(list(&s, Queue::Protected), vec![3]);
        assert!(last != j || s.find(3 * 7919, &3).is_some());
        assert_eq!(s.find(2 * 7919, &2), None);
    }

    #[test]
    fn growth_stops_at_the_expected_count_then_doubles() {
        let mut s = Slab::with_capacity(4, 10);
        for k in 0..10u64 {
            s.push(k, (), k as u32, 0, Queue::Window, 1);
        }
        // 4 -> 8 -> 10, not 16: a full cache wastes no slots.
        assert_eq!(s.slots.capacity(), 10);
        s.push(10, (), 10, 0, Queue::Window, 1);
        assert_eq!(s.slots.capacity(), 20);
        for k in 0..11u64 {
            assert_eq!(s.find(k as u32, &k), Some(k as u32));
        }
    }
}
