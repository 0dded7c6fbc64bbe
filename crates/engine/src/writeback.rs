//! Write-back for one namespace: the queue of dirty keys, its journal, and
//! the flusher that moves them to the stores in batches.
//!
//! A write's value lives in the memory tier, dirty (pinned) until a flush
//! has stored it; the queue holds only its key, once, from the write that
//! made it dirty. Keeping the write in a map of its own as well cost a
//! probe and an insert per SET: the largest cost a durable write had over
//! a pure cache's (`perf`, unpipelined SETs). The queue keeps whole
//! operations only for what the memory tier does not hold: deletes
//! (tombstones) and writes it did not admit (a shard full of dirty
//! entries).
//!
//! Invariants:
//!
//! - Every journaled operation is either in the stores, or in this queue
//!   (its key listed in `keys` or the batch in flight, its value dirty in
//!   the memory tier; or in `ops`), or superseded by a newer operation on
//!   the same key that is. Journal segments are deleted only after a flush
//!   that covered every operation they hold has succeeded.
//! - A key dirty in the memory tier is listed (in `keys` or in flight).
//!   Writers list a key when it becomes dirty; the flusher lists it again
//!   when a write came after the one it stored.
//! - An operation in `ops` is older than the dirty entry of its key in the
//!   memory tier, if there is one (a write the tier admits drops the key
//!   from `ops`; one it rejects removes the dirty entry).
//!
//! Repeated writes to one key coalesce: the memory tier and `ops` keep only
//! the newest. A failed flush keeps its batch and the journal; the next
//! attempt merges newer writes over it and retries, with backoff.

use crate::entry::{now_ms, Entry};
use crate::error::{EngineError, Result};
use crate::journal::{FsyncPolicy, Record, WriteBackJournal};
use crate::memory::{Cleaned, MemoryTier};
use crate::patch::Patcher;
use crate::store::{Mutation, Store, StoreError};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::coop::consume_budget;

/// Operations the memory tier does not hold, the newest per key: `Some`
/// = set, `None` = delete (tombstone). No sequence numbers: a dirty entry
/// of the same key in the memory tier is newer (see the invariants).
type OpMap = HashMap<Bytes, Option<Entry>, ahash::RandomState>;

/// What one flush moves to the stores.
#[derive(Default, Clone)]
struct Batch {
    /// Keys whose values are dirty in the memory tier (a key may be listed
    /// twice: the flush stores it once).
    keys: Vec<Bytes>,
    ops: OpMap,
    /// When its oldest write was queued (Unix ms; 0 when empty).
    since: u64,
}

impl Batch {
    fn is_empty(&self) -> bool {
        self.keys.is_empty() && self.ops.is_empty()
    }

    fn len(&self) -> usize {
        self.keys.len() + self.ops.len()
    }
}

#[derive(Default)]
struct Queue {
    pending: Batch,
    /// The batch being flushed (or that failed to). Shared with the
    /// flusher, which reads it without holding the queue lock; replaced,
    /// never mutated in place.
    inflight: Arc<Batch>,
    /// An empty list with the capacity of an earlier batch's: the next
    /// `pending.keys`. Under a steady write load every flush moves about as
    /// many keys as the last.
    spare_keys: Vec<Bytes>,
}

/// Bytes a listed key is charged for backpressure, on top of its entry: a
/// key deleted and written again while the stores are down is listed
/// again each time, and the list must not grow without bound either.
const LISTED: u64 = std::mem::size_of::<Bytes>() as u64;

/// Bytes a queued operation is charged for backpressure: what the memory
/// tier charges for the entry (a tombstone as an empty one).
fn weight(key: &[u8], op: &Option<Entry>) -> u64 {
    match op {
        Some(e) => MemoryTier::charge(key, e),
        None => key.len() as u64 + crate::memory::ENTRY_OVERHEAD,
    }
}

pub(crate) struct WriteBack {
    pub(crate) journal: WriteBackJournal,
    queue: Mutex<Queue>,
    /// Bytes of this namespace's dirty entries in the memory tier and of
    /// the operations in `ops` (pending and in flight), for backpressure.
    /// Changed under the journal lock by writers, read without it.
    dirty_bytes: AtomicU64,
    stores: Vec<Arc<dyn Store>>,
    l1: Arc<MemoryTier>,
    flush_batch: usize,
    pub(crate) flush_interval: Duration,
    /// Dirty bytes above which writers wait for the flusher.
    high_water: u64,
    /// Whether a write equal to the clean entry it replaces skips the
    /// flush: only when every store is exclusive to this server, so that
    /// a clean entry is what the stores still hold.
    skip_unchanged: bool,
    /// Wakes the flusher early (batch full, shutdown, explicit flush).
    pub(crate) wake: tokio::sync::Notify,
    /// Signalled after every flush attempt, for writers under backpressure.
    progress: tokio::sync::Notify,
    /// One flush at a time (the flusher, `DBSIZE`, `FLUSHALL`, shutdown).
    flush_lock: tokio::sync::Mutex<()>,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_errors: AtomicU64,
    /// Applies journaled patches at replay; without one, patched writes
    /// journal whole values (see `crate::patch`).
    patcher: Option<Arc<dyn Patcher>>,
}

impl WriteBack {
    /// Opens the journal in `dir`, replays it into the queue and L1 (pinned).
    /// Clears the stores first if the journal holds a `FLUSHALL`.
    pub(crate) async fn open(
        dir: &Path,
        policy: FsyncPolicy,
        stores: Vec<Arc<dyn Store>>,
        l1: Arc<MemoryTier>,
        flush_batch: usize,
        flush_interval: Duration,
        patcher: Option<Arc<dyn Patcher>>,
    ) -> Result<WriteBack> {
        let (journal, replay) = WriteBackJournal::open(dir, policy)?;
        if replay.clear_stores {
            for s in &stores {
                s.clear().await?;
            }
        }
        let skip_unchanged = stores.iter().all(|s| s.exclusive());
        let wb = WriteBack {
            journal,
            queue: Mutex::new(Queue::default()),
            dirty_bytes: AtomicU64::new(0),
            stores,
            high_water: (l1.max_bytes() / 2).max(1 << 20),
            skip_unchanged,
            l1,
            flush_batch: flush_batch.max(1),
            flush_interval,
            wake: Default::default(),
            progress: Default::default(),
            flush_lock: Default::default(),
            flushes: AtomicU64::new(0),
            flush_errors: AtomicU64::new(0),
            patcher,
        };
        let replayed = replay.records.len();
        {
            let mut q = wb.queue.lock();
            for record in replay.records {
                match record {
                    Record::Set {
                        seq,
                        key,
                        mut entry,
                    } => {
                        // Uniques are not journaled: a replayed write gets a fresh one.
                        entry.cas = crate::entry::next_cas();
                        wb.queue_locked(&mut q, key, Some(entry), seq, &|_| {});
                    }
                    Record::Delete { seq, key } => wb.queue_locked(&mut q, key, None, seq, &|_| {}),
                    Record::Patch { seq, key, patch } => {
                        let mut entry = wb.replay_patch(&q, &key, &patch).map_err(|why| {
                            EngineError::Journal {
                                path: dir.display().to_string(),
                                source: std::io::Error::new(
                                    std::io::ErrorKind::InvalidData,
                                    format!(
                                        "write-back journal record {seq}: {why}; refusing to start"
                                    ),
                                ),
                            }
                        })?;
                        entry.cas = crate::entry::next_cas();
                        wb.queue_locked(&mut q, key, Some(entry), seq, &|_| {});
                    }
                    Record::Clear { .. } => unreachable!("replay strips Clear records"),
                }
            }
        }
        if replayed > 0 {
            tracing::info!(dir = %dir.display(), records = replayed, keys = wb.pending_len(), "replayed write-back journal");
        }
        Ok(wb)
    }

    /// The value a replayed patch makes of the value replayed before it
    /// (dirty in the memory tier, or an operation the tier did not admit).
    fn replay_patch(
        &self,
        q: &Queue,
        key: &Bytes,
        patch: &Entry,
    ) -> std::result::Result<Entry, String> {
        let Some(patcher) = &self.patcher else {
            return Err("a patch, and no patcher is registered to apply it".into());
        };
        let base = match self.l1.dirty_entry(key) {
            Some((e, _)) => Some(e),
            None => q.pending.ops.get(key).cloned().flatten(),
        };
        let base = base.ok_or("a patch of a key with no value before it")?;
        let value = patcher.apply(patch.kind, &base.value, &patch.value)?;
        Ok(Entry::with_kind(
            value,
            patch.expires_at,
            patch.flags,
            patch.kind,
        ))
    }

    fn add_dirty(&self, added: u64, removed: u64) {
        // One atomic update for the net change (a rewrite of the same size,
        // the common case, needs none).
        if added > removed {
            self.dirty_bytes
                .fetch_add(added - removed, Ordering::Relaxed);
        } else if removed > added {
            self.dirty_bytes
                .fetch_sub(removed - added, Ordering::Relaxed);
        }
    }

    /// Queues `op` for `key`: into the memory tier, dirty, listing the key
    /// if it was not dirty yet; or, for a delete or a write the tier does
    /// not admit, into `ops`. Runs under the journal lock (see
    /// [`WriteBack::write_many`]); `written(key)` runs once the key's new
    /// state is visible.
    fn queue_locked(
        &self,
        q: &mut Queue,
        key: Bytes,
        op: Option<Entry>,
        seq: u64,
        written: &impl Fn(&Bytes),
    ) {
        if q.pending.is_empty() {
            // One clock read per batch, not per key.
            q.pending.since = now_ms();
        }
        let mut added = weight(&key, &op);
        let mut removed = 0;
        match op {
            Some(entry) => {
                let put = self
                    .l1
                    .put_dirty(key.clone(), entry, seq, self.skip_unchanged);
                if let Some(old) = &put.displaced {
                    removed += MemoryTier::charge(&key, old);
                }
                if let Some(entry) = put.rejected {
                    removed += self.insert_op(q, key, Some(entry), written);
                } else if !put.dirty {
                    // The clean entry it replaced is what the stores hold:
                    // nothing to flush.
                    written(&key);
                    added = 0;
                } else {
                    written(&key);
                    if !q.pending.ops.is_empty() {
                        if let Some(old) = q.pending.ops.remove(&key) {
                            removed += weight(&key, &old);
                        }
                    }
                    if put.displaced.is_none() {
                        q.pending.keys.push(key);
                        added += LISTED;
                    }
                }
            }
            None => {
                if let Some(old) = self.l1.remove_dirty(&key) {
                    removed += MemoryTier::charge(&key, &old);
                }
                removed += self.insert_op(q, key, None, written);
            }
        }
        self.add_dirty(added, removed);
    }

    /// Puts an operation into `ops`; returns the weight of the one it replaced.
    fn insert_op(
        &self,
        q: &mut Queue,
        key: Bytes,
        op: Option<Entry>,
        written: &impl Fn(&Bytes),
    ) -> u64 {
        let replaced = q.pending.ops.insert(key.clone(), op);
        written(&key);
        replaced.map_or(0, |old| weight(&key, &old))
    }

    /// Journals sets (`Some`) and deletes (`None`) and queues them; the
    /// memory tier is updated pinned. Returns the last journal sequence
    /// number (0 for an empty batch), which the caller must commit before
    /// acknowledging. The caller holds the keys' write locks, so per-key
    /// order is journal order; operations on one key keep their order (the
    /// last one wins). One journal lock and one queue lock serve the batch:
    /// the memory tier and the queue change under the journal lock, so a
    /// flush (which seals the journal under it) sees every write of the
    /// segment it seals. `written(key)` runs once each key's new state is
    /// visible, for the caller to invalidate in-flight loads.
    pub(crate) fn write_many(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        written: impl Fn(&Bytes),
    ) -> u64 {
        let n = ops.len() as u64;
        let Some((first, pending)) = self.journal.append_ops_with(ops, |first, ops| {
            let mut q = self.queue.lock();
            for (i, (key, op)) in ops.into_iter().enumerate() {
                self.queue_locked(&mut q, key, op, first + i as u64, &written);
            }
            (first, q.pending.len())
        }) else {
            return 0;
        };
        if pending >= self.flush_batch {
            self.wake.notify_one();
        }
        first + n - 1
    }

    /// [`Self::write_many`] for one operation (an unpipelined `SET`): the
    /// same locks and order, with no batch to build; returns its sequence
    /// number.
    pub(crate) fn write_one(&self, key: Bytes, op: Option<Entry>, written: impl Fn(&Bytes)) -> u64 {
        let (seq, pending) = self.journal.append_one_with(key, op, |seq, key, op| {
            self.queue_one(seq, key, op, &written)
        });
        self.wake_if_full(pending);
        seq
    }

    /// Queues one journaled write (under the journal lock, which the
    /// caller holds); returns its sequence number and the pending count.
    #[inline]
    fn queue_one(
        &self,
        seq: u64,
        key: Bytes,
        op: Option<Entry>,
        written: &impl Fn(&Bytes),
    ) -> (u64, usize) {
        let mut q = self.queue.lock();
        self.queue_locked(&mut q, key, op, seq, written);
        (seq, q.pending.len())
    }

    /// Wakes the flusher when a batch's worth of keys is pending.
    #[inline]
    fn wake_if_full(&self, pending: usize) {
        if pending >= self.flush_batch {
            self.wake.notify_one();
        }
    }

    /// [`Self::write_one`] of `key = entry`, journaled as `patch` when the
    /// journal can (see `crate::patch`); as `entry` without a patcher.
    pub(crate) fn write_one_patched(
        &self,
        key: Bytes,
        entry: Entry,
        patch: Bytes,
        written: impl Fn(&Bytes),
    ) -> u64 {
        if self.patcher.is_none() {
            return self.write_one(key, Some(entry), written);
        }
        let (seq, pending) =
            self.journal
                .append_patch_one_with(key, entry, patch, |seq, key, op| {
                    self.queue_one(seq, key, op, &written)
                });
        self.wake_if_full(pending);
        seq
    }

    /// [`Self::write_many`] with a patch per operation (`None`: a whole
    /// value), journaled as patches when the journal can (see
    /// `crate::patch`); whole values without a patcher.
    pub(crate) fn write_many_patched(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        patches: Vec<Option<Bytes>>,
        written: impl Fn(&Bytes),
    ) -> u64 {
        if self.patcher.is_none() {
            return self.write_many(ops, written);
        }
        let n = ops.len() as u64;
        let Some((first, pending)) =
            self.journal
                .append_patched_ops_with(ops, patches, |first, ops| {
                    let mut q = self.queue.lock();
                    for (i, (key, op)) in ops.into_iter().enumerate() {
                        self.queue_locked(&mut q, key, op, first + i as u64, &written);
                    }
                    (first, q.pending.len())
                })
        else {
            return 0;
        };
        self.wake_if_full(pending);
        first + n - 1
    }

    /// Waits while dirty data exceeds the high-water mark, up to `max_wait`.
    pub(crate) async fn wait_for_room(&self, max_wait: Duration) -> Result<()> {
        if self.dirty_bytes.load(Ordering::Relaxed) <= self.high_water {
            return Ok(()); // the common case: no lock, no waiter, no clock
        }
        let deadline = tokio::time::Instant::now() + max_wait;
        loop {
            let progressed = self.progress.notified();
            let bytes = self.dirty_bytes.load(Ordering::Relaxed);
            if bytes <= self.high_water {
                return Ok(());
            }
            self.wake.notify_one();
            if tokio::time::timeout_at(deadline, progressed).await.is_err() {
                return Err(EngineError::WriteBackFull(format!(
                    "{bytes} bytes of write-back data are waiting for store '{}' (limit {}); is it down?",
                    self.stores.last().map_or("?", |s| s.name()),
                    self.high_water
                )));
            }
        }
    }

    /// The dirty state of `key`, for a read the memory tier did not answer:
    /// `Some(Some(entry))` set (a dirty entry there is expired, or the tier
    /// did not admit the write), `Some(None)` deleted, `None` not dirty
    /// (the stores are up to date).
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Option<Entry>> {
        // A dirty entry in the memory tier is newer than anything in `ops`.
        if let Some((entry, _)) = self.l1.dirty_entry(key) {
            return Some(Some(entry));
        }
        let q = self.queue.lock();
        if q.pending.ops.is_empty() && q.inflight.ops.is_empty() {
            return None;
        }
        q.pending
            .ops
            .get(key)
            .or_else(|| q.inflight.ops.get(key))
            .cloned()
    }

    /// The newest dirty operation of every queued key in a key listing's
    /// range (see [`crate::store::in_scan_range`]), each key once.
    pub(crate) fn dirty_in_range(
        &self,
        start: std::ops::Bound<&[u8]>,
        prefix: &[u8],
    ) -> Vec<(Bytes, Option<Entry>)> {
        use crate::store::in_scan_range;
        let q = self.queue.lock();
        let mut seen: HashSet<&Bytes> = HashSet::new();
        let mut out: Vec<(Bytes, Option<Entry>)> = Vec::new();
        for key in q.pending.keys.iter().chain(q.inflight.keys.iter()) {
            if in_scan_range(key, start, prefix) && !seen.contains(key) {
                if let Some((entry, _)) = self.l1.dirty_entry(key) {
                    seen.insert(key);
                    out.push((key.clone(), Some(entry)));
                }
            }
        }
        // Pending over in flight; a dirty entry (above) over both.
        for (key, op) in q.pending.ops.iter().chain(q.inflight.ops.iter()) {
            if in_scan_range(key, start, prefix) && seen.insert(key) {
                out.push((key.clone(), op.clone()));
            }
        }
        out
    }

    /// Queued keys and operations (pending and in flight; a key written
    /// again after a flush took it may count twice).
    pub(crate) fn pending_len(&self) -> usize {
        let q = self.queue.lock();
        q.pending.len() + q.inflight.len()
    }

    /// Age in ms of the oldest queued write.
    pub(crate) fn oldest_age_ms(&self) -> u64 {
        let q = self.queue.lock();
        let oldest = [&q.pending, &*q.inflight]
            .into_iter()
            .filter(|b| !b.is_empty())
            .map(|b| b.since)
            .min();
        oldest.map_or(0, |t| now_ms().saturating_sub(t))
    }

    /// Keeps the flusher (and `FLUSHALL`) from changing the stores until
    /// the guard is dropped: a key count reads the stores and this queue
    /// as of one moment. Writes still queue meanwhile.
    pub(crate) async fn hold_flushes(&self) -> tokio::sync::MutexGuard<'_, ()> {
        self.flush_lock.lock().await
    }

    /// Writes every dirty key to the stores, in batches of at most
    /// `flush_batch`, then deletes the journal segments that are covered.
    /// On error, what was not written stays queued and journaled.
    pub(crate) async fn flush(&self) -> Result<usize> {
        let _one_at_a_time = self.flush_lock.lock().await;
        // Under pressure (writers near the point where they wait for the
        // flusher), finishing the flush comes first: its passes do not
        // yield to the connections (see `flush_locked`), as they would
        // otherwise every 128 keys, each time behind every ready
        // connection.
        if self.dirty_bytes.load(Ordering::Relaxed) > self.high_water / 4 {
            tokio::task::coop::unconstrained(self.flush_locked()).await
        } else {
            self.flush_locked().await
        }
    }

    async fn flush_locked(&self) -> Result<usize> {
        // Seal the journal and take the pending batch atomically: no append
        // can land in the sealed segment without being in this batch. O(1)
        // unless a failed batch is still in flight.
        let (sealed, batch, sync) = self.journal.rotate_unsynced(|| {
            let mut q = self.queue.lock();
            let fresh = Batch {
                keys: std::mem::take(&mut q.spare_keys),
                ..Batch::default()
            };
            let mut pending = std::mem::replace(&mut q.pending, fresh);
            if !q.inflight.is_empty() {
                // A failed batch: newer writes supersede its operations.
                let failed = std::mem::take(&mut q.inflight);
                let mut merged = Arc::try_unwrap(failed).unwrap_or_else(|a| (*a).clone());
                merged.keys.append(&mut pending.keys);
                if !pending.is_empty() {
                    merged.since = merged.since.min(pending.since);
                }
                // An operation replaced here was counted as dirty too.
                let mut replaced = 0;
                for (key, op) in pending.ops {
                    replaced += merged.ops.get(&key).map_or(0, |old| weight(&key, old));
                    merged.ops.insert(key, op);
                }
                self.add_dirty(0, replaced);
                pending = merged;
            }
            q.inflight = Arc::new(pending);
            q.inflight.clone()
        })?;
        // On the blocking pool: an fdatasync (or the unmapping of a large
        // segment) on a request thread held every connection for as long
        // as it took.
        let synced = tokio::task::spawn_blocking(move || sync.run())
            .await
            .map_err(|e| EngineError::Config(format!("journal sync task failed: {e}")))??;
        if let Some(seq) = synced {
            self.journal.mark_synced(seq);
        }
        // The bookkeeping below runs on the server's request threads (on
        // one core, the only one) and costs a few hundred instructions per
        // key: `consume_budget` lets the connections run every 128 keys, so
        // a flush of 10,000 keys is not one stall of milliseconds.
        //
        // One chunk of `flush_batch` keys at a time, read, stored and
        // unpinned before the next is read: the first chunk reaches the
        // stores (and frees room for writers held by backpressure) after
        // reading `flush_batch` keys, not the whole batch, which under a
        // sustained load of distinct keys held a million (see
        // BENCHMARKS.md, session 27).
        //
        // Operations first, the memory tier's dirty values after: a store
        // keeps the last mutation of a key, and a dirty value is newer than
        // any operation of its key.
        let mut ops = batch.ops.iter();
        let mut keys = batch.keys.iter();
        let mut mutations: Vec<Mutation> = Vec::with_capacity(self.flush_batch.min(batch.len()));
        let mut seqs: Vec<u64> = Vec::new();
        let mut freed = 0;
        let mut flushed = 0;
        let mut written_again: Vec<Bytes> = Vec::new();
        let mut outcome = Ok(());
        loop {
            mutations.clear();
            seqs.clear();
            while mutations.len() < self.flush_batch {
                let Some((key, op)) = ops.next() else { break };
                if !self.l1.is_pinned(key) {
                    mutations.push(match op {
                        Some(e) => Mutation::Set(key.clone(), e.clone()),
                        None => Mutation::Delete(key.clone()),
                    });
                }
                consume_budget().await;
            }
            let held_from = mutations.len();
            while mutations.len() < self.flush_batch {
                let Some(key) = keys.next() else { break };
                if let Some((entry, seq)) = self.l1.dirty_entry(key) {
                    mutations.push(Mutation::Set(key.clone(), entry));
                    seqs.push(seq);
                }
                consume_budget().await;
            }
            if mutations.is_empty() {
                break; // both lists read to their end
            }
            // The system of record first: once it has the data, nothing is lost.
            if let Some(e) = self.apply_to_stores(&mutations).await {
                outcome = Err(e);
                break;
            }
            // Unpin each stored write, unless a newer one replaced it: that
            // one's writer found the key dirty and did not list it.
            let mut unpinned = 0;
            for (m, &seq) in mutations[held_from..].iter().zip(&seqs) {
                match self.l1.mark_clean(m.key(), seq) {
                    Cleaned::Unpinned(charge) => unpinned += charge,
                    Cleaned::StillDirty => written_again.push(m.key().clone()),
                    Cleaned::NotDirty => {}
                }
                consume_budget().await;
            }
            // Room for waiting writers after every chunk, not after the
            // whole batch.
            if unpinned > 0 {
                self.dirty_bytes.fetch_sub(unpinned, Ordering::Relaxed);
                self.progress.notify_waiters();
            }
            flushed += mutations.len();
        }
        drop(mutations);
        {
            let mut q = self.queue.lock();
            if !written_again.is_empty() {
                if q.pending.is_empty() {
                    q.pending.since = now_ms();
                }
                self.add_dirty(LISTED * written_again.len() as u64, 0);
                q.pending.keys.append(&mut written_again);
            }
            if outcome.is_ok() {
                freed += batch.ops.iter().map(|(k, op)| weight(k, op)).sum::<u64>();
                freed += LISTED * batch.keys.len() as u64;
                q.inflight = Arc::default();
            }
        }
        self.dirty_bytes.fetch_sub(freed, Ordering::Relaxed);
        if let Err(e) = outcome {
            self.flush_errors.fetch_add(1, Ordering::Relaxed);
            self.progress.notify_waiters();
            return Err(e.into());
        }
        self.recycle(batch).await;
        let removal = self.journal.sealed_removal(sealed);
        tokio::task::spawn_blocking(move || removal.run())
            .await
            .map_err(|e| EngineError::Config(format!("journal removal task failed: {e}")))??;
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.progress.notify_waiters();
        Ok(flushed)
    }

    /// Applies one chunk to every store, the system of record first (once
    /// it has the data, nothing is lost); the first error, if any.
    async fn apply_to_stores(&self, chunk: &[Mutation]) -> Option<StoreError> {
        for store in self.stores.iter().rev() {
            if let Err(e) = store.apply(chunk).await {
                return Some(e);
            }
        }
        None
    }

    /// Keeps a flushed batch's key list, emptied outside the queue lock, as
    /// the next `pending.keys` (unless a reader still holds the batch).
    async fn recycle(&self, batch: Arc<Batch>) {
        if let Ok(mut batch) = Arc::try_unwrap(batch) {
            for key in batch.keys.drain(..) {
                drop(key);
                consume_budget().await;
            }
            let mut q = self.queue.lock();
            if batch.keys.capacity() > q.spare_keys.capacity() {
                q.spare_keys = batch.keys;
            }
        }
    }

    /// `FLUSHALL` for this namespace: journals a clear, drops the queue and
    /// this namespace's dirty entries from the memory tier (at once, under
    /// the journal lock: a write that comes after the clear stays), clears
    /// the stores. A crash in between replays the clear at start.
    pub(crate) async fn clear(&self) -> Result<()> {
        let _one_at_a_time = self.flush_lock.lock().await;
        let seq = self.journal.append_clear_with(|seq| {
            let mut q = self.queue.lock();
            let pending = std::mem::take(&mut q.pending);
            let inflight = std::mem::take(&mut q.inflight);
            for key in pending.keys.iter().chain(inflight.keys.iter()) {
                self.l1.remove_dirty(key);
            }
            self.dirty_bytes.store(0, Ordering::Relaxed);
            seq
        });
        self.journal.commit(seq)?;
        for s in self.stores.iter().rev() {
            s.clear().await?;
        }
        Ok(())
    }

    /// The flusher: flushes every `flush_interval`, or early when woken,
    /// retrying failures with exponential backoff (100 ms doubling to 30 s).
    pub(crate) async fn run_flusher(self: Arc<Self>, mut stop: tokio::sync::watch::Receiver<bool>) {
        let mut backoff = Duration::ZERO;
        loop {
            let wait = if backoff.is_zero() {
                self.flush_interval
            } else {
                backoff
            };
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = self.wake.notified(), if backoff.is_zero() => {}
                _ = stop.changed() => return,
            }
            if *stop.borrow() {
                return;
            }
            if self.pending_len() == 0 {
                continue;
            }
            match self.flush().await {
                Ok(_) => backoff = Duration::ZERO,
                Err(e) => {
                    backoff =
                        (backoff * 2).clamp(Duration::from_millis(100), Duration::from_secs(30));
                    tracing::warn!(error = %e, retry_in = ?backoff, dirty = self.pending_len(), "write-back flush failed; data stays journaled");
                }
            }
        }
    }

    /// Flushes until the queue is empty or `deadline` passes (shutdown).
    pub(crate) async fn drain(&self, deadline: tokio::time::Instant) -> Result<()> {
        let mut backoff = Duration::from_millis(50);
        loop {
            match self.flush().await {
                Ok(_) if self.pending_len() == 0 => return self.journal.sync(),
                Ok(_) => {}
                Err(e) => {
                    if tokio::time::Instant::now() + backoff > deadline {
                        self.journal.sync()?;
                        return Err(EngineError::WriteBackFull(format!(
                            "{} keys could not be flushed before shutdown ({e}); they stay in the journal and are replayed at next start",
                            self.pending_len()
                        )));
                    }
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write-back over `stores` journaling in `dir` (fsync off), flushed
    /// only when a test calls `flush`.
    async fn open(dir: &Path, stores: Vec<Arc<dyn Store>>) -> WriteBack {
        let l1 = Arc::new(MemoryTier::new(1 << 24));
        WriteBack::open(
            dir,
            FsyncPolicy::No,
            stores,
            l1,
            1000,
            Duration::from_secs(3600),
            None,
        )
        .await
        .unwrap()
    }

    fn set(key: &'static [u8], value: &str) -> (Bytes, Option<Entry>) {
        (Bytes::from_static(key), Some(Entry::new(value.to_string())))
    }

    /// The backpressure figure follows the newest operation of each key
    /// through rewrites that grow, keep and shrink its size, and deletes,
    /// counts each listed key once, and returns to zero once everything is
    /// flushed.
    #[tokio::test]
    async fn dirty_bytes_count_the_newest_operation_of_each_key() {
        let dir = tempfile::tempdir().unwrap();
        let wb = open(dir.path(), Vec::new()).await;
        let bytes = || wb.dirty_bytes.load(Ordering::Relaxed);
        // Both keys stay listed (a delete leaves its key in the list).
        let expect = |ops: &[(Bytes, Option<Entry>)]| {
            ops.iter().map(|(k, op)| weight(k, op)).sum::<u64>() + 2 * LISTED
        };

        wb.write_many(vec![set(b"a", "0123456789"), set(b"b", "x")], |_| {});
        assert_eq!(bytes(), expect(&[set(b"a", "0123456789"), set(b"b", "x")]));
        for value in [
            "a much longer value than before",
            "same size value here, 31 bytes",
            "s",
        ] {
            wb.write_many(vec![set(b"a", value)], |_| {});
            assert_eq!(
                bytes(),
                expect(&[set(b"a", value), set(b"b", "x")]),
                "after a = {value:?}"
            );
        }
        wb.write_many(vec![(Bytes::from_static(b"b"), None)], |_| {});
        assert_eq!(
            bytes(),
            expect(&[set(b"a", "s"), (Bytes::from_static(b"b"), None)])
        );

        assert_eq!(wb.flush().await.unwrap(), 2);
        assert_eq!(bytes(), 0);
        assert_eq!(wb.pending_len(), 0);
    }

    /// A failed flush keeps its batch; the next merges newer writes over
    /// it. An operation replaced in that merge was counted too: once the
    /// store is back and everything is flushed, nothing is left counted.
    #[tokio::test]
    async fn dirty_bytes_return_to_zero_after_a_failed_flush() {
        use crate::testing::{FlakyStore, MemoryStore};
        let dir = tempfile::tempdir().unwrap();
        let flaky = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("sor"))));
        let wb = open(dir.path(), vec![flaky.clone() as Arc<dyn Store>]).await;
        let delete = || (Bytes::from_static(b"d"), None);
        wb.write_many(vec![delete(), set(b"a", "1")], |_| {});
        flaky.set_down(true);
        assert!(wb.flush().await.is_err());
        wb.write_many(vec![delete(), set(b"a", "2"), set(b"b", "3")], |_| {});
        flaky.set_down(false);
        wb.flush().await.unwrap();
        assert_eq!(wb.dirty_bytes.load(Ordering::Relaxed), 0);
        assert_eq!(wb.pending_len(), 0);
        let stored = flaky.inner().snapshot();
        assert_eq!(&stored[&b"a"[..]].value[..], b"2");
        assert!(!stored.contains_key(&b"d"[..]));
    }

    /// The single-key path is the batch path with one operation: the same
    /// sequence numbers, keys reported written, backpressure figure and
    /// queue; the same journal (replayed on reopen); once flushed, the
    /// same stored data.
    #[tokio::test]
    async fn write_one_matches_a_batch_of_one() {
        use crate::testing::MemoryStore;
        use std::cell::RefCell;
        let delete = |key: &'static [u8]| (Bytes::from_static(key), None);
        let ops = [
            set(b"a", "1"),
            set(b"b", "22"),
            set(b"a", "333"),
            delete(b"b"),
            delete(b"c"),
            set(b"c", "4"),
            set(b"d", "5"),
        ];
        let mut outcomes = Vec::new();
        for one in [true, false] {
            let dir = tempfile::tempdir().unwrap();
            let store = Arc::new(MemoryStore::new("sor"));
            let stores = || vec![store.clone() as Arc<dyn Store>];
            let wb = open(dir.path(), stores()).await;
            let written = RefCell::new(Vec::new());
            let record = |k: &Bytes| written.borrow_mut().push(k.clone());
            let seqs: Vec<u64> = ops
                .iter()
                .cloned()
                .map(|(k, op)| match one {
                    true => wb.write_one(k, op, record),
                    false => wb.write_many(vec![(k, op)], record),
                })
                .collect();
            let state = (
                seqs,
                written.take(),
                wb.dirty_bytes.load(Ordering::Relaxed),
                wb.pending_len(),
            );
            drop(wb);
            let wb = open(dir.path(), stores()).await; // replays the journal
            let replayed = wb.pending_len();
            wb.flush().await.unwrap();
            let mut stored: Vec<(Bytes, Bytes)> = store
                .snapshot()
                .into_iter()
                .map(|(k, e)| (k, e.value))
                .collect();
            stored.sort();
            outcomes.push((state, replayed, stored));
        }
        assert_eq!(outcomes[0], outcomes[1]);
        let (state, replayed, stored) = &outcomes[0];
        assert_eq!(state.0, (1..=7).collect::<Vec<u64>>());
        assert_eq!(*replayed, state.3, "replay rebuilds the queue");
        assert_eq!(
            stored,
            &[
                (Bytes::from_static(b"a"), Bytes::from_static(b"333")),
                (Bytes::from_static(b"c"), Bytes::from_static(b"4")),
                (Bytes::from_static(b"d"), Bytes::from_static(b"5")),
            ]
        );
    }
}
