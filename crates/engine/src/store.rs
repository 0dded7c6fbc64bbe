//! The contract every backend (SQLite, Redis, ...) fulfils.

use crate::entry::Entry;
use async_trait::async_trait;
use bytes::Bytes;

/// One change in a batch handed to [`Store::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Insert or replace `key` with `entry`.
    Set(Bytes, Entry),
    /// Remove `key` (a no-op when absent).
    Delete(Bytes),
}

impl Mutation {
    /// The key this mutation touches.
    pub fn key(&self) -> &Bytes {
        match self {
            Mutation::Set(k, _) | Mutation::Delete(k) => k,
        }
    }
}

/// An error from a store, with the store's name and what failed.
#[derive(Clone, Debug, thiserror::Error)]
#[error("store '{store}': {message}")]
pub struct StoreError {
    /// The configured name of the store at fault.
    pub store: String,
    /// What went wrong, including the underlying cause.
    pub message: String,
}

impl StoreError {
    /// Builds an error for `store` from any displayable cause.
    pub fn new(store: impl Into<String>, cause: impl std::fmt::Display) -> Self {
        StoreError {
            store: store.into(),
            message: cause.to_string(),
        }
    }
}

/// A backend below the memory tier. The last store of a namespace is its system of record.
///
/// Every operation is batched: a store answers many keys in one round trip
/// (SQL `IN (...)`, Redis `MGET`, memcached multi-get). Stores must honour
/// [`Entry::expires_at`]: an expired entry is never returned.
///
/// Implementations must be safe to call concurrently; `apply` must be atomic
/// enough that a failed call can be retried as a whole (it is idempotent:
/// sets are upserts, deletes of absent keys are no-ops).
#[async_trait]
pub trait Store: Send + Sync + 'static {
    /// The configured name, used in errors and metrics.
    fn name(&self) -> &str;

    /// Looks up `keys`; the answer has one slot per key, in input order.
    async fn get_many(&self, keys: &[Bytes]) -> Result<Vec<Option<Entry>>, StoreError>;

    /// Upserts every entry.
    async fn set_many(&self, entries: &[(Bytes, Entry)]) -> Result<(), StoreError>;

    /// Removes every key (absent keys are ignored).
    async fn delete_many(&self, keys: &[Bytes]) -> Result<(), StoreError>;

    /// Applies a batch of sets and deletes. The write-back flusher hands each
    /// key at most once per batch, so order between keys does not matter.
    /// Stores that can should do this in one transaction.
    async fn apply(&self, batch: &[Mutation]) -> Result<(), StoreError> {
        let mut sets = Vec::new();
        let mut deletes = Vec::new();
        for m in batch {
            match m {
                Mutation::Set(k, e) => sets.push((k.clone(), e.clone())),
                Mutation::Delete(k) => deletes.push(k.clone()),
            }
        }
        if !sets.is_empty() {
            self.set_many(&sets).await?;
        }
        if !deletes.is_empty() {
            self.delete_many(&deletes).await?;
        }
        Ok(())
    }

    /// Number of live (unexpired) keys.
    async fn count(&self) -> Result<u64, StoreError>;

    /// Removes every key.
    async fn clear(&self) -> Result<(), StoreError>;

    /// Physically removes expired entries; returns how many. Stores that expire
    /// on their own (Redis, memcached) keep the default no-op.
    async fn purge_expired(&self, _now_ms: u64) -> Result<u64, StoreError> {
        Ok(0)
    }
}
