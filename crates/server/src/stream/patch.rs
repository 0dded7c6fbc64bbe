//! What a command changed in a stream, as operations a journal can carry
//! instead of the whole stream (see the engine's `Patcher`).
//!
//! A stream decoded from stored bytes records each change made to it
//! ([`Op`]): an entry appended (with its resolved ID and the node limits
//! then in force), a trim, a deletion, a new last ID, and the consumer
//! groups when a command changed them (their new encoding). Applying the
//! operations, in order, to the stream they were made on gives the same
//! stream, byte for byte: nothing in them depends on the clock or on
//! settings at replay.
//!
//! ```text
//! patch: per operation, a tag byte then its fields (varints, items)
//!   1 append  ms seq max_entries max_bytes field-count fields...
//!   2 trim    by (0 maxlen n | 1 minid ms seq) approx limit
//!   3 delete  ms seq
//!   4 set id  ms seq [added+1 | 0] [has-max-deleted ms seq]
//!   5 groups  the groups' encoding (an item)
//! ```

use super::{Limits, Stream, StreamId, Trim, TrimBy};
use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};

/// One change to a stream.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Op {
    Append {
        id: StreamId,
        fields: Vec<Bytes>,
        limits: Limits,
    },
    Trim(Trim),
    Delete(StreamId),
    SetId {
        last: StreamId,
        entries_added: Option<u64>,
        max_deleted: Option<StreamId>,
    },
    Groups(Bytes),
}

const APPEND: u8 = 1;
const TRIM: u8 = 2;
const DELETE: u8 = 3;
const SET_ID: u8 = 4;
const GROUPS: u8 = 5;

fn put_id(out: &mut BytesMut, id: StreamId) {
    put_varint(out, id.ms);
    put_varint(out, id.seq);
}

fn read_id(r: &mut Reader<'_>) -> Result<StreamId, Corrupt> {
    Ok(StreamId::new(r.varint()?, r.varint()?))
}

/// Limits are `i64`s that may be negative in principle: stored zigzag.
fn zigzag(n: i64) -> u64 {
    ((n << 1) ^ (n >> 63)) as u64
}

fn unzigzag(n: u64) -> i64 {
    ((n >> 1) as i64) ^ -((n & 1) as i64)
}

/// The stored form of `ops`.
pub(crate) fn encode(ops: &[Op]) -> Bytes {
    let mut out = BytesMut::new();
    for op in ops {
        match op {
            Op::Append { id, fields, limits } => {
                out.put_u8(APPEND);
                put_id(&mut out, *id);
                put_varint(&mut out, zigzag(limits.max_entries));
                put_varint(&mut out, zigzag(limits.max_bytes));
                put_varint(&mut out, fields.len() as u64);
                for f in fields {
                    put_item(&mut out, f);
                }
            }
            Op::Trim(t) => {
                out.put_u8(TRIM);
                match t.by {
                    TrimBy::MaxLen(n) => {
                        put_varint(&mut out, 0);
                        put_varint(&mut out, n);
                    }
                    TrimBy::MinId(id) => {
                        put_varint(&mut out, 1);
                        put_id(&mut out, id);
                    }
                }
                put_varint(&mut out, u64::from(t.approx));
                put_varint(&mut out, t.limit);
            }
            Op::Delete(id) => {
                out.put_u8(DELETE);
                put_id(&mut out, *id);
            }
            Op::SetId {
                last,
                entries_added,
                max_deleted,
            } => {
                out.put_u8(SET_ID);
                put_id(&mut out, *last);
                put_varint(&mut out, entries_added.map_or(0, |n| n + 1));
                match max_deleted {
                    Some(id) => {
                        put_varint(&mut out, 1);
                        put_id(&mut out, *id);
                    }
                    None => put_varint(&mut out, 0),
                }
            }
            Op::Groups(raw) => {
                out.put_u8(GROUPS);
                put_item(&mut out, raw);
            }
        }
    }
    out.freeze()
}

/// Decodes a patch written by [`encode`].
pub(crate) fn decode(raw: &Bytes) -> Result<Vec<Op>, Corrupt> {
    let mut r = Reader::new(raw);
    let mut ops = Vec::new();
    while r.position() < raw.len() {
        let op = match r.byte()? {
            APPEND => {
                let id = read_id(&mut r)?;
                let limits = Limits {
                    max_entries: unzigzag(r.varint()?),
                    max_bytes: unzigzag(r.varint()?),
                };
                let fields = super::node::read_fields(&mut r)?;
                Op::Append { id, fields, limits }
            }
            TRIM => {
                let by = match r.varint()? {
                    0 => TrimBy::MaxLen(r.varint()?),
                    1 => TrimBy::MinId(read_id(&mut r)?),
                    _ => return Err(Corrupt("unknown trim")),
                };
                let approx = r.varint()? != 0;
                Op::Trim(Trim {
                    by,
                    approx,
                    limit: r.varint()?,
                })
            }
            DELETE => Op::Delete(read_id(&mut r)?),
            SET_ID => {
                let last = read_id(&mut r)?;
                let entries_added = r.varint()?.checked_sub(1);
                let max_deleted = match r.varint()? {
                    0 => None,
                    _ => Some(read_id(&mut r)?),
                };
                Op::SetId {
                    last,
                    entries_added,
                    max_deleted,
                }
            }
            GROUPS => Op::Groups(r.item()?),
            _ => return Err(Corrupt("unknown stream operation")),
        };
        ops.push(op);
    }
    Ok(ops)
}

/// Applies a patch to the stored stream `base`: the stored stream after.
pub(crate) fn apply(base: &Bytes, patch: &Bytes) -> Result<Bytes, Corrupt> {
    let mut s = Stream::decode(base)?;
    for op in decode(patch)? {
        match op {
            Op::Append { id, fields, limits } => {
                if id <= s.last_id() {
                    return Err(Corrupt("appended ID not above the last"));
                }
                s.append(id, &fields, limits)?;
            }
            Op::Trim(t) => {
                s.trim(t)?;
            }
            Op::Delete(id) => {
                s.delete(id)?;
            }
            Op::SetId {
                last,
                entries_added,
                max_deleted,
            } => s.set_id(last, entries_added, max_deleted),
            Op::Groups(raw) => s.replace_groups(raw),
        }
    }
    Ok(s.encode())
}
