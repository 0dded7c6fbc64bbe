//! The engine: the read path (L1, dirty queue, stores, with coalescing),
//! the write paths per [`WriteMode`](crate::namespace::WriteMode) (in
//! `write.rs`), and the background tasks (flushers, journal fsync, active
//! expiry, store purges).
//!
//! Every write to a key runs under that key's lock stripe, so operations on
//! one key are serialised (read-modify-write commands are atomic) and the
//! write-back journal, the dirty queue and the memory tier see them in the
//! same order.

use crate::entry::{next_cas, now_ms, Entry};
use crate::error::Result;
use crate::journal::FsyncPolicy;
use crate::keyfilter::KeyFilter;
use crate::load::{follow, Flights, Role};
use crate::memory::MemoryTier;
use crate::namespace::{NamespaceConfig, NamespaceRouter};
use crate::store::Store;
use crate::writeback::WriteBack;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod build;
mod coalesce;
mod keyspace;
mod session;
mod update;
mod write;

pub use build::EngineBuilder;
pub use keyspace::KeyPage;
pub use session::Session;
pub use update::{MoveOutcome, Update};

/// What `SET` does with the key's expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetExpiry {
    /// Use the namespace default TTL (none when zero): a plain `SET`.
    #[default]
    Default,
    /// Keep the current expiry (`KEEPTTL`).
    Keep,
    /// Expire at this Unix time in milliseconds (`EX/PX/EXAT/PXAT`).
    At(u64),
}

/// When `SET` applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SetCondition {
    /// Always.
    #[default]
    Always,
    /// Only when the key does not exist (`NX`).
    IfAbsent,
    /// Only when the key exists (`XX`).
    IfPresent,
}

/// Options of a single-key set.
#[derive(Clone, Copy, Debug, Default)]
pub struct SetOptions {
    /// Expiry handling.
    pub expiry: SetExpiry,
    /// Condition.
    pub condition: SetCondition,
    /// Return the previous entry (`GET` option); a key holding another kind
    /// than a string then fails with
    /// [`EngineError::WrongType`](crate::EngineError::WrongType) and is left
    /// alone.
    pub return_old: bool,
}

/// Result of a single-key set.
#[derive(Clone, Debug, Default)]
pub struct SetOutcome {
    /// Whether the value was written (false when NX/XX did not hold).
    pub applied: bool,
    /// The previous entry, when asked for with `return_old` (or when a condition was checked).
    pub old: Option<Entry>,
}

/// Counters for `INFO` and metrics.
#[derive(Clone, Debug, Default)]
pub struct EngineStats {
    /// Entries in the memory tier.
    pub memory_entries: u64,
    /// Bytes charged in the memory tier (keys + values + per-entry overhead).
    pub memory_bytes: u64,
    /// The memory tier's bound.
    pub memory_max_bytes: u64,
    /// Reads answered by the memory tier.
    pub hits: u64,
    /// Reads not answered by the memory tier.
    pub misses: u64,
    /// Entries evicted from the memory tier to stay within its bound.
    pub evictions: u64,
    /// Entries removed because they expired.
    pub expired: u64,
    /// Keys waiting for write-back, all namespaces.
    pub writeback_pending: u64,
    /// Age in milliseconds of the oldest write waiting for write-back.
    pub writeback_oldest_ms: u64,
    /// Failed flush attempts since start.
    pub flush_errors: u64,
    /// Successful flushes since start.
    pub flushes: u64,
    /// Misses answered "absent" by a key filter without asking the stores.
    pub store_lookups_skipped: u64,
    /// Keys written or deleted since start, each write of each key once
    /// (what Redis's `rdb_changes_since_last_save` counts from).
    pub writes: u64,
}

const KEY_LOCK_STRIPES: usize = 1024;

/// One stripe of the key locks (see `Core::key_locks`).
pub(crate) type KeyLock = futures_util::lock::Mutex<()>;

struct Namespace {
    cfg: NamespaceConfig,
    wb: Option<Arc<WriteBack>>,
    /// The key filters of the namespace's stores, when every one of them
    /// is exclusive (else empty).
    filters: Vec<Arc<KeyFilter>>,
}

impl Namespace {
    /// What is known of `key` below L1 without asking the stores: its dirty
    /// value (or deletion) in the write-back queue, or that the key filter
    /// rules it out (`Some(None)`). `None`: only the stores can tell.
    ///
    /// The queue comes first: a dirty key reaches the filter only when it
    /// is flushed, and leaves the queue only after the store has it.
    fn known_without_stores(&self, key: &[u8], now: u64) -> Option<Option<Entry>> {
        if let Some(dirty) = self.wb.as_ref().and_then(|wb| wb.lookup(key)) {
            return Some(dirty.filter(|e| !e.is_expired_at(now)));
        }
        if self.filters_rule_out(key) {
            return Some(None);
        }
        None
    }

    /// True when the key filters say `key` is in none of the namespace's
    /// stores (never wrongly: see `keyfilter.rs`). A dirty key reaches the
    /// filters only when it is flushed.
    fn filters_rule_out(&self, key: &[u8]) -> bool {
        !self.filters.is_empty() && self.filters.iter().all(|f| !f.may_contain(key))
    }
}

/// State shared by the engine handle and its background tasks.
pub(crate) struct Core {
    pub(crate) l1: Arc<MemoryTier>,
    router: NamespaceRouter,
    namespaces: Vec<Namespace>,
    flights: Arc<Flights>,
    /// Serialises writes per key (striped). Held across awaits (a write
    /// waits for room in the write-back queue, or for its stores, with its
    /// stripe locked), so the lock is an async one. `futures_util`'s:
    /// uncontended, its lock and unlock are one atomic each. Tokio's unlock
    /// always takes its waiter list's lock (about 250 instructions per write
    /// in all, callgrind), and so does `async_lock`'s, through
    /// `event_listener`'s inner mutex (about 90 per SET under pipelined
    /// `set`).
    key_locks: Box<[KeyLock]>,
    hasher: ahash::RandomState,
    hits: AtomicU64,
    misses: AtomicU64,
    /// Keys written or deleted (`EngineStats::writes`).
    writes: AtomicU64,
    closing: AtomicBool,
    backpressure_wait: Duration,
    /// Every exclusive store, wrapped once, with its key filter.
    key_filters: Vec<(Arc<dyn Store>, Arc<KeyFilter>)>,
    /// Misses the key filters answered without asking the stores.
    lookups_skipped: AtomicU64,
    /// Who watches which key; every write reports to it.
    pub(crate) watches: Arc<crate::watch::Registry>,
    gate: crate::gate::Gate,
    /// Who is told of the keys active expiry removes.
    expiry_listeners: crate::expiry::ExpiryListeners,
    /// False while active expiry is paused (`Engine::set_active_expiry`).
    active_expiry: AtomicBool,
}

/// The tiered cache. Cheap to share behind an `Arc`; all methods take `&self`.
pub struct Engine {
    core: Arc<Core>,
    stop: tokio::sync::watch::Sender<bool>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl Engine {
    /// Starts building an engine whose journals live under `data_dir`.
    pub fn builder(data_dir: impl AsRef<Path>) -> EngineBuilder {
        EngineBuilder {
            data_dir: data_dir.as_ref().to_path_buf(),
            memory_bytes: 256 << 20,
            namespaces: Vec::new(),
            backpressure_wait: Duration::from_secs(30),
            patcher: None,
        }
    }

    /// A session whose writes are made durable together by [`Session::commit`].
    pub fn session(&self) -> Session<'_> {
        Session::new(&self.core)
    }

    /// Registers `listener` to be told of the keys active expiry removes
    /// from the memory tier (at most every 100 ms, in batches), for as long
    /// as it lives.
    pub fn add_expiry_listener(&self, listener: std::sync::Weak<dyn crate::ExpiryListener>) {
        self.core.expiry_listeners.add(listener);
    }

    /// An empty [`Watch`](crate::Watch): add keys with
    /// [`Session::watch_key`], then ask whether any changed.
    pub fn watch(&self) -> crate::Watch {
        crate::Watch::new(self.core.watches.clone())
    }

    /// A [`Watch`](crate::Watch) that also notifies `wake` on each change
    /// of a key it watches ([`Watch::listen`](crate::Watch::listen)):
    /// what a blocking command (Redis `BLPOP`) waits on.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use tiercache_engine::Engine;
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let wake = Arc::new(tokio::sync::Notify::new());
    /// let mut waiter = engine.waiter(wake.clone());
    /// waiter.listen(b"jobs");
    /// let mut s = engine.session();
    /// s.set("jobs".into(), "1".into(), Default::default()).await.unwrap();
    /// wake.notified().await; // returns at once: the write woke it
    /// # s.commit().await.unwrap();
    /// # engine.shutdown().await.unwrap();
    /// # });
    /// ```
    pub fn waiter(&self, wake: Arc<tokio::sync::Notify>) -> crate::Watch {
        crate::Watch::waking(self.core.watches.clone(), wake)
    }

    /// The [`Gate`](crate::Gate) the front ends serving this engine pass
    /// with each request batch, so that a transaction can run alone.
    pub fn gate(&self) -> &crate::Gate {
        &self.core.gate
    }

    /// Reads one key.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        self.session().get(key).await
    }

    /// Writes one key with the namespace's default TTL; durable on return.
    pub async fn set(&self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Result<()> {
        let mut s = self.session();
        s.set(key.into(), value.into(), SetOptions::default())
            .await?;
        s.commit().await
    }

    /// Deletes keys; returns how many existed. Durable on return.
    pub async fn delete(&self, keys: &[Bytes]) -> Result<u64> {
        let mut s = self.session();
        let n = s.delete_many(keys).await?;
        s.commit().await?;
        Ok(n)
    }

    /// Returns the value of `key` from the tiers or, when no tier has it,
    /// runs `loader` — once for all concurrent callers — and stores its
    /// result through the namespace's write mode (durable on return).
    ///
    /// ```
    /// # use tiercache_engine::{Engine, Entry};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let dir = tempfile::tempdir().unwrap();
    /// let engine = Engine::builder(dir.path()).build().await.unwrap();
    /// let v = engine.get_or_load(b"user:1", || async { Ok(Some(Entry::new("Ada"))) }).await.unwrap();
    /// assert_eq!(v.unwrap().value, "Ada");
    /// // Now cached: this loader is not called.
    /// let v = engine.get_or_load(b"user:1", || async { panic!("not called") }).await.unwrap();
    /// assert_eq!(v.unwrap().value, "Ada");
    /// # });
    /// ```
    pub async fn get_or_load<F, Fut>(&self, key: &[u8], loader: F) -> Result<Option<Entry>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Option<Entry>>>,
    {
        let key = Bytes::copy_from_slice(key);
        let core = &self.core;
        let now = now_ms();
        match core.l1_hit(&key, now) {
            Ok(e) => return Ok(Some(e)),
            Err(expired) => {
                core.misses.fetch_add(1, Ordering::Relaxed);
                if expired {
                    core.reclaim_expired(&key, now);
                }
            }
        }
        let mut loader = Some(loader);
        loop {
            match core.flights.begin(&key) {
                Role::Leader(guard) => {
                    let (found, _) = match core.load_one(&key).await {
                        Ok(x) => x,
                        Err(e) => {
                            guard.finish(Err(e.clone()));
                            return Err(e.into());
                        }
                    };
                    let result = match found {
                        Some(e) => Ok(Some(e)),
                        None => {
                            let load = loader.take().expect("a leader runs the loader once");
                            match load().await {
                                Ok(Some(entry)) => {
                                    let entry = core.with_default_ttl(&key, entry);
                                    let mut s = self.session();
                                    // Lead until the value is in the tiers: a
                                    // request arriving meanwhile follows this
                                    // flight instead of loading again. Our own
                                    // write marks the flight invalidated, which
                                    // only stops a load result filling L1; the
                                    // write put the entry there itself. If the
                                    // write fails, the dropped guard sends the
                                    // followers back to retry.
                                    s.set_entry(key.clone(), entry.clone()).await?;
                                    s.commit().await?;
                                    guard.finish(Ok(Some(entry.clone())));
                                    return Ok(Some(entry));
                                }
                                other => other,
                            }
                        }
                    };
                    match &result {
                        Ok(v) => guard.finish(Ok(v.clone())),
                        Err(e) => guard.finish(Err(crate::store::StoreError::new("loader", e))),
                    }
                    return result;
                }
                Role::Follower(flight) => {
                    // `None`: the leader was cancelled; retry, perhaps as leader.
                    if let Some(r) = follow(&flight).await {
                        return r.map_err(Into::into);
                    }
                }
            }
        }
    }

    /// Counters for `INFO` and metrics.
    pub fn stats(&self) -> EngineStats {
        let c = &self.core;
        let wbs = c.namespaces.iter().filter_map(|n| n.wb.as_ref());
        let mut s = EngineStats {
            memory_entries: c.l1.len() as u64,
            memory_bytes: c.l1.used_bytes(),
            memory_max_bytes: c.l1.max_bytes(),
            hits: c.hits.load(Ordering::Relaxed),
            misses: c.misses.load(Ordering::Relaxed),
            evictions: c.l1.evictions(),
            expired: c.l1.expired(),
            ..Default::default()
        };
        s.store_lookups_skipped = c.lookups_skipped.load(Ordering::Relaxed);
        s.writes = c.writes.load(Ordering::Relaxed);
        for wb in wbs {
            s.writeback_pending += wb.pending_len() as u64;
            s.writeback_oldest_ms = s.writeback_oldest_ms.max(wb.oldest_age_ms());
            s.flushes += wb.flushes.load(Ordering::Relaxed);
            s.flush_errors += wb.flush_errors.load(Ordering::Relaxed);
        }
        s
    }

    /// Bytes of write-back journal records on disk, all namespaces (reads
    /// the journal directories: for metrics and tests, not per request).
    pub fn journal_bytes(&self) -> u64 {
        self.core
            .namespaces
            .iter()
            .filter_map(|ns| ns.wb.as_ref())
            .map(|wb| wb.journal.disk_bytes())
            .sum()
    }

    /// True once every namespace's key filter (see [`Store::exclusive`]) has
    /// covered what its stores held at start, so misses on keys never
    /// written skip the stores.
    pub fn key_filters_ready(&self) -> bool {
        self.core.key_filters.iter().all(|(_, f)| f.is_ready())
    }

    /// The memory tier (for inspection and tests).
    pub fn memory(&self) -> &MemoryTier {
        &self.core.l1
    }

    /// Flushes every write-back namespace now; returns once the stores have
    /// everything written before the call.
    pub async fn flush(&self) -> Result<()> {
        for wb in self.core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            wb.flush().await?;
        }
        Ok(())
    }

    /// True when some namespace journals its writes before acknowledging
    /// them (write-back): an append-only log of acknowledged writes, what
    /// Redis calls `appendonly yes`.
    pub fn journals_writes(&self) -> bool {
        self.core.namespaces.iter().any(|n| n.wb.is_some())
    }

    /// Where `key`'s entry lives in the memory tier, if it is held there:
    /// its slot, which stays put while the key is overwritten (what
    /// Redis's `DEBUG OBJECT` reports as the value's address).
    pub fn memory_address(&self, key: &[u8]) -> Option<usize> {
        self.core.l1.entry_address(key)
    }

    /// Pauses (`false`) or resumes active expiry: while paused, expired
    /// entries are only dropped when read, as Redis's `DEBUG
    /// SET-ACTIVE-EXPIRE 0` leaves them.
    pub fn set_active_expiry(&self, on: bool) {
        self.core.active_expiry.store(on, Ordering::Relaxed);
    }

    /// What a restart would leave of the memory tier: writes everything
    /// queued back to the stores ([`Engine::flush`]), then drops every
    /// memory-tier entry of a namespace that has stores, so that reads
    /// load them again from there (Redis's `DEBUG RELOAD`). Entries of
    /// store-less namespaces are the data itself and stay.
    pub async fn reload_from_stores(&self) -> Result<()> {
        self.flush().await?;
        let core = &self.core;
        let mut keys = Vec::new();
        core.l1.for_each_live(now_ms(), |k, _| {
            if !core.namespace_of(k).1.cfg.stores.is_empty() {
                keys.push(k.clone());
            }
        });
        for k in keys {
            let _lock = core.lock_key(&k).await;
            // A write since the flush is dirty again: it stays.
            if !core.l1.is_pinned(&k) {
                core.l1.remove(&k);
            }
        }
        Ok(())
    }

    /// Stops accepting writes, flushes all write-back data to the stores
    /// (retrying for up to 5 s), syncs the journals and stops background
    /// tasks. Data that could not be flushed stays journaled and is replayed
    /// at the next start; that case returns an error saying so.
    pub async fn shutdown(&self) -> Result<()> {
        self.core.closing.store(true, Ordering::SeqCst);
        let _ = self.stop.send(true);
        let tasks: Vec<_> = std::mem::take(&mut *self.tasks.lock());
        for t in tasks {
            let _ = t.await;
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        let mut first_err = None;
        for wb in self.core.namespaces.iter().filter_map(|n| n.wb.as_ref()) {
            if let Err(e) = wb.drain(deadline).await {
                first_err.get_or_insert(e);
            }
        }
        first_err.map_or(Ok(()), Err)
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = self.stop.send(true);
    }
}

fn spawn_background(
    core: &Arc<Core>,
    stop: &tokio::sync::watch::Sender<bool>,
) -> Vec<tokio::task::JoinHandle<()>> {
    let mut tasks = Vec::new();
    for wb in core.namespaces.iter().filter_map(|n| n.wb.clone()) {
        tasks.push(tokio::spawn(wb.clone().run_flusher(stop.subscribe())));
        if wb.journal.policy() == FsyncPolicy::EverySec {
            let mut stop = stop.subscribe();
            tasks.push(tokio::spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_secs(1));
                loop {
                    tokio::select! { _ = tick.tick() => {}, _ = stop.changed() => return }
                    let wb = wb.clone();
                    match tokio::task::spawn_blocking(move || wb.journal.sync()).await {
                        Ok(Err(e)) => {
                            tracing::error!(error = %e, "write-back journal fsync failed")
                        }
                        Err(e) => tracing::error!(error = %e, "journal fsync task panicked"),
                        Ok(Ok(())) => {}
                    }
                }
            }));
        }
    }
    for (store, filter) in core.key_filters.clone() {
        let mut stop = stop.subscribe();
        tasks.push(tokio::spawn(async move {
            tokio::select! {
                r = filter.scan(&*store) => match r {
                    Ok(keys) => {
                        filter.set_ready();
                        tracing::debug!(store = store.name(), keys, "key filter ready");
                    }
                    // Not ready means every miss asks the store, as without a filter.
                    Err(e) => tracing::warn!(store = store.name(), error = %e,
                        "cannot list the store's keys; misses will query it"),
                },
                _ = stop.changed() => {}
            }
        }));
    }
    let weak = Arc::downgrade(core);
    let mut stop_rx = stop.subscribe();
    tasks.push(tokio::spawn(async move {
        // Active expiry: lazily expired entries would otherwise hold memory.
        let mut tick = tokio::time::interval(Duration::from_millis(100));
        let mut purge_at = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            tokio::select! { _ = tick.tick() => {}, _ = stop_rx.changed() => return }
            let Some(core) = weak.upgrade() else { return };
            if !core.active_expiry.load(Ordering::Relaxed) {
                continue;
            }
            let listeners = core.expiry_listeners.wanting();
            if listeners.is_empty() {
                core.l1.expire_due(now_ms(), 20_000);
            } else {
                let mut keys = Vec::new();
                core.l1.expire_due_into(now_ms(), 20_000, &mut keys);
                if !keys.is_empty() {
                    for listener in &listeners {
                        listener.expired(&keys);
                    }
                }
            }
            if tokio::time::Instant::now() >= purge_at {
                purge_at += Duration::from_secs(60);
                for store in core.distinct_stores() {
                    if let Err(e) = store.purge_expired(now_ms()).await {
                        tracing::warn!(error = %e, "purging expired entries failed");
                    }
                }
            }
        }
    }));
    tasks
}

impl Core {
    fn namespace_of(&self, key: &[u8]) -> (usize, &Namespace) {
        let i = self.router.route(key);
        (i, &self.namespaces[i])
    }

    pub(crate) fn with_default_ttl(&self, key: &[u8], mut entry: Entry) -> Entry {
        let ttl = self.namespace_of(key).1.cfg.default_ttl;
        if entry.expires_at.is_none() && !ttl.is_zero() {
            entry.expires_at = Some(now_ms() + ttl.as_millis() as u64);
        }
        entry
    }

    /// Every distinct store of every namespace (a store shared by two
    /// namespaces appears once).
    fn distinct_stores(&self) -> Vec<Arc<dyn Store>> {
        let mut seen = std::collections::HashSet::new();
        let mut out = Vec::new();
        for ns in &self.namespaces {
            for s in &ns.cfg.stores {
                if seen.insert(Arc::as_ptr(s) as *const () as usize) {
                    out.push(s.clone());
                }
            }
        }
        out
    }

    /// Below L1: the dirty queue, then each store top to bottom. Returns the
    /// entry and whether it came from a store (and may fill L1).
    async fn load_one(
        &self,
        key: &Bytes,
    ) -> std::result::Result<(Option<Entry>, bool), crate::store::StoreError> {
        let ns = self.namespace_of(key).1;
        if let Some(known) = ns.known_without_stores(key, now_ms()) {
            return Ok((known, false));
        }
        let keys = std::slice::from_ref(key);
        for (depth, store) in ns.cfg.stores.iter().enumerate() {
            if let Some(mut e) = store.get_many(keys).await?.pop().flatten() {
                if e.is_expired() {
                    continue;
                }
                stamp_loaded(&mut e);
                fill_upper_stores(&ns.cfg.stores[..depth], &[(key.clone(), e.clone())]).await;
                return Ok((Some(e), true));
            }
        }
        Ok((None, false))
    }

    pub(crate) async fn read(&self, key: &Bytes) -> Result<Option<Entry>> {
        let now = now_ms();
        match self.l1_hit(key, now) {
            Ok(e) => Ok(Some(e)),
            Err(expired) => match self.l1_miss_known(key, now, expired) {
                Some(known) => Ok(known),
                None => self.load_below_l1(key).await,
            },
        }
    }

    /// The live L1 entry for `key` at `now`, counted as a hit; on a miss,
    /// whether an expired entry is held (see [`Core::l1_miss_known`]).
    #[inline]
    fn l1_hit(&self, key: &[u8], now: u64) -> std::result::Result<Entry, bool> {
        let e = self.l1.lookup(key, now)?;
        self.hits.fetch_add(1, Ordering::Relaxed);
        Ok(e)
    }

    /// Lazy expiry: drops `key`'s expired entry (if still so) and reports it.
    #[cold]
    fn reclaim_expired(&self, key: &[u8], now: u64) {
        if let Some(key) = self.l1.reclaim_expired(key, now) {
            self.report_expired(key);
        }
    }

    /// Counts an L1 miss and answers it when no store needs asking: a
    /// pure-cache namespace, or a key the write-back queue holds or the key
    /// filter rules out. `None`: [`Core::load_below_l1`] must ask the stores.
    /// `expired`: the lookup found an expired entry, which lazy expiry
    /// drops here (a miss on no entry costs nothing more).
    fn l1_miss_known(&self, key: &[u8], now: u64, expired: bool) -> Option<Option<Entry>> {
        self.misses.fetch_add(1, Ordering::Relaxed);
        if expired {
            self.reclaim_expired(key, now);
        }
        let ns = self.namespace_of(key).1;
        if ns.cfg.stores.is_empty() {
            return Some(None);
        }
        // Without a filter the queue is looked at under the load's flight.
        if ns.filters.is_empty() {
            return None;
        }
        let known = ns.known_without_stores(key, now);
        if matches!(known, Some(None)) {
            self.lookups_skipped.fetch_add(1, Ordering::Relaxed);
        }
        known
    }

    /// Tells the expiry listeners that want it (usually none) of a key a
    /// read found expired and dropped: lazy expiry, reported as the active
    /// expiry task reports its keys.
    #[cold]
    fn report_expired(&self, key: Bytes) {
        let listeners = self.expiry_listeners.wanting();
        for listener in &listeners {
            listener.expired(std::slice::from_ref(&key));
        }
    }

    /// [`Core::read`] once L1 has missed and [`Core::l1_miss_known`] could
    /// not answer: the lower tiers, with request coalescing.
    pub(crate) async fn load_below_l1(&self, key: &Bytes) -> Result<Option<Entry>> {
        loop {
            match self.flights.begin(key) {
                Role::Leader(guard) => {
                    let r = self.load_one(key).await;
                    if let Ok((Some(e), true)) = &r {
                        if !guard.flight().is_invalidated() {
                            self.l1.fill(key.clone(), e.clone());
                        }
                    }
                    let r = r.map(|(e, _)| e);
                    guard.finish(r.clone());
                    return r.map_err(Into::into);
                }
                Role::Follower(flight) => {
                    if let Some(r) = follow(&flight).await {
                        return r.map_err(Into::into);
                    }
                }
            }
        }
    }

    /// Batched read: L1 first, then per namespace one `get_many` per store
    /// for the keys still missing (coalesced with concurrent single reads).
    async fn read_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>> {
        self.read_many_at(keys, now_ms()).await
    }

    /// [`Core::read_many`], checking expiry against `now`.
    async fn read_many_at(&self, keys: &[Bytes], now: u64) -> Result<Vec<Option<Entry>>> {
        let mut out: Vec<Option<Entry>> = vec![None; keys.len()];
        let mut missing: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, k) in keys.iter().enumerate() {
            match self.l1_hit(k, now) {
                Ok(e) => out[i] = Some(e),
                Err(expired) => match self.l1_miss_known(k, now, expired) {
                    Some(known) => out[i] = known,
                    None => missing.entry(self.namespace_of(k).0).or_default().push(i),
                },
            }
        }
        for (ns, idxs) in missing {
            let ns = &self.namespaces[ns];
            let mut leaders = Vec::new();
            let mut followers = Vec::new();
            for i in idxs {
                match self.flights.begin(&keys[i]) {
                    Role::Leader(g) => leaders.push((i, g)),
                    Role::Follower(f) => followers.push((i, f)),
                }
            }
            // Dirty keys answer from the write-back queue.
            if let Some(wb) = &ns.wb {
                let mut rest = Vec::with_capacity(leaders.len());
                for (i, g) in leaders {
                    match wb.lookup(&keys[i]) {
                        Some(dirty) => {
                            let v = dirty.filter(|e| !e.is_expired_at(now));
                            out[i] = v.clone();
                            g.finish(Ok(v));
                        }
                        None => rest.push((i, g)),
                    }
                }
                leaders = rest;
            }
            for (depth, store) in ns.cfg.stores.iter().enumerate() {
                if leaders.is_empty() {
                    break;
                }
                let batch: Vec<Bytes> = leaders.iter().map(|(i, _)| keys[*i].clone()).collect();
                let found = match store.get_many(&batch).await {
                    Ok(f) => f,
                    Err(e) => {
                        for (_, g) in leaders {
                            g.finish(Err(e.clone()));
                        }
                        return Err(e.into());
                    }
                };
                let mut rest = Vec::with_capacity(leaders.len());
                let mut fills = Vec::new();
                for ((i, g), f) in leaders.into_iter().zip(found) {
                    match f.filter(|e| !e.is_expired_at(now)) {
                        Some(mut e) => {
                            stamp_loaded(&mut e);
                            if !g.flight().is_invalidated() {
                                self.l1.fill(keys[i].clone(), e.clone());
                            }
                            fills.push((keys[i].clone(), e.clone()));
                            out[i] = Some(e.clone());
                            g.finish(Ok(Some(e)));
                        }
                        None => rest.push((i, g)),
                    }
                }
                fill_upper_stores(&ns.cfg.stores[..depth], &fills).await;
                leaders = rest;
            }
            for (_, g) in leaders {
                g.finish(Ok(None));
            }
            for (i, f) in followers {
                out[i] = match follow(&f).await {
                    Some(r) => r?,
                    None => self.read(&keys[i]).await?,
                };
            }
        }
        Ok(out)
    }
}

/// Gives an entry read from a store a cas unique: stores do not keep them
/// (like memcached, uniques do not survive a restart or an eviction).
fn stamp_loaded(e: &mut Entry) {
    if e.cas == 0 {
        e.cas = next_cas();
    }
}

/// Copies entries found deeper into the stores above (best effort: they
/// are caches; the value is already answered).
async fn fill_upper_stores(upper: &[Arc<dyn Store>], entries: &[(Bytes, Entry)]) {
    if entries.is_empty() {
        return;
    }
    for store in upper {
        if let Err(e) = store.set_many(entries).await {
            tracing::debug!(error = %e, "filling an upper store failed");
        }
    }
}
