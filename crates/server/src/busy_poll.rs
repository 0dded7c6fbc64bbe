//! Busy polling: after a request, the server's thread keeps polling its
//! sockets for a short window instead of going to sleep in the kernel.
//!
//! Why: with one client request in flight per connection (no pipelining),
//! a server core that runs out of work between two requests sleeps in
//! `epoll_wait`, and the next request must wake it: the client's `send`
//! pays for the wake-up (on a virtual machine, an interrupt to a halted
//! virtual CPU), and the request waits for the thread to be scheduled.
//! A thread that keeps polling is never asleep, so neither cost is paid.
//! Measured with `redis-benchmark -c 50` unpipelined (BENCHMARKS.md,
//! session 32): 8–12% more requests per second, because the benchmark's
//! own core, not the server's, is the limit there and each wake-up it
//! no longer pays is time it spends sending requests.
//!
//! The price is CPU: while requests keep arriving less than `window`
//! apart, the thread polls instead of sleeping, so the core shows busy.
//! Hence off by default (`[server] busy_poll = "0s"`) and meant for a
//! server with a core of its own. With a multi-threaded runtime, one
//! worker thread polls.
//!
//! How: a task that yields to the scheduler in a loop. When only yielded
//! tasks are left, tokio's scheduler polls the sockets without blocking
//! (`epoll_wait` with a zero timeout) and runs whatever became ready, then
//! the task again. Once `window` has passed without a request, the task
//! waits on a [`Notify`] and the thread sleeps normally, until the next
//! request's [`BusyPoll::note_activity`] wakes it. A request that comes
//! after more than `window` of quiet does not start polling (polling would
//! not have caught it either); the next one within `window` does. So
//! requests further apart than `window` cost no polling at all, and the
//! worst case, requests just over `window` apart, costs at most one
//! window of polling per two requests.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::Notify;

/// The busy-polling task's shared state: connections report activity
/// here, the task spins while there is some.
#[derive(Debug)]
pub struct BusyPoll {
    window: Duration,
    /// Set by connections on every batch, cleared by the polling task.
    active: AtomicBool,
    /// The polling task is asleep (waiting on `wake`).
    parked: AtomicBool,
    wake: Notify,
    /// Times the task yielded (each one a non-blocking poll of the
    /// sockets, when nothing else was ready).
    spins: AtomicU64,
}

impl BusyPoll {
    /// Starts the polling task on the current tokio runtime: after each
    /// request that came within `window` of the one before, the thread
    /// keeps polling for up to `window`. The task ends when every other
    /// handle is dropped while it polls; parked, it ends with the runtime.
    ///
    /// # Panics
    ///
    /// Outside a tokio runtime.
    ///
    /// ```
    /// use std::time::Duration;
    /// use tiercache_server::BusyPoll;
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let poll = BusyPoll::start(Duration::from_millis(500));
    /// poll.note_activity(); // what every connection does per batch
    /// tokio::time::sleep(Duration::from_millis(1)).await;
    /// poll.note_activity(); // a request soon after the last: polling starts
    /// tokio::time::sleep(Duration::from_millis(1)).await;
    /// assert!(poll.spins() > 0);
    /// # });
    /// ```
    pub fn start(window: Duration) -> Arc<BusyPoll> {
        let poll = Arc::new(BusyPoll {
            window,
            active: AtomicBool::new(false),
            parked: AtomicBool::new(true),
            wake: Notify::new(),
            spins: AtomicU64::new(0),
        });
        tokio::spawn(poll.clone().run());
        poll
    }

    /// Records that a request arrived: the polling task polls for another
    /// `window`, waking first if it was asleep. One load when the task is
    /// already polling and the flag already set.
    #[inline]
    pub fn note_activity(&self) {
        if !self.active.load(Ordering::Relaxed) {
            // SeqCst against `run`'s park: either the task sees `active`
            // before it sleeps, or this sees `parked` and wakes it.
            self.active.store(true, Ordering::SeqCst);
        }
        if self.parked.load(Ordering::SeqCst) {
            self.parked.store(false, Ordering::SeqCst);
            self.wake.notify_one();
        }
    }

    /// How many times the task has yielded so far (for tests and metrics).
    pub fn spins(&self) -> u64 {
        self.spins.load(Ordering::Relaxed)
    }

    async fn run(self: Arc<Self>) {
        // When the last request came, as far as this task has seen.
        let mut last_active = Instant::now();
        loop {
            if self.active.swap(false, Ordering::SeqCst) {
                last_active = Instant::now();
            } else {
                // Asleep until a request comes; `notify_one` keeps a
                // permit, so a wake between the check and the wait is not
                // lost.
                self.parked.store(true, Ordering::SeqCst);
                if !self.active.load(Ordering::SeqCst) {
                    self.wake.notified().await;
                }
                self.parked.store(false, Ordering::SeqCst);
                self.active.store(false, Ordering::SeqCst); // this wake's
                let now = Instant::now();
                let gap = now - last_active;
                last_active = now;
                // Polling would not have caught a request that came after
                // more than a window of quiet, so one does not start
                // polling: isolated requests cost no polling at all. The
                // next request, if it comes within a window, does.
                if gap > self.window {
                    continue;
                }
            }
            loop {
                if Arc::strong_count(&self) == 1 {
                    return; // the server is gone
                }
                tokio::task::yield_now().await;
                self.spins.fetch_add(1, Ordering::Relaxed);
                if self.active.swap(false, Ordering::Relaxed) {
                    last_active = Instant::now();
                } else if last_active.elapsed() >= self.window {
                    break;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    #[test]
    fn polls_between_close_requests_and_not_after_an_isolated_one() {
        runtime().block_on(async {
            // Generous times, so that a loaded machine's late wake-ups
            // (a 5 ms sleep taking 50) do not change the story.
            let poll = BusyPoll::start(Duration::from_millis(200));
            tokio::time::sleep(Duration::from_millis(300)).await;
            assert_eq!(poll.spins(), 0, "no request yet: the task must sleep");

            // After 300 ms of quiet, one request: polling would not have
            // caught it, so it does not start polling either.
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(poll.spins(), 0, "an isolated request starts no polling");

            // A second one 5 ms later, within the window: polling starts.
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(5)).await;
            let during = poll.spins();
            assert!(during > 0, "close requests start the polling");

            // Well past the window: asleep, the count stays put.
            tokio::time::sleep(Duration::from_millis(400)).await;
            let after = poll.spins();
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(poll.spins(), after, "past the window the task must sleep");

            // A request after that quiet is isolated again; two are not.
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert_eq!(poll.spins(), after);
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(poll.spins() > after, "the next close request wakes it");
        });
    }

    #[test]
    fn activity_keeps_it_polling_beyond_one_window() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(10));
            // A request every 2 ms for 60 ms: never 10 ms without one.
            for _ in 0..30 {
                poll.note_activity();
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
            let before = poll.spins();
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(
                poll.spins() > before,
                "still polling after 60 ms of requests"
            );
        });
    }

    #[test]
    fn the_task_ends_when_the_server_drops_its_handle() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_secs(60));
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(2)).await;
            assert!(poll.spins() > 0, "within a minute of its start: polling");
            let weak = Arc::downgrade(&poll);
            drop(poll);
            tokio::time::sleep(Duration::from_millis(5)).await;
            assert!(weak.upgrade().is_none(), "the polling task still holds it");
        });
    }
}
