//! The miss counter, which costs the read path no atomic read-modify-write.
//!
//! Lookups are counted by the shard lock itself (see `lock.rs`), and hits
//! are lookups minus misses. A miss runs under a shard's *read* lock, so a
//! plain counter would need a `lock`-prefixed increment on every miss.
//! Measured with perf on the bench crate's replays, that one instruction
//! was about 13% of a lookup's cycles, on one thread, before any
//! contention. Instead every thread
//! owns a *stripe* (a cache line) in each shard and bumps it
//! with a plain load and store: no other thread writes that line, so no
//! count is lost and no line bounces between cores. Reading the totals sums
//! the stripes.
//!
//! Stripe ownership is a small per-thread ticket, handed back when the
//! thread exits and reused by the next one. Threads beyond the owned
//! stripes (more threads than `2 × cores`, at least 4 and at most 64)
//! share one overflow stripe and pay for an atomic increment there.

use parking_lot::Mutex;
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::sync::OnceLock;

/// One thread's count, alone on a cache line.
#[repr(align(64))]
#[derive(Default)]
struct Stripe {
    misses: AtomicU64,
}

/// Misses of one shard.
pub(crate) struct Misses {
    /// `owned()` thread stripes, then the shared overflow stripe.
    stripes: Box<[Stripe]>,
}

/// Number of stripes owned by one thread each (the same for every shard,
/// since a thread's ticket indexes them all).
fn owned() -> usize {
    static OWNED: OnceLock<usize> = OnceLock::new();
    *OWNED.get_or_init(|| {
        let cores = std::thread::available_parallelism().map_or(4, |n| n.get());
        (cores * 2).clamp(4, 64)
    })
}

/// Tickets handed back by exited threads.
static FREE: Mutex<Vec<usize>> = Mutex::new(Vec::new());
/// Tickets ever handed out (the next fresh one).
static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A thread's stripe index; returned to [`FREE`] when the thread exits.
struct Ticket(usize);

impl Ticket {
    fn claim() -> Ticket {
        if let Some(i) = FREE.lock().pop() {
            return Ticket(i);
        }
        Ticket(NEXT.fetch_add(1, Relaxed).min(owned()))
    }
}

impl Drop for Ticket {
    fn drop(&mut self) {
        // Later bumps from this thread (other destructors) share.
        let _ = STRIPE.try_with(|s| s.set(SHARED));
        if self.0 < owned() {
            FREE.lock().push(self.0);
        }
    }
}

/// [`STRIPE`] before the thread's first lookup.
const UNCLAIMED: usize = usize::MAX - 1;
/// [`STRIPE`] of a thread that shares the overflow stripe.
const SHARED: usize = usize::MAX;

thread_local! {
    /// Owns the ticket, to hand it back on exit.
    static TICKET: Ticket = Ticket::claim();
    /// A copy of the ticket for the read path: const-initialised and
    /// without a destructor, so reading it is one TLS load, where the lazy
    /// `TICKET` costs a state check too (7 instructions of a 100-instruction
    /// hit, measured with cachegrind on the replay of Zipf 0.99).
    static STRIPE: Cell<usize> = const { Cell::new(UNCLAIMED) };
}

impl Misses {
    pub(crate) fn new() -> Misses {
        Misses {
            stripes: (0..=owned()).map(|_| Stripe::default()).collect(),
        }
    }

    #[inline]
    pub(crate) fn miss(&self) {
        let i = STRIPE.with(Cell::get);
        let (_, owned) = self.stripes.split_last().expect("the overflow stripe");
        match owned.get(i) {
            Some(stripe) => {
                // This thread is the stripe's only writer.
                let c = &stripe.misses;
                c.store(c.load(Relaxed) + 1, Relaxed);
            }
            None => self.miss_slow(i),
        }
    }

    /// The thread's first miss claims a stripe; threads without one (too
    /// many, or exiting) share the overflow stripe.
    #[cold]
    #[inline(never)]
    fn miss_slow(&self, i: usize) {
        if i == UNCLAIMED {
            // During thread teardown the ticket may already be gone: share.
            let t = TICKET.try_with(|t| t.0).unwrap_or(SHARED);
            let _ = STRIPE.try_with(|s| s.set(t));
            if t < owned() {
                let c = &self.stripes[t].misses;
                c.store(c.load(Relaxed) + 1, Relaxed);
                return;
            }
        }
        let shared = &self.stripes[self.stripes.len() - 1];
        shared.misses.fetch_add(1, Relaxed);
    }

    pub(crate) fn count(&self) -> u64 {
        self.stripes.iter().map(|s| s.misses.load(Relaxed)).sum()
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.stripes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_exact_across_threads_and_reused_tickets() {
        let misses = Misses::new();
        // More threads than owned stripes, in waves, so tickets are reused
        // and some threads land on the shared stripe.
        for _ in 0..3 {
            std::thread::scope(|s| {
                for t in 0..(owned() + 3) {
                    let m = &misses;
                    s.spawn(move || {
                        for _ in 0..(1000 + t) {
                            m.miss();
                        }
                    });
                }
            });
        }
        let n = owned() as u64 + 3;
        assert_eq!(misses.count(), 3 * (1000 * n + n * (n - 1) / 2));
    }
}
