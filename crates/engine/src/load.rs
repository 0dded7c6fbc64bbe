//! Request coalescing: concurrent misses on one key share one load.
//!
//! The first reader of a missing key becomes the *leader* of a [`Flight`]
//! and loads it; later readers *follow* and wait for the leader's result. A
//! write to the key marks its flight *invalidated*, so the leader does not
//! fill the memory tier with a value the write has superseded. If a leader is
//! cancelled (its task dropped), its guard ends the flight and followers
//! retry as leaders themselves.

use crate::entry::Entry;
use crate::store::StoreError;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

pub(crate) type LoadResult = Result<Option<Entry>, StoreError>;

pub(crate) struct Flight {
    result: OnceLock<Option<LoadResult>>,
    done: tokio::sync::Notify,
    invalidated: AtomicBool,
}

impl Flight {
    /// True if a write to the key happened after this flight began.
    pub(crate) fn is_invalidated(&self) -> bool {
        self.invalidated.load(Ordering::Acquire)
    }
}

/// Either lead the load of a key or follow the one under way.
pub(crate) enum Role {
    Leader(LeaderGuard),
    Follower(Arc<Flight>),
}

const SHARDS: usize = 64;

type FlightShard = Mutex<HashMap<Bytes, Arc<Flight>, ahash::RandomState>>;

pub(crate) struct Flights {
    shards: Box<[FlightShard]>,
    /// Flights under way; lets writes skip the map when there are none.
    active: AtomicUsize,
    hasher: ahash::RandomState,
}

impl Flights {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Flights {
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            active: AtomicUsize::new(0),
            hasher: Default::default(),
        })
    }

    fn shard(&self, key: &[u8]) -> &FlightShard {
        &self.shards[self.hasher.hash_one(key) as usize % SHARDS]
    }

    pub(crate) fn begin(self: &Arc<Self>, key: &Bytes) -> Role {
        let mut map = self.shard(key).lock();
        if let Some(f) = map.get(key) {
            return Role::Follower(f.clone());
        }
        let flight = Arc::new(Flight {
            result: OnceLock::new(),
            done: Default::default(),
            invalidated: AtomicBool::new(false),
        });
        map.insert(key.clone(), flight.clone());
        self.active.fetch_add(1, Ordering::SeqCst);
        Role::Leader(LeaderGuard {
            flights: self.clone(),
            key: key.clone(),
            flight,
            finished: false,
        })
    }

    /// Marks the key's flight (if any) as superseded by a write.
    ///
    /// Called after the write is visible (queued or in the stores): a flight
    /// that begins after the `active` check below reads the new state, so
    /// skipping the map when no flight is under way is safe.
    pub(crate) fn invalidate(&self, key: &[u8]) {
        if self.active.load(Ordering::SeqCst) == 0 {
            return;
        }
        if let Some(f) = self.shard(key).lock().get(key) {
            f.invalidated.store(true, Ordering::Release);
        }
    }
}

pub(crate) struct LeaderGuard {
    flights: Arc<Flights>,
    key: Bytes,
    flight: Arc<Flight>,
    finished: bool,
}

impl LeaderGuard {
    pub(crate) fn flight(&self) -> &Flight {
        &self.flight
    }

    /// Publishes the result to followers and ends the flight.
    pub(crate) fn finish(mut self, result: LoadResult) {
        self.end(Some(result));
        self.finished = true;
    }

    fn end(&self, result: Option<LoadResult>) {
        let _ = self.flight.result.set(result);
        let mut map = self.flights.shard(&self.key).lock();
        if map
            .get(&self.key)
            .is_some_and(|f| Arc::ptr_eq(f, &self.flight))
        {
            map.remove(&self.key);
            self.flights.active.fetch_sub(1, Ordering::SeqCst);
        }
        drop(map);
        self.flight.done.notify_waiters();
    }
}

impl Drop for LeaderGuard {
    fn drop(&mut self) {
        if !self.finished {
            // Cancelled: followers see `None` and retry.
            self.end(None);
        }
    }
}

/// Waits for a flight; `None` means its leader was cancelled (retry).
pub(crate) async fn follow(flight: &Flight) -> Option<LoadResult> {
    loop {
        let notified = flight.done.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(r) = flight.result.get() {
            return r.clone();
        }
        notified.await;
    }
}
