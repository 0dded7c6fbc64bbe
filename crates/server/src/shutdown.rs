//! How a connection learns that the server is stopping.
//!
//! The server flips a `watch` channel once; connections look at it only
//! while waiting for a request, so a batch that is executing always
//! finishes, commits and gets its replies before the connection closes.

use std::fmt;
use std::future::{poll_fn, Future};
use std::pin::Pin;
use tokio::sync::watch;

/// A connection's view of the server's shutdown signal.
///
/// The wait is one future for the connection's whole life, not one per
/// [`recv`](Shutdown::recv): a connection waits for shutdown beside every
/// read, and a fresh `watch` wait would register a waiter with the channel
/// and remove it again each time (about 250 instructions per unpipelined
/// request under callgrind). The kept future registers once.
pub struct Shutdown {
    rx: watch::Receiver<bool>,
    /// The wait, made on first use; `None` again once it has completed.
    wait: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
    signalled: bool,
}

impl fmt::Debug for Shutdown {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Shutdown")
            .field("signalled", &self.is_shutdown())
            .finish()
    }
}

impl Clone for Shutdown {
    /// A new view of the same signal, with a wait of its own.
    fn clone(&self) -> Self {
        Shutdown::new(self.rx.clone())
    }
}

impl Shutdown {
    /// Wraps the receiving end of the server's shutdown channel.
    pub fn new(rx: watch::Receiver<bool>) -> Self {
        Shutdown {
            rx,
            wait: None,
            signalled: false,
        }
    }

    /// True once shutdown has been signalled.
    pub fn is_shutdown(&self) -> bool {
        self.signalled || *self.rx.borrow()
    }

    /// Waits until shutdown is signalled (or the server is gone). Dropping
    /// this future before it completes keeps the underlying wait for the
    /// next call.
    pub async fn recv(&mut self) {
        if self.signalled {
            return;
        }
        let wait = self.wait.get_or_insert_with(|| {
            let mut rx = self.rx.clone();
            // An error means the sender was dropped: the server is gone too.
            Box::pin(async move {
                let _ = rx.wait_for(|stop| *stop).await;
            })
        });
        poll_fn(|cx| wait.as_mut().poll(cx)).await;
        self.wait = None;
        self.signalled = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_dropped_recv_keeps_waiting_and_sees_a_later_signal() {
        let (tx, rx) = watch::channel(false);
        let mut shutdown = Shutdown::new(rx);
        // Polled and dropped before the signal, as a read that wins the
        // select drops it: later calls must still complete.
        for _ in 0..3 {
            let r = tokio::time::timeout(Duration::from_millis(5), shutdown.recv()).await;
            assert!(r.is_err(), "no signal yet");
        }
        assert!(!shutdown.is_shutdown());
        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), shutdown.recv())
            .await
            .expect("the signal is seen");
        assert!(shutdown.is_shutdown());
        // Once seen, it stays seen (and recv returns at once).
        shutdown.recv().await;
    }

    #[tokio::test]
    async fn a_dropped_sender_ends_the_wait() {
        let (tx, rx) = watch::channel(false);
        let mut shutdown = Shutdown::new(rx);
        drop(tx);
        tokio::time::timeout(Duration::from_secs(5), shutdown.recv())
            .await
            .expect("a gone server ends the wait");
    }

    #[tokio::test]
    async fn a_clone_waits_on_its_own() {
        let (tx, rx) = watch::channel(false);
        let mut a = Shutdown::new(rx);
        let r = tokio::time::timeout(Duration::from_millis(5), a.recv()).await;
        assert!(r.is_err());
        let mut b = a.clone();
        tx.send(true).unwrap();
        tokio::time::timeout(Duration::from_secs(5), b.recv())
            .await
            .unwrap();
        tokio::time::timeout(Duration::from_secs(5), a.recv())
            .await
            .unwrap();
    }
}
