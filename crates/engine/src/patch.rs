//! Patches: writes that journal their change instead of their whole value.
//!
//! A front end whose values are large and change a little at a time (a
//! Redis stream gaining one entry) writes [`Change::Patch`](crate::Change::Patch):
//! the whole new value, which the memory tier and the stores get as for
//! any write, and a patch, which the write-back journal records instead
//! of the value when it can. Replaying the journal applies the patch to
//! the value replayed before it, through the [`Patcher`] the front end
//! registered ([`EngineBuilder::patcher`](crate::EngineBuilder::patcher)).
//!
//! The journal writes a patch only after a whole value of the same key
//! in the same segment; otherwise it writes the whole value. Segments are
//! deleted oldest first, so a patch never outlives the value it applies
//! to, and replay never needs a store to find a base. Without a patcher
//! the engine writes whole values.

use crate::entry::ValueKind;
use bytes::Bytes;

/// Applies the patches a front end writes.
///
/// ```
/// use bytes::Bytes;
/// use tiercache_engine::{Patcher, ValueKind};
/// /// Patches that append bytes.
/// struct Append;
/// impl Patcher for Append {
///     fn apply(&self, _: ValueKind, base: &Bytes, patch: &[u8]) -> Result<Bytes, String> {
///         Ok([&base[..], patch].concat().into())
///     }
/// }
/// assert_eq!(Append.apply(ValueKind::String, &"ab".into(), b"c").unwrap(), "abc");
/// ```
pub trait Patcher: Send + Sync + 'static {
    /// The value `patch` makes of `base`, a value of kind `kind`; `Err`
    /// says why it cannot (a damaged journal).
    fn apply(&self, kind: ValueKind, base: &Bytes, patch: &[u8]) -> Result<Bytes, String>;
}
