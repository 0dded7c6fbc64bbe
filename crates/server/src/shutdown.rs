//! How a connection learns that the server is stopping, or that it was
//! killed (`CLIENT KILL`: the same wait, one more flag).
//!
//! The server flips a flag once and wakes every connection; connections
//! look at it only while waiting for a request, so a batch that is
//! executing always finishes, commits and gets its replies before the
//! connection closes.
//!
//! A connection waits for shutdown beside every read, so the wait must be
//! cheap to poll: each connection has an `AtomicWaker` (futures) that the
//! server's signal wakes, and a poll is one waker registration and one
//! flag load. A `tokio::sync::watch` wait, as used before, took the
//! channel's waiter lock on every poll: about 250 instructions per
//! unpipelined request under callgrind.

use futures_util::task::AtomicWaker;
use std::collections::HashMap;
use std::fmt;
use std::future::poll_fn;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;

#[derive(Default)]
struct Shared {
    stopped: AtomicBool,
    next_id: AtomicU64,
    /// The wakers of the connections alive now, by id.
    waiting: Mutex<HashMap<u64, Arc<AtomicWaker>>>,
}

/// The server's side of shutdown: [`subscribe`](ShutdownSignal::subscribe)
/// one [`Shutdown`] per connection, [`signal`](ShutdownSignal::signal) once
/// to stop them all. Dropping it signals too, so no connection can wait on
/// a server that is gone.
#[derive(Default)]
pub struct ShutdownSignal {
    shared: Arc<Shared>,
}

impl ShutdownSignal {
    /// A signal not yet given.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new connection's view of this signal.
    pub fn subscribe(&self) -> Shutdown {
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let waker = Arc::new(AtomicWaker::new());
        lock(&self.shared.waiting).insert(id, waker.clone());
        Shutdown {
            shared: self.shared.clone(),
            waker,
            killed: Arc::new(AtomicBool::new(false)),
            id,
        }
    }

    /// Tells every connection, present and future, that the server is
    /// stopping.
    pub fn signal(&self) {
        // The flag first: a connection registers its waker and then reads
        // the flag, so it either sees the flag or is woken.
        self.shared.stopped.store(true, Ordering::SeqCst);
        for waker in lock(&self.shared.waiting).values() {
            waker.wake();
        }
    }
}

impl Drop for ShutdownSignal {
    fn drop(&mut self) {
        self.signal();
    }
}

/// A connection's view of the server's shutdown signal.
pub struct Shutdown {
    shared: Arc<Shared>,
    waker: Arc<AtomicWaker>,
    /// Set by this connection's [`Killer`].
    killed: Arc<AtomicBool>,
    id: u64,
}

/// Stops one connection as shutdown stops them all (`CLIENT KILL`): it
/// finishes the batch it runs, sends its replies and closes.
#[derive(Clone, Debug)]
pub struct Killer {
    killed: Arc<AtomicBool>,
    waker: Arc<AtomicWaker>,
}

impl Killer {
    /// Tells the connection to close.
    pub fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        self.waker.wake();
    }
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("signalled", &self.is_shutdown())
            .finish()
    }
}

impl Shutdown {
    /// True once shutdown has been signalled, or this connection killed.
    pub fn is_shutdown(&self) -> bool {
        self.shared.stopped.load(Ordering::SeqCst) || self.killed.load(Ordering::SeqCst)
    }

    /// What kills this connection alone.
    pub fn killer(&self) -> Killer {
        Killer {
            killed: self.killed.clone(),
            waker: self.waker.clone(),
        }
    }

    /// Waits until shutdown is signalled. Cancel-safe: dropping the future
    /// loses nothing.
    pub async fn recv(&mut self) {
        poll_fn(|cx| {
            if self.is_shutdown() {
                return Poll::Ready(());
            }
            self.waker.register(cx.waker());
            if self.is_shutdown() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

impl Drop for Shutdown {
    fn drop(&mut self) {
        lock(&self.shared.waiting).remove(&self.id);
    }
}

/// The map holds no invariant a panicking holder could break: use it anyway.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_dropped_recv_keeps_waiting_and_sees_a_later_signal() {
        let signal = ShutdownSignal::new();
        let mut shutdown = signal.subscribe();
        // Polled and dropped before the signal, as a read that wins the
        // select drops it: later calls must still complete.
        for _ in 0..3 {
            let r = tokio::time::timeout(Duration::from_millis(5), shutdown.recv()).await;
            assert!(r.is_err(), "no signal yet");
        }
        assert!(!shutdown.is_shutdown());
        signal.signal();
        tokio::time::timeout(Duration::from_secs(5), shutdown.recv())
            .await
            .expect("the signal is seen");
        assert!(shutdown.is_shutdown());
        // Once seen, it stays seen (and recv returns at once).
        shutdown.recv().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_waiting_connection_is_woken_from_another_thread() {
        let signal = ShutdownSignal::new();
        let mut waiters = Vec::new();
        for _ in 0..8 {
            let mut s = signal.subscribe();
            waiters.push(tokio::spawn(async move { s.recv().await }));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(waiters.iter().all(|w| !w.is_finished()));
        std::thread::spawn(move || signal.signal()).join().unwrap();
        for w in waiters {
            tokio::time::timeout(Duration::from_secs(5), w)
                .await
                .expect("woken")
                .unwrap();
        }
    }

    #[tokio::test]
    async fn a_dropped_signal_ends_the_wait_and_later_subscribers_see_it() {
        let signal = ShutdownSignal::new();
        let mut before = signal.subscribe();
        let after = {
            let s = signal.subscribe();
            drop(signal);
            s
        };
        tokio::time::timeout(Duration::from_secs(5), before.recv())
            .await
            .expect("a gone server ends the wait");
        assert!(after.is_shutdown());
    }

    #[test]
    fn a_closed_connection_leaves_the_registry() {
        let signal = ShutdownSignal::new();
        let a = signal.subscribe();
        let b = signal.subscribe();
        assert_eq!(lock(&signal.shared.waiting).len(), 2);
        drop(a);
        assert_eq!(lock(&signal.shared.waiting).len(), 1);
        drop(b);
        assert!(lock(&signal.shared.waiting).is_empty());
    }
}
