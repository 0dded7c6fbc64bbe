//! The engine: read path, write paths, sessions. (API stub; bodies in progress.)

use crate::entry::Entry;
use crate::error::Result;
use crate::namespace::NamespaceConfig;
use bytes::Bytes;
use std::path::{Path, PathBuf};

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
    /// Return the previous entry (`GET` option).
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
}

/// Builds an [`Engine`].
pub struct EngineBuilder {
    pub(crate) data_dir: PathBuf,
    pub(crate) memory_bytes: u64,
    pub(crate) namespaces: Vec<NamespaceConfig>,
}

impl EngineBuilder {
    /// Sets the memory tier's byte bound.
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = bytes;
        self
    }
    /// Adds a namespace.
    pub fn namespace(mut self, ns: NamespaceConfig) -> Self {
        self.namespaces.push(ns);
        self
    }
    /// Opens journals, replays them, starts background tasks.
    pub async fn build(self) -> Result<Engine> {
        todo!()
    }
}

/// The tiered cache.
pub struct Engine {}

impl Engine {
    /// Starts building an engine whose journals live under `data_dir`.
    pub fn builder(data_dir: impl AsRef<Path>) -> EngineBuilder {
        EngineBuilder { data_dir: data_dir.as_ref().to_path_buf(), memory_bytes: 256 << 20, namespaces: Vec::new() }
    }
    /// A session whose writes are made durable together by [`Session::commit`].
    pub fn session(&self) -> Session<'_> {
        Session { engine: self, lsn: Vec::new() }
    }
    /// Reads one key.
    pub async fn get(&self, key: &[u8]) -> Result<Option<Entry>> {
        self.session().get(key).await
    }
    /// Writes one key with the namespace default TTL; durable on return.
    pub async fn set(&self, key: impl Into<Bytes>, value: impl Into<Bytes>) -> Result<()> {
        let mut s = self.session();
        s.set(key.into(), value.into(), SetOptions::default()).await?;
        s.commit().await
    }
    /// Deletes keys; returns how many existed. Durable on return.
    pub async fn delete(&self, keys: &[Bytes]) -> Result<u64> {
        let mut s = self.session();
        let n = s.delete_many(keys).await?;
        s.commit().await?;
        Ok(n)
    }
    /// Returns the cached value or runs `loader` once for all concurrent callers.
    pub async fn get_or_load<F, Fut>(&self, _key: &[u8], _loader: F) -> Result<Option<Entry>>
    where
        F: FnOnce() -> Fut,
        Fut: std::future::Future<Output = Result<Option<Entry>>>,
    {
        todo!()
    }
    /// Counters.
    pub fn stats(&self) -> EngineStats {
        todo!()
    }
    /// Flushes all write-back data to the stores and stops background tasks.
    pub async fn shutdown(&self) -> Result<()> {
        todo!()
    }
}

/// A sequence of operations whose write-back journal appends are made
/// durable together by [`Session::commit`] (group commit). Protocol servers
/// run each pipelined batch in one session and commit before replying.
pub struct Session<'a> {
    engine: &'a Engine,
    lsn: Vec<(usize, u64)>,
}

impl Session<'_> {
    /// Reads one key.
    pub async fn get(&mut self, _key: &[u8]) -> Result<Option<Entry>> {
        let _ = (&self.engine, &self.lsn);
        todo!()
    }
    /// Reads many keys; one slot per key in input order.
    pub async fn get_many(&mut self, _keys: &[Bytes]) -> Result<Vec<Option<Entry>>> {
        todo!()
    }
    /// Writes one key.
    pub async fn set(&mut self, _key: Bytes, _value: Bytes, _opts: SetOptions) -> Result<SetOutcome> {
        todo!()
    }
    /// Writes many keys (their expiry as given; `None` never expires).
    pub async fn set_many(&mut self, _entries: Vec<(Bytes, Entry)>) -> Result<()> {
        todo!()
    }
    /// Deletes keys; returns how many existed.
    pub async fn delete_many(&mut self, _keys: &[Bytes]) -> Result<u64> {
        todo!()
    }
    /// Counts how many of `keys` exist (a key named twice counts twice).
    pub async fn exists_many(&mut self, _keys: &[Bytes]) -> Result<u64> {
        todo!()
    }
    /// Sets (`Some(unix_ms)`) or removes (`None`) a key's expiry; an expiry
    /// in the past deletes the key. Returns whether the key existed.
    pub async fn expire(&mut self, _key: &[u8], _at: Option<u64>) -> Result<bool> {
        todo!()
    }
    /// Adds `delta` to the decimal integer stored at `key` (absent = 0).
    pub async fn incr_by(&mut self, _key: Bytes, _delta: i64) -> Result<i64> {
        todo!()
    }
    /// Number of live keys across all namespaces.
    pub async fn dbsize(&mut self) -> Result<u64> {
        todo!()
    }
    /// Removes every key from every tier.
    pub async fn flush_all(&mut self) -> Result<()> {
        todo!()
    }
    /// Makes every write of this session durable (journal appended and
    /// written/fsynced per policy). Call before acknowledging.
    pub async fn commit(&mut self) -> Result<()> {
        todo!()
    }
}
