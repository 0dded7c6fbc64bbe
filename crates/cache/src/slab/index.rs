//! The slab's hash index: slot numbers by key hash, in the manner of
//! Facebook's F14 tables. Each 64-byte chunk holds twelve one-byte tags and
//! the twelve `u32` slot numbers they stand for, so a lookup reads one
//! cache line before it goes to the slot.
//!
//! Why not `hashbrown::HashTable<u32>` (used before): hashbrown keeps its
//! tags in one array and its entries in another, so a lookup in a table
//! larger than the CPU caches waits on two dependent misses (the tag group,
//! then the entry it points at) before the slot's. On a server, where the
//! kernel's network code evicts the caches between two requests, `perf
//! annotate` put about a fifth of `Shard::insert`'s samples on each of
//! those two loads (BENCHMARKS.md, session 31, for the measured effect).
//!
//! Collisions use F14's overflow counts instead of tombstones: a chunk
//! counts the entries that wanted it but live further along their probe
//! sequence; a lookup stops at the first chunk whose count is zero, and a
//! removal decrements the counts along the removed entry's path. Removals
//! leave nothing behind, so the slab's evict-and-replace churn cannot fill
//! the table with tombstones.

/// Slots per chunk: twelve tags (12 bytes), two spare bytes and a 16-bit
/// overflow count fill the first 16 bytes; twelve slot numbers the other 48.
const SLOTS: usize = 12;
/// At most this many of a chunk's slots are used on average (83%) before
/// the table doubles.
const MAX_FILL: usize = 10;
/// An overflow count that reached this stays there (F14 does the same):
/// removals can no longer say when it would fall to zero, and lookups just
/// probe on, which stays correct.
const SATURATED: u16 = u16::MAX;

#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Chunk {
    /// 0 is an empty slot; a full one holds `tag(hash)` (high bit set).
    tags: [u8; 16],
    items: [u32; SLOTS],
}

const EMPTY_CHUNK: Chunk = Chunk {
    tags: [0; 16],
    items: [0; SLOTS],
};

impl Chunk {
    fn overflow(&self) -> u16 {
        u16::from_le_bytes([self.tags[14], self.tags[15]])
    }

    fn set_overflow(&mut self, n: u16) {
        [self.tags[14], self.tags[15]] = n.to_le_bytes();
    }

    /// Bit `s` set for each slot `s` whose tag is `tag` (0: the empty slots).
    #[inline]
    fn matches(&self, tag: u8) -> u32 {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{
                __m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_set1_epi8,
            };
            // SAFETY: SSE2 is part of x86_64; `tags` is 16 readable bytes.
            let bits = unsafe {
                let group = _mm_loadu_si128(self.tags.as_ptr().cast::<__m128i>());
                _mm_movemask_epi8(_mm_cmpeq_epi8(group, _mm_set1_epi8(tag as i8)))
            };
            bits as u32 & ((1 << SLOTS) - 1)
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let mut bits = 0;
            for (s, &t) in self.tags[..SLOTS].iter().enumerate() {
                bits |= u32::from(t == tag) << s;
            }
            bits
        }
    }
}

/// The tag stored for a hash: its low seven bits with the high bit set, so
/// that no full slot reads as empty. Chunks are chosen by the bits above
/// (see [`IndexTable::home`]), so tag and chunk do not correlate.
#[inline]
fn tag(hash: u32) -> u8 {
    hash as u8 | 0x80
}

/// Iterates the set bits of a match mask, lowest first.
#[inline]
fn bits(mut mask: u32) -> impl Iterator<Item = usize> {
    std::iter::from_fn(move || {
        (mask != 0).then(|| {
            let s = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            s
        })
    })
}

/// A set of `u32` slot numbers, each filed under its key's 32-bit hash.
/// The table does not know the keys: lookups take a predicate that checks
/// the slot a candidate number points at.
pub(crate) struct IndexTable {
    chunks: Box<[Chunk]>,
    len: usize,
}

impl IndexTable {
    /// A table that holds `n` numbers without growing.
    pub(crate) fn with_capacity(n: usize) -> Self {
        let chunks = n.div_ceil(MAX_FILL).max(1).next_power_of_two();
        IndexTable {
            chunks: vec![EMPTY_CHUNK; chunks].into_boxed_slice(),
            len: 0,
        }
    }

    /// Numbers the table holds before it must grow.
    fn capacity(&self) -> usize {
        self.chunks.len() * MAX_FILL
    }

    pub(crate) fn allocation_size(&self) -> usize {
        std::mem::size_of_val(&*self.chunks)
    }

    fn mask(&self) -> usize {
        self.chunks.len() - 1
    }

    /// The first chunk of `hash`'s probe sequence. Bits 8 and up: the tag
    /// takes the low ones.
    #[inline]
    fn home(&self, hash: u32) -> usize {
        (hash >> 8) as usize & self.mask()
    }

    /// The chunk after `c` on a probe sequence, at step `step` (1, 2, ...):
    /// triangular probing, which visits every chunk of a power-of-two table.
    #[inline]
    fn next(&self, c: usize, step: usize) -> usize {
        (c + step) & self.mask()
    }

    /// The chunk and slot of the first number filed under `hash` for which
    /// `eq` holds.
    #[inline]
    fn position(&self, hash: u32, mut eq: impl FnMut(u32) -> bool) -> Option<(usize, usize)> {
        let tag = tag(hash);
        let mut c = self.home(hash);
        for step in 1..=self.chunks.len() {
            let chunk = &self.chunks[c];
            for s in bits(chunk.matches(tag)) {
                if eq(chunk.items[s]) {
                    return Some((c, s));
                }
            }
            if chunk.overflow() == 0 {
                return None;
            }
            c = self.next(c, step);
        }
        None
    }

    /// The first number filed under `hash` for which `eq` holds.
    #[inline]
    pub(crate) fn find(&self, hash: u32, eq: impl FnMut(u32) -> bool) -> Option<u32> {
        self.position(hash, eq)
            .map(|(c, s)| self.chunks[c].items[s])
    }

    /// Asks the CPU to start loading the chunk a lookup of `hash` reads
    /// first, so that the miss overlaps whatever the caller does before
    /// the lookup itself.
    #[inline]
    pub(crate) fn prefetch(&self, hash: u32) {
        let chunk: *const Chunk = &self.chunks[self.home(hash)];
        super::prefetch_line(chunk.cast::<u8>());
    }

    /// Calls `f` with every number in `hash`'s first chunk whose tag
    /// matches: the candidates a lookup would check first, for prefetching
    /// their slots once this chunk is in the cache.
    #[inline]
    pub(crate) fn candidates(&self, hash: u32, f: impl FnMut(u32)) {
        let chunk = &self.chunks[self.home(hash)];
        bits(chunk.matches(tag(hash)))
            .map(|s| chunk.items[s])
            .for_each(f);
    }

    /// [`IndexTable::find`], for changing the number in place.
    pub(crate) fn find_mut(&mut self, hash: u32, eq: impl FnMut(u32) -> bool) -> Option<&mut u32> {
        let (c, s) = self.position(hash, eq)?;
        Some(&mut self.chunks[c].items[s])
    }

    /// Files `item` under `hash`; the caller guarantees it is not there
    /// yet. `hash_of` gives the hash of any number already in the table,
    /// for moving them when the table grows.
    pub(crate) fn insert_unique(&mut self, hash: u32, item: u32, hash_of: impl Fn(u32) -> u32) {
        if self.len == self.capacity() {
            self.grow(hash_of);
        }
        self.place(hash, item);
        self.len += 1;
    }

    /// Puts `item` in the first free slot on `hash`'s probe sequence,
    /// counting the overflow in every full chunk it passes.
    fn place(&mut self, hash: u32, item: u32) {
        let mut c = self.home(hash);
        let mut step = 1;
        loop {
            let chunk = &mut self.chunks[c];
            if let Some(s) = bits(chunk.matches(0)).next() {
                chunk.tags[s] = tag(hash);
                chunk.items[s] = item;
                return;
            }
            let n = chunk.overflow();
            if n != SATURATED {
                chunk.set_overflow(n + 1);
            }
            // The table is never full (len < capacity < slots), so a
            // free slot is found before the sequence wraps around.
            c = self.next(c, step);
            step += 1;
        }
    }

    /// Removes the number filed under `hash` for which `eq` holds, and
    /// returns whether there was one.
    pub(crate) fn remove(&mut self, hash: u32, eq: impl FnMut(u32) -> bool) -> bool {
        let Some((found, s)) = self.position(hash, eq) else {
            return false;
        };
        self.chunks[found].tags[s] = 0;
        self.len -= 1;
        // Every chunk before `found` on the sequence counted this entry.
        let mut c = self.home(hash);
        let mut step = 1;
        while c != found {
            let chunk = &mut self.chunks[c];
            let n = chunk.overflow();
            if n != SATURATED {
                chunk.set_overflow(n - 1);
            }
            c = self.next(c, step);
            step += 1;
        }
        true
    }

    /// Doubles the chunks and files every number again.
    #[cold]
    #[inline(never)]
    fn grow(&mut self, hash_of: impl Fn(u32) -> u32) {
        let doubled = vec![EMPTY_CHUNK; self.chunks.len() * 2].into_boxed_slice();
        let old = std::mem::replace(&mut self.chunks, doubled);
        for chunk in old.iter() {
            for s in bits(!chunk.matches(0) & ((1 << SLOTS) - 1)) {
                let item = chunk.items[s];
                self.place(hash_of(item), item);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    #[test]
    fn chunk_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Chunk>(), 64);
        assert_eq!(std::mem::align_of::<Chunk>(), 64);
    }

    /// Numbers whose hashes all land on one chunk with one tag: the probe
    /// sequence, the overflow counts and the predicate do all the work.
    #[test]
    fn colliding_hashes_overflow_and_come_back() {
        let hash = |_: u32| 0x1234_5600;
        let mut t = IndexTable::with_capacity(100);
        for i in 0..100 {
            t.insert_unique(hash(i), i, hash);
        }
        for i in 0..100 {
            assert_eq!(t.find(hash(i), |j| j == i), Some(i));
        }
        for i in (0..100).step_by(2) {
            assert!(t.remove(hash(i), |j| j == i));
        }
        assert!(!t.remove(hash(0), |j| j == 0));
        for i in 0..100 {
            let want = (i % 2 == 1).then_some(i);
            assert_eq!(t.find(hash(i), |j| j == i), want);
        }
        for i in (1..100).step_by(2) {
            assert!(t.remove(hash(i), |j| j == i));
        }
        // Every count went back to zero: nothing is left to probe past.
        assert!(t
            .chunks
            .iter()
            .all(|c| c.overflow() == 0 && c.matches(0) == 0xFFF));
    }

    #[test]
    fn candidates_include_the_home_chunks_match() {
        let mut t = IndexTable::with_capacity(100);
        let hash = |i: u32| i.wrapping_mul(0x9E37_79B9);
        for i in 0..50 {
            t.insert_unique(hash(i), i, hash);
        }
        for i in 0..50 {
            let mut seen = vec![];
            t.candidates(hash(i), |j| seen.push(j));
            // Under 42% load nothing overflowed: every number is in its
            // home chunk, and only tag matches are offered.
            assert!(seen.contains(&i), "{i} not among {seen:?}");
            assert!(seen.iter().all(|&j| tag(hash(j)) == tag(hash(i))));
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u32),
        Remove(u32),
        Repoint(u32, u32),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u32..400).prop_map(Op::Insert),
            3 => (0u32..400).prop_map(Op::Remove),
            2 => (0u32..400, 0u32..400).prop_map(|(a, b)| Op::Repoint(a, b)),
        ]
    }

    proptest! {
        /// Against a `HashMap` model, with hashes narrowed to a few chunks
        /// and tags so that probing and overflow counts are exercised.
        #[test]
        fn behaves_like_a_map(ops in proptest::collection::vec(op(), 1..400), spread in 0u32..3) {
            // Number -> hash: few distinct values, many collisions.
            let hash = move |item: u32| (item % 7) << (8 * spread) | (item % 3);
            let mut t = IndexTable::with_capacity(0);
            let mut model: HashMap<u32, u32> = HashMap::new(); // item -> hash
            for op in ops {
                match op {
                    Op::Insert(i) => {
                        if let std::collections::hash_map::Entry::Vacant(e) = model.entry(i) {
                            e.insert(hash(i));
                            t.insert_unique(hash(i), i, hash);
                        }
                    }
                    Op::Remove(i) => {
                        prop_assert_eq!(t.remove(hash(i), |j| j == i), model.remove(&i).is_some());
                    }
                    Op::Repoint(from, to) => {
                        // The slab's repoint: the number changes, the hash
                        // stays (the slot moved, its key did not).
                        if model.contains_key(&from) && !model.contains_key(&to) && hash(from) == hash(to) {
                            *t.find_mut(hash(from), |j| j == from).unwrap() = to;
                            model.remove(&from);
                            model.insert(to, hash(to));
                        }
                    }
                }
                prop_assert_eq!(t.len, model.len());
            }
            for i in 0..400 {
                prop_assert_eq!(t.find(hash(i), |j| j == i), model.contains_key(&i).then_some(i));
            }
        }
    }
}
