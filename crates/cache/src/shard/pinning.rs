//! Pinned entries: what an owner of them (the engine's write-back queue)
//! asks of a shard. A pinned entry sits on its own list, which eviction
//! never scans and active expiry passes over, until it is unpinned.

use super::{Measure, Queue, Shard};
use std::borrow::Borrow;
use std::hash::Hash;

impl<K: Hash + Eq, V> Shard<K, V> {
    pub(crate) fn is_pinned<Q>(&self, hash: u32, key: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        self.peek_pinned(hash, key).is_some()
    }

    /// Removes the key, returning its value and whether it was pinned.
    pub(crate) fn remove_reporting_pin<Q, M>(
        &mut self,
        hash: u32,
        key: &Q,
        m: &M,
    ) -> Option<(V, bool)>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        M: Measure<K, V>,
    {
        let i = self.slab.find(hash, key)?;
        let pinned = self.slab.slot(i).queue() == Queue::Pinned;
        Some((self.remove_at(i, m).1, pinned))
    }

    /// The value of the key if it is pinned, without recording an access.
    pub(crate) fn peek_pinned<Q>(&self, hash: u32, key: &Q) -> Option<&V>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        let i = self.slab.find(hash, key)?;
        let slot = self.slab.slot(i);
        (slot.queue() == Queue::Pinned).then_some(&slot.value)
    }

    /// Unpins the key if `pred` approves of its value; true if unpinned.
    pub(crate) fn unpin_if<Q, M>(
        &mut self,
        hash: u32,
        key: &Q,
        pred: impl FnOnce(&V) -> bool,
        m: &M,
    ) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        M: Measure<K, V>,
    {
        let Some(i) = self.slab.find(hash, key) else {
            return false;
        };
        if self.slab.slot(i).queue() != Queue::Pinned || !pred(&self.slab.slot(i).value) {
            return false;
        }
        let w = self.w(i, m);
        // Back into the policy as a recent entry of main: it was written
        // recently, and the window is for newcomers.
        self.slab.move_to_tail(i, Queue::Probation, w);
        // Active expiry passes over pinned entries (see `expire_due`): one
        // that came due meanwhile goes now.
        if let Some(at) = m.expires_at(&self.slab.slot(i).value) {
            self.wheel.schedule(i, at);
        }
        true
    }

    /// Removes every entry that is not pinned.
    pub(crate) fn clear_unpinned<M: Measure<K, V>>(&mut self, m: &M) {
        // From the last slot down: a removal moves the last slot into the
        // gap, which is then one already looked at.
        for i in (0..self.slab.len() as u32).rev() {
            if (i as usize) < self.slab.len() && self.slab.slot(i).queue() != Queue::Pinned {
                self.remove_at(i, m);
            }
        }
    }
}
