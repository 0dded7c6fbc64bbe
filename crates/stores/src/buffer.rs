//! [`BufferStore`]: Scribe's buffer store — writes go to a primary; while
//! the primary is down (or too far behind), to a durable secondary log,
//! replayed to the primary, in order, when it answers again.
//!
//! # Modes
//!
//! - **Primary**: writes go to the primary. A write the primary fails
//!   (an error, or a `timeout` configured on the primary), or a write that
//!   would take the number of mutations in flight to the primary past
//!   `max_queue_length`, *fails over*: it is appended to the secondary
//!   instead, and acknowledged once the secondary has it durably.
//! - **Failed over**: every write (sets and deletes) is appended to the
//!   secondary, in order. A background task retries the primary every
//!   `retry_interval` ± a uniformly random `retry_interval_range`; when a
//!   probe answers, the secondary's log is replayed to the primary oldest
//!   first (deletes too), chunk by chunk (each chunk coalesced: last
//!   mutation per key wins, which is what applying it in order does).
//!   Writers keep appending meanwhile. For the last stretch the replay
//!   blocks writers, replays what they appended, empties the secondary and
//!   switches back to primary mode, so no newer write can reach the primary
//!   before an older one to the same key.
//!
//! Reads while failed over ask the secondary first: the key's latest logged
//! set (an expired one reads as absent) or delete answers; only keys the log
//! has never seen go to the primary, which may fail. A delete made while the
//! primary was down therefore hides the primary's old value — nothing comes
//! back to life. `scan_keys`, `count` and `key_stats` merge the same way.
//!
//! # Invariants
//!
//! - Nothing acknowledged is lost: a write is acknowledged only once the
//!   primary or the (durable) secondary has it, and the secondary is
//!   emptied only after everything in it reached the primary.
//! - Per-key order: the log is replayed in order, and writers wait for the
//!   final switch, so a key's writes reach the primary in the order they
//!   were acknowledged.
//! - Restarts: a buffer opened over a non-empty secondary starts failed over
//!   and replays it as soon as the primary answers.
//! - A replay interrupted by a crash replays again from the start; replaying
//!   is idempotent (the primary ends up with each key's latest mutation).
//!
//! What it cannot promise: a write that *timed out* on the primary may
//! still be applied by it later (the request was sent); if that happens
//! after the replay, the primary holds that value until the key is written
//! again. Give the primary a `timeout` well under the time a replay takes.
//!
//! # Secondaries
//!
//! The secondary must be a [`ReplayLog`] (today [`FileStore`]): a plain
//! store forgets deletes and order, so it could not replay them (Scribe
//! likewise accepts only readable stores). The configuration is refused
//! otherwise, and also when the secondary is shared with another store
//! (another buffer would replay its writes to the wrong primary).
//!
//! [`FileStore`]: crate::FileStore

use crate::replay::{LogPosition, Logged, ReplayLog};
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex as SyncMutex;
use rand::Rng;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tiercache_engine::{now_ms, Entry, KeyStats, Mutation, Store, StoreError};
use tokio::sync::{Mutex, Notify, RwLock};

/// Mutations per replayed `apply`.
const REPLAY_CHUNK: usize = 10_000;
/// A key no one uses, read to see whether the primary answers.
const PROBE_KEY: &[u8] = b"\0tiercache:buffer-probe";

/// A [`BufferStore`]'s settings (the `buffer` store type's keys).
#[derive(Clone, Debug)]
pub struct BufferOptions {
    /// Mutations in flight to the primary beyond which writes fail over.
    pub max_queue_length: u64,
    /// How long to wait before retrying a failed primary.
    pub retry_interval: Duration,
    /// Random spread (±) on `retry_interval`, so many buffers do not retry
    /// in lockstep.
    pub retry_interval_range: Duration,
}

impl Default for BufferOptions {
    /// Scribe's defaults: 2,000,000 messages, 300 s ± 60 s.
    fn default() -> Self {
        BufferOptions {
            max_queue_length: 2_000_000,
            retry_interval: Duration::from_secs(300),
            retry_interval_range: Duration::from_secs(60),
        }
    }
}

/// Where a [`BufferStore`]'s writes go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BufferMode {
    /// To the primary.
    Primary,
    /// To the secondary; the primary is retried.
    FailedOver,
    /// To the secondary, while its log is being replayed to the primary.
    Replaying,
}

/// A [`BufferStore`]'s state, for metrics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BufferStatus {
    /// Current mode.
    pub mode: BufferMode,
    /// Mutations in the secondary waiting for the primary.
    pub queued: u64,
    /// Mutations in flight to the primary.
    pub in_flight: u64,
    /// How many times the buffer failed over since it was opened.
    pub failovers: u64,
    /// Mutations replayed to the primary since it was opened.
    pub replayed: u64,
    /// Why it last failed over or a replay last failed.
    pub last_error: Option<String>,
}

/// A primary store with a durable secondary log for when it is down.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use tiercache_engine::testing::{FlakyStore, MemoryStore};
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::{BufferMode, BufferOptions, BufferStore, FileStore};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let dir = tempfile::tempdir().unwrap();
/// let primary = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("shared.primary"))));
/// let spool = FileStore::open("shared.secondary", dir.path(), Default::default()).unwrap();
/// let opts = BufferOptions { retry_interval: Duration::from_secs(1), ..Default::default() };
/// let buffer = BufferStore::open("shared", primary.clone(), Arc::new(spool), opts).await.unwrap();
///
/// primary.set_down(true);
/// buffer.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap(); // in the spool
/// buffer.delete_many(&["old".into()]).await.unwrap();
/// assert_eq!(buffer.status().mode, BufferMode::FailedOver);
/// assert_eq!(buffer.get_many(&["k".into()]).await.unwrap()[0], Some(Entry::new("v")));
///
/// primary.set_down(false);
/// assert!(buffer.replay_now().await.unwrap()); // (the background task would, too)
/// assert_eq!(buffer.status().mode, BufferMode::Primary);
/// assert_eq!(primary.inner().snapshot().len(), 1);
/// # });
/// ```
pub struct BufferStore {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    primary: Arc<dyn Store>,
    secondary: Arc<dyn ReplayLog>,
    opts: BufferOptions,
    /// Writers hold it shared; the switch back to primary mode (and
    /// failing over) hold it exclusively.
    gate: RwLock<()>,
    failed_over: AtomicBool,
    replaying: AtomicBool,
    /// One replay at a time.
    replay: Mutex<()>,
    in_flight: AtomicU64,
    failovers: AtomicU64,
    replayed: AtomicU64,
    last_error: SyncMutex<Option<String>>,
    next_attempt: SyncMutex<Option<Instant>>,
    wake: Arc<Notify>,
}

impl BufferStore {
    /// A buffer over `primary` and `secondary`. When the secondary still
    /// holds mutations (a restart while the primary was down), the buffer
    /// starts failed over and replays them as soon as the primary answers.
    /// Starts the retry task on the current tokio runtime.
    pub async fn open(
        name: &str,
        primary: Arc<dyn Store>,
        secondary: Arc<dyn ReplayLog>,
        opts: BufferOptions,
    ) -> Result<BufferStore, StoreError> {
        let pending = !secondary
            .read_from(LogPosition::START, 1)
            .await?
            .0
            .is_empty();
        let inner = Arc::new(Inner {
            name: name.to_owned(),
            primary,
            secondary,
            opts,
            gate: RwLock::new(()),
            failed_over: AtomicBool::new(pending),
            replaying: AtomicBool::new(false),
            replay: Mutex::new(()),
            in_flight: AtomicU64::new(0),
            failovers: AtomicU64::new(0),
            replayed: AtomicU64::new(0),
            last_error: SyncMutex::new(None),
            next_attempt: SyncMutex::new(pending.then(Instant::now)),
            wake: Arc::new(Notify::new()),
        });
        if pending {
            tracing::warn!(
                store = name,
                queued = inner.secondary.logged(),
                "opened with writes still in the secondary: replaying them when the primary answers"
            );
        }
        tokio::spawn(retry_loop(Arc::downgrade(&inner), inner.wake.clone()));
        Ok(BufferStore { inner })
    }

    /// Mode, queue and counters.
    pub fn status(&self) -> BufferStatus {
        let i = &self.inner;
        BufferStatus {
            mode: if !i.failed_over.load(Ordering::SeqCst) {
                BufferMode::Primary
            } else if i.replaying.load(Ordering::SeqCst) {
                BufferMode::Replaying
            } else {
                BufferMode::FailedOver
            },
            queued: i.secondary.logged(),
            in_flight: i.in_flight.load(Ordering::SeqCst),
            failovers: i.failovers.load(Ordering::SeqCst),
            replayed: i.replayed.load(Ordering::SeqCst),
            last_error: i.last_error.lock().clone(),
        }
    }

    /// Tries the primary now instead of at the next retry: replays the
    /// secondary if it answers. Returns whether the buffer is back in
    /// primary mode.
    pub async fn replay_now(&self) -> Result<bool, StoreError> {
        self.inner.replay().await
    }

    async fn write(&self, batch: Vec<Mutation>) -> Result<(), StoreError> {
        if batch.is_empty() {
            return Ok(());
        }
        let i = &self.inner;
        let shared = i.gate.read().await;
        if i.failed_over.load(Ordering::SeqCst) {
            return i.secondary.apply(&batch).await;
        }
        let n = batch.len() as u64;
        let before = i.in_flight.fetch_add(n, Ordering::SeqCst);
        if before + n > i.opts.max_queue_length {
            i.in_flight.fetch_sub(n, Ordering::SeqCst);
            drop(shared);
            let why = format!(
                "{} mutations in flight to the primary would exceed max_queue_length = {}",
                before + n,
                i.opts.max_queue_length
            );
            return i.fail_over_with(batch, why).await;
        }
        let r = i.primary.apply(&batch).await;
        i.in_flight.fetch_sub(n, Ordering::SeqCst);
        match r {
            Ok(()) => Ok(()),
            Err(e) => {
                drop(shared);
                i.fail_over_with(batch, e.to_string()).await
            }
        }
    }

    /// Live keys from `start` (the log overriding the primary).
    async fn merged_scan(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let i = &self.inner;
        let logged = i.secondary.scan_keys(start, prefix, limit, now).await?;
        // Primary keys the log does not delete, page by page, until `limit`
        // of them or the primary's end.
        let mut kept: Vec<Bytes> = Vec::new();
        let mut cursor: Option<Bytes> = None;
        loop {
            let from = match &cursor {
                Some(c) => Bound::Excluded(&c[..]),
                None => start,
            };
            let page = i.primary.scan_keys(from, prefix, limit, now).await?;
            let last = page.len() < limit;
            cursor = page.last().cloned();
            let looks = i.secondary.lookup(&page).await?;
            for (k, l) in page.into_iter().zip(looks) {
                match l {
                    Logged::NotLogged => kept.push(k),
                    Logged::Set(e) if !e.is_expired_at(now) => kept.push(k),
                    _ => {}
                }
            }
            if last || kept.len() >= limit {
                break;
            }
        }
        kept.extend(logged);
        kept.sort_unstable();
        kept.dedup();
        kept.truncate(limit);
        Ok(kept)
    }
}

impl Inner {
    /// Switches to the secondary (if not already) and appends `batch` there.
    async fn fail_over_with(&self, batch: Vec<Mutation>, why: String) -> Result<(), StoreError> {
        // Exclusive, so that the switch back to primary mode cannot run
        // between failing over and appending: the batch is either replayed
        // by it or by the next replay.
        let _exclusive = self.gate.write().await;
        if !self.failed_over.swap(true, Ordering::SeqCst) {
            self.failovers.fetch_add(1, Ordering::SeqCst);
            tracing::warn!(store = %self.name, "failing over to the secondary: {why}");
            *self.next_attempt.lock() = Some(Instant::now() + self.retry_delay());
            self.wake.notify_one();
        }
        *self.last_error.lock() = Some(why);
        self.secondary.apply(&batch).await.map_err(|e| {
            StoreError::new(
                &self.name,
                format!("primary unavailable and the secondary failed too: {e}"),
            )
        })
    }

    fn retry_delay(&self) -> Duration {
        let base = self.opts.retry_interval.as_millis() as i128;
        let range = self.opts.retry_interval_range.as_millis() as i128;
        let jitter = if range > 0 {
            rand::thread_rng().gen_range(-range..=range)
        } else {
            0
        };
        Duration::from_millis((base + jitter).max(0) as u64)
    }

    /// Applies the log from `pos` to the primary; returns the end position.
    async fn replay_from(&self, mut pos: LogPosition) -> Result<LogPosition, StoreError> {
        loop {
            let (chunk, next) = self.secondary.read_from(pos, REPLAY_CHUNK).await?;
            if chunk.is_empty() {
                return Ok(pos);
            }
            let n = chunk.len() as u64;
            self.primary.apply(&coalesce(chunk)).await?;
            self.replayed.fetch_add(n, Ordering::SeqCst);
            pos = next;
        }
    }

    /// One replay attempt (see the module docs).
    async fn replay(&self) -> Result<bool, StoreError> {
        let _one = self.replay.lock().await;
        if !self.failed_over.load(Ordering::SeqCst) {
            return Ok(true);
        }
        let result = async {
            self.primary
                .get_many(&[Bytes::from_static(PROBE_KEY)])
                .await?;
            self.replaying.store(true, Ordering::SeqCst);
            let pos = self.replay_from(LogPosition::START).await?;
            let _exclusive = self.gate.write().await;
            self.replay_from(pos).await?;
            self.secondary.discard().await?;
            self.failed_over.store(false, Ordering::SeqCst);
            Ok::<(), StoreError>(())
        }
        .await;
        self.replaying.store(false, Ordering::SeqCst);
        match result {
            Ok(()) => {
                tracing::info!(store = %self.name, replayed = self.replayed.load(Ordering::SeqCst), "primary is back: secondary replayed, writes go to the primary again");
                *self.next_attempt.lock() = None;
                *self.last_error.lock() = None;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(store = %self.name, "primary still unavailable, retrying later: {e}");
                *self.next_attempt.lock() = Some(Instant::now() + self.retry_delay());
                *self.last_error.lock() = Some(e.to_string());
                Err(e)
            }
        }
    }
}

/// The batch with only each key's last mutation (at its position):
/// applying it equals applying `chunk` in order, even for stores that
/// reorder keys within one `apply`.
pub(crate) fn coalesce(chunk: Vec<Mutation>) -> Vec<Mutation> {
    let mut last: HashMap<Bytes, usize> = HashMap::with_capacity(chunk.len());
    for (i, m) in chunk.iter().enumerate() {
        last.insert(m.key().clone(), i);
    }
    chunk
        .into_iter()
        .enumerate()
        .filter(|(i, m)| last.get(m.key()) == Some(i))
        .map(|(_, m)| m)
        .collect()
}

/// Retries the primary when due; ends with the store.
async fn retry_loop(inner: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let wait = {
            let Some(inner) = inner.upgrade() else { return };
            let due = *inner.next_attempt.lock();
            let due = due.filter(|_| inner.failed_over.load(Ordering::SeqCst));
            match due {
                Some(t) if Instant::now() >= t => {
                    let _ = inner.replay().await;
                    continue;
                }
                Some(t) => t.saturating_duration_since(Instant::now()),
                None => Duration::from_secs(1),
            }
        };
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait.min(Duration::from_secs(1))) => {}
        }
    }
}

#[async_trait]
impl Store for BufferStore {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        let i = &self.inner;
        if !i.failed_over.load(Ordering::SeqCst) {
            return i.primary.get_many(keys).await;
        }
        let now = now_ms();
        let logged = i.secondary.lookup(keys).await?;
        let mut out = Vec::with_capacity(keys.len());
        let mut ask = Vec::new();
        for (k, l) in keys.iter().zip(logged) {
            out.push(match l {
                Logged::Set(e) => (!e.is_expired_at(now)).then_some(e),
                Logged::Deleted => None,
                Logged::NotLogged => {
                    ask.push((out.len(), k.clone()));
                    None
                }
            });
        }
        if !ask.is_empty() {
            let ks: Vec<Bytes> = ask.iter().map(|(_, k)| k.clone()).collect();
            let got = i.primary.get_many(&ks).await?;
            for ((pos, _), e) in ask.into_iter().zip(got) {
                out[pos] = e;
            }
        }
        Ok(out)
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.write(Mutation::sets(entries)).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.write(Mutation::deletes(keys)).await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.write(batch.to_vec()).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        Ok(self.key_stats(now_ms()).await?.keys)
    }

    /// Needs the primary. While failed over, the log is first replayed (so
    /// nothing in it can come back after the clear), then emptied, then the
    /// primary cleared; a failure at any step leaves no key resurrected.
    async fn clear(&self) -> Result<(), StoreError> {
        let i = &self.inner;
        if i.failed_over.load(Ordering::SeqCst) {
            i.replay().await?;
        }
        let _exclusive = i.gate.write().await;
        if i.failed_over.load(Ordering::SeqCst) {
            return Err(StoreError::new(
                &i.name,
                "clear needs the primary, and it failed again",
            ));
        }
        i.primary.clear().await
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        if !self.inner.failed_over.load(Ordering::SeqCst) {
            return self
                .inner
                .primary
                .scan_keys(start, prefix, limit, now)
                .await;
        }
        self.merged_scan(start, prefix, limit, now).await
    }

    async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        if !self.inner.failed_over.load(Ordering::SeqCst) {
            return self.inner.primary.key_stats(now).await;
        }
        // Failed over: walk the merged key space (exact, O(keys)).
        let mut stats = KeyStats::default();
        let mut ttl_sum = 0u128;
        let mut cursor: Option<Bytes> = None;
        loop {
            let from = cursor.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
            let page = self.merged_scan(from, b"", 1_000, now).await?;
            for e in self.get_many(&page).await?.into_iter().flatten() {
                if e.is_expired_at(now) {
                    continue;
                }
                stats.keys += 1;
                if let Some(ttl) = e.ttl_ms_at(now) {
                    stats.expires += 1;
                    ttl_sum += ttl as u128;
                }
            }
            if page.len() < 1_000 {
                break;
            }
            cursor = page.last().cloned();
        }
        if stats.expires > 0 {
            stats.avg_ttl_ms = (ttl_sum / stats.expires as u128) as u64;
        }
        Ok(stats)
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        if self.inner.failed_over.load(Ordering::SeqCst) {
            return Ok(0);
        }
        self.inner.primary.purge_expired(now).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coalesce_keeps_the_last_mutation_per_key() {
        let m = |k: &str, v: Option<&str>| match v {
            Some(v) => Mutation::Set(
                Bytes::copy_from_slice(k.as_bytes()),
                Entry::new(v.to_owned()),
            ),
            None => Mutation::Delete(Bytes::copy_from_slice(k.as_bytes())),
        };
        let got = coalesce(vec![
            m("a", Some("1")),
            m("b", Some("1")),
            m("a", None),
            m("c", Some("1")),
            m("b", Some("2")),
        ]);
        assert_eq!(
            got,
            vec![m("a", None), m("c", Some("1")), m("b", Some("2"))]
        );
    }
}
