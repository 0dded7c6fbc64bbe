//! From a [`Config`] to a running [`Engine`]: builds the store tree of
//! every namespace, recursively (combinators over stores, inline or by
//! name), and each namespace's tier stack.
//!
//! - A `[store.NAME]` is built once: every reference to `NAME` (namespace
//!   tiers, combinator children) shares one instance.
//! - Inline children are named after where they sit, for errors and
//!   metrics: `shared.primary`, `shards.buckets[1]`,
//!   `namespace.default.tiers[0].stores[2]`.
//! - A store with a `timeout` is wrapped in a [`TimeoutStore`].
//! - A buffer's secondary is built as a [`ReplayLog`] (a file store; the
//!   configuration checks guarantee it, and that it is not shared).
//!
//! Adding a store type: one arm in [`Assembler::build_one`] and its type
//! name in [`SUPPORTED`].

use std::collections::HashMap;
use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use tiercache_config::{Config, FsyncMode, RedisTarget, StoreConfig, StoreRef};
use tiercache_engine::{
    Engine, EngineError, FsyncPolicy, NamespaceConfig, Store, StoreError, WriteMode,
};
use tiercache_stores::{
    BucketStore, BufferOptions, BufferStore, FileStore, FileStoreOptions, MemcachedStore,
    MultiStore, NetworkStore, RedisStore, ReplayLog, TimeoutStore,
};

/// The store types this build can run.
pub const SUPPORTED: &[&str] = &[
    "sqlite",
    "postgres",
    "mysql",
    "redis",
    "memcached",
    "network",
    "file",
    "null",
    "buffer",
    "bucket",
    "multi",
];

/// Why a configuration could not be turned into an engine.
#[derive(Debug, thiserror::Error)]
pub enum AssembleError {
    /// A store type this build cannot run yet.
    #[error("store '{store}' has type '{kind}', which this build of tiercache cannot run yet (available: {})", SUPPORTED.join(", "))]
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

type Built<'s, T> = Pin<Box<dyn Future<Output = Result<T, AssembleError>> + Send + 's>>;

/// Builds stores from a configuration, each named store once.
pub struct Assembler<'a> {
    config: &'a Config,
    data_dir: &'a Path,
    named: HashMap<String, Arc<dyn Store>>,
}

impl<'a> Assembler<'a> {
    /// An assembler for `config`; relative paths are relative to `data_dir`.
    pub fn new(config: &'a Config, data_dir: &'a Path) -> Self {
        Assembler {
            config,
            data_dir,
            named: HashMap::new(),
        }
    }

    /// The store `r` refers to. `at` names an inline store (its position
    /// in the configuration); a named store is called by its name.
    pub fn store_ref<'s>(&'s mut self, r: &'a StoreRef, at: String) -> Built<'s, Arc<dyn Store>> {
        Box::pin(async move {
            match r {
                StoreRef::Inline(cfg) => self.build(at, cfg).await,
                StoreRef::Named(name) => self.named_store(name).await,
            }
        })
    }

    /// The `[store.NAME]` called `name`, built on first use.
    pub async fn named_store(&mut self, name: &str) -> Result<Arc<dyn Store>, AssembleError> {
        if let Some(s) = self.named.get(name) {
            return Ok(s.clone());
        }
        let cfg = self
            .config
            .store(name)
            .expect("config validation resolves store names");
        let s = self.build(name.to_owned(), cfg).await?;
        self.named.insert(name.to_owned(), s.clone());
        Ok(s)
    }

    /// Builds `cfg` as a store called `name`, children included, wrapped in
    /// its `timeout`.
    pub fn build<'s>(
        &'s mut self,
        name: String,
        cfg: &'a StoreConfig,
    ) -> Built<'s, Arc<dyn Store>> {
        Box::pin(async move {
            let store = self.build_one(&name, cfg).await?;
            Ok(match cfg.timeout() {
                Some(limit) if !applies_own_timeout(cfg) => {
                    Arc::new(TimeoutStore::new(store, limit)) as Arc<dyn Store>
                }
                _ => store,
            })
        })
    }

    async fn build_one(
        &mut self,
        name: &str,
        cfg: &'a StoreConfig,
    ) -> Result<Arc<dyn Store>, AssembleError> {
        Ok(match cfg {
            StoreConfig::Sqlite(s) => {
                let store = tiercache_stores::SqliteStore::open(
                    name,
                    &self.data_dir.join(&s.path),
                    &s.table,
                )?
                .write_nice(s.write_nice);
                Arc::new(if s.exclusive { store } else { store.shared() })
            }
            StoreConfig::Null(_) => Arc::new(tiercache_stores::NullStore::new(name)),
            StoreConfig::Postgres(s) => Arc::new(tiercache_stores::PostgresStore::new(
                name,
                &s.url,
                &s.table,
                sql_options(s),
            )?),
            StoreConfig::Mysql(s) => Arc::new(tiercache_stores::MysqlStore::new(
                name,
                &s.url,
                &s.table,
                sql_options(s),
            )?),
            StoreConfig::Redis(r) => Arc::new(match &r.target {
                RedisTarget::Url(url) => {
                    RedisStore::open(name, url, r.pool_size as usize, r.timeout)?
                }
                RedisTarget::Cluster(nodes) => RedisStore::open_cluster(name, nodes, r.timeout)?,
            }),
            StoreConfig::Memcached(m) => {
                Arc::new(MemcachedStore::open(name, &m.servers, m.timeout)?)
            }
            StoreConfig::Network(n) => Arc::new(NetworkStore::open(name, &n.url, n.timeout)?),
            StoreConfig::File(f) => Arc::new(self.file_store(name, f)?),
            StoreConfig::Buffer(b) => {
                let primary = self
                    .store_ref(&b.primary, format!("{name}.primary"))
                    .await?;
                let secondary = self.secondary(&b.secondary, format!("{name}.secondary"))?;
                let opts = BufferOptions {
                    max_queue_length: b.max_queue_length,
                    retry_interval: b.retry_interval,
                    retry_interval_range: b.retry_interval_range,
                };
                Arc::new(BufferStore::open(name, primary, secondary, opts).await?)
            }
            StoreConfig::Bucket(b) => {
                let mut buckets = Vec::with_capacity(b.buckets.len());
                for (i, r) in b.buckets.iter().enumerate() {
                    buckets.push(self.store_ref(r, format!("{name}.buckets[{i}]")).await?);
                }
                let hash = match b.hash {
                    tiercache_config::BucketHash::KeyHash => tiercache_stores::BucketHash::KeyHash,
                    tiercache_config::BucketHash::KeyModulo => {
                        tiercache_stores::BucketHash::KeyModulo
                    }
                };
                Arc::new(BucketStore::new(
                    name,
                    buckets,
                    hash,
                    b.delimiter.as_deref().map(str::as_bytes),
                )?)
            }
            StoreConfig::Multi(m) => {
                let mut stores = Vec::with_capacity(m.stores.len());
                for (i, r) in m.stores.iter().enumerate() {
                    stores.push(self.store_ref(r, format!("{name}.stores[{i}]")).await?);
                }
                let report = match m.report_success {
                    tiercache_config::ReportSuccess::All => tiercache_stores::ReportSuccess::All,
                    tiercache_config::ReportSuccess::Any => tiercache_stores::ReportSuccess::Any,
                };
                Arc::new(MultiStore::new(name, stores, report))
            }
        })
    }

    /// A buffer's secondary, as a log. Never shared, so built here even
    /// when named (the configuration checks that nothing else uses it).
    fn secondary(
        &mut self,
        r: &'a StoreRef,
        at: String,
    ) -> Result<Arc<dyn ReplayLog>, AssembleError> {
        let (name, cfg) = match r {
            StoreRef::Inline(cfg) => (at, &**cfg),
            StoreRef::Named(n) => (
                n.clone(),
                self.config
                    .store(n)
                    .expect("config validation resolves store names"),
            ),
        };
        let log = self.replay_log(&name, cfg)?;
        Ok(match cfg.timeout() {
            Some(limit) => Arc::new(TimeoutStore::new(log, limit)),
            None => log,
        })
    }

    fn replay_log(
        &self,
        name: &str,
        cfg: &StoreConfig,
    ) -> Result<Arc<dyn ReplayLog>, AssembleError> {
        match cfg {
            StoreConfig::File(f) => Ok(Arc::new(self.file_store(name, f)?)),
            other => Err(AssembleError::Store(StoreError::new(
                name,
                format!(
                    "a buffer's secondary must be a `file` store (it replays its writes in order), not `{}`",
                    other.type_name()
                ),
            ))),
        }
    }

    fn file_store(
        &self,
        name: &str,
        f: &tiercache_config::FileStore,
    ) -> Result<FileStore, AssembleError> {
        use tiercache_config::RotatePeriod as Config;
        use tiercache_stores::RotatePeriod;
        let opts = FileStoreOptions {
            base_filename: f.base_filename.clone(),
            rotate_period: match f.rotate_period {
                Config::Hourly => RotatePeriod::Hourly,
                Config::Daily => RotatePeriod::Daily,
                Config::Never => RotatePeriod::Never,
            },
            max_size: f.max_size,
            ..FileStoreOptions::default()
        };
        Ok(FileStore::open(name, &self.data_dir.join(&f.path), opts)?)
    }
}

/// Builds the store `store` (named `name`) of `config`, with its children;
/// relative paths are relative to `data_dir`. Named children are built
/// fresh: use one [`Assembler`] to share them across several calls.
pub async fn build_store(
    config: &Config,
    name: &str,
    store: &StoreConfig,
    data_dir: &Path,
) -> Result<Arc<dyn Store>, AssembleError> {
    Assembler::new(config, data_dir)
        .build(name.to_owned(), store)
        .await
}

/// Checks that every store the configuration uses, nested ones included,
/// can be built by this build, without opening anything (for
/// `check-config`).
pub fn check_supported(config: &Config) -> Result<(), AssembleError> {
    fn walk(at: &str, cfg: &StoreConfig) -> Result<(), AssembleError> {
        if !SUPPORTED.contains(&cfg.type_name()) {
            return Err(AssembleError::Unsupported {
                store: at.to_owned(),
                kind: cfg.type_name().to_owned(),
            });
        }
        let children: Vec<(String, &StoreRef)> = match cfg {
            StoreConfig::Buffer(b) => vec![
                (format!("{at}.primary"), &b.primary),
                (format!("{at}.secondary"), &b.secondary),
            ],
            StoreConfig::Bucket(b) => b
                .buckets
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("{at}.buckets[{i}]"), r))
                .collect(),
            StoreConfig::Multi(m) => m
                .stores
                .iter()
                .enumerate()
                .map(|(i, r)| (format!("{at}.stores[{i}]"), r))
                .collect(),
            _ => Vec::new(),
        };
        for (child_at, r) in children {
            // Named children are checked as named stores.
            if let StoreRef::Inline(c) = r {
                walk(&child_at, c)?;
            }
        }
        Ok(())
    }
    for (name, store) in &config.stores {
        walk(name, store)?;
    }
    for (ns, cfg) in config.namespaces() {
        for (i, tier) in cfg.tiers.iter().enumerate() {
            if let StoreRef::Inline(store) = tier {
                walk(&format!("namespace.{ns}.tiers[{i}]"), store)?;
            }
        }
    }
    if let Some(tiers) = &config.http_cache.tiers {
        for (i, tier) in tiers.iter().enumerate() {
            if let StoreRef::Inline(store) = tier {
                walk(&format!("http_cache.tiers[{i}]"), store)?;
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
    let mut stores = Assembler::new(config, data_dir);
    // The server's commands journal patches of big values (streams).
    let mut builder = Engine::builder(data_dir)
        .memory_bytes(config.memory.max_bytes)
        .patcher(std::sync::Arc::new(tiercache_server::CollectionPatcher));
    for (ns_name, ns) in config.namespaces() {
        let mut engine_ns = NamespaceConfig::new(ns_name, write_mode(ns.write))
            .ttl(ns.ttl)
            .flush(ns.flush_interval, ns.flush_batch)
            .fsync(fsync(ns.fsync));
        for (i, tier) in ns.tiers.iter().enumerate() {
            let store = stores
                .store_ref(tier, format!("namespace.{ns_name}.tiers[{i}]"))
                .await?;
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
                let store = stores
                    .store_ref(tier, format!("http_cache.tiers[{i}]"))
                    .await?;
                ns = ns.store(store);
            }
            builder = builder.namespace(ns);
        }
    }
    Ok(builder.build().await?)
}

/// Networked stores take `timeout` themselves: they also drop the
/// connection that timed out, which a wrapper cannot.
fn applies_own_timeout(cfg: &StoreConfig) -> bool {
    matches!(
        cfg,
        StoreConfig::Postgres(_)
            | StoreConfig::Mysql(_)
            | StoreConfig::Redis(_)
            | StoreConfig::Memcached(_)
            | StoreConfig::Network(_)
    )
}

fn sql_options(s: &tiercache_config::SqlStore) -> tiercache_stores::SqlOptions {
    tiercache_stores::SqlOptions {
        pool_size: s.pool_size as usize,
        timeout: s.timeout,
    }
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
