//! Stores for tests and examples: [`MemoryStore`], a `HashMap` behind the
//! [`Store`] trait, and [`FlakyStore`], which fails on demand so tests can
//! show that nothing acknowledged is lost while a store is down;
//! [`conformance::check_store`], the [`Store`] contract every backend's
//! tests run.

pub mod conformance;

use crate::entry::{now_ms, Entry};
use crate::store::{in_scan_range, KeyStats, Mutation, Store, StoreError};
use async_trait::async_trait;
use bytes::Bytes;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// An in-memory [`Store`]. Cheap, exact, and inspectable in tests.
///
/// ```
/// use tiercache_engine::{testing::MemoryStore, Entry, Store};
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let s = MemoryStore::new("m");
/// s.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap();
/// assert_eq!(s.snapshot().get(b"k".as_slice()).unwrap().value, "v");
/// # });
/// ```
#[derive(Default)]
pub struct MemoryStore {
    name: String,
    map: Mutex<HashMap<Bytes, Entry>>,
    /// Number of `apply`/`set_many`/`delete_many` calls, to observe batching.
    pub write_calls: AtomicU64,
    /// Keys looked up through `get_many`, to observe lookups the engine skipped.
    pub keys_read: AtomicU64,
    exclusive: bool,
}

impl MemoryStore {
    /// An empty store named `name`.
    pub fn new(name: &str) -> Self {
        MemoryStore {
            name: name.to_string(),
            ..Default::default()
        }
    }

    /// An empty store that says only the engine writes it
    /// ([`Store::exclusive`]), so the engine may answer misses without it.
    pub fn new_exclusive(name: &str) -> Self {
        MemoryStore {
            exclusive: true,
            ..Self::new(name)
        }
    }

    /// Number of stored entries, expired ones included.
    pub fn len(&self) -> usize {
        self.map.lock().len()
    }

    /// True when nothing is stored.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A copy of the contents.
    pub fn snapshot(&self) -> HashMap<Bytes, Entry> {
        self.map.lock().clone()
    }
}

#[async_trait]
impl Store for MemoryStore {
    fn name(&self) -> &str {
        &self.name
    }

    fn exclusive(&self) -> bool {
        self.exclusive
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.keys_read
            .fetch_add(keys.len() as u64, Ordering::Relaxed);
        let now = now_ms();
        let map = self.map.lock();
        Ok(keys
            .iter()
            .map(|k| map.get(k).filter(|e| !e.is_expired_at(now)).cloned())
            .collect())
    }

    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.write_calls.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.lock();
        for (k, e) in entries {
            map.insert(k.clone(), e.clone());
        }
        Ok(())
    }

    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.write_calls.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.lock();
        for k in keys {
            map.remove(k);
        }
        Ok(())
    }

    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.write_calls.fetch_add(1, Ordering::Relaxed);
        let mut map = self.map.lock();
        for m in batch {
            match m {
                Mutation::Set(k, e) => {
                    map.insert(k.clone(), e.clone());
                }
                Mutation::Delete(k) => {
                    map.remove(k);
                }
            }
        }
        Ok(())
    }

    async fn count(&self) -> Result<u64, StoreError> {
        let now = now_ms();
        Ok(self
            .map
            .lock()
            .values()
            .filter(|e| !e.is_expired_at(now))
            .count() as u64)
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.map.lock().clear();
        Ok(())
    }

    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        let mut keys: Vec<Bytes> = self
            .map
            .lock()
            .iter()
            .filter(|(k, e)| !e.is_expired_at(now) && in_scan_range(k, start, prefix))
            .map(|(k, _)| k.clone())
            .collect();
        keys.sort_unstable();
        keys.truncate(limit);
        Ok(keys)
    }

    async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        let map = self.map.lock();
        let mut stats = KeyStats::default();
        let mut ttl_sum: u128 = 0;
        for e in map.values().filter(|e| !e.is_expired_at(now)) {
            stats.keys += 1;
            if let Some(ttl) = e.ttl_ms_at(now) {
                stats.expires += 1;
                ttl_sum += ttl as u128;
            }
        }
        if stats.expires > 0 {
            stats.avg_ttl_ms = (ttl_sum / stats.expires as u128) as u64;
        }
        Ok(stats)
    }

    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        let mut map = self.map.lock();
        let before = map.len();
        map.retain(|_, e| !e.is_expired_at(now));
        Ok((before - map.len()) as u64)
    }
}

/// Wraps a store and fails every call while switched off, like a database
/// that went away, and can make writes slow. Counts the failures it produced.
pub struct FlakyStore<S> {
    inner: Arc<S>,
    down: AtomicBool,
    write_delay_us: AtomicU64,
    /// While set, each write waits for a permit of `write_permits`.
    gated: AtomicBool,
    write_permits: tokio::sync::Semaphore,
    /// How many calls failed because the store was down.
    pub failures: AtomicU64,
}

impl<S: Store> FlakyStore<S> {
    /// Wraps `inner`, initially up.
    pub fn new(inner: Arc<S>) -> Self {
        FlakyStore {
            inner,
            down: AtomicBool::new(false),
            write_delay_us: AtomicU64::new(0),
            gated: AtomicBool::new(false),
            write_permits: tokio::sync::Semaphore::new(0),
            failures: AtomicU64::new(0),
        }
    }

    /// Makes every write (`set_many`, `delete_many`, `apply`) take `delay`
    /// first, like a slow network store.
    pub fn set_write_delay(&self, delay: std::time::Duration) {
        self.write_delay_us
            .store(delay.as_micros() as u64, Ordering::SeqCst);
    }

    /// From now on every write waits until [`FlakyStore::allow_writes`]
    /// lets it through: a test can hold a flush between two of its batches.
    pub fn hold_writes(&self) {
        self.gated.store(true, Ordering::SeqCst);
    }

    /// Lets `n` held writes (present or future) through.
    pub fn allow_writes(&self, n: usize) {
        self.write_permits.add_permits(n);
    }

    async fn slow_write(&self) {
        if self.gated.load(Ordering::SeqCst) {
            let permit = self.write_permits.acquire().await;
            permit.expect("the semaphore is never closed").forget();
        }
        let us = self.write_delay_us.load(Ordering::SeqCst);
        if us > 0 {
            tokio::time::sleep(std::time::Duration::from_micros(us)).await;
        }
    }

    /// Switches the store down (`true`) or back up.
    pub fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    fn check(&self) -> Result<(), StoreError> {
        if self.down.load(Ordering::SeqCst) {
            self.failures.fetch_add(1, Ordering::Relaxed);
            Err(StoreError::new(
                self.inner.name(),
                "connection refused (simulated outage)",
            ))
        } else {
            Ok(())
        }
    }
}

#[async_trait]
impl<S: Store> Store for FlakyStore<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn exclusive(&self) -> bool {
        self.inner.exclusive()
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.check()?;
        self.inner.get_many(keys).await
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.check()?;
        self.slow_write().await;
        self.inner.set_many(entries).await
    }
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.check()?;
        self.slow_write().await;
        self.inner.delete_many(keys).await
    }
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.check()?;
        self.slow_write().await;
        self.inner.apply(batch).await
    }
    async fn count(&self) -> Result<u64, StoreError> {
        self.check()?;
        self.inner.count().await
    }
    async fn clear(&self) -> Result<(), StoreError> {
        self.check()?;
        self.inner.clear().await
    }
    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.check()?;
        self.inner.scan_keys(start, prefix, limit, now).await
    }
    async fn key_stats(&self, now: u64) -> Result<KeyStats, StoreError> {
        self.check()?;
        self.inner.key_stats(now).await
    }
    async fn purge_expired(&self, now: u64) -> Result<u64, StoreError> {
        self.check()?;
        self.inner.purge_expired(now).await
    }
}
