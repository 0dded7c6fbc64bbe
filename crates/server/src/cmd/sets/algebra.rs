//! Set algebra: `SINTER`, `SUNION`, `SDIFF`, their `STORE` forms, and
//! `SINTERCARD`.
//!
//! Every key's type is checked before anything is computed, as Redis 7.0
//! does (an absent key is an empty set). A `STORE` form holds every key's lock, reads
//! the sources, and replaces the destination (whatever its type) with the
//! result, or deletes it when the result is empty.

use super::reply_members;
use crate::cmd::collection::{self, collection_of, store};
use crate::cmd::{parse_i64, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::set::Set;
use bytes::Bytes;
use std::collections::HashSet;
use tiercache_engine::{Change, Entry};

/// Which operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    /// Members in every set.
    Inter,
    /// Members in any set.
    Union,
    /// Members of the first set in none of the others.
    Diff,
}

/// The result of `op` over `found` (the keys' entries, in order), or the
/// error reply.
fn compute(op: Op, found: &[Option<Entry>]) -> Result<Set, String> {
    let mut sets = Vec::with_capacity(found.len());
    let mut any_absent = false;
    for e in found {
        let s = collection_of::<Set>(e.as_ref())?;
        any_absent |= s.is_none();
        sets.push(s.unwrap_or_default());
    }
    if op == Op::Inter && any_absent {
        return Ok(Set::default());
    }
    Ok(match op {
        Op::Inter => {
            // Walk the smallest set, probing the others' indexes.
            let smallest = (0..sets.len()).min_by_key(|&i| sets[i].len()).unwrap_or(0);
            let others: Vec<HashSet<&[u8]>> = (0..sets.len())
                .filter(|&i| i != smallest)
                .map(|i| sets[i].index())
                .collect();
            let members = sets[smallest]
                .iter_bytes()
                .filter(|m| others.iter().all(|o| o.contains(&m[..])));
            Set::from_members(members)
        }
        Op::Union => Set::from_members(sets.iter().flat_map(|s| s.iter_bytes())),
        Op::Diff => {
            let rest: HashSet<&[u8]> = sets[1..].iter().flat_map(|s| s.iter()).collect();
            let members = sets[0].iter_bytes().filter(|m| !rest.contains(&m[..]));
            Set::from_members(members)
        }
    })
}

/// `SINTER`/`SUNION`/`SDIFF key [key ...]`.
pub async fn combine(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, op: Op) -> Flow {
    let keys = args.bytes_from(1);
    let found = match ctx.session.get_many(&keys).await {
        Ok(f) => f,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    match compute(op, &found) {
        Ok(s) => reply_members(ctx, s.iter()),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SINTERSTORE`/`SUNIONSTORE`/`SDIFFSTORE destination key [key ...]`:
/// the result's size.
pub async fn combine_store(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, op: Op) -> Flow {
    // The destination is the last key, so that it may also be a source.
    let mut keys = args.bytes_from(2);
    keys.push(args.bytes(1));
    let max_len = ctx.server.config.limits.max_bulk_len;
    let r = ctx
        .session
        .modify_many(keys, |found| {
            let n = found.len();
            let mut changes = vec![Change::Keep; n];
            let result = match compute(op, &found[..n - 1]) {
                Ok(s) => s,
                Err(msg) => return (changes, Err(msg)),
            };
            // Whatever the destination held (any type) is replaced.
            match store(None, &result, max_len) {
                Ok(Change::Keep) => changes[n - 1] = Change::Delete,
                Ok(change) => changes[n - 1] = change,
                Err(msg) => return (changes, Err(msg)),
            }
            (changes, Ok((result.len(), found[n - 1].is_some())))
        })
        .await;
    match r {
        Ok(Ok((n, existed))) => {
            let event = match op {
                Op::Inter => "sinterstore",
                Op::Union => "sunionstore",
                Op::Diff => "sdiffstore",
            };
            let dst = args.get(1);
            collection::notify_stored(ctx, class::SET, event, dst, n > 0, existed);
            reply::integer(ctx.out, n as i64)
        }
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `SINTERCARD numkeys key [key ...] [LIMIT limit]`: the intersection's
/// size, counting stops at `limit` (0: no limit).
pub async fn sintercard(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let numkeys = match parse_i64(args.get(1)) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            ctx.error("ERR numkeys should be greater than 0");
            return Flow::Continue;
        }
    };
    if numkeys > (args.len() - 2) as u64 {
        ctx.error("ERR Number of keys can't be greater than number of args");
        return Flow::Continue;
    }
    let last_key = 1 + numkeys as usize;
    let mut limit = 0u64;
    let mut i = last_key + 1;
    while i < args.len() {
        if args.is(i, "limit") && i + 1 < args.len() {
            match parse_i64(args.get(i + 1)).filter(|&n| n >= 0) {
                Some(n) => limit = n as u64,
                None => {
                    ctx.error("ERR LIMIT can't be negative");
                    return Flow::Continue;
                }
            }
            i += 2;
        } else {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    }
    let keys: Vec<Bytes> = (2..=last_key).map(|i| args.bytes(i)).collect();
    let found = match ctx.session.get_many(&keys).await {
        Ok(f) => f,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    match compute(Op::Inter, &found) {
        Ok(s) => {
            let n = s.len() as u64;
            reply::integer(ctx.out, if limit > 0 { n.min(limit) } else { n } as i64)
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}
