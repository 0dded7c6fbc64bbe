//! tiercache's TOML configuration: the [`Config`] tree, parsed from a file
//! and validated, with errors that name the file, line, column and field.
//!
//! This crate is pure data. It reads the file (in [`load`]) and nothing
//! else: it opens no store, binds no socket and knows nothing of the engine.
//! The binary turns a [`Config`] into running tiers and listeners.
//!
//! What is checked: TOML syntax; unknown keys and wrong types everywhere
//! (including keys that belong to another store `type`); durations
//! (`"250ms"`, `"30m"` or seconds), sizes (`"256MiB"`, `"64KB"` or bytes) and
//! listen addresses (`"host:port"`, `"unix:/path"`, `"off"`); enum values
//! (`write`, `fsync`, `hash`, ...); store references (a name must match a
//! `[store.NAME]`) and cycles among named stores; namespace names; ranges
//! (`flush_batch ≥ 1`, `pool_size ≥ 1`, non-empty `buckets`/`stores`); a
//! buffer's `secondary` is a `file` store (the only store that replays its
//! writes, deletes included, in order) used by that buffer alone.
//!
//! Defaults follow the product SPEC: with no file (or an empty one) there is
//! one namespace, `default`, with `tiers = ["main"]` and write mode `back`,
//! and store `main` is SQLite at `tiercache.db` (relative to the data dir).
//! The `default` namespace is always present (added with those settings when
//! the file defines none), and `main` is implied as that SQLite store whenever
//! something uses it without a `[store.main]`.
//!
//! ```
//! use std::time::Duration;
//! use tiercache_config::{parse, ListenAddr, StoreConfig, StoreRef, WriteMode};
//!
//! let config = parse(
//!     r#"
//!     [server]
//!     resp = "unix:/run/tiercache.sock"
//!
//!     [memory]
//!     max_bytes = "64MiB"
//!
//!     [namespace."session:"]
//!     tiers = ["cache"]
//!     write = "through"
//!     ttl = "30m"
//!
//!     [store.cache]
//!     type = "redis"
//!     url = "redis://127.0.0.1:6379"
//!     "#,
//!     "tiercache.toml",
//! )
//! .unwrap();
//!
//! assert_eq!(config.server.resp, ListenAddr::Unix("/run/tiercache.sock".into()));
//! assert_eq!(config.memory.max_bytes, 64 << 20);
//! let (name, session) = config.namespaces()[1];
//! assert_eq!(name, "session:");
//! assert_eq!(session.write, WriteMode::Through);
//! assert_eq!(session.ttl(), Some(Duration::from_secs(1800)));
//! assert_eq!(session.tiers, vec![StoreRef::Named("cache".into())]);
//! assert!(matches!(config.store("cache"), Some(StoreConfig::Redis(_))));
//! // The default namespace and its SQLite store `main` are implied.
//! assert_eq!(config.namespace_for("user:1").0, "default");
//! assert!(matches!(config.store("main"), Some(StoreConfig::Sqlite(_))));
//!
//! let err = parse("[server]\nmax_clients = \"x\"\n", "tiercache.toml").unwrap_err();
//! assert_eq!(err.line(), Some(2));
//! assert_eq!(err.field(), "server.max_clients");
//! assert!(err.to_string().starts_with("tiercache.toml:2:15: server.max_clients: invalid type"));
//! ```

#![warn(missing_docs)]

mod error;
mod model;
mod raw;
mod units;
mod validate;

use std::path::{Path, PathBuf};

pub use error::ConfigError;
pub use model::{
    BucketHash, BucketStore, BufferStore, BusyPollSetting, Config, DebugCommand, FileStore,
    FsyncMode, HttpCacheConfig, HttpRule, MemcachedStore, MemoryConfig, MultiStore,
    NamespaceConfig, NetworkStore, NullStore, RedisStore, RedisTarget, ReportSuccess, RotatePeriod,
    ServerConfig, SqlStore, SqliteStore, StoreConfig, StoreRef, WriteMode, DEFAULT_WRITE_NICE,
};
pub use units::{parse_duration, parse_size, ListenAddr};

/// Reads and validates the configuration file at `path`. Errors (including
/// an unreadable file) name the file as `path` displays.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let name = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::new(&name, "", format!("cannot read config file: {e}")))?;
    parse(&text, &name)
}

/// Parses and validates configuration `text`; `file_name` is used in errors.
pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigError> {
    let raw: raw::RawConfig =
        toml::from_str(text).map_err(|e| error::from_toml(file_name, text, &e))?;
    validate::validate(raw, file_name, text)
}

/// The store `main` is when the configuration does not define it.
pub(crate) fn default_main_store() -> StoreConfig {
    StoreConfig::Sqlite(SqliteStore {
        path: PathBuf::from("tiercache.db"),
        table: "kv".to_owned(),
        exclusive: true,
        write_nice: model::DEFAULT_WRITE_NICE,
        timeout: None,
    })
}

impl Default for Config {
    /// The SPEC defaults: what `tiercache serve` runs with no `--config`.
    fn default() -> Self {
        Config {
            server: ServerConfig::default(),
            memory: MemoryConfig::default(),
            namespaces: [("default".to_owned(), NamespaceConfig::default())].into(),
            stores: [("main".to_owned(), default_main_store())].into(),
            http_cache: HttpCacheConfig::default(),
        }
    }
}

impl Config {
    /// All namespaces: `default` first, then the prefixes from longest to
    /// shortest (ties by name) — the order in which to try to match a key.
    pub fn namespaces(&self) -> Vec<(&str, &NamespaceConfig)> {
        let mut v: Vec<(&str, &NamespaceConfig)> = self
            .namespaces
            .iter()
            .map(|(k, n)| (k.as_str(), n))
            .collect();
        v.sort_by(|a, b| {
            (a.0 != "default")
                .cmp(&(b.0 != "default"))
                .then(b.0.len().cmp(&a.0.len()))
                .then(a.0.cmp(b.0))
        });
        v
    }

    /// The namespace a key belongs to: the longest prefix that matches it,
    /// else `default`.
    pub fn namespace_for(&self, key: &str) -> (&str, &NamespaceConfig) {
        self.namespaces()
            .into_iter()
            .skip(1)
            .find(|(p, _)| key.starts_with(p))
            .unwrap_or_else(|| {
                let d = self
                    .namespaces
                    .get_key_value("default")
                    .expect("default namespace");
                (d.0.as_str(), d.1)
            })
    }

    /// The `[store.NAME]` named `name` (including the implied `main`).
    pub fn store(&self, name: &str) -> Option<&StoreConfig> {
        self.stores.get(name)
    }

    /// Follows a [`StoreRef`] through this configuration.
    pub fn resolve<'a>(&'a self, r: &'a StoreRef) -> Option<&'a StoreConfig> {
        r.resolve(self)
    }
}
