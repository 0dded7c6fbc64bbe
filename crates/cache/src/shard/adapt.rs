//! How a shard adapts to its traffic, all on the write path: the window's
//! size by ghost feedback, the sketch's aging, and forgetting popularity
//! when the popular set moves (see the module doc of `shard.rs`).

use super::{Shard, ADMIT_SCORE_LIMIT};
use crate::ghost::List;
use std::hash::Hash;

impl<K: Hash + Eq, V> Shard<K, V> {
    /// Write-path housekeeping: age the sketch once per sample period
    /// (checked every 16 inserts: summing the miss stripes is not free).
    /// Called before every insert with the shard's lookups so far (counted
    /// by its lock).
    #[inline]
    pub(crate) fn maintain(&mut self, lookups: u64) {
        if self.counters.inserts & 15 == 0 {
            self.age_sketch_if_due(lookups);
        }
    }

    #[inline(never)]
    fn age_sketch_if_due(&mut self, lookups: u64) {
        let hits = lookups - self.misses.count();
        let additions = hits + self.counters.inserts;
        let sample = self.sketch_sample;
        if self.shift.observe(additions, hits) {
            // The popular set has moved: forget popularity (every count
            // to zero; residents keep their place in the lists) and start
            // a fresh sample period. Measured against halving the sketch
            // instead: once left shifting Zipf at 4,734 entries 0.6 points
            // behind S3-FIFO, three times 0.43, clearing 0.34.
            self.sketch.clear();
            for slot in self.slab.iter_mut() {
                slot.take_hits();
                slot.history = 0;
            }
            self.sketch_epoch = additions;
            return;
        }
        if additions - self.sketch_epoch >= sample {
            // Residents' hits are folded into the sketch before it halves,
            // so a key's count is halved once, not in two parts each
            // rounded down (which cost long-resident entries up to a count
            // per aging against newcomers: a loop churned main).
            for slot in self.slab.iter_mut() {
                let hits = slot.take_hits();
                self.sketch.add(slot.hash, hits);
            }
            self.sketch.age();
            for slot in self.slab.iter_mut() {
                slot.history = self.sketch.frequency(slot.hash);
            }
            // Caffeine keeps half the sample's weight after halving.
            self.sketch_epoch = additions - sample / 2;
        }
    }

    /// ARC's rule applied to the window: a miss on a key the window let go
    /// grows it, a miss on a key main let go shrinks it, by a step scaled
    /// by the ratio of the two ghost lists and by the cache's size in
    /// entries (`ghost_step`), so large caches swing as fast, relatively,
    /// as small ones. True on a recent-ghost hit.
    pub(super) fn ghost_feedback(&mut self, hash: u32, w: u64) -> bool {
        let (r, f) = (
            self.ghosts.len(List::Recent).max(1) as u64,
            self.ghosts.len(List::Frequent).max(1) as u64,
        );
        match self.ghosts.take(hash) {
            Some(List::Recent) => {
                self.admit_score = (self.admit_score + 16).min(ADMIT_SCORE_LIMIT);
                let step = self.ghost_step * w * (f / r).max(1);
                self.resize_window(step as i64);
                true
            }
            Some(List::Frequent) => {
                let step = self.ghost_step * w * (r / f).max(1);
                self.resize_window(-(step as i64));
                false
            }
            None => false,
        }
    }

    /// The window grows at protected's expense first, then probation's,
    /// up to the whole cache but one unit: on recency-only traffic the
    /// best policy is plain LRU, and a probation that must be won by
    /// frequency costs hits there. Shrinking gives probation back first.
    fn resize_window(&mut self, delta: i64) {
        let window = if delta > 0 {
            (self.window_max + delta as u64).min(self.capacity.saturating_sub(1).max(1))
        } else {
            self.window_max.saturating_sub(delta.unsigned_abs()).max(1)
        };
        self.window_max = window.min(self.capacity);
        self.protected_max = (self.capacity - self.window_max).saturating_sub(self.probation_share);
    }
}
