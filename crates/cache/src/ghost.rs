//! A ghost list: the hashes of recently evicted keys. ARC's idea: a miss on
//! a key that was evicted recently tells which part of the cache should
//! have kept it.
//!
//! Direct-mapped rather than an exact FIFO set: one `u32` slot per bucket,
//! a newer hash overwriting an older one that maps to the same bucket. A
//! FIFO ring plus a hash set measured at a sixth of the cache's whole miss
//! path; this is one load or store, and the feedback it drives only needs
//! "was this key evicted recently", which random replacement approximates.

pub(crate) struct Ghost {
    slots: Box<[u32]>,
    mask: u32,
    len: usize,
}

/// Hash 0 marks an empty slot; a real 0 is stored as 1 (a rare false hit).
#[inline]
fn nonzero(h: u32) -> u32 {
    h.max(1)
}

impl Ghost {
    /// A ghost remembering about `capacity` hashes.
    pub(crate) fn new(capacity: usize) -> Self {
        let n = capacity.clamp(16, 1 << 28).next_power_of_two();
        Ghost {
            slots: vec![0; n].into_boxed_slice(),
            mask: n as u32 - 1,
            len: 0,
        }
    }

    /// Number of hashes remembered.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn index(&self, h: u32) -> usize {
        // The low bits pick the table bucket and the sketch block; use the
        // high ones here so the three stay independent.
        (h.rotate_left(16) & self.mask) as usize
    }

    /// Remembers `h`, possibly forgetting an older hash.
    #[inline]
    pub(crate) fn push(&mut self, h: u32) {
        let i = self.index(h);
        if self.slots[i] == 0 {
            self.len += 1;
        }
        self.slots[i] = nonzero(h);
    }

    /// True if `h` was remembered; forgets it.
    #[inline]
    pub(crate) fn take(&mut self, h: u32) -> bool {
        let i = self.index(h);
        if self.slots[i] == nonzero(h) {
            self.slots[i] = 0;
            self.len -= 1;
            true
        } else {
            false
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.slots.len() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_and_forgets() {
        let mut g = Ghost::new(64);
        g.push(0xabcd_0001);
        assert_eq!(g.len(), 1);
        assert!(g.take(0xabcd_0001));
        assert!(!g.take(0xabcd_0001));
        assert_eq!(g.len(), 0);
        // A colliding newer hash replaces the older one.
        let a = 5u32.rotate_right(16);
        let b = (5u32 + 64).rotate_right(16);
        g.push(a);
        g.push(b);
        assert!(!g.take(a));
        assert!(g.take(b));
    }
}
