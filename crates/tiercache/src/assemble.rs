//! From a [`Config`] to a running [`Engine`]: builds each store once (a
//! store named by several namespaces is shared) and each namespace's tier
//! stack.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use tiercache_config::{Config, FsyncMode, StoreConfig, StoreRef};
use tiercache_engine::{
    Engine, EngineError, FsyncPolicy, NamespaceConfig, Store, StoreError, WriteMode,
};

/// Why a configuration could not be turned into an engine.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// A store type this build cannot run yet.
    #[error("store '{store}' has type '{kind}', which this build of tiercache cannot run yet (available: sqlite, null)")]
    Unsupported {
        /// The store's name or position.
        store: String,
        /// Its `type`.
        kind: String,
    },
    /// A store failed to open.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The engine failed to start (journal replay, ...).
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Builds the store described by `config`; relative paths are relative to
/// `data_dir`. `name` is used in errors and metrics.
pub fn build_store(
    name: &str,
    config: &StoreConfig,
    data_dir: &Path,
) -> Result<Arc<dyn Store>, AssembleError> {
    match config {
        StoreConfig::Sqlite(s) => {
            let path = data_dir.join(&s.path);
            Ok(Arc::new(tiercache_stores::SqliteStore::open(
                name, &path, &s.table,
            )?))
        }
        StoreConfig::Null(_) => Ok(Arc::new(tiercache_stores::NullStore::new(name))),
        other => Err(AssembleError::Unsupported {
            store: name.to_string(),
            kind: other.type_name().to_string(),
        }),
    }
}

/// Checks that every store the configuration uses can be built by this
/// build, without opening anything (for `check-config`).
pub fn check_supported(config: &Config) -> Result<(), AssembleError> {
    for (name, store) in &config.stores {
        match store {
            StoreConfig::Sqlite(_) | StoreConfig::Null(_) => {}
            other => {
                return Err(AssembleError::Unsupported {
                    store: name.clone(),
                    kind: other.type_name().to_string(),
                })
            }
        }
    }
    for (ns, cfg) in config.namespaces() {
        for (i, tier) in cfg.tiers.iter().enumerate() {
            if let StoreRef::Inline(store) = tier {
                if !matches!(**store, StoreConfig::Sqlite(_) | StoreConfig::Null(_)) {
                    return Err(AssembleError::Unsupported {
                        store: format!("namespace.{ns}.tiers[{i}]"),
                        kind: store.type_name().to_string(),
                    });
                }
            }
        }
    }
    Ok(())
}

/// The engine namespace (key prefix) of the HTTP cache's stored responses.
pub const HTTP_NAMESPACE: &str = "http:";

/// Opens every store and namespace of `config` and starts the engine
/// (replaying write-back journals under `data_dir`).
pub async fn open_engine(config: &Config, data_dir: &Path) -> Result<Engine, AssembleError> {
    let mut named: HashMap<String, Arc<dyn Store>> = HashMap::new();
    let mut builder = Engine::builder(data_dir).memory_bytes(config.memory.max_bytes);
    for (ns_name, ns) in config.namespaces() {
        let mut engine_ns = NamespaceConfig::new(ns_name, write_mode(ns.write))
            .ttl(ns.ttl)
            .flush(ns.flush_interval, ns.flush_batch)
            .fsync(fsync(ns.fsync));
        for (i, tier) in ns.tiers.iter().enumerate() {
            let store = match tier {
                StoreRef::Named(name) => match named.get(name) {
                    Some(s) => s.clone(),
                    None => {
                        let cfg = config
                            .store(name)
                            .expect("config validation resolves store names");
                        let s = build_store(name, cfg, data_dir)?;
                        named.insert(name.clone(), s.clone());
                        s
                    }
                },
                StoreRef::Inline(cfg) => {
                    build_store(&format!("namespace.{ns_name}.tiers[{i}]"), cfg, data_dir)?
                }
            };
            engine_ns = engine_ns.store(store);
        }
        builder = builder.namespace(engine_ns);
    }
    // `[http_cache] tiers`: stored responses get their own namespace (key
    // prefix `http:`), write-back like the default, unless the file
    // already defines one. Without `tiers` they live in `default`.
    if let Some(tiers) = &config.http_cache.tiers {
        if !config.namespaces.contains_key(HTTP_NAMESPACE) {
            let mut ns = NamespaceConfig::new(HTTP_NAMESPACE, WriteMode::Back);
            for (i, tier) in tiers.iter().enumerate() {
                let store = match tier {
                    StoreRef::Named(name) => match named.get(name) {
                        Some(s) => s.clone(),
                        None => {
                            let cfg = config
                                .store(name)
                                .expect("config validation resolves store names");
                            let s = build_store(name, cfg, data_dir)?;
                            named.insert(name.clone(), s.clone());
                            s
                        }
                    },
                    StoreRef::Inline(cfg) => {
                        build_store(&format!("http_cache.tiers[{i}]"), cfg, data_dir)?
                    }
                };
                ns = ns.store(store);
            }
            builder = builder.namespace(ns);
        }
    }
    Ok(builder.build().await?)
}

fn write_mode(m: tiercache_config::WriteMode) -> WriteMode {
    match m {
        tiercache_config::WriteMode::Through => WriteMode::Through,
        tiercache_config::WriteMode::Back => WriteMode::Back,
        tiercache_config::WriteMode::Around => WriteMode::Around,
    }
}

fn fsync(m: FsyncMode) -> FsyncPolicy {
    match m {
        FsyncMode::Always => FsyncPolicy::Always,
        FsyncMode::Everysec => FsyncPolicy::EverySec,
        FsyncMode::No => FsyncPolicy::No,
    }
}
