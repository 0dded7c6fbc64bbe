//! [`MultiStore`]: replication — every write goes to every child (Scribe's
//! multi store), and a child that missed writes is caught up, never left
//! silently behind.
//!
//! # Writes
//!
//! A write is sent to all children concurrently. With
//! [`ReportSuccess::All`] it succeeds when every child took it; with
//! [`ReportSuccess::Any`] when at least one did. Either way the error names
//! the children that failed.
//!
//! A child that fails a write keeps that write in its own ordered
//! *backlog* and is *catching up*: its later writes are queued behind the
//! backlog (not sent), so each child sees every key's writes in the order
//! the multi received them. The backlog is replayed in order by a
//! background task (retrying with backoff from 100 ms to 5 s) or, once a
//! retry is due, by the child's next write. Replayed batches are coalesced
//! (last write per key wins), which is what applying them in order does.
//!
//! A failed write therefore still reaches every child eventually: with
//! `all`, a reported failure means "not everywhere yet", not "nowhere"
//! (there is no rollback across stores). What is guaranteed is that, once
//! the children are reachable and the backlogs drained, they hold the same
//! data.
//!
//! Writes to one key never run concurrently through a multi (they take the
//! key's lock stripe, in stripe order), so concurrent writers cannot make
//! two children apply the same key's writes in different orders.
//!
//! A backlog longer than `max_backlog` mutations is dropped and the child
//! marked *diverged*: it is reported by [`MultiStore::status`], in a log
//! line, and in every later write's error; it is no longer read from.
//!
//! # Reads
//!
//! Reads (`get_many`, `count`, `scan_keys`, `key_stats`) ask the children
//! in order and return the first answer, skipping children that are
//! catching up or diverged (their data is stale) and falling through on
//! errors.

use async_trait::async_trait;
use bytes::Bytes;
use futures::future::join_all;
use parking_lot::Mutex as SyncMutex;
use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};
use tiercache_engine::{Entry, KeyStats, Mutation, Store, StoreError};
use tokio::sync::{Mutex, MutexGuard, Notify};

const STRIPES: usize = 64;
const RETRY_MIN: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(5);
/// Mutations per replayed `apply`.
const REPLAY_CHUNK: usize = 10_000;

/// When a [`MultiStore`] write counts as a success.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReportSuccess {
    /// Every child took it.
    #[default]
    All,
    /// At least one child took it.
    Any,
}

/// A child's health, for metrics and `INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChildState {
    /// Up to date.
    Healthy,
    /// Has missed writes that are queued for it, in order.
    CatchingUp {
        /// Mutations queued.
        queued: u64,
    },
    /// Missed more than `max_backlog` mutations; no longer written or read.
    Diverged,
}

/// One child's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChildStatus {
    /// The child's name.
    pub name: String,
    /// Its state.
    pub state: ChildState,
    /// The last error it returned, if it has failed since it was last healthy.
    pub last_error: Option<String>,
}

/// Replicates writes to every child and reads from the first healthy one.
///
/// ```
/// use std::sync::Arc;
/// use tiercache_engine::testing::{FlakyStore, MemoryStore};
/// use tiercache_engine::{Entry, Store};
/// use tiercache_stores::{ChildState, MultiStore, ReportSuccess};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let a = Arc::new(MemoryStore::new("both.stores[0]"));
/// let b = Arc::new(FlakyStore::new(Arc::new(MemoryStore::new("both.stores[1]"))));
/// let both = MultiStore::new("both", vec![a.clone(), b.clone()], ReportSuccess::Any);
/// b.set_down(true);
/// both.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap(); // `any`: a took it
/// assert_eq!(both.status()[1].state, ChildState::CatchingUp { queued: 1 });
/// b.set_down(false);
/// both.catch_up().await;
/// assert_eq!(b.inner().snapshot(), a.snapshot()); // b has it too
/// # });
/// ```
pub struct MultiStore {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    report: ReportSuccess,
    children: Vec<Child>,
    stripes: Vec<Mutex<()>>,
    max_backlog: u64,
    wake: Arc<Notify>,
}

struct Child {
    store: Arc<dyn Store>,
    /// Set (under `queue`) when the backlog is non-empty or the child
    /// diverged; cleared once drained. Writes that see it clear go straight
    /// to the child.
    behind: AtomicBool,
    diverged: AtomicBool,
    queued: AtomicU64,
    last_error: SyncMutex<Option<String>>,
    queue: Mutex<Backlog>,
}

#[derive(Default)]
struct Backlog {
    ops: VecDeque<Op>,
    next_retry: Option<Instant>,
    backoff: Duration,
}

#[derive(Clone)]
enum Op {
    Apply(Vec<Mutation>),
    Clear,
}

impl Op {
    fn len(&self) -> u64 {
        match self {
            Op::Apply(m) => m.len() as u64,
            Op::Clear => 1,
        }
    }
}

impl MultiStore {
    /// Replicates over `children` (at least one), with a backlog bound of
    /// one million mutations per child.
    pub fn new(name: &str, children: Vec<Arc<dyn Store>>, report: ReportSuccess) -> MultiStore {
        MultiStore::with_max_backlog(name, children, report, 1_000_000)
    }

    /// Like [`MultiStore::new`], with the number of queued mutations after
    /// which a child is declared diverged.
    pub fn with_max_backlog(
        name: &str,
        children: Vec<Arc<dyn Store>>,
        report: ReportSuccess,
        max_backlog: u64,
    ) -> MultiStore {
        let inner = Arc::new(Inner {
            name: name.to_owned(),
            report,
            children: children
                .into_iter()
                .map(|store| Child {
                    store,
                    behind: AtomicBool::new(false),
                    diverged: AtomicBool::new(false),
                    queued: AtomicU64::new(0),
                    last_error: SyncMutex::new(None),
                    queue: Mutex::new(Backlog::default()),
                })
                .collect(),
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
            max_backlog,
            wake: Arc::new(Notify::new()),
        });
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(catch_up_loop(Arc::downgrade(&inner), inner.wake.clone()));
        }
        MultiStore { inner }
    }

    /// Each child's state, in configuration order.
    pub fn status(&self) -> Vec<ChildStatus> {
        self.inner
            .children
            .iter()
            .map(|c| ChildStatus {
                name: c.store.name().to_owned(),
                state: if c.diverged.load(Ordering::SeqCst) {
                    ChildState::Diverged
                } else if c.behind.load(Ordering::SeqCst) {
                    ChildState::CatchingUp {
                        queued: c.queued.load(Ordering::SeqCst),
                    }
                } else {
                    ChildState::Healthy
                },
                last_error: c.last_error.lock().clone(),
            })
            .collect()
    }

    /// Tries now to replay every backlog (the background task does this on
    /// its own schedule); returns when each child is drained or failed again.
    pub async fn catch_up(&self) {
        for c in &self.inner.children {
            if c.behind.load(Ordering::SeqCst) {
                let mut q = c.queue.lock().await;
                self.inner.drain(c, &mut q).await;
            }
        }
    }

    async fn lock_keys<'a>(
        &'a self,
        keys: impl Iterator<Item = &'a [u8]>,
    ) -> Vec<MutexGuard<'a, ()>> {
        let mut stripes: Vec<usize> = keys
            .map(|k| (crate::bucket::fnv1a64(k) % STRIPES as u64) as usize)
            .collect();
        stripes.sort_unstable();
        stripes.dedup();
        let mut guards = Vec::with_capacity(stripes.len());
        for s in stripes {
            guards.push(self.inner.stripes[s].lock().await);
        }
        guards
    }

    async fn write(&self, op: Op) -> Result<(), StoreError> {
        let results = join_all(
            self.inner
                .children
                .iter()
                .map(|c| self.inner.write_child(c, op.clone())),
        )
        .await;
        let failed: Vec<String> = results
            .iter()
            .zip(&self.inner.children)
            .enumerate()
            .filter_map(|(i, (r, c))| {
                r.as_ref()
                    .err()
                    .map(|e| format!("stores[{i}] '{}': {}", c.store.name(), e.message))
            })
            .collect();
        let ok = results.len() - failed.len();
        let success = match self.inner.report {
            ReportSuccess::All => failed.is_empty(),
            ReportSuccess::Any => ok > 0,
        };
        if !failed.is_empty() {
            self.inner.wake.notify_one();
        }
        if success {
            Ok(())
        } else {
            Err(StoreError::new(
                &self.inner.name,
                format!(
                    "write reached {ok} of {} stores (report_success = {}); {}",
                    results.len(),
                    match self.inner.report {
                        ReportSuccess::All => "all",
                        ReportSuccess::Any => "any",
                    },
                    failed.join("; ")
                ),
            ))
        }
    }

    /// Runs a read on the first up-to-date child that answers.
    async fn read<'a, T>(
        &'a self,
        op: impl Fn(&'a dyn Store) -> futures::future::BoxFuture<'a, Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        let mut why = Vec::new();
        for (i, c) in self.inner.children.iter().enumerate() {
            if c.behind.load(Ordering::SeqCst) {
                why.push(format!("stores[{i}] '{}' is catching up", c.store.name()));
                continue;
            }
            match op(c.store.as_ref()).await {
                Ok(v) => return Ok(v),
                Err(e) => why.push(format!("stores[{i}] '{}': {}", c.store.name(), e.message)),
            }
        }
        Err(StoreError::new(
            &self.inner.name,
            format!("no store could answer: {}", why.join("; ")),
        ))
    }
}

impl Inner {
    async fn write_child(&self, c: &Child, op: Op) -> Result<(), StoreError> {
        if !c.behind.load(Ordering::SeqCst) {
            match apply(c.store.as_ref(), &op).await {
                Ok(()) => return Ok(()),
                Err(e) => {
                    let mut q = c.queue.lock().await;
                    self.fell_behind(c, &mut q, op, &e);
                    return Err(e);
                }
            }
        }
        let mut q = c.queue.lock().await;
        if c.diverged.load(Ordering::SeqCst) {
            return Err(StoreError::new(
                c.store.name(),
                "diverged (its backlog overflowed); it needs a resync and gets no writes",
            ));
        }
        if !q.ops.is_empty() && !matches!(q.next_retry, Some(t) if Instant::now() < t) {
            self.drain(c, &mut q).await;
        }
        if q.ops.is_empty() {
            // Drained (by us or meanwhile): back to direct writes.
            return match apply(c.store.as_ref(), &op).await {
                Ok(()) => Ok(()),
                Err(e) => {
                    self.fell_behind(c, &mut q, op, &e);
                    Err(e)
                }
            };
        }
        let err = StoreError::new(
            c.store.name(),
            format!(
                "catching up ({} mutations queued; last error: {})",
                c.queued.load(Ordering::SeqCst),
                c.last_error.lock().as_deref().unwrap_or("none")
            ),
        );
        self.enqueue(c, &mut q, op);
        Err(err)
    }

    /// Records that `c` missed `op`.
    fn fell_behind(&self, c: &Child, q: &mut Backlog, op: Op, e: &StoreError) {
        if !c.behind.swap(true, Ordering::SeqCst) {
            tracing::warn!(store = %self.name, child = c.store.name(), "a replica missed a write; queueing its writes until it catches up: {e}");
            q.backoff = RETRY_MIN;
            q.next_retry = Some(Instant::now() + RETRY_MIN);
        }
        *c.last_error.lock() = Some(e.message.clone());
        self.enqueue(c, q, op);
    }

    fn enqueue(&self, c: &Child, q: &mut Backlog, op: Op) {
        if c.diverged.load(Ordering::SeqCst) {
            return;
        }
        if matches!(op, Op::Clear) {
            // A clear voids everything queued before it.
            q.ops.clear();
            c.queued.store(0, Ordering::SeqCst);
        }
        c.queued.fetch_add(op.len(), Ordering::SeqCst);
        q.ops.push_back(op);
        if c.queued.load(Ordering::SeqCst) > self.max_backlog {
            q.ops.clear();
            c.queued.store(0, Ordering::SeqCst);
            c.diverged.store(true, Ordering::SeqCst);
            tracing::error!(
                store = %self.name,
                child = c.store.name(),
                max_backlog = self.max_backlog,
                "a replica missed more writes than its backlog holds: it has DIVERGED and is no longer written or read"
            );
        }
    }

    /// Replays `c`'s backlog in order until it is empty or a call fails.
    async fn drain(&self, c: &Child, q: &mut Backlog) {
        if c.diverged.load(Ordering::SeqCst) {
            return;
        }
        while let Some(front) = q.ops.front() {
            let (op, taken) = match front {
                Op::Clear => (Op::Clear, 1),
                Op::Apply(_) => {
                    // Coalesce consecutive batches: last write per key wins.
                    let mut latest: HashMap<Bytes, Mutation> = HashMap::new();
                    let mut order = Vec::new();
                    let mut taken = 0;
                    for op in q.ops.iter() {
                        let Op::Apply(batch) = op else { break };
                        if taken > 0 && latest.len() + batch.len() > REPLAY_CHUNK {
                            break;
                        }
                        for m in batch {
                            if latest.insert(m.key().clone(), m.clone()).is_none() {
                                order.push(m.key().clone());
                            }
                        }
                        taken += 1;
                    }
                    let batch = order
                        .into_iter()
                        .filter_map(|k| latest.remove(&k))
                        .collect();
                    (Op::Apply(batch), taken)
                }
            };
            match apply(c.store.as_ref(), &op).await {
                Ok(()) => {
                    for _ in 0..taken {
                        if let Some(done) = q.ops.pop_front() {
                            c.queued.fetch_sub(done.len(), Ordering::SeqCst);
                        }
                    }
                }
                Err(e) => {
                    *c.last_error.lock() = Some(e.message.clone());
                    q.backoff = (q.backoff * 2).clamp(RETRY_MIN, RETRY_MAX);
                    q.next_retry = Some(Instant::now() + q.backoff);
                    return;
                }
            }
        }
        if c.behind.swap(false, Ordering::SeqCst) {
            tracing::info!(store = %self.name, child = c.store.name(), "a replica caught up");
        }
        *c.last_error.lock() = None;
        q.next_retry = None;
        q.backoff = RETRY_MIN;
    }
}

async fn apply(store: &dyn Store, op: &Op) -> Result<(), StoreError> {
    match op {
        Op::Apply(batch) => store.apply(batch).await,
        Op::Clear => store.clear().await,
    }
}

/// Replays backlogs when their retry is due; ends with the store.
async fn catch_up_loop(inner: Weak<Inner>, wake: Arc<Notify>) {
    loop {
        let next = {
            let Some(inner) = inner.upgrade() else { return };
            let mut next: Option<Instant> = None;
            for c in &inner.children {
                if !c.behind.load(Ordering::SeqCst) || c.diverged.load(Ordering::SeqCst) {
                    continue;
                }
                let mut q = c.queue.lock().await;
                if !matches!(q.next_retry, Some(t) if Instant::now() < t) {
                    inner.drain(c, &mut q).await;
                }
                if let Some(t) = q.next_retry {
                    next = Some(next.map_or(t, |n: Instant| n.min(t)));
                }
            }
            next
        };
        // Wake at the next due retry, when a write fails, or every second
        // to notice the store was dropped.
        let wait = next
            .map(|t| t.saturating_duration_since(Instant::now()))
            .unwrap_or(Duration::from_secs(1))
            .min(Duration::from_secs(1));
        tokio::select! {
            _ = wake.notified() => {}
            _ = tokio::time::sleep(wait) => {}
        }
    }
}

#[async_trait]
impl Store for MultiStore {
    fn name(&self) -> &str {
        &self.inner.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.read(|s| s.get_many(keys)).await
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        let _g = self.lock_keys(entries.iter().map(|(k, _)| &k[..])).await;
        self.write(Op::Apply(Mutation::sets(entries))).await
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        let _g = self.lock_keys(keys.iter().map(|k| &k[..])).await;
        self.write(Op::Apply(Mutation::deletes(keys))).await
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        let _g = self.lock_keys(batch.iter().map(|m| &m.key()[..])).await;
        self.write(Op::Apply(batch.to_vec())).await
    }

    async fn count(&self) -> Result<u64, StoreError> {
        self.read(|s| s.count()).await
    }

    async fn clear(&self) -> Result<(), StoreError> {
        let mut guards = Vec::with_capacity(STRIPES);
        for s in &self.inner.stripes {
            guards.push(s.lock().await);
        }
        self.write(Op::Clear).await
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.read(|s| s.scan_keys(start, prefix, limit, now_ms))
            .await
    }

    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        self.read(|s| s.key_stats(now_ms)).await
    }

    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        let results = join_all(
            self.inner
                .children
                .iter()
                .filter(|c| !c.behind.load(Ordering::SeqCst))
                .map(|c| c.store.purge_expired(now_ms)),
        )
        .await;
        Ok(results
            .into_iter()
            .filter_map(Result::ok)
            .max()
            .unwrap_or(0))
    }
}
