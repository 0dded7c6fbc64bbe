//! Write-back for one namespace: the queue of dirty keys, its journal, and
//! the flusher that moves them to the stores in batches.
//!
//! Invariant: every journaled operation is either in the stores, or in this
//! queue (`pending` or `inflight`), or superseded by a newer operation on the
//! same key that is. Journal segments are deleted only after a flush that
//! covered every operation they hold has succeeded.
//!
//! - Repeated writes to one key coalesce: `pending` keeps only the newest.
//! - Deletes are tombstones (`op: None`) until flushed, so a read never
//!   resurrects an older value from a store.
//! - A failed flush keeps its batch (`inflight`) and the journal; the next
//!   attempt merges newer writes over it and retries, with backoff.

use crate::entry::{now_ms, Entry};
use crate::error::{EngineError, Result};
use crate::journal::{FsyncPolicy, Record, WriteBackJournal};
use crate::memory::MemoryTier;
use crate::store::{Mutation, Store};
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::task::coop::consume_budget;

/// A dirty key's newest operation.
#[derive(Clone)]
pub(crate) struct Dirty {
    /// `Some` = set, `None` = delete (tombstone).
    pub(crate) op: Option<Entry>,
    pub(crate) seq: u64,
    /// When the key first became dirty (Unix ms), for the queue-age metric.
    pub(crate) since: u64,
}

type DirtyMap = HashMap<Bytes, Dirty, ahash::RandomState>;

#[derive(Default)]
struct Queue {
    pending: DirtyMap,
    /// The batch being flushed. Shared with the flusher, which iterates it
    /// without holding the queue lock; replaced, never mutated in place.
    inflight: Arc<DirtyMap>,
    /// An empty map with the capacity of an earlier batch: the next
    /// `pending`. Under a steady write load every flush moves about as many
    /// keys as the last, and a map grown from empty again each time spent
    /// 5% of a SET-bound server's time rehashing (`perf`, 100,000 keys).
    spare: DirtyMap,
}

fn weight(key: &[u8], op: &Option<Entry>) -> u64 {
    key.len() as u64 + op.as_ref().map_or(0, |e| e.value.len() as u64) + 64
}

pub(crate) struct WriteBack {
    pub(crate) journal: WriteBackJournal,
    queue: Mutex<Queue>,
    /// key + value bytes held by `pending` and `inflight`, for backpressure
    /// (updated under the queue lock, read without it).
    dirty_bytes: AtomicU64,
    stores: Vec<Arc<dyn Store>>,
    l1: Arc<MemoryTier>,
    flush_batch: usize,
    pub(crate) flush_interval: Duration,
    /// Dirty bytes above which writers wait for the flusher.
    high_water: u64,
    /// Wakes the flusher early (batch full, shutdown, explicit flush).
    pub(crate) wake: tokio::sync::Notify,
    /// Signalled after every flush attempt, for writers under backpressure.
    progress: tokio::sync::Notify,
    /// One flush at a time (the flusher, `DBSIZE`, `FLUSHALL`, shutdown).
    flush_lock: tokio::sync::Mutex<()>,
    pub(crate) flushes: AtomicU64,
    pub(crate) flush_errors: AtomicU64,
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
    ) -> Result<WriteBack> {
        let (journal, replay) = WriteBackJournal::open(dir, policy)?;
        if replay.clear_stores {
            for s in &stores {
                s.clear().await?;
            }
        }
        let wb = WriteBack {
            journal,
            queue: Mutex::new(Queue::default()),
            dirty_bytes: AtomicU64::new(0),
            stores,
            high_water: (l1.max_bytes() / 2).max(1 << 20),
            l1,
            flush_batch: flush_batch.max(1),
            flush_interval,
            wake: Default::default(),
            progress: Default::default(),
            flush_lock: Default::default(),
            flushes: AtomicU64::new(0),
            flush_errors: AtomicU64::new(0),
        };
        let replayed = replay.records.len();
        for record in replay.records {
            match record {
                Record::Set {
                    seq,
                    key,
                    mut entry,
                } => {
                    // Uniques are not journaled: a replayed write gets a fresh one.
                    entry.cas = crate::entry::next_cas();
                    wb.enqueue(key, Some(entry), seq)
                }
                Record::Delete { seq, key } => wb.enqueue(key, None, seq),
                Record::Clear { .. } => unreachable!("replay strips Clear records"),
            }
        }
        if replayed > 0 {
            tracing::info!(dir = %dir.display(), records = replayed, keys = wb.pending_len(), "replayed write-back journal");
        }
        Ok(wb)
    }

    fn enqueue(&self, key: Bytes, op: Option<Entry>, seq: u64) {
        match &op {
            Some(e) => {
                self.l1.put(key.clone(), e.clone(), seq);
            }
            None => {
                self.l1.remove(&key);
            }
        }
        self.insert_pending(key, op, seq);
    }

    /// Queues `op` for `key`; returns the number of pending keys.
    fn insert_pending(&self, key: Bytes, op: Option<Entry>, seq: u64) -> usize {
        let mut q = self.queue.lock();
        self.insert_pending_locked(&mut q, &key, op, seq)
    }

    /// Queues `op` for `key`. The key is copied (made shared: an
    /// allocation) only when it was not dirty yet; a key written again
    /// keeps the queue's copy.
    fn insert_pending_locked(
        &self,
        q: &mut Queue,
        key: &Bytes,
        op: Option<Entry>,
        seq: u64,
    ) -> usize {
        let added = weight(key, &op);
        if let Some(old) = q.pending.get_mut(&key[..]) {
            // One atomic update for the net change (a rewrite of the same
            // size, the common case, needs none).
            let removed = weight(key, &old.op);
            if added > removed {
                self.dirty_bytes
                    .fetch_add(added - removed, Ordering::Relaxed);
            } else if removed > added {
                self.dirty_bytes
                    .fetch_sub(removed - added, Ordering::Relaxed);
            }
            old.op = op;
            old.seq = seq;
        } else {
            self.dirty_bytes.fetch_add(added, Ordering::Relaxed);
            // Read the clock only for a newly dirty key: a key written
            // again keeps its first-dirty time (and a SET costs no clock
            // read on the hot-key path).
            q.pending.insert(
                key.clone(),
                Dirty {
                    op,
                    seq,
                    since: now_ms(),
                },
            );
        }
        q.pending.len()
    }

    /// Journals sets (`Some`) and deletes (`None`) and queues them; the
    /// memory tier is updated pinned. Returns the last journal sequence
    /// number (0 for an empty batch), which the caller must commit before
    /// acknowledging. The caller holds the keys' write locks, so per-key
    /// order is journal order; operations on one key keep their order (the
    /// last one wins). One journal lock and one queue lock serve the batch.
    /// `written(key)` runs once each key's new state is visible (queued and
    /// in L1), for the caller to invalidate in-flight loads.
    pub(crate) fn write_many(
        &self,
        ops: Vec<(Bytes, Option<Entry>)>,
        written: impl Fn(&Bytes),
    ) -> u64 {
        let items = ops.iter().map(|(k, op)| (&k[..], op.as_ref()));
        let Some((first, pending)) = self.journal.append_many_with(items, |first| {
            let mut q = self.queue.lock();
            let mut pending = 0;
            for (i, (key, op)) in ops.iter().enumerate() {
                pending = self.insert_pending_locked(&mut q, key, op.clone(), first + i as u64);
            }
            (first, pending)
        }) else {
            return 0;
        };
        let last = first + ops.len() as u64 - 1;
        for (i, (key, op)) in ops.into_iter().enumerate() {
            // In-flight loads are invalidated before the memory tier has
            // the entry: the write is already visible in the queue, which
            // a load reads before the stores (see `Flights::invalidate`),
            // and the key can then move into the tier without a copy.
            written(&key);
            match op {
                Some(e) => {
                    self.l1.put(key, e, first + i as u64);
                }
                None => {
                    self.l1.remove(&key);
                }
            }
        }
        if pending >= self.flush_batch {
            self.wake.notify_one();
        }
        last
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

    /// The dirty state of `key`: `Some(Some(entry))` set, `Some(None)`
    /// deleted, `None` not dirty (the stores are up to date).
    pub(crate) fn lookup(&self, key: &[u8]) -> Option<Option<Entry>> {
        let q = self.queue.lock();
        q.pending
            .get(key)
            .or_else(|| q.inflight.get(key))
            .map(|d| d.op.clone())
    }

    /// The newest dirty operation of every queued key in a key listing's
    /// range (see [`crate::store::in_scan_range`]), pending over in flight.
    pub(crate) fn dirty_in_range(
        &self,
        start: std::ops::Bound<&[u8]>,
        prefix: &[u8],
    ) -> Vec<(Bytes, Option<Entry>)> {
        use crate::store::in_scan_range;
        let q = self.queue.lock();
        let mut out: Vec<(Bytes, Option<Entry>)> = q
            .pending
            .iter()
            .filter(|(k, _)| in_scan_range(k, start, prefix))
            .map(|(k, d)| (k.clone(), d.op.clone()))
            .collect();
        out.extend(
            q.inflight
                .iter()
                .filter(|(k, _)| in_scan_range(k, start, prefix) && !q.pending.contains_key(*k))
                .map(|(k, d)| (k.clone(), d.op.clone())),
        );
        out
    }

    /// Dirty keys (pending and in flight).
    pub(crate) fn pending_len(&self) -> usize {
        let q = self.queue.lock();
        q.pending.len() + q.inflight.len()
    }

    /// Age in ms of the oldest dirty key.
    pub(crate) fn oldest_age_ms(&self) -> u64 {
        let q = self.queue.lock();
        let oldest = q
            .pending
            .values()
            .chain(q.inflight.values())
            .map(|d| d.since)
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
        // Seal the journal and move pending to inflight atomically: no append
        // can land in the sealed segment without being in this snapshot.
        // O(1) unless a failed batch is still in flight.
        let (sealed, batch, sync) = self.journal.rotate_unsynced(|| {
            let mut q = self.queue.lock();
            let spare = std::mem::take(&mut q.spare);
            let pending = std::mem::replace(&mut q.pending, spare);
            if q.inflight.is_empty() {
                q.inflight = Arc::new(pending);
            } else {
                let mut merged = (*q.inflight).clone();
                merged.extend(pending); // newer writes supersede a failed batch
                q.inflight = Arc::new(merged);
            }
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
        let entries: Vec<(&Bytes, &Dirty)> = batch.iter().collect();
        let mut done = 0;
        for chunk in entries.chunks(self.flush_batch) {
            let mut mutations: Vec<Mutation> = Vec::with_capacity(chunk.len());
            for (k, d) in chunk {
                mutations.push(match &d.op {
                    Some(e) => Mutation::Set((*k).clone(), e.clone()),
                    None => Mutation::Delete((*k).clone()),
                });
                consume_budget().await;
            }
            // The system of record first: once it has the data, nothing is lost.
            for store in self.stores.iter().rev() {
                if let Err(e) = store.apply(&mutations).await {
                    self.forget_flushed(&entries[..done]);
                    self.flush_errors.fetch_add(1, Ordering::Relaxed);
                    self.progress.notify_waiters();
                    return Err(e.into());
                }
            }
            // One pass: release each written copy and unpin its entry.
            for ((key, d), written) in chunk.iter().zip(mutations) {
                drop(written);
                if d.op.is_some() {
                    self.l1.mark_clean(key, d.seq);
                }
                consume_budget().await;
            }
            done += chunk.len();
        }
        self.forget_flushed(&entries);
        let flushed = entries.len();
        drop(entries);
        self.recycle(batch).await;
        let removal = self.journal.sealed_removal(sealed);
        tokio::task::spawn_blocking(move || removal.run())
            .await
            .map_err(|e| EngineError::Config(format!("journal removal task failed: {e}")))??;
        self.flushes.fetch_add(1, Ordering::Relaxed);
        self.progress.notify_waiters();
        Ok(flushed)
    }

    /// Keeps a flushed batch's map, emptied outside the queue lock, as the
    /// next `pending` (unless a reader still holds it).
    async fn recycle(&self, batch: Arc<DirtyMap>) {
        if let Ok(mut map) = Arc::try_unwrap(batch) {
            for entry in map.drain() {
                drop(entry);
                consume_budget().await;
            }
            let mut q = self.queue.lock();
            if map.capacity() > q.spare.capacity() {
                q.spare = map;
            }
        }
    }

    /// Drops flushed entries from `inflight` (all of it in the common case).
    fn forget_flushed(&self, flushed: &[(&Bytes, &Dirty)]) {
        if flushed.is_empty() {
            return;
        }
        let freed: u64 = flushed.iter().map(|(k, d)| weight(k, &d.op)).sum();
        let mut q = self.queue.lock();
        if flushed.len() == q.inflight.len() {
            q.inflight = Arc::default();
        } else {
            let mut rest = (*q.inflight).clone();
            for (k, _) in flushed {
                rest.remove(*k);
            }
            q.inflight = Arc::new(rest);
        }
        self.dirty_bytes.fetch_sub(freed, Ordering::Relaxed);
    }

    /// `FLUSHALL` for this namespace: journals a clear, drops the queue,
    /// clears the stores. A crash in between replays the clear at start.
    pub(crate) async fn clear(&self) -> Result<()> {
        let _one_at_a_time = self.flush_lock.lock().await;
        let seq = self.journal.append_clear();
        self.journal.commit(seq)?;
        {
            let mut q = self.queue.lock();
            let inflight = std::mem::take(&mut q.inflight);
            for (key, d) in q
                .pending
                .drain()
                .chain(inflight.iter().map(|(k, d)| (k.clone(), d.clone())))
            {
                if d.op.is_some() {
                    self.l1.mark_clean(&key, d.seq);
                }
            }
            self.dirty_bytes.store(0, Ordering::Relaxed);
        }
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

    fn set(key: &'static [u8], value: &str) -> (Bytes, Option<Entry>) {
        (Bytes::from_static(key), Some(Entry::new(value.to_string())))
    }

    /// The backpressure figure follows the newest operation of each key
    /// through rewrites that grow, keep and shrink its size, and deletes,
    /// and returns to zero once everything is flushed.
    #[tokio::test]
    async fn dirty_bytes_count_the_newest_operation_of_each_key() {
        let dir = tempfile::tempdir().unwrap();
        let l1 = Arc::new(MemoryTier::new(1 << 24));
        let wb = WriteBack::open(
            dir.path(),
            FsyncPolicy::No,
            Vec::new(),
            l1,
            1000,
            Duration::from_secs(3600),
        )
        .await
        .unwrap();
        let bytes = || wb.dirty_bytes.load(Ordering::Relaxed);
        let expect =
            |ops: &[(Bytes, Option<Entry>)]| ops.iter().map(|(k, op)| weight(k, op)).sum::<u64>();

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
}
