//! The set commands: `SADD SREM SMOVE SPOP` ([`write`](mod@write)),
//! `SMEMBERS SISMEMBER SMISMEMBER SCARD SRANDMEMBER SSCAN` ([`read`]) and
//! `SINTER SUNION SDIFF`, their `STORE` forms and `SINTERCARD`
//! ([`algebra`]).
//!
//! A set is one engine entry of kind `ValueKind::Set` holding the [`Set`]
//! encoding, read and written through [`collection`](super::collection)
//! (one read-modify-write under the key's lock; an emptied set is
//! deleted). The commands that write several keys (`SMOVE`, the `STORE`
//! forms) hold every key's lock for the whole command.

pub mod algebra;
pub mod read;
pub mod write;

use super::Ctx;
use crate::resp::reply;
use crate::set::Set;

/// Replies the members of `items` as a set (an array in RESP2).
fn reply_members<'a>(ctx: &mut Ctx<'_, '_>, items: impl ExactSizeIterator<Item = &'a [u8]>) {
    let proto = ctx.proto();
    reply::set(ctx.out, items.len(), proto);
    for m in items {
        reply::bulk(ctx.out, m);
    }
}

/// An empty [`Set`] reply.
fn reply_empty(ctx: &mut Ctx<'_, '_>) {
    reply_members(ctx, Set::default().iter());
}
