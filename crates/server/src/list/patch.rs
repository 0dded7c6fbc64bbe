//! A list's pushes and pops as a patch the write-back journal can carry
//! instead of the whole list (see the engine's `Patcher`). Applied in
//! order to the stored nodes they were made on, they give the same bytes.
//!
//! ```text
//! per operation: tag, then
//!   1 push  end (0 left, 1 right), count, the elements (items)
//!   2 pop   end, count
//! ```

use super::{End, List};
use crate::packed::{put_item, put_varint, Corrupt, Reader};
use bytes::{BufMut, Bytes, BytesMut};

/// Pushes (of these elements, in order) or pops (this many) at one end.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    Push(End, Vec<Bytes>),
    Pop(End, u64),
}

const PUSH: u8 = 1;
const POP: u8 = 2;

/// Adds `op` to `ops`, merged into the last one when it continues it.
pub(crate) fn push_op(ops: &mut Vec<Op>, op: Op) {
    match (ops.last_mut(), op) {
        (Some(Op::Push(e, items)), Op::Push(end, more)) if *e == end => items.extend(more),
        (Some(Op::Pop(e, n)), Op::Pop(end, more)) if *e == end => *n += more,
        (_, op) => ops.push(op),
    }
}

fn end_code(end: End) -> u64 {
    match end {
        End::Left => 0,
        End::Right => 1,
    }
}

/// The stored form of `ops`.
pub(crate) fn encode(ops: &[Op]) -> Bytes {
    let mut out = BytesMut::new();
    for op in ops {
        match op {
            Op::Push(end, items) => {
                out.put_u8(PUSH);
                put_varint(&mut out, end_code(*end));
                put_varint(&mut out, items.len() as u64);
                for i in items {
                    put_item(&mut out, i);
                }
            }
            Op::Pop(end, n) => {
                out.put_u8(POP);
                put_varint(&mut out, end_code(*end));
                put_varint(&mut out, *n);
            }
        }
    }
    out.freeze()
}

/// Applies a patch to the stored list `base`: the stored list after.
pub(crate) fn apply(base: &Bytes, patch: &Bytes) -> Result<Bytes, Corrupt> {
    let mut list = List::decode(base)?;
    let mut r = Reader::new(patch);
    while r.position() < patch.len() {
        let tag = r.byte()?;
        let end = match r.varint()? {
            0 => End::Left,
            1 => End::Right,
            _ => return Err(Corrupt("unknown list end")),
        };
        match tag {
            PUSH => {
                let n = r.count(1)?;
                for _ in 0..n {
                    list.push(end, r.item()?)?;
                }
            }
            POP => {
                for _ in 0..r.varint()? {
                    if list.pop(end)?.is_none() {
                        return Err(Corrupt("a pop from an empty list"));
                    }
                }
            }
            _ => return Err(Corrupt("unknown list operation")),
        }
    }
    Ok(list.encode())
}
