//! Request coalescing: at most one origin fetch per primary key at a time.
//!
//! The first request for a key starts a *flight* (a fetch run as its own
//! task, so a client hanging up does not cancel it for everyone); later
//! requests for the key wait on the flight's outcome. A waiter gives up
//! after the coalescing timeout (see `HttpCache`). A flight whose task
//! ends without publishing (it panicked) closes the channel: waiters then
//! retry, one of them starting a new flight.

use super::cached::Cached;
use bytes::Bytes;
use hyper::StatusCode;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::watch;

/// What a flight tells its waiters.
#[derive(Debug)]
pub enum FlightOutcome {
    /// A response that may be shared: stored (or revalidated) by the flight.
    Shared {
        /// The response.
        cached: Arc<Cached>,
        /// True when the origin answered 304 to a conditional request.
        revalidated: bool,
    },
    /// The origin's response may not be shared (not storable, too large):
    /// each waiter goes to the origin itself.
    NotShared,
    /// The origin failed: connection error or timeout (`502`/`504`), or
    /// answered with a server error (`response`, not stored). Waiters with a
    /// stale copy they may use (stale-if-error) serve it instead.
    Failed {
        /// `502 Bad Gateway` or `504 Gateway Timeout` when there is no
        /// origin response.
        status: StatusCode,
        /// The origin's error response, when it sent one.
        response: Option<Arc<Cached>>,
    },
}

type Slot = watch::Sender<Option<Arc<FlightOutcome>>>;

/// The flights in progress, by primary key.
#[derive(Default)]
pub struct Flights {
    map: Mutex<HashMap<Bytes, Slot, ahash::RandomState>>,
}

/// Held by the task running a flight; publishes its outcome.
pub struct FlightGuard {
    flights: Arc<Flights>,
    key: Bytes,
    tx: Slot,
}

impl FlightGuard {
    /// Publishes the outcome to every waiter (present and joining until
    /// now) and ends the flight.
    pub fn finish(self, outcome: FlightOutcome) {
        let mut map = self.flights.map.lock();
        map.remove(&self.key);
        self.tx.send_replace(Some(Arc::new(outcome)));
    }
}

impl Drop for FlightGuard {
    fn drop(&mut self) {
        // Unfinished (panicked task): end the flight; waiters see the
        // channel close and retry.
        let mut map = self.flights.map.lock();
        if map
            .get(&self.key)
            .is_some_and(|tx| tx.same_channel(&self.tx))
        {
            map.remove(&self.key);
        }
    }
}

/// A request's part in a flight.
pub enum Role {
    /// Start the fetch; publish through the guard.
    Leader(FlightGuard),
    /// Wait for the leader's outcome.
    Waiter(watch::Receiver<Option<Arc<FlightOutcome>>>),
}

impl Flights {
    /// Joins the flight for `key`, or starts one.
    pub fn join(self: &Arc<Self>, key: &Bytes) -> Role {
        let mut map = self.map.lock();
        if let Some(tx) = map.get(key) {
            return Role::Waiter(tx.subscribe());
        }
        let (tx, _) = watch::channel(None);
        map.insert(key.clone(), tx.clone());
        Role::Leader(FlightGuard {
            flights: self.clone(),
            key: key.clone(),
            tx,
        })
    }

    /// Starts a flight for `key` only if none is in progress (background
    /// refresh).
    pub fn try_lead(self: &Arc<Self>, key: &Bytes) -> Option<FlightGuard> {
        match self.join(key) {
            Role::Leader(g) => Some(g),
            Role::Waiter(_) => None,
        }
    }

    /// Flights in progress (for tests).
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// True when no flight is in progress.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Waits for a flight's outcome; `None` when the flight ended without one.
pub async fn wait(
    mut rx: watch::Receiver<Option<Arc<FlightOutcome>>>,
) -> Option<Arc<FlightOutcome>> {
    let published = match rx.wait_for(|v| v.is_some()).await {
        Ok(v) => v.clone(),
        Err(_) => None,
    };
    published.or_else(|| rx.borrow().clone())
}
