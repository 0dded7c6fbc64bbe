//! Busy polling: after a request, the server's thread keeps polling its
//! sockets for a short window instead of going to sleep in the kernel.
//!
//! Why: a server core that runs out of work sleeps in `epoll_wait`, and
//! the next request must wake it. The client's `send` pays for that
//! wake-up (on a virtual machine, an interrupt to a halted virtual CPU),
//! and the request waits for the thread to be scheduled. A thread that
//! keeps polling is not asleep, so neither cost is paid. This matters
//! most when the client's core, not the server's, is the limit: under
//! `redis-benchmark -c 50` the client spends 7–8% more CPU per request
//! against a server that sleeps ten times as often as redis-server
//! (which, being slower, is rarely idle long enough to sleep), and that
//! is the difference in requests per second (BENCHMARKS.md, session 33).
//!
//! The price is CPU, bounded two ways (`Policy`, below, decides):
//! - A request that comes after more than `window` of quiet does not
//!   start polling (polling would not have caught it either); the next
//!   one within `window` does. So an idle server, or one whose requests
//!   come further apart than `window`, never polls.
//! - Polling runs on credit earned by serving: the time polled with
//!   nothing to do never exceeds the time spent serving requests. Busy
//!   polling can at most double the CPU the server uses, never keep a
//!   core busy for a trickle of requests.
//!
//! `[server] busy_poll = "auto"` (the default) polls for
//! `BusyPollSetting::AUTO_WINDOW` (10 µs) when the server runs on one
//! worker thread, and not at all on several: with tokio's multi-threaded
//! scheduler, only the worker parked in `epoll_wait` polls the sockets,
//! so a spinning worker would burn CPU without catching a request.
//! `/metrics` reports the polling (`tiercache_busy_poll_*`).
//!
//! How: a task that yields to the scheduler in a loop. When only yielded
//! tasks are left, tokio's scheduler polls the sockets without blocking
//! (`epoll_wait` with a zero timeout) and runs whatever became ready, then
//! the task again. When the policy says stop, the task waits on a
//! [`Notify`] and the thread sleeps normally, until the next request's
//! [`BusyPoll::note_activity`] wakes it.

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
    /// When a request last woke the task, in nanoseconds since `epoch`.
    woken_at_ns: AtomicU64,
    epoch: Instant,
    wake: Notify,
    /// Times the task yielded (each one a non-blocking poll of the
    /// sockets, when nothing else was ready).
    spins: AtomicU64,
    /// Nanoseconds of turns in which nothing came.
    idle_polling_ns: AtomicU64,
}

impl BusyPoll {
    /// Starts the polling task on the current tokio runtime: after each
    /// request that came within `window` of the one before, the thread
    /// keeps polling for up to `window`, as long as it has served at least
    /// as long as it has polled for nothing. The task ends when every other
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
            woken_at_ns: AtomicU64::new(0),
            epoch: Instant::now(),
            wake: Notify::new(),
            spins: AtomicU64::new(0),
            idle_polling_ns: AtomicU64::new(0),
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
            let at = self.epoch.elapsed().as_nanos() as u64;
            self.woken_at_ns.store(at, Ordering::Relaxed);
            self.wake.notify_one();
        }
    }

    /// How many times the task has yielded so far (for tests and metrics).
    pub fn spins(&self) -> u64 {
        self.spins.load(Ordering::Relaxed)
    }

    /// Time spent polling with nothing to do, so far.
    pub fn idle_polling(&self) -> Duration {
        Duration::from_nanos(self.idle_polling_ns.load(Ordering::Relaxed))
    }

    async fn run(self: Arc<Self>) {
        let mut policy = Policy::new(self.window, Instant::now());
        loop {
            if self.active.swap(false, Ordering::SeqCst) {
                policy.note_request(Instant::now());
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
                let woken_at =
                    self.epoch + Duration::from_nanos(self.woken_at_ns.load(Ordering::Relaxed));
                if !policy.woken(Instant::now(), woken_at) {
                    continue;
                }
            }
            loop {
                if Arc::strong_count(&self) == 1 {
                    return; // the server is gone
                }
                tokio::task::yield_now().await;
                self.spins.fetch_add(1, Ordering::Relaxed);
                let active = self.active.swap(false, Ordering::Relaxed);
                match policy.spun(Instant::now(), active) {
                    Spin::Served => {}
                    Spin::Idle(spent) => {
                        let ns = spent.as_nanos() as u64;
                        self.idle_polling_ns.fetch_add(ns, Ordering::Relaxed);
                    }
                    Spin::Stop => break,
                }
            }
        }
    }
}

/// What one turn of the polling loop amounted to.
#[derive(Debug, PartialEq, Eq)]
enum Spin {
    /// Requests were served since the last turn: keep polling.
    Served,
    /// Nothing came in this long: keep polling.
    Idle(Duration),
    /// Out of window or out of credit: sleep.
    Stop,
}

/// When to poll, apart from the clock and the scheduler so that tests can
/// drive it: within `window` of the last request, and only on credit
/// earned by serving.
///
/// The credit: a turn of the polling loop in which requests were served
/// earns its own length (the scheduler ran their connections during it);
/// a wake-up earns the time from the waking request to the task's first
/// turn (the rest of that batch being served); a turn in which nothing
/// came spends its length. Credit is capped at one window, the most a
/// single quiet spell may be polled for anyway. So the time polled for
/// nothing is at most the time spent serving: requests arriving just
/// under a window apart, which would otherwise keep the core polling
/// non-stop, cost at most twice their own CPU.
#[derive(Debug)]
struct Policy {
    window: Duration,
    /// When the last request came, as far as the task has seen.
    last_request: Instant,
    /// When the task last ran: the start of the current turn.
    last_turn: Instant,
    /// Polling time left.
    credit: Duration,
}

impl Policy {
    fn new(window: Duration, now: Instant) -> Self {
        Policy {
            window,
            last_request: now,
            last_turn: now,
            credit: Duration::ZERO,
        }
    }

    /// A request came while the task was not polling (it was between
    /// windows, not asleep).
    fn note_request(&mut self, now: Instant) {
        self.last_request = now;
        self.last_turn = now;
    }

    /// Woken from sleep by a request at `woken_at`: whether to start
    /// polling. Polling would not have caught a request that came after
    /// more than a window of quiet, so one does not start polling:
    /// isolated requests cost no polling at all. The next request, if it
    /// comes within a window, does.
    fn woken(&mut self, now: Instant, woken_at: Instant) -> bool {
        let gap = now - self.last_request;
        self.note_request(now);
        self.credit = now.saturating_duration_since(woken_at).min(self.window);
        gap <= self.window
    }

    /// The task ran again after a yield; `served` says whether requests
    /// came in meanwhile.
    fn spun(&mut self, now: Instant, served: bool) -> Spin {
        let spent = now - self.last_turn;
        self.last_turn = now;
        if served {
            self.last_request = now;
            self.credit = (self.credit + spent).min(self.window);
            return Spin::Served;
        }
        if spent > self.credit || now - self.last_request >= self.window {
            self.credit = Duration::ZERO;
            return Spin::Stop;
        }
        self.credit = self.credit.saturating_sub(spent);
        Spin::Idle(spent)
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
    fn keeps_polling_while_it_serves_and_stops_on_no_credit() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_millis(5));
            poll.note_activity();
            tokio::time::sleep(Duration::from_millis(1)).await;
            // A "connection" that serves a batch on every turn, for four
            // windows: each of the poller's turns has served requests,
            // so it never stops.
            let started = Instant::now();
            let before = poll.spins();
            let mut turns = 0u64;
            while started.elapsed() < Duration::from_millis(20) {
                poll.note_activity();
                tokio::task::yield_now().await;
                turns += 1;
            }
            let spins = poll.spins() - before;
            assert!(
                spins * 2 >= turns,
                "{spins} polls in {turns} turns: it stopped polling while serving"
            );

            drop(poll);

            // Within the window but nothing served: little credit, so it
            // stops soon instead of polling for the rest of the window.
            // Polling through these 50 ms would take some 2.5 times the
            // polls of the 20 ms above; allow a tenth of that.
            let quiet = BusyPoll::start(Duration::from_secs(1));
            quiet.note_activity();
            tokio::time::sleep(Duration::from_millis(1)).await;
            quiet.note_activity();
            tokio::time::sleep(Duration::from_millis(50)).await;
            assert!(
                quiet.spins() * 4 < spins,
                "{} polls with nothing served (against {spins} while serving): polling without credit",
                quiet.spins()
            );
            assert!(quiet.idle_polling() < Duration::from_millis(25));
        });
    }

    #[test]
    fn the_task_ends_when_the_server_drops_its_handle() {
        runtime().block_on(async {
            let poll = BusyPoll::start(Duration::from_secs(60));
            poll.note_activity();
            for _ in 0..100 {
                poll.note_activity(); // serving: the task keeps polling
                tokio::task::yield_now().await;
            }
            assert!(poll.spins() > 0);
            let weak = Arc::downgrade(&poll);
            drop(poll);
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert!(weak.upgrade().is_none(), "the polling task still holds it");
        });
    }

    fn us(n: u64) -> Duration {
        Duration::from_micros(n)
    }

    #[test]
    fn policy_earns_credit_by_serving_and_spends_it_polling() {
        let t0 = Instant::now();
        let mut p = Policy::new(us(10), t0);
        // Woken 3 µs after the waking request: 3 µs of credit.
        assert!(
            p.woken(t0 + us(5), t0 + us(2)),
            "within a window of the last"
        );
        assert_eq!(p.credit, us(3));
        assert_eq!(p.spun(t0 + us(6), false), Spin::Idle(us(1)));
        assert_eq!(p.spun(t0 + us(8), false), Spin::Idle(us(2)));
        // 2 µs of credit spent... 1 left, and this turn took 2: stop, even
        // though the window (10 µs from the request at 5) is not over.
        assert_eq!(p.spun(t0 + us(10), false), Spin::Stop);
        assert_eq!(p.credit, Duration::ZERO);

        // A turn that served earns its length, capped at one window.
        let mut p = Policy::new(us(10), t0);
        assert_eq!(p.spun(t0 + us(4), true), Spin::Served);
        assert_eq!(p.credit, us(4));
        assert_eq!(p.spun(t0 + us(30), true), Spin::Served);
        assert_eq!(p.credit, us(10), "capped at the window");
        // Credit left, but a window without a request: stop.
        assert_eq!(p.spun(t0 + us(35), false), Spin::Idle(us(5)));
        assert_eq!(p.spun(t0 + us(40), false), Spin::Stop);
    }

    #[test]
    fn policy_does_not_poll_after_an_isolated_request() {
        let t0 = Instant::now();
        let mut p = Policy::new(us(10), t0);
        assert!(!p.woken(t0 + us(50), t0 + us(49)), "50 µs of quiet");
        assert!(p.woken(t0 + us(58), t0 + us(57)), "then one 8 µs later");
    }

    /// Drives a [`Policy`] the way [`BusyPoll::run`] does, on a virtual
    /// clock: requests arrive at given times and take given service
    /// times; a turn with nothing to serve takes `turn`. Returns (time
    /// polled with nothing to do, time spent serving).
    fn simulate(
        window: Duration,
        turn: Duration,
        requests: &[(Duration, Duration)],
    ) -> (Duration, Duration) {
        let t0 = Instant::now();
        let mut policy = Policy::new(window, t0);
        let (mut now, mut idle, mut served) = (t0, Duration::ZERO, Duration::ZERO);
        let mut next = requests.iter().peekable();
        let mut polling = false;
        while let Some(&&(at, service)) = next.peek() {
            let at = t0 + at;
            if !polling {
                // Asleep: the request wakes the thread, which serves it
                // and then runs the task.
                now = now.max(at) + service;
                served += service;
                next.next();
                polling = policy.woken(now, at);
                continue;
            }
            let served_now = at <= now + turn;
            if served_now {
                now = now.max(at) + service;
                served += service;
                next.next();
            } else {
                now += turn;
            }
            match policy.spun(now, served_now) {
                Spin::Served => {}
                Spin::Idle(spent) => idle += spent,
                Spin::Stop => polling = false,
            }
        }
        (idle, served)
    }

    #[test]
    fn polling_for_nothing_never_costs_more_than_serving() {
        let window = us(10);
        let turn = Duration::from_nanos(300);
        // The worst case without the credit: 1 µs requests arriving just
        // under a window apart keep the thread polling non-stop.
        let trickle: Vec<_> = (0..10_000u64).map(|i| (us(9 * i), us(1))).collect();
        let (idle, served) = simulate(window, turn, &trickle);
        assert!(
            idle <= served + turn * 10_000,
            "{idle:?} polled for {served:?} served"
        );
        assert!(
            idle < us(9 * 10_000) / 4,
            "{idle:?}: it polled through the gaps"
        );

        // Random arrivals and service times (a fixed-seed LCG): bursts,
        // gaps shorter and longer than the window.
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rand = |n: u64| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            (seed >> 33) % n
        };
        for _ in 0..20 {
            let mut at = Duration::ZERO;
            let requests: Vec<_> = (0..5_000)
                .map(|_| {
                    at += Duration::from_nanos(rand(20_000));
                    (at, Duration::from_nanos(200 + rand(5_000)))
                })
                .collect();
            let (idle, served) = simulate(window, turn, &requests);
            assert!(
                idle <= served + turn * requests.len() as u32,
                "{idle:?} polled for {served:?} served"
            );
        }
    }
}
