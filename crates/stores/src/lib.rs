//! Store backends for tiercache: implementations of
//! [`tiercache_engine::Store`], the batched interface the engine uses for
//! every tier below memory, and the combinators that compose them.
//!
//! This crate only moves bytes to and from backends. It holds no caching
//! logic (the memory tier, write modes and namespaces live in
//! `tiercache-engine`), serves no protocol (that is `tiercache-server`; the
//! networked stores are protocol *clients* of Redis, memcached and other
//! tiercache servers) and reads no configuration (the `tiercache` crate's
//! `assemble` module turns a config into a tree of these stores).
//!
//! Map:
//! - Backends
//!   - [`sqlite`]: [`SqliteStore`], one table of an SQLite file in WAL mode;
//!     the embedded default system of record.
//!   - [`postgres`]: [`PostgresStore`], one table of a PostgreSQL database
//!     over a pool of `tokio-postgres` connections.
//!   - [`mysql`]: [`MysqlStore`], one table of a MySQL or MariaDB database
//!     over `mysql_async`'s pool.
//!   - [`sql_common`]: what the two networked SQL stores share:
//!     [`SqlOptions`] (pool size, timeout), how keys longer than an index
//!     entry are stored, and the byte-order key listing. Every SQL store
//!     keeps the same columns (key bytes, value bytes, absolute expiry in
//!     Unix milliseconds or NULL, 32-bit flags), creates its own table and a
//!     schema version in `tiercache_meta`, batches reads into one statement
//!     per chunk and writes into multi-row upserts in one transaction.
//!   - [`redis`]: [`RedisStore`], entries as Redis strings on
//!     one server (TCP or unix socket) or a Redis Cluster; batches as
//!     `MULTI`/`EXEC` pipelines (per slot on a cluster).
//!   - [`memcached`]: [`MemcachedStore`], memcached servers behind a
//!     consistent hash, spoken to in pipelined meta commands; cannot list
//!     keys.
//!   - [`network`]: [`NetworkStore`], another tiercache server over RESP.
//!   - [`file`](mod@file): [`FileStore`], Scribe's file store: an append-only,
//!     rotated, CRC-checked log of sets and deletes with an in-memory index,
//!     readable as a store and replayable in order.
//!   - [`null`]: [`NullStore`], which keeps nothing.
//! - Combinators (each is a [`Store`](tiercache_engine::Store) over
//!   `Arc<dyn Store>` children, so they nest)
//!   - [`buffer`]: [`BufferStore`], a primary with a durable secondary log
//!     while it is down, replayed in order when it returns.
//!   - [`bucket`]: [`BucketStore`], sharding by a stable hash
//!     ([`bucket::fnv1a64`]) or a numeric modulo, with parallel fan-out.
//!   - [`multi`]: [`MultiStore`], replication with `all`/`any` success and
//!     per-child ordered catch-up.
//!   - [`timeout`]: [`TimeoutStore`], the per-operation `timeout` any store
//!     can have.
//! - [`replay`]: [`ReplayLog`], what a buffer needs of its secondary.
//!
//! The networked stores connect on first use (a store may be built while
//! its server is down), remake broken connections, and bound every
//! operation by their `timeout`: an unreachable or hung server gives a
//! [`StoreError`](tiercache_engine::StoreError) naming the store and the
//! server, never a hang.
//!
//! Invariants the combinators keep (details in each module):
//! - nothing acknowledged is lost: a buffer acknowledges a write once the
//!   primary or the fsynced secondary has it, and empties the secondary
//!   only after replaying all of it;
//! - per-key order: a buffer replays its log in order and gates writers for
//!   the switch back; a multi queues a lagging child's writes behind its
//!   backlog; a bucket sends all of a key's writes to one child;
//! - nothing resurrected: reads while failed over see logged deletes before
//!   the primary's old values;
//! - no silent divergence: a multi child that missed writes is caught up or
//!   reported ([`MultiStore::status`]).

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

pub mod bucket;
pub mod buffer;
pub mod file;
pub mod memcached;
pub mod multi;
pub mod mysql;
pub mod network;
pub mod null;
pub mod postgres;
pub mod redis;
pub mod replay;
pub mod sql_common;
pub mod sqlite;
pub mod timeout;

pub use crate::redis::RedisStore;
pub use bucket::{BucketHash, BucketStore};
pub use buffer::{BufferMode, BufferOptions, BufferStatus, BufferStore};
pub use file::{FileStore, FileStoreOptions, RotatePeriod};
pub use memcached::MemcachedStore;
pub use multi::{ChildState, ChildStatus, MultiStore, ReportSuccess};
pub use mysql::MysqlStore;
pub use network::NetworkStore;
pub use null::NullStore;
pub use postgres::PostgresStore;
pub use replay::{LogPosition, Logged, ReplayLog};
pub use sql_common::SqlOptions;
pub use sqlite::SqliteStore;
pub use timeout::TimeoutStore;
