//! Expiry in a shard: the active sweep of the timer wheel's due records,
//! and the lazy removal of one expired entry that a read came across.
//! Pinned entries are passed over by both until they are unpinned.

use super::{Measure, Queue, Shard};
use crate::wheel::Record;
use std::borrow::Borrow;
use std::hash::Hash;

impl<K: Hash + Eq, V> Shard<K, V> {
    /// Lazy expiry: removes `key` if its expiry has passed at `now` and it
    /// is not pinned (a pinned entry stays until unpinned, as in
    /// [`Shard::expire_due`]); returns the removed key.
    pub(crate) fn remove_expired<Q, M>(&mut self, hash: u32, key: &Q, now: u64, m: &M) -> Option<K>
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
        M: Measure<K, V>,
    {
        let i = self.slab.find(hash, key)?;
        let slot = self.slab.slot(i);
        if slot.queue() == Queue::Pinned || !m.expires_at(&slot.value).is_some_and(|at| at <= now) {
            return None;
        }
        // Its wheel record goes stale and is dropped when it comes due.
        let (key, _) = self.remove_at(i, m);
        self.counters.expired += 1;
        Some(key)
    }

    /// Removes entries whose expiry has passed, at most `limit`.
    /// Removes up to `limit` entries due at `now`, handing each removed
    /// key to `expired` when given.
    pub(crate) fn expire_due<M: Measure<K, V>>(
        &mut self,
        now: u64,
        limit: usize,
        m: &M,
        mut expired: Option<&mut Vec<K>>,
    ) -> usize {
        let mut due: Vec<Record> = Vec::new();
        let mut removed = 0;
        while removed < limit {
            due.clear();
            self.wheel.advance(now, limit - removed, &mut due);
            if due.is_empty() {
                break;
            }
            // Highest slot first: removals move the last slot down, which
            // must not invalidate a record still to be checked.
            due.sort_unstable_by_key(|r| std::cmp::Reverse(r.0));
            for &(i, at) in &due {
                // A pinned entry stays until unpinned (reads do not see it
                // once expired): its owner may still need it, e.g. a
                // write-back queue that has yet to store the write.
                if (i as usize) < self.slab.len()
                    && m.expires_at(&self.slab.slot(i).value) == Some(at)
                    && at <= now
                    && self.slab.slot(i).queue() != Queue::Pinned
                {
                    let (key, _) = self.remove_at(i, m);
                    if let Some(keys) = expired.as_deref_mut() {
                        keys.push(key);
                    }
                    self.counters.expired += 1;
                    removed += 1;
                }
            }
        }
        if self.wheel.len() > 2 * self.timed + 1024 {
            self.rebuild_wheel(m);
        }
        removed
    }

    fn rebuild_wheel<M: Measure<K, V>>(&mut self, m: &M) {
        self.wheel.clear();
        let timed: Vec<(u32, u64)> = self
            .slab
            .iter()
            .enumerate()
            .filter_map(|(i, s)| m.expires_at(&s.value).map(|at| (i as u32, at)))
            .collect();
        for (i, at) in timed {
            self.wheel.schedule(i, at);
        }
    }
}
