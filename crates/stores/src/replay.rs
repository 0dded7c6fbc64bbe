//! [`ReplayLog`]: a store that can hand back its mutations in the order it
//! received them — what a [`BufferStore`](crate::BufferStore) needs of its
//! secondary.
//!
//! Scribe's rule, kept: only *readable* stores can be a buffer's secondary.
//! An ordinary [`Store`] forgets deletes (a deleted key is simply absent)
//! and the order of writes, so it cannot say "replay these sets and deletes,
//! oldest first" to a primary coming back. [`FileStore`](crate::FileStore)
//! is an ordered, durable mutation log and implements this trait; any other
//! store type named as a secondary is refused when the configuration is
//! checked.

use async_trait::async_trait;
use bytes::Bytes;
use tiercache_engine::{Entry, Mutation, Store, StoreError};

/// A place in a [`ReplayLog`]: every mutation before it has been read.
/// [`LogPosition::START`] is the beginning of the log.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct LogPosition {
    pub(crate) segment: u64,
    pub(crate) offset: u64,
}

impl LogPosition {
    /// The beginning of the log (before its first mutation).
    pub const START: LogPosition = LogPosition {
        segment: 0,
        offset: 0,
    };
}

/// What a log says about one key: its latest logged mutation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Logged {
    /// The log holds no mutation of this key.
    NotLogged,
    /// The latest logged mutation deletes the key.
    Deleted,
    /// The latest logged mutation sets the key to this entry (which may have
    /// expired since: an expired entry still hides older values below).
    Set(Entry),
}

/// A store that is also an ordered log of the mutations written to it
/// (through [`Store::apply`], [`Store::set_many`] or
/// [`Store::delete_many`]), deletes included.
///
/// Writing is the ordinary [`Store`] interface; a write is durable when it
/// returns. [`Store::clear`] empties the log like [`ReplayLog::discard`].
#[async_trait]
pub trait ReplayLog: Store {
    /// The latest logged mutation of each key, one answer per key in input
    /// order.
    async fn lookup(&self, keys: &[Bytes]) -> Result<Vec<Logged>, StoreError>;

    /// Up to `max_records` mutations from `from` on, in the order they were
    /// logged, and the position after the last one returned. An empty answer
    /// means `from` is the end of the log (for now: later writes append).
    async fn read_from(
        &self,
        from: LogPosition,
        max_records: usize,
    ) -> Result<(Vec<Mutation>, LogPosition), StoreError>;

    /// Mutations logged since the log was last emptied (a gauge for
    /// metrics; a key written twice counts twice).
    fn logged(&self) -> u64;

    /// Drops everything logged, durably: once this returns, a restart finds
    /// an empty log.
    async fn discard(&self) -> Result<(), StoreError>;
}
