//! The key space as a whole: an ordered, paged key listing (`SCAN`,
//! `KEYS`) and key counts (`DBSIZE`, `INFO keyspace`) over every place a
//! key can live.
//!
//! Where the keys are, per namespace:
//! - a namespace without stores (a pure cache): the memory tier only;
//! - any other namespace: its system of record, overridden by its
//!   write-back queue (newer sets, and tombstones that hide deleted keys
//!   until they are flushed). Upper stores and the memory tier are caches
//!   of those and are not listed.
//!
//! Listing is in byte order of the keys, so a cursor is simply the last key
//! returned: a key that exists for the whole listing is returned exactly
//! once, whatever is inserted or deleted meanwhile.

use super::{Core, Session};
use crate::entry::{now_ms, Entry};
use crate::error::Result;
use crate::store::{in_scan_range, KeyStats, Store};
use bytes::Bytes;
use std::collections::{BTreeSet, BinaryHeap, HashSet};
use std::ops::Bound;
use std::sync::Arc;

/// One page of a key listing ([`Session::scan_keys`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyPage {
    /// Live keys, in byte order.
    pub keys: Vec<Bytes>,
    /// Pass this as `after` to get the next page; `None` when the listing
    /// is complete. It may be set while `keys` is empty (every key the
    /// stores returned for this page was deleted meanwhile).
    pub next: Option<Bytes>,
}

/// Keys from one source, in order, and how far the source is complete.
struct Source {
    keys: Vec<Bytes>,
    /// When the source stopped at the limit: the last key it looked at
    /// (possibly filtered out of `keys` since). Nothing after it is known.
    horizon: Option<Bytes>,
}

impl Core {
    /// The distinct systems of record, each with a predicate telling whether
    /// a key routed to namespace `i` lives in it.
    fn systems_of_record(&self) -> Vec<Arc<dyn Store>> {
        let mut seen = HashSet::new();
        self.namespaces
            .iter()
            .filter_map(|ns| ns.cfg.stores.last())
            .filter(|s| seen.insert(Arc::as_ptr(s) as *const () as usize))
            .cloned()
            .collect()
    }

    /// True when `key` belongs to a namespace whose system of record is `sor`.
    fn owned_by(&self, key: &[u8], sor: &Arc<dyn Store>) -> bool {
        self.namespace_of(key)
            .1
            .cfg
            .stores
            .last()
            .is_some_and(|s| Arc::ptr_eq(s, sor))
    }

    fn is_pure_cache(&self, key: &[u8]) -> bool {
        self.namespace_of(key).1.cfg.stores.is_empty()
    }
}

impl Session<'_> {
    /// Lists live keys in byte order: up to `limit` keys after `after`
    /// (from the first key when `None`) that begin with `prefix`.
    ///
    /// Cost per page: one `scan_keys` per system of record, plus a pass over
    /// the write-back queues and, when a namespace has no store, over the
    /// memory tier.
    ///
    /// ```
    /// # use tiercache_engine::{Engine, NamespaceConfig, WriteMode, testing::MemoryStore};
    /// # use std::sync::Arc;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path())
    ///     .namespace(NamespaceConfig::new("default", WriteMode::Back).store(Arc::new(MemoryStore::new("m"))))
    ///     .build().await.unwrap();
    /// for k in ["b", "a", "c"] { engine.set(k, "v").await.unwrap(); }
    /// let mut s = engine.session();
    /// let page = s.scan_keys(None, b"", 2).await.unwrap();
    /// assert_eq!(page.keys, ["a", "b"]);
    /// let page = s.scan_keys(page.next.as_deref(), b"", 2).await.unwrap();
    /// assert_eq!((page.keys, page.next), (vec![bytes::Bytes::from("c")], None));
    /// # });
    /// ```
    pub async fn scan_keys(
        &mut self,
        after: Option<&[u8]>,
        prefix: &[u8],
        limit: usize,
    ) -> Result<KeyPage> {
        let core = self.core;
        let limit = limit.max(1);
        let now = now_ms();
        let start = match after {
            Some(a) if a >= prefix => Bound::Excluded(a),
            _ if prefix.is_empty() => Bound::Unbounded,
            _ => Bound::Included(prefix),
        };
        // The write-back queues first: a key flushed and dropped from a
        // queue after this point is in its store when the store is read.
        let mut live: BTreeSet<Bytes> = BTreeSet::new();
        let mut dead: HashSet<Bytes> = HashSet::new();
        for wb in core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            for (key, op) in wb.dirty_in_range(start, prefix) {
                match op.filter(|e| !e.is_expired_at(now)) {
                    Some(_) => live.insert(key),
                    None => dead.insert(key),
                };
            }
        }
        let mut sources = Vec::new();
        for sor in core.systems_of_record() {
            let mut keys = sor.scan_keys(start, prefix, limit, now).await?;
            let horizon = keys.last().filter(|_| keys.len() >= limit).cloned();
            keys.retain(|k| core.owned_by(k, &sor));
            sources.push(Source { keys, horizon });
        }
        if core.namespaces.iter().any(|ns| ns.cfg.stores.is_empty()) {
            sources.push(smallest_memory_keys(core, now, start, prefix, limit));
        }
        // Every source is complete up to its last key when it stopped at
        // `limit`: the page may not go past the smallest such key.
        let horizon: Option<Bytes> = sources.iter().filter_map(|s| s.horizon.clone()).min();
        for s in sources {
            live.extend(s.keys.into_iter().filter(|k| !dead.contains(k)));
        }
        let within = |k: &Bytes| match &horizon {
            Some(h) => k <= h,
            None => true,
        };
        let mut keys: Vec<Bytes> = Vec::with_capacity(limit.min(live.len()));
        let mut more = horizon.is_some();
        for k in live {
            if !within(&k) {
                more = true;
                break;
            }
            if keys.len() == limit {
                more = true;
                break;
            }
            keys.push(k);
        }
        let next = if !more {
            None
        } else if keys.len() == limit {
            keys.last().cloned()
        } else {
            horizon
        };
        Ok(KeyPage { keys, next })
    }

    /// Counts every live key, how many have an expiry and their average
    /// TTL (`DBSIZE`, `INFO keyspace`), without flushing the write-back
    /// queues.
    ///
    /// The count is the systems of record's own, corrected for each dirty
    /// key: its stored state (looked up in one batch, unless the key
    /// filters rule it out, as for every key written since the last flush)
    /// is taken away and its queued state put in. Flushes wait meanwhile,
    /// so the stores and the queues are read as of one moment. A store
    /// that is down makes this fail.
    ///
    /// Flushing first instead made a count wait for every dirty key to be
    /// written, by the store's writer at its low priority: over a minute
    /// for 64,000 keys replayed at start on a busy machine.
    ///
    /// ```
    /// # use tiercache_engine::{Engine, NamespaceConfig, WriteMode, testing::MemoryStore};
    /// # use std::sync::Arc;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let store = Arc::new(MemoryStore::new("sor"));
    /// let hour = std::time::Duration::from_secs(3600);
    /// let engine = Engine::builder(dir.path())
    ///     .namespace(
    ///         NamespaceConfig::new("default", WriteMode::Back)
    ///             .store(store.clone())
    ///             .flush(hour, 1_000_000),
    ///     )
    ///     .build().await.unwrap();
    /// engine.set("a", "1").await.unwrap();
    /// engine.set("b", "2").await.unwrap();
    /// assert_eq!(engine.session().key_stats().await.unwrap().keys, 2);
    /// assert!(store.is_empty(), "counted without flushing");
    /// # });
    /// ```
    pub async fn key_stats(&mut self) -> Result<KeyStats> {
        let core = self.core;
        // Nothing else holds two of these locks, so taking them in
        // namespace order cannot deadlock.
        let mut held = Vec::new();
        for wb in core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            held.push(wb.hold_flushes().await);
        }
        let now = now_ms();
        let mut tally = Tally::default();
        for sor in core.systems_of_record() {
            tally.add_stats(sor.key_stats(now).await?);
        }
        for ns in &core.namespaces {
            let (Some(wb), Some(sor)) = (&ns.wb, ns.cfg.stores.last()) else {
                continue;
            };
            let dirty = wb.dirty_in_range(Bound::Unbounded, b"");
            // A filter probe is a cache miss per key, and the queue can
            // hold hundreds of thousands: let the connections run.
            let mut ask: Vec<Bytes> = Vec::new();
            for (k, _) in &dirty {
                if !ns.filters_rule_out(k) {
                    ask.push(k.clone());
                }
                tokio::task::coop::consume_budget().await;
            }
            // In chunks: the stored values come back too.
            for chunk in ask.chunks(DIRTY_LOOKUP_CHUNK) {
                for stored in sor.get_many(chunk).await?.iter().flatten() {
                    tally.remove(stored, now);
                }
            }
            for e in dirty.iter().filter_map(|(_, op)| op.as_ref()) {
                tally.add(e, now);
            }
        }
        drop(held);
        if core.namespaces.iter().any(|ns| ns.cfg.stores.is_empty()) {
            core.l1.for_each_live(now, |k, e| {
                if core.is_pure_cache(k) {
                    tally.add(e, now);
                }
            });
        }
        // Expired keys stay counted until dropped, as Redis counts them.
        // Active expiry drops them within a tick (dirty ones once
        // flushed); while it is paused, only a read drops one.
        if !core
            .active_expiry
            .load(std::sync::atomic::Ordering::Relaxed)
        {
            let held = core.l1.count_expired(now);
            tally.keys += i128::from(held);
            tally.expires += i128::from(held);
        }
        Ok(tally.stats())
    }
}

/// Dirty keys looked up in their store per call by [`Session::key_stats`].
const DIRTY_LOOKUP_CHUNK: usize = 4096;

/// Key counts under construction: signed, as dirty keys take stored ones
/// away.
#[derive(Default)]
struct Tally {
    keys: i128,
    expires: i128,
    ttl_sum_ms: i128,
}

impl Tally {
    fn add_stats(&mut self, s: KeyStats) {
        self.keys += i128::from(s.keys);
        self.expires += i128::from(s.expires);
        self.ttl_sum_ms += i128::from(s.avg_ttl_ms) * i128::from(s.expires);
    }

    fn count(&mut self, e: &Entry, now: u64, sign: i128) {
        if e.is_expired_at(now) {
            return;
        }
        self.keys += sign;
        if let Some(ttl) = e.ttl_ms_at(now) {
            self.expires += sign;
            self.ttl_sum_ms += sign * i128::from(ttl);
        }
    }

    fn add(&mut self, e: &Entry, now: u64) {
        self.count(e, now, 1);
    }

    fn remove(&mut self, e: &Entry, now: u64) {
        self.count(e, now, -1);
    }

    /// The totals. A store shared with other writers can change between
    /// its count and the lookups: never below zero.
    fn stats(&self) -> KeyStats {
        let clamp = |n: i128| u64::try_from(n.max(0)).unwrap_or(u64::MAX);
        let expires = clamp(self.expires);
        KeyStats {
            keys: clamp(self.keys),
            expires,
            avg_ttl_ms: if expires == 0 {
                0
            } else {
                clamp(self.ttl_sum_ms / i128::from(expires))
            },
        }
    }
}

/// The `limit` smallest live keys of the pure-cache namespaces in range
/// (one pass over the memory tier, keeping a bounded max-heap).
fn smallest_memory_keys(
    core: &Core,
    now: u64,
    start: Bound<&[u8]>,
    prefix: &[u8],
    limit: usize,
) -> Source {
    let mut heap: BinaryHeap<Bytes> = BinaryHeap::with_capacity(limit.min(1 << 16) + 1);
    let mut truncated = false;
    core.l1.for_each_live(now, |k, _| {
        if !in_scan_range(k, start, prefix) || !core.is_pure_cache(k) {
            return;
        }
        if heap.len() < limit {
            heap.push(k.clone());
        } else if heap.peek().is_some_and(|top| k < top) {
            heap.pop();
            heap.push(k.clone());
            truncated = true;
        } else {
            truncated = true;
        }
    });
    let keys = heap.into_sorted_vec();
    Source {
        horizon: keys.last().filter(|_| truncated).cloned(),
        keys,
    }
}
