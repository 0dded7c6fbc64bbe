//! The hash commands: `HSET HMSET HSETNX HDEL HINCRBY HINCRBYFLOAT`
//! ([`write`](mod@write)), `HGET HMGET HGETALL HEXISTS HLEN HKEYS HVALS HSTRLEN`
//! ([`read`]) and `HRANDFIELD HSCAN` ([`sample`]).
//!
//! A hash is one engine entry of kind [`ValueKind::Hash`] holding the
//! [`Hash`](struct@Hash) encoding. Reads decode it; every write is one
//! [`Session::modify`](tiercache_engine::Session::modify) (read, change,
//! write under the key's lock), so concurrent `HINCRBY`s never lose an
//! update. A key of another kind answers `WRONGTYPE`; a hash left without
//! fields is deleted, as in Redis. A value that does not decode (a damaged
//! store) answers an error and is left alone.

pub mod read;
pub mod sample;
pub mod write;

use super::{engine_error_message, Ctx, WRONGTYPE};
use crate::hash::Hash;
use bytes::Bytes;
use tiercache_engine::{Change, Entry, ValueKind};

/// The hash `entry` holds (`None` when absent), or the error reply for a
/// key of another type or a value that does not decode.
pub fn hash_of(entry: Option<&Entry>) -> Result<Option<Hash>, String> {
    match entry {
        None => Ok(None),
        Some(e) if e.kind != ValueKind::Hash => Err(WRONGTYPE.to_string()),
        Some(e) => Hash::decode(&e.value)
            .map(Some)
            .map_err(|c| format!("ERR {c}")),
    }
}

/// Reads `key` as a hash: `Ok(None)` when absent, `Err(reply)` otherwise
/// on failure.
async fn read_hash(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Hash>, String> {
    match ctx.session.get(key).await {
        Ok(e) => hash_of(e.as_ref()),
        Err(e) => Err(engine_error_message(&e)),
    }
}

/// What a write closure reports: its answer, and whether the hash changed
/// (an unchanged hash is not written again).
type Edit<T> = Result<(T, bool), String>;

/// Read-modify-write of the hash at `key` (an absent key starts empty):
/// `f` edits it under the key's lock; the result is stored keeping the
/// key's expiry (a new key gets its namespace's default TTL), or the key is
/// deleted when no field is left. `Err` is the error reply.
async fn modify_hash<T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&mut Hash) -> Edit<T>,
) -> Result<T, String> {
    let key = Bytes::copy_from_slice(key);
    let r = ctx
        .session
        .modify(key, |old| {
            let existing = match hash_of(old) {
                Ok(h) => h,
                Err(msg) => return (Change::Keep, Err(msg)),
            };
            let existed = existing.is_some();
            let mut h = existing.unwrap_or_default();
            let answer = match f(&mut h) {
                Err(msg) => return (Change::Keep, Err(msg)),
                Ok((answer, false)) => return (Change::Keep, Ok(answer)),
                Ok((answer, true)) => answer,
            };
            let change = match old {
                _ if h.is_empty() && existed => Change::Delete,
                _ if h.is_empty() => Change::Keep,
                Some(e) => Change::Exact(Entry::with_kind(
                    h.encode(),
                    e.expires_at,
                    0,
                    ValueKind::Hash,
                )),
                None => Change::Put(Entry::with_kind(h.encode(), None, 0, ValueKind::Hash)),
            };
            (change, Ok(answer))
        })
        .await;
    match r {
        Ok(m) => m.result,
        Err(e) => Err(engine_error_message(&e)),
    }
}
