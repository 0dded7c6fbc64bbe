//! A hierarchical timer wheel for per-entry expiry: O(1) to schedule, O(1)
//! amortised per record to expire.
//!
//! Eight levels of 64 buckets; a bucket on level `l` spans `64^l` ms, so
//! level 0 is exact to the millisecond and level 7 reaches thousands of
//! years. Records move down a level each time their bucket comes due
//! (at most seven moves per record).
//!
//! Records are *hints*, validated by the caller: a record is `(slot, at)`,
//! and the shard expires the slot only if its entry's expiry is still `at`
//! and `at` has passed. An entry overwritten, re-timed, removed or moved to
//! another slot leaves a stale record behind instead of a search for it;
//! stale records are dropped when they come due, and the wheel is rebuilt
//! from the live entries if they ever outnumber the live ones.

const LEVELS: usize = 8;
const BITS: u32 = 6;
const BUCKETS: usize = 1 << BITS;

pub(crate) type Record = (u32, u64);

pub(crate) struct TimerWheel {
    /// Every record due at or before `now` has been handed out.
    now: u64,
    levels: Vec<Vec<Vec<Record>>>,
    due: Vec<Record>,
    len: usize,
}

impl TimerWheel {
    pub(crate) fn new() -> Self {
        TimerWheel {
            now: 0,
            levels: Vec::new(),
            due: Vec::new(),
            len: 0,
        }
    }

    /// Records held (live and stale).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    pub(crate) fn clear(&mut self) {
        let now = self.now;
        *self = TimerWheel::new();
        self.now = now;
    }

    pub(crate) fn schedule(&mut self, slot: u32, at: u64) {
        self.len += 1;
        self.place((slot, at));
    }

    fn place(&mut self, rec: Record) {
        let at = rec.1;
        if at <= self.now {
            self.due.push(rec);
            return;
        }
        if self.levels.is_empty() {
            self.levels = (0..LEVELS)
                .map(|_| (0..BUCKETS).map(|_| Vec::new()).collect())
                .collect();
        }
        let delta = at - self.now;
        let level = ((63 - delta.leading_zeros()) / BITS).min(LEVELS as u32 - 1) as usize;
        let bucket = (at >> (BITS * level as u32)) as usize & (BUCKETS - 1);
        self.levels[level][bucket].push(rec);
    }

    /// Advances to `now` and hands out up to `limit` records due by then;
    /// the rest stay queued for the next call.
    pub(crate) fn advance(&mut self, now: u64, limit: usize, out: &mut Vec<Record>) {
        if now > self.now && !self.levels.is_empty() {
            let from = self.now;
            let mut taken = Vec::new();
            for level in 0..LEVELS {
                let shift = BITS * level as u32;
                let (a, b) = (from >> shift, now >> shift);
                if a == b {
                    break; // no bucket boundary crossed here, nor above
                }
                let span = (b - a).min(BUCKETS as u64);
                for step in 1..=span {
                    let bucket = ((a + step) as usize) & (BUCKETS - 1);
                    taken.append(&mut self.levels[level][bucket]);
                }
            }
            self.now = now;
            for rec in taken {
                self.place(rec);
            }
        } else if now > self.now {
            self.now = now;
        }
        let n = limit.min(self.due.len());
        let start = self.due.len() - n;
        out.extend(self.due.drain(start..));
        self.len -= n;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(w: &mut TimerWheel, now: u64) -> Vec<u32> {
        let mut out = vec![];
        w.advance(now, usize::MAX, &mut out);
        let mut v: Vec<u32> = out.into_iter().map(|r| r.0).collect();
        v.sort();
        v
    }

    #[test]
    fn records_come_due_exactly_on_their_millisecond() {
        let mut w = TimerWheel::new();
        let times = [
            1u64,
            2,
            63,
            64,
            65,
            4095,
            4096,
            4097,
            300_000,
            86_400_000,
            1 << 40,
        ];
        w.advance(1_000, 0, &mut vec![]);
        for (i, t) in times.iter().enumerate() {
            w.schedule(i as u32, 1_000 + t);
        }
        for (i, t) in times.iter().enumerate() {
            let at = 1_000 + t;
            assert!(drain(&mut w, at - 1).iter().all(|&s| s as usize != i));
            let got = drain(&mut w, at);
            assert_eq!(got, vec![i as u32], "record {i} due at {at}");
        }
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn jumps_far_ahead_and_respects_limit() {
        let mut w = TimerWheel::new();
        for i in 0..1000u32 {
            w.schedule(i, 10 + (i as u64 * 7919) % 1_000_000);
        }
        w.schedule(5000, 0);
        let mut out = vec![];
        w.advance(2_000_000, 600, &mut out);
        assert_eq!(out.len(), 600);
        w.advance(2_000_000, 600, &mut out);
        assert_eq!(out.len(), 1001);
        assert_eq!(w.len(), 0);
    }

    #[test]
    fn randomised_against_a_sorted_model() {
        let mut w = TimerWheel::new();
        let mut model: Vec<(u64, u32)> = vec![];
        let mut x: u64 = 12345;
        let mut next = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut now = 0u64;
        for round in 0..2000u32 {
            let at = now + next() % 10u64.pow(1 + (next() % 7) as u32);
            w.schedule(round, at);
            model.push((at, round));
            now += next() % 5000;
            let got = drain(&mut w, now);
            let mut want: Vec<u32> = model.iter().filter(|m| m.0 <= now).map(|m| m.1).collect();
            want.sort();
            model.retain(|m| m.0 > now);
            assert_eq!(got, want, "at {now}");
        }
    }
}
