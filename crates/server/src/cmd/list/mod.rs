//! The list commands: `LPUSH RPUSH LPUSHX RPUSHX LINSERT LSET LREM LTRIM`
//! ([`write`](mod@write)), `LPOP RPOP LMPOP LMOVE RPOPLPUSH` ([`pop`]) and
//! `LLEN LINDEX LRANGE LPOS` ([`read`]).
//!
//! A list is one engine entry of kind `ValueKind::List` holding the
//! [`List`] encoding (in nodes: pushes, pops and index or range reads touch
//! only the nodes they need), read and written through
//! [`collection`](super::collection) (one read-modify-write under the
//! key's lock per command; an emptied list is deleted; a one-key push or
//! pop is journaled as a patch). Arguments are
//! checked in Redis's order, which differs per command: some look at the
//! key before their integers, some after.
//!
//! The blocking forms (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`)
//! are in [`blocking`](super::blocking), on top of [`pop`].

pub mod pop;
pub mod read;
pub mod write;

use super::Args;
pub use crate::list::End;
use crate::list::List;
use crate::packed::Corrupt;

impl End {
    /// `LEFT` or `RIGHT` (any case), as Redis's `getListPositionFromObjectOrReply`.
    pub fn parse(args: &Args<'_>, i: usize) -> Option<End> {
        if args.is(i, "left") {
            Some(End::Left)
        } else if args.is(i, "right") {
            Some(End::Right)
        } else {
            None
        }
    }
}

/// The error reply for a list value that does not decode.
pub fn corrupt(c: Corrupt) -> String {
    format!("ERR corrupt list value: {c}")
}

/// Removes an element from `end` of `list`.
fn pop_end(list: &mut List, end: End) -> Result<Option<bytes::Bytes>, String> {
    list.pop(end).map_err(corrupt)
}

/// Adds `item` at `end` of `list`.
fn push_end(list: &mut List, end: End, item: bytes::Bytes) -> Result<(), String> {
    list.push(end, item).map_err(corrupt)
}
