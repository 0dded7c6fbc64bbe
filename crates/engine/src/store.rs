//! The contract every backend (SQLite, Redis, ...) fulfils.

use crate::entry::Entry;
use async_trait::async_trait;
use bytes::Bytes;
use std::ops::Bound;

/// One change in a batch handed to [`Store::apply`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Mutation {
    /// Insert or replace `key` with `entry`.
    Set(Bytes, Entry),
    /// Remove `key` (a no-op when absent).
    Delete(Bytes),
}

impl Mutation {
    /// A `set_many` batch as mutations, for stores whose writes all go
    /// through one `apply`-like path.
    ///
    /// ```
    /// use tiercache_engine::{Entry, Mutation};
    /// let m = Mutation::sets(&[("k".into(), Entry::new("v"))]);
    /// assert_eq!(m, vec![Mutation::Set("k".into(), Entry::new("v"))]);
    /// assert_eq!(Mutation::deletes(&["k".into()]), vec![Mutation::Delete("k".into())]);
    /// ```
    pub fn sets(entries: &[(Bytes, Entry)]) -> Vec<Mutation> {
        entries
            .iter()
            .map(|(k, e)| Mutation::Set(k.clone(), e.clone()))
            .collect()
    }

    /// A `delete_many` batch as mutations.
    pub fn deletes(keys: &[Bytes]) -> Vec<Mutation> {
        keys.iter().map(|k| Mutation::Delete(k.clone())).collect()
    }

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

/// Counts over a set of live keys (`DBSIZE`, `INFO keyspace`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeyStats {
    /// Live keys.
    pub keys: u64,
    /// Live keys that have an expiry.
    pub expires: u64,
    /// Average remaining time to live of the keys that have an expiry, in
    /// milliseconds (0 when none has).
    pub avg_ttl_ms: u64,
}

impl KeyStats {
    /// The stats of the union of two disjoint key sets.
    pub fn merge(self, other: KeyStats) -> KeyStats {
        let expires = self.expires + other.expires;
        let avg_ttl_ms = if expires == 0 {
            0
        } else {
            ((self.avg_ttl_ms as u128 * self.expires as u128
                + other.avg_ttl_ms as u128 * other.expires as u128)
                / expires as u128) as u64
        };
        KeyStats {
            keys: self.keys + other.keys,
            expires,
            avg_ttl_ms,
        }
    }
}

/// True when `key` lies in a key listing that starts at `start` (byte
/// order) and keeps only keys beginning with `prefix`: the filter every
/// [`Store::scan_keys`] applies.
///
/// ```
/// use std::ops::Bound;
/// use tiercache_engine::store::in_scan_range;
/// assert!(in_scan_range(b"user:2", Bound::Excluded(b"user:1"), b"user:"));
/// assert!(!in_scan_range(b"user:1", Bound::Excluded(b"user:1"), b"user:"));
/// assert!(!in_scan_range(b"zz", Bound::Unbounded, b"user:"));
/// ```
pub fn in_scan_range(key: &[u8], start: Bound<&[u8]>, prefix: &[u8]) -> bool {
    key.starts_with(prefix)
        && match start {
            Bound::Unbounded => true,
            Bound::Included(s) => key >= s,
            Bound::Excluded(s) => key > s,
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

    /// True when nothing but this engine writes the store (tiercache owns
    /// it, like the embedded SQLite file in its data dir). A namespace whose
    /// stores are all exclusive answers GETs of keys it never wrote and did
    /// not find at start from memory, without asking the stores. The default
    /// is false: other clients may write it.
    fn exclusive(&self) -> bool {
        false
    }

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

    /// Up to `limit` live keys at `now_ms`, in byte order, from `start` on,
    /// keeping only those that begin with `prefix` (see [`in_scan_range`]).
    /// Fewer than `limit` keys means there are no more. `SCAN` and `KEYS`
    /// page through the system of record with this.
    ///
    /// The default says the store cannot list its keys; every store that
    /// can be a system of record should implement it.
    async fn scan_keys(
        &self,
        _start: Bound<&[u8]>,
        _prefix: &[u8],
        _limit: usize,
        _now_ms: u64,
    ) -> Result<Vec<Bytes>, StoreError> {
        Err(StoreError::new(
            self.name(),
            "this store cannot list its keys (needed by SCAN and KEYS)",
        ))
    }

    /// Key counts at `now_ms`: live keys, how many have an expiry, and
    /// their average remaining TTL. The default knows only [`Store::count`]
    /// and reports no expiring keys; stores that keep expiries should
    /// override it.
    async fn key_stats(&self, _now_ms: u64) -> Result<KeyStats, StoreError> {
        Ok(KeyStats {
            keys: self.count().await?,
            ..KeyStats::default()
        })
    }

    /// Physically removes expired entries; returns how many. Stores that expire
    /// on their own (Redis, memcached) keep the default no-op.
    async fn purge_expired(&self, _now_ms: u64) -> Result<u64, StoreError> {
        Ok(0)
    }
}
