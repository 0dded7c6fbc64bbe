//! The stream commands: `XADD XTRIM XDEL XLEN XSETID` ([`write`](mod@write)),
//! `XRANGE XREVRANGE XREAD XREADGROUP` ([`read`](mod@read)), `XGROUP XACK`
//! ([`group`]), `XPENDING XCLAIM XAUTOCLAIM` ([`claim`]) and `XINFO`
//! ([`info`]).
//!
//! A stream is one engine entry of kind `ValueKind::Stream` holding the
//! [`Stream`] encoding; every write is one read-modify-write under the
//! key's lock ([`modify`]). Unlike the other collections, an empty stream
//! is kept: in Redis it exists until deleted. Arguments are checked in
//! Redis 7.0's order, and errors use its words, which `tests/redis_diff.rs`
//! compares with a real `redis-server`.
//!
//! `XREAD` and `XREADGROUP` with `BLOCK` wait as the other blocking
//! commands do ([`blocking`](super::blocking)): the request stays parsed,
//! and runs again when a key it reads is written.

pub mod claim;
pub mod group;
pub mod info;
pub mod read;
pub mod write;

use super::collection::{self, collection_of, Edit};
use super::Ctx;
use crate::resp::reply;
use crate::stream::{Item, Limits, Stream, StreamId, NODE_MAX_BYTES, NODE_MAX_ENTRIES};
use bytes::BytesMut;
use tiercache_engine::{Change, Entry, ValueKind};

/// The node thresholds in force.
pub fn limits(ctx: &Ctx<'_, '_>) -> Limits {
    Limits {
        max_entries: ctx
            .server
            .tunable("stream-node-max-entries", NODE_MAX_ENTRIES),
        max_bytes: ctx.server.tunable("stream-node-max-bytes", NODE_MAX_BYTES),
    }
}

/// Replies with an ID as a bulk string.
pub fn reply_id(out: &mut BytesMut, id: StreamId) {
    use std::io::Write;
    let mut buf = [0u8; 41];
    let mut w = &mut buf[..];
    write!(w, "{}-{}", id.ms, id.seq).expect("41 bytes hold two u64s");
    let len = 41 - w.len();
    reply::bulk(out, &buf[..len]);
}

/// Replies with an entry: `[id, [field, value, ...]]`.
pub fn reply_item(out: &mut BytesMut, item: &Item) {
    reply::array(out, 2);
    reply_id(out, item.id);
    reply::array(out, item.fields.len());
    for f in &item.fields {
        reply::bulk(out, f);
    }
}

/// The error reply for a stream value that does not decode.
pub fn corrupt(c: crate::stream::Corrupt) -> String {
    format!("ERR corrupt stream value: {c}")
}

/// Redis's error for a group that is not there, in the wording most
/// commands use.
pub fn no_group(key: &[u8], group: &[u8]) -> String {
    format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(group)
    )
}

/// Reads the stream at `key`: `Ok(None)` when absent, `Err(reply)` for
/// another type or a store failure.
pub async fn read(ctx: &mut Ctx<'_, '_>, key: &[u8]) -> Result<Option<Stream>, String> {
    collection::read::<Stream>(ctx, key).await
}

/// Read-modify-write of the stream at `key`: `f` sees `Some` when it
/// exists and may create it (set `Some`); what it leaves is stored when it
/// reports a change. A stream keeps its key's expiry; a new one gets the
/// namespace's default TTL. `Err` is the error reply, and nothing is
/// written then.
pub async fn modify<T>(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: impl FnOnce(&mut Option<Stream>) -> Edit<T>,
) -> Result<T, String> {
    collection::modify_entry(ctx, key, |old, max| {
        let mut s = match collection_of::<Stream>(old) {
            Ok(s) => s,
            Err(msg) => return (Change::Keep, Err(msg)),
        };
        match f(&mut s) {
            Err(msg) => (Change::Keep, Err(msg)),
            Ok((answer, false)) => (Change::Keep, Ok(answer)),
            Ok((answer, true)) => match store(old, s.as_mut(), max) {
                Ok(change) => (change, Ok(answer)),
                Err(msg) => (Change::Keep, Err(msg)),
            },
        }
    })
    .await
}

/// The change that stores `s` in place of `old` (a deleted key for `None`):
/// with the patch of what changed when `s` was decoded from `old`, so
/// that write-back journals the patch, not the stream.
pub fn store(old: Option<&Entry>, s: Option<&mut Stream>, max: usize) -> Result<Change, String> {
    match (old, s) {
        (Some(old), Some(s)) => {
            let Some(patch) = s.take_patch() else {
                return collection::store(Some(old), s, max);
            };
            let value = s.encode();
            if value.len() > max {
                return Err(collection::too_big("stream", max));
            }
            let entry = Entry::with_kind(value, old.expires_at, 0, ValueKind::Stream);
            Ok(Change::Patch(entry, patch))
        }
        (old, Some(s)) => collection::store(old, s, max),
        (Some(_), None) => Ok(Change::Delete),
        (None, None) => Ok(Change::Keep),
    }
}

/// A `COUNT` argument: an integer, negative read as 0.
pub fn parse_count(arg: &[u8]) -> Result<u64, &'static str> {
    super::parse_i64(arg)
        .map(|n| n.max(0) as u64)
        .ok_or(super::NOT_AN_INTEGER)
}

/// Parses one end of an interval (`XRANGE`, `XPENDING`, `XAUTOCLAIM`):
/// an ID, `-`, `+`, or `(ID` for an exclusive end, which is stepped
/// inward. `start` picks the sequence of a bare `<ms>` (0, or the largest
/// for an end) and the error for an end that cannot step.
pub fn parse_interval(arg: &[u8], start: bool) -> Result<StreamId, &'static str> {
    let missing_seq = if start { 0 } else { u64::MAX };
    if arg.len() > 1 && arg[0] == b'(' {
        let id = StreamId::parse_strict(&arg[1..], missing_seq).ok_or(crate::stream::INVALID_ID)?;
        if start {
            id.next().ok_or("ERR invalid start ID for the interval")
        } else {
            id.prev().ok_or("ERR invalid end ID for the interval")
        }
    } else {
        StreamId::parse(arg, missing_seq).ok_or(crate::stream::INVALID_ID)
    }
}
