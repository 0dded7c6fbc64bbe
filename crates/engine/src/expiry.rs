//! Reporting the keys the engine expires by itself: what a front end needs
//! for Redis's `expired` keyspace events.
//!
//! The active expiry task (every 100 ms) asks the registered listeners
//! whether anyone wants expirations; only then does it collect the keys
//! the memory tier drops, and hands them over after the tier's locks are
//! released. A read that comes across an expired entry in the memory tier
//! drops it and reports it the same way, at once (lazy expiry, as Redis's
//! `expireIfNeeded`). Keys that expire while held only by a store are dropped by
//! the store's purge and not reported (a store cannot list what it
//! purged cheaply).

use bytes::Bytes;
use std::sync::{Mutex, Weak};

/// Told of the keys active or lazy expiry removed (see the module
/// documentation).
pub trait ExpiryListener: Send + Sync {
    /// Whether expirations should be collected now (checked every tick,
    /// before any key is collected).
    fn wants_expired(&self) -> bool;
    /// `keys` expired and were removed, in no particular order.
    fn expired(&self, keys: &[Bytes]);
}

/// The listeners of one engine, held weakly: a listener that is dropped
/// (its server stopped) is forgotten.
#[derive(Default)]
pub(crate) struct ExpiryListeners {
    listeners: Mutex<Vec<Weak<dyn ExpiryListener>>>,
}

impl ExpiryListeners {
    pub(crate) fn add(&self, listener: Weak<dyn ExpiryListener>) {
        let mut all = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        all.retain(|l| l.strong_count() > 0);
        all.push(listener);
    }

    /// The live listeners that want expirations now (usually none).
    pub(crate) fn wanting(&self) -> Vec<std::sync::Arc<dyn ExpiryListener>> {
        let all = self.listeners.lock().unwrap_or_else(|e| e.into_inner());
        all.iter()
            .filter_map(Weak::upgrade)
            .filter(|l| l.wants_expired())
            .collect()
    }
}
