//! [`EngineBuilder`]: checks the namespaces, wraps exclusive stores in key
//! filters, opens and replays each write-back journal, and starts the
//! engine's background tasks.

use super::{spawn_background, Core, Engine, KeyLock, Namespace, KEY_LOCK_STRIPES};
use crate::error::{EngineError, Result};
use crate::keyfilter::{KeyFilter, RecordingStore};
use crate::load::Flights;
use crate::memory::MemoryTier;
use crate::namespace::{NamespaceConfig, NamespaceRouter, WriteMode};
use crate::patch::Patcher;
use crate::store::Store;
use crate::writeback::WriteBack;
use parking_lot::Mutex;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::Arc;
use std::time::Duration;

/// Builds an [`Engine`]: memory bound and namespaces, then [`EngineBuilder::build`].
pub struct EngineBuilder {
    pub(super) data_dir: PathBuf,
    pub(super) memory_bytes: u64,
    pub(super) namespaces: Vec<NamespaceConfig>,
    pub(super) backpressure_wait: Duration,
    pub(super) patcher: Option<Arc<dyn Patcher>>,
}

impl EngineBuilder {
    /// Sets the memory tier's byte bound (default 256 MiB).
    pub fn memory_bytes(mut self, bytes: u64) -> Self {
        self.memory_bytes = bytes;
        self
    }

    /// Adds a namespace. Without a `default` namespace, keys no prefix claims
    /// go to a pure in-memory `default`.
    pub fn namespace(mut self, ns: NamespaceConfig) -> Self {
        self.namespaces.push(ns);
        self
    }

    /// How long a write-back writer waits for the flusher when dirty data
    /// exceeds half the memory bound, before failing with
    /// [`EngineError::WriteBackFull`] (default 30 s).
    pub fn backpressure_wait(mut self, wait: Duration) -> Self {
        self.backpressure_wait = wait;
        self
    }

    /// Registers the [`Patcher`] that applies the patches of
    /// [`Change::Patch`](crate::Change::Patch) writes when a write-back
    /// journal is replayed; with one, those writes journal their patch
    /// instead of their whole value (see `crate::patch`). A journal holding
    /// patches does not open without one.
    pub fn patcher(mut self, patcher: Arc<dyn Patcher>) -> Self {
        self.patcher = Some(patcher);
        self
    }

    /// Opens and replays the write-back journals (under
    /// `DATA_DIR/journal/<namespace>`), then starts the background tasks.
    /// Must be called within a Tokio runtime.
    pub async fn build(mut self) -> Result<Engine> {
        let mut seen = std::collections::HashSet::new();
        for ns in &self.namespaces {
            if !seen.insert(ns.name.clone()) {
                return Err(EngineError::Config(format!(
                    "namespace '{}' is defined twice",
                    ns.name
                )));
            }
            if ns.name.is_empty() {
                return Err(EngineError::Config(
                    "a namespace prefix cannot be empty (use 'default')".into(),
                ));
            }
        }
        if !self.namespaces.iter().any(|n| n.name == "default") {
            self.namespaces
                .push(NamespaceConfig::new("default", WriteMode::Back));
        }
        let l1 = Arc::new(MemoryTier::new(self.memory_bytes));
        let mut namespaces = Vec::new();
        // Each exclusive store is wrapped once, whichever namespaces use it,
        // so store identity (SCAN, DBSIZE, purges dedupe by pointer) holds.
        // (the wrapped store's address, the wrapper, its filter)
        let mut wrapped_stores: Vec<(usize, Arc<dyn Store>, Arc<KeyFilter>)> = Vec::new();
        for mut cfg in self.namespaces {
            let all_exclusive = !cfg.stores.is_empty() && cfg.stores.iter().all(|s| s.exclusive());
            let mut filters = Vec::new();
            cfg.stores = cfg
                .stores
                .into_iter()
                .map(|s| {
                    if !s.exclusive() {
                        return s;
                    }
                    let addr = Arc::as_ptr(&s) as *const () as usize;
                    let (wrapped, filter) = match wrapped_stores.iter().find(|(a, _, _)| *a == addr)
                    {
                        Some((_, w, f)) => (w.clone(), f.clone()),
                        None => {
                            let f = KeyFilter::new();
                            let w = RecordingStore::wrap(s, f.clone());
                            wrapped_stores.push((addr, w.clone(), f.clone()));
                            (w, f)
                        }
                    };
                    filters.push(filter);
                    wrapped
                })
                .collect();
            // A filter answers only when every store of the namespace is
            // exclusive: a shared one may hold keys it never saw.
            if !all_exclusive {
                filters.clear();
            }
            let wb = if cfg.write_mode == WriteMode::Back && !cfg.stores.is_empty() {
                let dir = self
                    .data_dir
                    .join("journal")
                    .join(journal_dir_name(&cfg.name));
                let wb = WriteBack::open(
                    &dir,
                    cfg.fsync,
                    cfg.stores.clone(),
                    l1.clone(),
                    cfg.flush_batch,
                    cfg.flush_interval,
                    self.patcher.clone(),
                )
                .await?;
                Some(Arc::new(wb))
            } else {
                None
            };
            namespaces.push(Namespace { cfg, wb, filters });
        }
        let router =
            NamespaceRouter::new(&namespaces.iter().map(|n| n.cfg.clone()).collect::<Vec<_>>());
        let core = Arc::new(Core {
            l1,
            router,
            namespaces,
            flights: Flights::new(),
            key_locks: (0..KEY_LOCK_STRIPES).map(|_| KeyLock::new(())).collect(),
            hasher: Default::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            writes: AtomicU64::new(0),
            closing: AtomicBool::new(false),
            backpressure_wait: self.backpressure_wait,
            key_filters: wrapped_stores.into_iter().map(|(_, w, f)| (w, f)).collect(),
            lookups_skipped: AtomicU64::new(0),
            watches: Arc::default(),
            gate: Default::default(),
            expiry_listeners: Default::default(),
            active_expiry: AtomicBool::new(true),
        });
        let (stop, _) = tokio::sync::watch::channel(false);
        let tasks = spawn_background(&core, &stop);
        Ok(Engine {
            core,
            stop,
            tasks: Mutex::new(tasks),
        })
    }
}

/// A filesystem-safe, stable directory name for a namespace's journal.
fn journal_dir_name(name: &str) -> String {
    if name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
    {
        name.to_string()
    } else {
        let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
        format!("ns-{hex}")
    }
}
