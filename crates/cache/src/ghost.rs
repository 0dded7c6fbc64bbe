//! Ghost lists: the hashes of recently evicted keys. ARC's idea: a miss on
//! a key that was evicted recently tells which part of the cache should
//! have kept it.
//!
//! Direct-mapped rather than exact FIFO sets: one `u32` per bucket, a newer
//! hash overwriting an older one that maps to the same bucket. A FIFO ring
//! plus a hash set measured at a sixth of the cache's whole miss path; this
//! is one load or store, and the feedback it drives only needs "was this
//! key evicted recently", which random replacement approximates.
//!
//! The shard's two lists (keys the window let go, keys main let go) have
//! the same size and index function, so they share one array of bucket
//! pairs: a miss probes both with one index computation and one cache line
//! (−20 instructions per miss under cachegrind, Zipf 0.99 replay).

/// Which list a hash is remembered in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum List {
    /// Keys the window let go (recency would have kept them).
    Recent = 0,
    /// Keys main let go (frequency would have kept them).
    Frequent = 1,
}

pub(crate) struct Ghosts {
    /// Bucket `i` of each list: `[recent, frequent]`.
    slots: Box<[[u32; 2]]>,
    mask: u32,
    len: [usize; 2],
}

/// Hash 0 marks an empty slot; a real 0 is stored as 1 (a rare false hit).
#[inline]
fn nonzero(h: u32) -> u32 {
    h.max(1)
}

impl Ghosts {
    /// Two lists remembering about `capacity` hashes each.
    pub(crate) fn new(capacity: usize) -> Self {
        // No floor beyond one bucket: a tiny cache's ghost must stay as
        // small, relative to it, as a large cache's (see `GHOST_DIVISOR`).
        let n = capacity.clamp(1, 1 << 28).next_power_of_two();
        Ghosts {
            slots: vec![[0; 2]; n].into_boxed_slice(),
            mask: n as u32 - 1,
            len: [0; 2],
        }
    }

    /// Number of hashes remembered by `list`.
    #[inline]
    pub(crate) fn len(&self, list: List) -> usize {
        self.len[list as usize]
    }

    #[inline]
    fn index(&self, h: u32) -> usize {
        // The low bits pick the table bucket and the sketch block; use the
        // high ones here so the three stay independent.
        (h.rotate_left(16) & self.mask) as usize
    }

    /// Remembers `h` in `list`, possibly forgetting an older hash.
    #[inline]
    pub(crate) fn push(&mut self, list: List, h: u32) {
        let i = self.index(h);
        let slot = &mut self.slots[i][list as usize];
        if *slot == 0 {
            self.len[list as usize] += 1;
        }
        *slot = nonzero(h);
    }

    /// The list that remembered `h` (the recent one first), which forgets it.
    #[inline]
    pub(crate) fn take(&mut self, h: u32) -> Option<List> {
        let i = self.index(h);
        let h = nonzero(h);
        let pair = &mut self.slots[i];
        let list = if pair[0] == h {
            List::Recent
        } else if pair[1] == h {
            List::Frequent
        } else {
            return None;
        };
        pair[list as usize] = 0;
        self.len[list as usize] -= 1;
        Some(list)
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tiny_cache_gets_a_tiny_ghost() {
        // 46 entries / 16 = 2 hashes per list, not a floor of 16 (a third
        // of the cache: its window chased returns, see `GHOST_DIVISOR`).
        assert_eq!(Ghosts::new(2).heap_bytes(), 2 * 8);
        assert_eq!(Ghosts::new(0).heap_bytes(), 8);
    }

    #[test]
    fn remembers_and_forgets() {
        let mut g = Ghosts::new(64);
        g.push(List::Recent, 0xabcd_0001);
        assert_eq!(g.len(List::Recent), 1);
        assert_eq!(g.take(0xabcd_0001), Some(List::Recent));
        assert_eq!(g.take(0xabcd_0001), None);
        assert_eq!(g.len(List::Recent), 0);
        // A colliding newer hash replaces the older one, in its own list.
        let a = 5u32.rotate_right(16);
        let b = (5u32 + 64).rotate_right(16);
        g.push(List::Recent, a);
        g.push(List::Frequent, a);
        g.push(List::Recent, b);
        assert_eq!((g.len(List::Recent), g.len(List::Frequent)), (1, 1));
        assert_eq!(g.take(a), Some(List::Frequent));
        assert_eq!(g.take(b), Some(List::Recent));
        assert_eq!((g.len(List::Recent), g.len(List::Frequent)), (0, 0));
    }
}
