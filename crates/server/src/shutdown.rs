//! How a connection learns that the server is stopping.
//!
//! The server flips a `watch` channel once; connections look at it only
//! while waiting for a request, so a batch that is executing always
//! finishes, commits and gets its replies before the connection closes.

use tokio::sync::watch;

/// A connection's view of the server's shutdown signal.
#[derive(Debug, Clone)]
pub struct Shutdown {
    rx: watch::Receiver<bool>,
}

impl Shutdown {
    /// Wraps the receiving end of the server's shutdown channel.
    pub fn new(rx: watch::Receiver<bool>) -> Self {
        Shutdown { rx }
    }

    /// True once shutdown has been signalled.
    pub fn is_shutdown(&self) -> bool {
        *self.rx.borrow()
    }

    /// Waits until shutdown is signalled (or the server is gone).
    pub async fn recv(&mut self) {
        // An error means the sender was dropped: the server is gone too.
        let _ = self.rx.wait_for(|stop| *stop).await;
    }
}
