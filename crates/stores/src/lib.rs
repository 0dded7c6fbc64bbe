//! Store backends for tiercache: implementations of
//! [`tiercache_engine::Store`], the batched interface the engine uses for
//! every tier below memory.
//!
//! This crate only moves bytes to and from backends. It holds no caching
//! logic (the memory tier, write modes and namespaces live in
//! `tiercache-engine`) and speaks no protocol (those live in
//! `tiercache-server`).
//!
//! Map:
//! - [`sqlite`]: [`SqliteStore`], one table of an SQLite file in WAL mode; the
//!   embedded default system of record.
//! - [`null`]: [`NullStore`], which keeps nothing.
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
