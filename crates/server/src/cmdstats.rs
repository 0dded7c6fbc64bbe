//! `INFO commandstats`: per command, the calls, the time they took, the
//! calls refused before running (`rejected_calls`: arity, `NOAUTH`, key
//! too long) and the calls that answered an error (`failed_calls`).
//!
//! Counting costs a request almost nothing: a connection tallies its
//! batch's commands in its own [`CallTally`] (no sharing, no atomics), and
//! adds the tally to the server's [`CommandStats`] once per batch, into
//! the stripe of the thread it runs on, so two threads rarely add to the
//! same cache line. Time is measured per batch, not per command: one clock
//! read when the batch starts and one when its commands are done (before
//! the commit's journal write, as Redis's `usec` leaves out its AOF write),
//! shared evenly among the batch's calls. That is exact for an
//! unpipelined request and for a pipeline of one command, and an even
//! split in a mixed pipeline; a clock pair around every command would
//! cost about 40 ns, as much as a tenth of a pipelined `GET`.
//!
//! ```
//! use std::time::Duration;
//! use tiercache_server::cmdstats::{CallTally, CommandStats};
//! let stats = CommandStats::new(4);
//! let mut tally = CallTally::default();
//! tally.call(2, false);
//! tally.call(2, true);
//! tally.reject(3);
//! stats.add(&mut tally, Duration::from_micros(10));
//! let totals = stats.totals();
//! assert_eq!(totals[0].0, 2);
//! assert_eq!((totals[0].1.calls, totals[0].1.usec, totals[0].1.failed), (2, 10, 1));
//! assert_eq!((totals[1].0, totals[1].1.rejected, totals[1].1.calls), (3, 1, 0));
//! ```

use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Duration;

/// Stripes of counters: more than this machine's threads need, few
/// enough to sum for `INFO`.
const STRIPES: usize = 8;

#[derive(Default)]
struct Counter {
    calls: AtomicU64,
    nanos: AtomicU64,
    rejected: AtomicU64,
    failed: AtomicU64,
}

/// One command's totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CommandTotals {
    /// Runs (a blocking command counts once, when it answers).
    pub calls: u64,
    /// Microseconds spent running them.
    pub usec: u64,
    /// Refused before running.
    pub rejected: u64,
    /// Ran and answered an error.
    pub failed: u64,
}

/// Server-wide counters, by command table index.
pub struct CommandStats {
    stripes: Vec<Box<[Counter]>>,
}

impl fmt::Debug for CommandStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CommandStats").finish_non_exhaustive()
    }
}

thread_local! {
    /// This thread's stripe, handed out round robin.
    static STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed) % STRIPES
    };
}

impl CommandStats {
    /// Counters for a table of `commands` commands.
    pub fn new(commands: usize) -> Self {
        CommandStats {
            stripes: (0..STRIPES)
                .map(|_| (0..commands).map(|_| Counter::default()).collect())
                .collect(),
        }
    }

    /// Adds `tally` (emptied) and shares `elapsed` among its calls.
    pub fn add(&self, tally: &mut CallTally, elapsed: Duration) {
        if tally.entries.is_empty() {
            return;
        }
        let calls: u64 = tally.entries.iter().map(|e| u64::from(e.calls)).sum();
        let share = (elapsed.as_nanos() as u64).checked_div(calls).unwrap_or(0);
        let stripe = &self.stripes[STRIPE.with(|s| *s)];
        for e in tally.entries.drain(..) {
            let Some(c) = stripe.get(e.index as usize) else {
                continue;
            };
            if e.calls > 0 {
                c.calls.fetch_add(u64::from(e.calls), Relaxed);
                c.nanos.fetch_add(share * u64::from(e.calls), Relaxed);
            }
            if e.failed > 0 {
                c.failed.fetch_add(u64::from(e.failed), Relaxed);
            }
            if e.rejected > 0 {
                c.rejected.fetch_add(u64::from(e.rejected), Relaxed);
            }
        }
    }

    /// Every command with a call, rejected or not, in table order.
    pub fn totals(&self) -> Vec<(usize, CommandTotals)> {
        let commands = self.stripes[0].len();
        (0..commands)
            .filter_map(|i| {
                let mut t = CommandTotals::default();
                let mut nanos = 0;
                for stripe in &self.stripes {
                    let c = &stripe[i];
                    t.calls += c.calls.load(Relaxed);
                    nanos += c.nanos.load(Relaxed);
                    t.rejected += c.rejected.load(Relaxed);
                    t.failed += c.failed.load(Relaxed);
                }
                t.usec = nanos / 1000;
                (t.calls + t.rejected > 0).then_some((i, t))
            })
            .collect()
    }

    /// Forgets everything (`CONFIG RESETSTAT`).
    pub fn reset(&self) {
        for c in self.stripes.iter().flat_map(|s| s.iter()) {
            for n in [&c.calls, &c.nanos, &c.rejected, &c.failed] {
                n.store(0, Relaxed);
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct TallyEntry {
    index: u32,
    calls: u32,
    failed: u32,
    rejected: u32,
}

/// One connection's counts for the batch it is running.
#[derive(Debug, Default)]
pub struct CallTally {
    /// Few: a batch runs one or a handful of distinct commands.
    entries: Vec<TallyEntry>,
}

impl CallTally {
    fn entry(&mut self, index: usize) -> &mut TallyEntry {
        let index = index as u32;
        match self.entries.iter().position(|e| e.index == index) {
            Some(at) => &mut self.entries[at],
            None => {
                self.entries.push(TallyEntry {
                    index,
                    calls: 0,
                    failed: 0,
                    rejected: 0,
                });
                self.entries.last_mut().expect("just pushed")
            }
        }
    }

    /// `n` runs of command `index`, `failed` of them answering an error.
    #[inline]
    pub fn calls(&mut self, index: usize, n: u32, failed: u32) {
        let e = self.entry(index);
        e.calls += n;
        e.failed += failed;
    }

    /// One run of command `index`.
    #[inline]
    pub fn call(&mut self, index: usize, failed: bool) {
        self.calls(index, 1, u32::from(failed));
    }

    /// Command `index` refused before it ran.
    #[cold]
    pub fn reject(&mut self, index: usize) {
        self.entry(index).rejected += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_add_up_and_share_their_time() {
        let stats = CommandStats::new(3);
        let mut tally = CallTally::default();
        for _ in 0..3 {
            tally.call(0, false);
        }
        tally.call(1, true);
        stats.add(&mut tally, Duration::from_micros(40));
        assert!(tally.entries.is_empty(), "emptied");
        // From another thread: another stripe, the same totals.
        std::thread::scope(|s| {
            s.spawn(|| {
                let mut t = CallTally::default();
                t.calls(0, 5, 0);
                t.reject(1);
                stats.add(&mut t, Duration::from_micros(50));
            });
        });
        let totals = stats.totals();
        assert_eq!(
            totals,
            [
                (
                    0,
                    CommandTotals {
                        calls: 8,
                        usec: 30 + 50,
                        rejected: 0,
                        failed: 0
                    }
                ),
                (
                    1,
                    CommandTotals {
                        calls: 1,
                        usec: 10,
                        rejected: 1,
                        failed: 1
                    }
                ),
            ]
        );
        stats.reset();
        assert!(stats.totals().is_empty());
    }
}
