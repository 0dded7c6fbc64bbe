//! Store backends for tiercache: implementations of
//! [`tiercache_engine::Store`], the batched interface the engine uses for
//! every tier below memory, and the combinators that compose them.
//!
//! This crate only moves bytes to and from backends. It holds no caching
//! logic (the memory tier, write modes and namespaces live in
//! `tiercache-engine`), speaks no client protocol (those live in
//! `tiercache-server`) and reads no configuration (the `tiercache` crate's
//! `assemble` module turns a config into a tree of these stores).
//!
//! Map:
//! - Backends
//!   - [`sqlite`]: [`SqliteStore`], one table of an SQLite file in WAL mode;
//!     the embedded default system of record.
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
pub mod multi;
pub mod null;
pub mod replay;
pub mod sqlite;
pub mod timeout;

pub use bucket::{BucketHash, BucketStore};
pub use buffer::{BufferMode, BufferOptions, BufferStatus, BufferStore};
pub use file::{FileStore, FileStoreOptions, RotatePeriod};
pub use multi::{ChildState, ChildStatus, MultiStore, ReportSuccess};
pub use null::NullStore;
pub use replay::{LogPosition, Logged, ReplayLog};
pub use sqlite::SqliteStore;
pub use timeout::TimeoutStore;
