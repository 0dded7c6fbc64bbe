//! [`TimeoutStore`]: a per-operation time limit around any store (the
//! `timeout` key every store type takes).
//!
//! A store that hangs (a half-open TCP connection, a locked table) is, for
//! its callers, a store that failed: with a limit the caller gets a
//! [`StoreError`] naming the store and the limit, and a combinator above it
//! (a buffer's primary, a multi's child) can fail over or catch up later.
//!
//! When the limit passes, the inner operation's future is dropped. Stores
//! must therefore tolerate cancellation the way they tolerate a dropped
//! connection: a write that timed out may or may not have happened (every
//! [`Store::apply`] is idempotent, so retrying it is safe).

use crate::replay::{LogPosition, Logged, ReplayLog};
use async_trait::async_trait;
use bytes::Bytes;
use std::future::Future;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::{Entry, KeyStats, Mutation, Store, StoreError};

/// Wraps a store so that every operation fails after `limit`.
///
/// ```
/// use std::{sync::Arc, time::Duration};
/// use tiercache_engine::{testing::MemoryStore, Entry, Store};
/// use tiercache_stores::TimeoutStore;
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let store = TimeoutStore::new(Arc::new(MemoryStore::new("m")), Duration::from_millis(250));
/// store.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap();
/// assert_eq!(store.name(), "m");
/// assert_eq!(store.limit(), Duration::from_millis(250));
/// # });
/// ```
pub struct TimeoutStore<S: ?Sized> {
    inner: Arc<S>,
    limit: Duration,
}

impl<S: Store + ?Sized> TimeoutStore<S> {
    /// `inner`, whose operations now fail after `limit`.
    pub fn new(inner: Arc<S>, limit: Duration) -> Self {
        TimeoutStore { inner, limit }
    }

    /// The time limit of each operation.
    pub fn limit(&self) -> Duration {
        self.limit
    }

    /// The wrapped store.
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    async fn run<T>(
        &self,
        op: &str,
        fut: impl Future<Output = Result<T, StoreError>>,
    ) -> Result<T, StoreError> {
        match tokio::time::timeout(self.limit, fut).await {
            Ok(r) => r,
            Err(_) => Err(StoreError::new(
                self.inner.name(),
                format!(
                    "{op} timed out after {:?} (the store's `timeout`)",
                    self.limit
                ),
            )),
        }
    }
}

#[async_trait]
impl<S: Store + ?Sized> Store for TimeoutStore<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn exclusive(&self) -> bool {
        self.inner.exclusive()
    }
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        self.run("get", self.inner.get_many(keys)).await
    }
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        self.run("set", self.inner.set_many(entries)).await
    }
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
        self.run("delete", self.inner.delete_many(keys)).await
    }
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        self.run("apply", self.inner.apply(batch)).await
    }
    async fn count(&self) -> Result<u64, StoreError> {
        self.run("count", self.inner.count()).await
    }
    async fn clear(&self) -> Result<(), StoreError> {
        self.run("clear", self.inner.clear()).await
    }
    async fn scan_keys(
        &self,
        start: Bound<&[u8]>,
        prefix: &[u8],
        limit: usize,
        now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        self.run("scan", self.inner.scan_keys(start, prefix, limit, now_ms))
            .await
    }
    async fn key_stats(&self, now_ms: u64) -> Result<KeyStats, StoreError> {
        self.run("key stats", self.inner.key_stats(now_ms)).await
    }
    async fn purge_expired(&self, now_ms: u64) -> Result<u64, StoreError> {
        self.run("purge", self.inner.purge_expired(now_ms)).await
    }
}

#[async_trait]
impl<S: ReplayLog + ?Sized> ReplayLog for TimeoutStore<S> {
    async fn lookup(&self, keys: &[Bytes]) -> Result<Vec<Logged>, StoreError> {
        self.run("log lookup", self.inner.lookup(keys)).await
    }
    async fn read_from(
        &self,
        from: LogPosition,
        max_records: usize,
    ) -> Result<(Vec<Mutation>, LogPosition), StoreError> {
        // Reading the log back is the replay's own pace; a slow disk is not a
        // failed primary, so only the caller's budget applies.
        self.inner.read_from(from, max_records).await
    }
    fn logged(&self) -> u64 {
        self.inner.logged()
    }
    async fn discard(&self) -> Result<(), StoreError> {
        self.inner.discard().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiercache_engine::testing::MemoryStore;

    /// A store whose every call takes `delay`.
    struct Slow(MemoryStore, Duration);

    #[async_trait]
    impl Store for Slow {
        fn name(&self) -> &str {
            self.0.name()
        }
        async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
            tokio::time::sleep(self.1).await;
            self.0.get_many(keys).await
        }
        async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
            tokio::time::sleep(self.1).await;
            self.0.set_many(entries).await
        }
        async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError> {
            self.0.delete_many(keys).await
        }
        async fn count(&self) -> Result<u64, StoreError> {
            self.0.count().await
        }
        async fn clear(&self) -> Result<(), StoreError> {
            self.0.clear().await
        }
    }

    #[tokio::test]
    async fn a_slow_operation_fails_naming_the_store_and_the_limit() {
        let slow = Slow(MemoryStore::new("slowpoke"), Duration::from_millis(300));
        let store = TimeoutStore::new(Arc::new(slow), Duration::from_millis(50));
        let err = store.get_many(&["k".into()]).await.unwrap_err();
        assert_eq!(err.store, "slowpoke");
        assert!(err.message.contains("timed out after 50ms"), "{err}");
        // Fast operations pass through.
        store.delete_many(&["k".into()]).await.unwrap();
        assert_eq!(store.count().await.unwrap(), 0);
    }

    #[tokio::test]
    async fn conformance() {
        let store = TimeoutStore::new(Arc::new(MemoryStore::new("t")), Duration::from_secs(5));
        tiercache_engine::testing::conformance::check_store(
            &store,
            tiercache_engine::testing::conformance::Capabilities::FULL,
        )
        .await;
    }
}
