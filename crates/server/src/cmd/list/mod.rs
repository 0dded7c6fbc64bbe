//! The list commands: `LPUSH RPUSH LPUSHX RPUSHX LINSERT LSET LREM LTRIM`
//! ([`write`](mod@write)), `LPOP RPOP LMPOP LMOVE RPOPLPUSH` ([`pop`]) and
//! `LLEN LINDEX LRANGE LPOS` ([`read`]).
//!
//! A list is one engine entry of kind `ValueKind::List` holding the
//! [`List`] encoding, read and written through
//! [`collection`](super::collection) (one read-modify-write under the
//! key's lock per command; an emptied list is deleted). Arguments are
//! checked in Redis's order, which differs per command: some look at the
//! key before their integers, some after.
//!
//! The blocking forms (`BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`, `BLMPOP`)
//! are in [`blocking`](super::blocking), on top of [`pop`].

pub mod pop;
pub mod read;
pub mod write;

use super::Args;
use crate::list::List;

/// Which end of a list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The head (`LEFT`).
    Left,
    /// The tail (`RIGHT`).
    Right,
}

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

/// Removes an element from `end` of `list`.
fn pop_end(list: &mut List, end: End) -> Option<bytes::Bytes> {
    match end {
        End::Left => list.pop_front(),
        End::Right => list.pop_back(),
    }
}

/// Adds `item` at `end` of `list`.
fn push_end(list: &mut List, end: End, item: bytes::Bytes) {
    match end {
        End::Left => list.push_front(item),
        End::Right => list.push_back(item),
    }
}
