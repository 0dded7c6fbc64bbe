//! [`NullStore`]: a store that keeps nothing.
//!
//! Useful as a placeholder system of record (a pure memory cache that should
//! still go through the store plumbing) and in benchmarks that measure the
//! engine without any backend cost.

use async_trait::async_trait;
use bytes::Bytes;
use tiercache_engine::{Entry, Mutation, Store, StoreError};

/// Accepts every write, finds nothing, counts zero.
///
/// ```
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// use tiercache_engine::{Entry, Store};
/// let store = tiercache_stores::NullStore::new("void");
/// store.set_many(&[("k".into(), Entry::new("v"))]).await.unwrap();
/// assert_eq!(store.get_many(&["k".into()]).await.unwrap(), vec![None]);
/// assert_eq!(store.count().await.unwrap(), 0);
/// # });
/// ```
#[derive(Clone, Debug)]
pub struct NullStore {
    name: String,
}

impl NullStore {
    /// A null store called `name` (used in errors and metrics, like any store).
    pub fn new(name: impl Into<String>) -> Self {
        NullStore { name: name.into() }
    }
}

#[async_trait]
impl Store for NullStore {
    fn name(&self) -> &str {
        &self.name
    }

    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError> {
        Ok(vec![None; keys.len()])
    }

    async fn set_many(&self, _entries: &[(Bytes, Entry)]) -> Result<(), StoreError> {
        Ok(())
    }

    async fn delete_many(&self, _keys: &[Bytes]) -> Result<(), StoreError> {
        Ok(())
    }

    async fn apply(&self, _batch: &[Mutation]) -> Result<(), StoreError> {
        Ok(())
    }

    async fn count(&self) -> Result<u64, StoreError> {
        Ok(0)
    }

    async fn clear(&self) -> Result<(), StoreError> {
        Ok(())
    }

    async fn scan_keys(
        &self,
        _start: std::ops::Bound<&[u8]>,
        _prefix: &[u8],
        _limit: usize,
        _now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        Ok(Vec::new())
    }

    async fn purge_expired(&self, _now_ms: u64) -> Result<u64, StoreError> {
        Ok(0)
    }
}
