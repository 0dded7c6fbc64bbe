//! The tiercache engine: a byte-bounded memory tier in front of a stack of
//! [`Store`]s, with namespaces chosen by key prefix and three write modes.
//!
//! This crate is the core that every front end (Redis protocol, memcached
//! protocol, HTTP cache, library users) shares. It knows nothing of protocols
//! or SQL: stores plug in through the [`Store`] trait.
//!
//! Map:
//! - [`entry`]: [`Entry`], a value with an absolute expiry, client flags
//!   and a cas unique.
//! - [`store`]: the [`Store`] trait every backend implements (batched).
//! - [`memory`]: [`MemoryTier`], the sharded, byte-bounded L1 with TTL.
//! - [`journal`]: [`WriteBackJournal`], the checksummed, segmented log that
//!   makes write-back acknowledgements durable.
//! - `writeback`: the per-namespace queue of dirty keys and its flusher.
//! - `keyfilter`: the Bloom filter of keys that may be in a namespace's
//!   exclusive stores, so GETs of absent keys skip the stores.
//! - [`namespace`]: [`NamespaceConfig`], [`WriteMode`], prefix routing.
//! - [`engine`]: [`Engine`] and [`Session`], the read and write paths.
//! - [`modify`]: [`Session::modify`], atomic read-modify-write of one key
//!   (the primitive behind memcached's conditional commands), and
//!   [`Session::compare_and_set`].
//! - [`gate`]: [`Gate`], which front ends' request batches pass so that a
//!   transaction can run alone.
//! - `watch`: [`Watch`], which keys changed since a client began watching
//!   them (Redis `WATCH`).
//! - [`testing`]: in-memory and deliberately failing stores for tests.
//!
//! # Example
//!
//! ```
//! use tiercache_engine::{Engine, NamespaceConfig, WriteMode, testing::MemoryStore};
//! use std::sync::Arc;
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let dir = tempfile::tempdir().unwrap();
//! let sor = Arc::new(MemoryStore::new("main"));
//! let engine = Engine::builder(dir.path())
//!     .memory_bytes(1 << 20)
//!     .namespace(NamespaceConfig::new("default", WriteMode::Back).store(sor.clone()))
//!     .build()
//!     .await
//!     .unwrap();
//! engine.set("greeting", "hello").await.unwrap();
//! assert_eq!(engine.get(b"greeting").await.unwrap().unwrap().value, "hello");
//! engine.shutdown().await.unwrap(); // flushes write-back data to the store
//! assert_eq!(sor.len(), 1);
//! # });
//! ```

#![warn(missing_docs)]

pub mod engine;
pub mod entry;
pub mod error;
mod expiry;
pub mod gate;
pub mod journal;
mod keyfilter;
mod keyvalue;
mod load;
pub mod memory;
pub mod modify;
pub mod namespace;
mod patch;
pub mod store;
pub mod testing;
mod watch;
mod writeback;

pub use engine::{
    Engine, EngineBuilder, EngineStats, KeyPage, MoveOutcome, Session, SetCondition, SetExpiry,
    SetOptions, SetOutcome, Update,
};
pub use entry::{now_ms, parse_i64, Entry, ValueKind};
pub use error::{EngineError, Result};
pub use expiry::ExpiryListener;
pub use gate::{ExclusivePass, Gate, GateSeat};
pub use journal::{FsyncPolicy, WriteBackJournal};
pub use keyvalue::copy_key_value;
pub use memory::{Admission, Cleaned, DirtyPut, MemoryTier};
pub use modify::{CasOutcome, Change, Modified};
pub use namespace::{NamespaceConfig, WriteMode};
pub use patch::Patcher;
pub use store::{KeyStats, Mutation, Store, StoreError};
pub use watch::Watch;
