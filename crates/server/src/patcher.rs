//! The server's [`Patcher`]: applies the patches its commands journal
//! (see the engine's `Change::Patch`): a stream's operations
//! ([`crate::stream`]), a list's pushes and pops ([`crate::list`]), and
//! the writes to a hash, a set or a sorted set ([`crate::oplog`]).
//!
//! ```
//! use std::sync::Arc;
//! use tiercache_engine::Engine;
//! use tiercache_server::CollectionPatcher;
//! # async fn build() -> tiercache_engine::Result<Engine> {
//! let engine = Engine::builder("./data")
//!     .patcher(Arc::new(CollectionPatcher))
//!     .build()
//!     .await?;
//! # Ok(engine)
//! # }
//! ```

use crate::hash::Hash;
use crate::set::Set;
use crate::zset::ZSet;
use bytes::Bytes;
use tiercache_engine::{Patcher, ValueKind};

/// Applies the server's patches (register it with the engine that serves
/// the Redis front end).
#[derive(Clone, Copy, Debug, Default)]
pub struct CollectionPatcher;

impl Patcher for CollectionPatcher {
    fn apply(&self, kind: ValueKind, base: &Bytes, patch: &[u8]) -> Result<Bytes, String> {
        match kind {
            ValueKind::Stream => crate::stream::patch::apply(base, &Bytes::copy_from_slice(patch))
                .map_err(|c| format!("a stream patch does not apply: {c}")),
            ValueKind::Hash => Hash::apply_patch(base, &Bytes::copy_from_slice(patch))
                .map_err(|c| format!("a hash patch does not apply: {c}")),
            ValueKind::Set => Set::apply_patch(base, &Bytes::copy_from_slice(patch))
                .map_err(|c| format!("a set patch does not apply: {c}")),
            ValueKind::ZSet => ZSet::apply_patch(base, &Bytes::copy_from_slice(patch))
                .map_err(|c| format!("a sorted set patch does not apply: {c}")),
            ValueKind::List => crate::list::patch::apply(base, &Bytes::copy_from_slice(patch))
                .map_err(|c| format!("a list patch does not apply: {c}")),
            other => Err(format!(
                "no patches are written for values of kind {other:?}"
            )),
        }
    }
}
