//! Detects a shift of the popular set: the hit ratio of one period falling
//! by a fifth or more below the period before.
//!
//! Why the shard needs it: TinyLFU's sketch remembers popularity for a
//! whole sample period (`SKETCH_SAMPLE_FACTOR × entries` additions), so
//! when the popular set moves, main's entries keep the counts they earned
//! before the move and win every admission contest against the keys that
//! are popular now, until the sketch has halved often enough. On the bench
//! crate's shifting Zipf (the hot set re-mapped every 100k requests) the
//! cache re-learned from a cold start to 70% hits within a phase at 4,734
//! entries, but after a shift plateaued at 66%, S3-FIFO (no long-term
//! memory) at 69%. Caffeine's hill climber restarts when the hit rate moves
//! by more than 5%; here the signal makes the shard forget popularity.
//!
//! Measured on the bench crate's 56 points (period and threshold chosen
//! there): a period of one cache's worth of additions, at least 1,024, and
//! a drop of a fifth catch every phase change of the shifting Zipf at every
//! size and fire on none of the stationary Zipf workloads. Scans fire it
//! (a 10k-key scan of fresh keys halves a period's hit ratio); forgetting
//! then costs Zipf + scan at 19,440 entries 0.2–0.4 points, no other point
//! more than 0.3. A drop of a quarter missed the later phase changes at
//! 4,734 entries (the adapted window softens them to 25%); periods of
//! 256 additions fired on web07/web12's noise at 100–250 entries.

/// A period counts at least this many additions: shorter ones are noisy
/// enough (±3 points of hit ratio at 256) to fire on stationary traffic.
const MIN_PERIOD: u64 = 1024;

/// Hit ratio of the period in thousandths, compared with the one before.
pub(crate) struct ShiftDetector {
    period: u64,
    start: u64,
    start_hits: u64,
    last_rate: u64,
}

impl ShiftDetector {
    /// A detector for a cache of about `entries` entries.
    pub(crate) fn new(entries: u64) -> Self {
        ShiftDetector {
            period: entries.max(MIN_PERIOD),
            start: 0,
            start_hits: 0,
            last_rate: 0,
        }
    }

    /// Fed the running totals of additions (hits + inserts) and hits;
    /// true when a period has just closed with a hit ratio at most 4/5 of
    /// the period before's.
    pub(crate) fn observe(&mut self, additions: u64, hits: u64) -> bool {
        let len = additions.wrapping_sub(self.start);
        if len < self.period {
            return false;
        }
        // Saturating, defensively: the totals come from the shard lock's
        // counts under the write lock and never go back.
        let rate = hits.saturating_sub(self.start_hits) * 1000 / len;
        let shifted = rate * 5 < self.last_rate * 4;
        self.last_rate = rate;
        self.start = additions;
        self.start_hits = hits;
        shifted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fires_on_a_drop_of_a_fifth_only() {
        let mut d = ShiftDetector::new(100);
        let (mut adds, mut hit_permille) = (0u64, 0u64);
        let mut period = |d: &mut ShiftDetector, ratio_permille: u64| {
            let mut fired = false;
            // Fed every 16 additions, as the shard's `maintain` does.
            for _ in 0..64 {
                adds += 16;
                hit_permille += 16 * ratio_permille;
                fired |= d.observe(adds, hit_permille / 1000);
            }
            fired
        };
        assert!(!period(&mut d, 500), "the first period has no baseline");
        assert!(!period(&mut d, 500));
        // 500 → 437 is a drop of 13%: not a shift.
        assert!(!period(&mut d, 437));
        // 437 → 312 is a drop of 29%.
        assert!(period(&mut d, 312));
        // Rising again is never a shift.
        assert!(!period(&mut d, 600));
    }

    #[test]
    fn the_period_counts_at_least_min_period_additions() {
        let mut d = ShiftDetector::new(10);
        assert!(!d.observe(MIN_PERIOD - 16, 0));
        assert!(!d.observe(MIN_PERIOD, MIN_PERIOD));
        // Half the first period's hit ratio, one period later.
        assert!(d.observe(2 * MIN_PERIOD, MIN_PERIOD + MIN_PERIOD / 2));
    }
}
