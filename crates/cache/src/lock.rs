//! The shard lock: a reader-writer lock whose read acquisitions double as
//! the shard's lookup counter.
//!
//! Why not `parking_lot::RwLock` plus a counter: `CacheStats` must count hits
//! exactly, and every way of counting beside the lock cost the hit path
//! about 15%. Measured on the replay of Zipf 1.2 at 2,323 entries (one
//! thread, best of 10): no hit counting at all 55.7 Mops/s, per-thread
//! counter stripes bumped with a plain load and store 46–48 (the dependent
//! loads between the lock's two atomic instructions are what cost, not an
//! atomic), quick_cache 65. Here a lookup's read acquisition is a
//! `fetch_add` on a counter that is never decremented, so counting costs
//! nothing beyond the lock itself: lookups are acquisitions minus the
//! acquisitions that were not lookups, and hits are lookups minus misses
//! (misses are rarer and still counted beside the lock).
//!
//! How it works:
//! - `acquired` counts read acquisitions (bits 0–61), with the `WRITER` bit
//!   and a `PARKED` bit (someone sleeps until the writer leaves).
//! - `released` counts read releases, with a `WAITING` bit (the writer
//!   sleeps until the readers leave).
//! - A reader `fetch_add`s `acquired`; if `WRITER` was set, its increment
//!   was only tentative: it waits for the writer to leave and tries again.
//!   The writer, on leaving, counts every tentative increment made during
//!   its hold as released and as not-a-lookup, so the counts stay balanced.
//! - A writer sets `WRITER` (one writer at a time) and waits until
//!   `released` equals the count it saw: every reader admitted before it
//!   has left. Whatever raises `released` (a reader leaving, or a writer
//!   leaving and settling tentative increments, which the next writer may
//!   already count) wakes a writer parked on it.
//!
//! Waiting spins briefly, then parks on `parking_lot_core`, the crate that
//! `parking_lot`'s own locks are built on.

use parking_lot_core::{park, unpark_all, unpark_one, SpinWait};
use parking_lot_core::{DEFAULT_PARK_TOKEN, DEFAULT_UNPARK_TOKEN};
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::AtomicU64;
use std::sync::atomic::Ordering::{Acquire, Relaxed, Release};

/// In `acquired`: a writer holds (or is draining readers for) the lock.
const WRITER: u64 = 1 << 63;
/// In `acquired`: a thread is parked until `WRITER` clears.
const PARKED: u64 = 1 << 62;
/// In `released`: the writer is parked until the readers have left.
const WAITING: u64 = 1 << 63;
/// The count bits of either word (2^62 acquisitions: never reached).
const COUNT: u64 = PARKED - 1;

/// A reader-writer lock that counts its read acquisitions (see the module
/// doc). Writers are preferred: once one waits, new readers wait behind it.
#[repr(align(64))]
pub(crate) struct ShardLock<T> {
    acquired: AtomicU64,
    released: AtomicU64,
    /// Read acquisitions that were not lookups: [`ShardLock::read_uncounted`]
    /// and tentative increments undone by a writer. Only ever increased
    /// while the lock is held (read or write), which keeps
    /// [`WriteGuard::lookups`] exact.
    uncounted: AtomicU64,
    value: UnsafeCell<T>,
}

// SAFETY: the lock hands out `&T` to many threads only while no `&mut T`
// exists, and `&mut T` to one thread at a time: as `std::sync::RwLock`.
unsafe impl<T: Send> Send for ShardLock<T> {}
unsafe impl<T: Send + Sync> Sync for ShardLock<T> {}

impl<T> ShardLock<T> {
    pub(crate) fn new(value: T) -> Self {
        ShardLock {
            acquired: AtomicU64::new(0),
            released: AtomicU64::new(0),
            uncounted: AtomicU64::new(0),
            value: UnsafeCell::new(value),
        }
    }

    /// A read lock for a lookup: counted in [`ShardLock::lookups`].
    #[inline]
    pub(crate) fn read(&self) -> ReadGuard<'_, T> {
        let before = self.acquired.fetch_add(1, Acquire);
        if before & WRITER != 0 {
            self.read_contended();
        }
        ReadGuard { lock: self }
    }

    /// A read lock for anything but a lookup (peeks, sizes, statistics).
    pub(crate) fn read_uncounted(&self) -> ReadGuard<'_, T> {
        let guard = self.read();
        self.uncounted.fetch_add(1, Relaxed);
        guard
    }

    /// Lookups so far. Exact when no lock is held; approximate (by the
    /// lookups in flight) while readers run.
    pub(crate) fn lookups(&self) -> u64 {
        let uncounted = self.uncounted.load(Relaxed);
        (self.acquired.load(Relaxed) & COUNT).saturating_sub(uncounted)
    }

    /// Our increment of `acquired` met a writer: it stays, counted by that
    /// writer as released and uncounted; wait and try again.
    #[cold]
    #[inline(never)]
    fn read_contended(&self) {
        loop {
            self.wait_while_writer();
            if self.acquired.fetch_add(1, Acquire) & WRITER == 0 {
                return;
            }
        }
    }

    /// The write lock. Uncontended: one load and one compare-and-swap of
    /// `acquired`, one load of `released` (inlined: the cache's miss path
    /// takes it once per insert).
    #[inline]
    pub(crate) fn write(&self) -> WriteGuard<'_, T> {
        let state = self.acquired.load(Relaxed);
        let admitted = if state & WRITER == 0
            && self
                .acquired
                .compare_exchange(state, state | WRITER, Acquire, Relaxed)
                .is_ok()
        {
            state & COUNT
        } else {
            self.take_writer_bit()
        };
        if self.released.load(Acquire) != admitted {
            self.wait_for_readers(admitted);
        }
        WriteGuard {
            lock: self,
            admitted,
        }
    }

    /// Sets `WRITER` once no other writer holds it; returns the read
    /// acquisitions admitted before.
    #[cold]
    #[inline(never)]
    fn take_writer_bit(&self) -> u64 {
        loop {
            let state = self.acquired.load(Relaxed);
            if state & WRITER != 0 {
                self.wait_while_writer();
            } else if self
                .acquired
                .compare_exchange_weak(state, state | WRITER, Acquire, Relaxed)
                .is_ok()
            {
                return state & COUNT;
            }
        }
    }

    /// Until `acquired` has no `WRITER` (spin, then park).
    fn wait_while_writer(&self) {
        let mut spin = SpinWait::new();
        loop {
            let state = self.acquired.load(Relaxed);
            if state & WRITER == 0 {
                return;
            }
            if state & PARKED == 0 {
                if spin.spin() {
                    continue;
                }
                if self.acquired.fetch_or(PARKED, Relaxed) & WRITER == 0 {
                    // The writer left meanwhile: PARKED stays set, and the
                    // next writer's unlock wakes nobody (harmless).
                    return;
                }
            }
            let key = &self.acquired as *const _ as usize;
            let validate = || {
                let s = self.acquired.load(Relaxed);
                s & WRITER != 0 && s & PARKED != 0
            };
            // SAFETY: the key is this lock's address, unique while it
            // lives; the callbacks neither panic nor call parking_lot_core.
            unsafe {
                park(key, validate, || {}, |_, _| {}, DEFAULT_PARK_TOKEN, None);
            }
            spin.reset();
        }
    }

    /// Until every reader admitted before the writer (`admitted` of them
    /// in all) has released.
    fn wait_for_readers(&self, admitted: u64) {
        let mut spin = SpinWait::new();
        loop {
            let state = self.released.load(Acquire);
            if state & COUNT == admitted {
                if state & WAITING != 0 {
                    // No reader is left to see the bit: clear it.
                    self.released.fetch_and(!WAITING, Relaxed);
                }
                return;
            }
            if state & WAITING == 0 {
                if spin.spin() {
                    continue;
                }
                self.released.fetch_or(WAITING, Relaxed);
                continue;
            }
            let key = &self.released as *const _ as usize;
            let validate = || {
                let s = self.released.load(Relaxed);
                s & COUNT != admitted && s & WAITING != 0
            };
            // SAFETY: as in `wait_while_writer`.
            unsafe {
                park(key, validate, || {}, |_, _| {}, DEFAULT_PARK_TOKEN, None);
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn wake_writer(&self) {
        // SAFETY: the key as parked on in `wait_for_readers`.
        unsafe {
            unpark_one(&self.released as *const _ as usize, |_| {
                DEFAULT_UNPARK_TOKEN
            })
        };
    }

    /// Uncontended (no reader met our `WRITER` bit, nobody parked): one
    /// load and one compare-and-swap.
    #[inline]
    fn write_unlock(&self, admitted: u64) {
        let state = self.acquired.load(Relaxed);
        if state == WRITER | admitted
            && self
                .acquired
                .compare_exchange(state, admitted, Release, Relaxed)
                .is_ok()
        {
            return;
        }
        self.write_unlock_contended(admitted);
    }

    #[cold]
    #[inline(never)]
    fn write_unlock_contended(&self, admitted: u64) {
        let state = self.acquired.fetch_and(!(WRITER | PARKED), Release);
        self.settle_after_unlock(state, admitted);
    }

    /// The rest of a contended unlock, once `WRITER` is clear (`state` is
    /// `acquired` as it was just before).
    fn settle_after_unlock(&self, state: u64, admitted: u64) {
        // Readers that met our WRITER bit left their increments behind;
        // count them as released and as not lookups. `uncounted` first: a
        // writer that sees `released` complete must see it too.
        let tentative = (state & COUNT) - admitted;
        if tentative > 0 {
            self.uncounted.fetch_add(tentative, Relaxed);
            // The next writer can take the bit as soon as it is clear
            // above, count these increments among the readers it waits
            // for, and park before they are released here: wake it, as a
            // reader's release would. (Without this, a test run hung with
            // the writer parked on a complete count and every reader
            // parked behind it.)
            if self.released.fetch_add(tentative, Release) & WAITING != 0 {
                self.wake_writer();
            }
        }
        if state & PARKED != 0 {
            // SAFETY: the key as parked on in `wait_while_writer`.
            unsafe { unpark_all(&self.acquired as *const _ as usize, DEFAULT_UNPARK_TOKEN) };
        }
    }
}

pub(crate) struct ReadGuard<'a, T> {
    lock: &'a ShardLock<T>,
}

impl<T> Deref for ReadGuard<'_, T> {
    type Target = T;
    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: a read guard exists only while no writer holds the lock.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> Drop for ReadGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        if self.lock.released.fetch_add(1, Release) & WAITING != 0 {
            self.lock.wake_writer();
        }
    }
}

pub(crate) struct WriteGuard<'a, T> {
    lock: &'a ShardLock<T>,
    /// Read acquisitions before ours.
    admitted: u64,
}

impl<T> WriteGuard<'_, T> {
    /// Lookups so far, exact: no reader runs while we hold the lock.
    pub(crate) fn lookups(&self) -> u64 {
        self.admitted - self.lock.uncounted.load(Relaxed)
    }
}

impl<T> Deref for WriteGuard<'_, T> {
    type Target = T;
    fn deref(&self) -> &T {
        // SAFETY: the write guard is the only access while it lives.
        unsafe { &*self.lock.value.get() }
    }
}

impl<T> DerefMut for WriteGuard<'_, T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: as in `deref`.
        unsafe { &mut *self.lock.value.get() }
    }
}

impl<T> Drop for WriteGuard<'_, T> {
    #[inline]
    fn drop(&mut self) {
        self.lock.write_unlock(self.admitted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicBool;
    use std::time::{Duration, Instant};

    #[test]
    fn counts_lookups_but_not_other_reads_or_writes() {
        let lock = ShardLock::new(0u64);
        for _ in 0..5 {
            drop(lock.read());
        }
        drop(lock.read_uncounted());
        *lock.write() += 1;
        assert_eq!(lock.lookups(), 5);
        assert_eq!(lock.write().lookups(), 5);
    }

    /// Writers keep a pair equal; readers must never see it torn, and every
    /// lookup must be counted despite readers colliding with writers.
    #[test]
    fn excludes_writers_and_counts_exactly_under_contention() {
        let lock = ShardLock::new((0u64, 0u64));
        let threads = 4;
        let reads = 20_000;
        std::thread::scope(|s| {
            for t in 0..threads {
                let lock = &lock;
                s.spawn(move || {
                    for i in 0..reads {
                        if (i + t) % 10 == 0 {
                            let mut w = lock.write();
                            w.0 += 1;
                            std::hint::spin_loop();
                            w.1 += 1;
                        } else {
                            let r = lock.read();
                            assert_eq!(r.0, r.1, "a reader saw a writer's half-done update");
                        }
                        if i % 1000 == 0 {
                            drop(lock.read_uncounted());
                        }
                    }
                });
            }
        });
        let writes = (threads * reads / 10) as u64;
        assert_eq!(lock.write().0, writes);
        assert_eq!(lock.lookups(), threads as u64 * reads as u64 - writes);
    }

    /// A writer that parks on readers a previous writer has not yet
    /// counted as released is woken when that writer counts them.
    #[test]
    fn a_writer_waiting_on_tentative_readers_wakes_when_they_are_settled() {
        let lock = std::sync::Arc::new(ShardLock::new(0u64));
        // A writer holds the lock and a reader meets its WRITER bit: the
        // reader's increment is tentative.
        let first = lock.write();
        let admitted = first.admitted;
        lock.acquired.fetch_add(1, Acquire);
        // The first half of the contended unlock: WRITER cleared...
        std::mem::forget(first);
        let state = lock.acquired.fetch_and(!(WRITER | PARKED), Release);
        // ...and before the second half, the next writer comes, counts
        // the tentative reader as admitted, and parks waiting for it.
        let (done, finished) = std::sync::mpsc::channel();
        let next = lock.clone();
        std::thread::spawn(move || {
            *next.write() += 1;
            let _ = done.send(());
        });
        let begun = Instant::now();
        while lock.released.load(Relaxed) & WAITING == 0 {
            assert!(
                begun.elapsed() < Duration::from_secs(10),
                "the writer never waited"
            );
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(50)); // let it park
        lock.settle_after_unlock(state, admitted);
        assert!(
            finished.recv_timeout(Duration::from_secs(10)).is_ok(),
            "the second writer was never woken"
        );
        assert_eq!(*lock.read(), 1);
    }

    #[test]
    fn parked_reader_wakes_when_the_writer_leaves() {
        let lock = ShardLock::new(0u64);
        let started = AtomicBool::new(false);
        std::thread::scope(|s| {
            let mut w = lock.write();
            s.spawn(|| {
                started.store(true, Relaxed);
                let begun = Instant::now();
                let value = *lock.read();
                assert_eq!(value, 7, "the reader ran before the writer finished");
                assert!(begun.elapsed() >= Duration::from_millis(50));
            });
            while !started.load(Relaxed) {
                std::thread::yield_now();
            }
            // Long enough for the reader to give up spinning and park.
            std::thread::sleep(Duration::from_millis(100));
            *w = 7;
            drop(w);
        });
        assert_eq!(lock.lookups(), 1);
    }

    #[test]
    fn parked_writer_wakes_when_the_readers_leave() {
        let lock = ShardLock::new(0u64);
        let started = AtomicBool::new(false);
        std::thread::scope(|s| {
            let r = lock.read();
            s.spawn(|| {
                started.store(true, Relaxed);
                *lock.write() = 1;
            });
            while !started.load(Relaxed) {
                std::thread::yield_now();
            }
            std::thread::sleep(Duration::from_millis(100));
            assert_eq!(*r, 0, "the writer ran while a reader held the lock");
            drop(r);
        });
        assert_eq!(*lock.read(), 1);
    }
}
