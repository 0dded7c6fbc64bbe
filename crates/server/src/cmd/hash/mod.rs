//! The hash commands: `HSET HMSET HSETNX HDEL HINCRBY HINCRBYFLOAT`
//! ([`write`](mod@write)), `HGET HMGET HGETALL HEXISTS HLEN HKEYS HVALS HSTRLEN`
//! ([`read`]) and `HRANDFIELD HSCAN` ([`sample`]).
//!
//! A hash is one engine entry of kind `ValueKind::Hash` holding the
//! [`Hash`](struct@Hash) encoding, read and written through
//! [`collection`]: every write is one read-modify-write
//! under the key's lock, so concurrent `HINCRBY`s never lose an update; a
//! key of another kind answers `WRONGTYPE`; a hash left without fields is
//! deleted, as in Redis.

pub mod read;
pub mod sample;
pub mod write;

use super::collection::{self, Edit};
use super::Ctx;
use crate::hash::Hash;
use tiercache_engine::Entry;

/// The hash `entry` holds (`None` when absent), or the error reply for a
/// key of another type or a value that does not decode.
pub fn hash_of(entry: Option<&Entry>) -> Result<Option<Hash>, String> {
    collection::collection_of(entry)
}

/// Reads `key` as a hash: `Ok(None)` when absent, `Err(reply)` otherwise
/// on failure.
async fn read_hash(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Hash>, String> {
    collection::read(ctx, key).await
}

/// Read-modify-write of the hash at `key` ([`collection::modify`]).
async fn modify_hash<T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&mut Hash) -> Edit<T>,
) -> Result<T, String> {
    collection::modify::<Hash, T>(ctx, key, f).await
}
