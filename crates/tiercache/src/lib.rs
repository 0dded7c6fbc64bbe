//! tiercache makes slow lookups fast: an in-process memory tier in front of
//! pluggable stores (SQLite embedded by default), composed by configuration.
//!
//! This crate is the facade library users import, and the home of the
//! `tiercache` binary. It re-exports the focused crates and adds
//! [`open_engine`], which turns a [`Config`] into a running [`Engine`]. It
//! holds no caching logic (see [`engine`]), no backends (see [`stores`]) and
//! no protocol code (see [`server`]).
//!
//! | crate | concern |
//! | --- | --- |
//! | [`engine`] | memory tier, `Store` trait, namespaces, write modes, write-back journal |
//! | [`stores`] | backends (SQLite, file, null) and the buffer, bucket and multi combinators |
//! | [`server`] | the Redis-protocol (RESP) server |
//! | [`config`] | TOML configuration with file/line/field errors |
//! | [`http_cache`] | the RFC 9111 HTTP micro-cache (`tiercache proxy`) |
//!
//! # Example: a write-back cache over SQLite
//!
//! ```
//! use std::sync::Arc;
//! use tiercache::{Engine, NamespaceConfig, WriteMode, stores::SqliteStore};
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let sqlite = SqliteStore::open("main", &dir.path().join("cache.db"), "kv").unwrap();
//! let engine = Engine::builder(dir.path())
//!     .namespace(NamespaceConfig::new("default", WriteMode::Back).store(Arc::new(sqlite)))
//!     .build()
//!     .await
//!     .unwrap();
//! engine.set("station:008814001", "Brussels-South").await.unwrap(); // journaled, durable
//! let hit = engine.get(b"station:008814001").await.unwrap().unwrap();
//! assert_eq!(hit.value, "Brussels-South");
//! engine.shutdown().await.unwrap(); // flushes to SQLite
//! # });
//! ```
//!
//! # Example: from a configuration
//!
//! ```
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let config = tiercache::config::parse(r#"
//!     [namespace."session:"]
//!     tiers = []
//!     write = "back"
//!     ttl = "30m"
//! "#, "example.toml").unwrap();
//! let engine = tiercache::open_engine(&config, dir.path()).await.unwrap();
//! engine.set("session:42", "alice").await.unwrap();
//! let ttl = engine.get(b"session:42").await.unwrap().unwrap().expires_at;
//! assert!(ttl.is_some(), "the namespace TTL applies");
//! engine.shutdown().await.unwrap();
//! # });
//! ```

#![warn(missing_docs)]

mod assemble;
mod http;

pub use assemble::{
    build_store, check_supported, open_engine, AssembleError, Assembler, HTTP_NAMESPACE,
};
pub use http::proxy_config;
pub use tiercache_config as config;
pub use tiercache_config::Config;
pub use tiercache_engine as engine;
pub use tiercache_engine::{Engine, Entry, NamespaceConfig, Store, WriteMode};
pub use tiercache_http as http_cache;
pub use tiercache_server as server;
pub use tiercache_stores as stores;
