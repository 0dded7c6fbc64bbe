//! Store backends for tiercache: implementations of
//! [`tiercache_engine::Store`], the batched interface the engine uses for
//! every tier below memory.
//!
//! This crate only moves bytes to and from backends. It holds no caching
//! logic (the memory tier, write modes and namespaces live in
//! `tiercache-engine`) and serves no protocol (that is `tiercache-server`);
//! the networked stores are protocol *clients* of Redis, memcached and
//! other tiercache servers.
//!
//! Map:
//! - [`sqlite`]: [`SqliteStore`], one table of an SQLite file in WAL mode; the
//!   embedded default system of record.
//! - [`redis`]: [`RedisStore`], entries as Redis strings on one
//!   server (TCP or unix socket) or a Redis Cluster; batches as `MULTI`/`EXEC`
//!   pipelines (per slot on a cluster).
//! - [`memcached`]: [`MemcachedStore`], memcached servers behind a
//!   consistent hash, spoken to in pipelined meta commands; cannot list keys.
//! - [`network`]: [`NetworkStore`], another tiercache server over RESP.
//! - [`null`]: [`NullStore`], which keeps nothing.
//!
//! The networked stores connect on first use (a store may be built while
//! its server is down), remake broken connections, and bound every
//! operation by their `timeout`: an unreachable or hung server gives a
//! [`StoreError`](tiercache_engine::StoreError) naming the store and the
//! server, never a hang.
//!
//! # Example
//!
//! ```
//! use tiercache_engine::{Entry, Store};
//! use tiercache_stores::SqliteStore;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let store = SqliteStore::open("main", &dir.path().join("data/cache.db"), "kv").unwrap();
//! store
//!     .set_many(&[
//!         ("a".into(), Entry::new("1")),
//!         ("b".into(), Entry::with_expiry("2", Some(tiercache_engine::now_ms() + 60_000))),
//!     ])
//!     .await
//!     .unwrap();
//! let got = store.get_many(&["b".into(), "missing".into(), "a".into()]).await.unwrap();
//! assert_eq!(got[0].as_ref().unwrap().value, "2");
//! assert!(got[1].is_none());
//! assert_eq!(got[2].as_ref().unwrap().value, "1");
//! # });
//! ```

#![warn(missing_docs)]

pub mod memcached;
pub mod network;
pub mod null;
pub mod redis;
pub mod sqlite;

pub use crate::redis::RedisStore;
pub use memcached::MemcachedStore;
pub use network::NetworkStore;
pub use null::NullStore;
pub use sqlite::SqliteStore;
