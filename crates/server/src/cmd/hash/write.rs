//! The hash commands that write: `HSET`/`HMSET`, `HSETNX`, `HDEL`,
//! `HINCRBY`, `HINCRBYFLOAT`. Each is one read-modify-write of the key
//! (`modify_hash`); arguments are checked first, in Redis's order
//! (arity, then the increment, then the key's type).

use super::modify_hash;
use crate::cmd::collection::{self, StoredEdit};
use crate::cmd::incrbyfloat::{check_hash_increment, hash_add};
use crate::cmd::{arity_error, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::hash::Hash;
use crate::resp::reply;

/// Which reply `HSET` or `HMSET` gives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum SetReply {
    /// `HSET`: the number of new fields.
    Added,
    /// `HMSET`: `+OK`.
    Ok,
}

/// `HSET key field value [field value ...]` / `HMSET` (same, replies OK).
pub async fn hset(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, kind: SetReply) -> Flow {
    if args.len() % 2 == 1 {
        let name = if kind == SetReply::Ok {
            "hmset"
        } else {
            "hset"
        };
        ctx.error(&arity_error(name));
        return Flow::Continue;
    }
    let r = if args.len() == 4 {
        set_one(args, ctx).await
    } else {
        let pairs = (2..args.len())
            .step_by(2)
            .map(|i| (args.bytes(i), args.bytes(i + 1)));
        modify_hash(ctx, args.get(1), |h| Ok((h.set_many(pairs), true))).await
    };
    match r {
        Ok(_) if kind == SetReply::Ok => reply::ok(ctx.out),
        Ok(added) => reply::integer(ctx.out, added as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `HSET key field value` on the stored hash, not decoded: a write to one
/// field of a big hash copies it in two pieces ([`Hash::set_stored`]).
async fn set_one(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Result<usize, String> {
    let (field, value) = (args.get(2), args.get(3));
    collection::modify_stored::<Hash, _>(ctx, args.get(1), |raw| match raw {
        Some(raw) => {
            let s = Hash::set_stored(raw, field, value)?;
            Ok((StoredEdit::Patched(s.value, s.patch), usize::from(s.added)))
        }
        None => {
            let mut h = Hash::default();
            h.set(args.bytes(2), args.bytes(3));
            Ok((StoredEdit::Whole(h.encode()), 1))
        }
    })
    .await
}

/// `HSETNX key field value`: 1 when the field was set, 0 when it existed.
pub async fn hsetnx(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = modify_hash(ctx, args.get(1), |h| {
        if h.get(args.get(2)).is_some() {
            return Ok((0, false));
        }
        h.set(args.bytes(2), args.bytes(3));
        Ok((1, true))
    })
    .await;
    match r {
        Ok(n) => reply::integer(ctx.out, n),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `HDEL key field [field ...]`: how many existed; the last field deletes the key.
pub async fn hdel(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let fields: Vec<&[u8]> = (2..args.len()).map(|i| args.get(i)).collect();
    let r = modify_hash(ctx, args.get(1), |h| {
        let removed = h.remove_many(&fields);
        Ok((removed, removed > 0))
    })
    .await;
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `HINCRBY key field increment`: the new value (absent field = 0).
pub async fn hincrby(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(incr) = parse_i64(args.get(3)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let r = modify_hash(ctx, args.get(1), |h| {
        let current = match h.get(args.get(2)) {
            None => 0,
            Some(v) => parse_i64(v).ok_or("ERR hash value is not an integer")?,
        };
        let new = current
            .checked_add(incr)
            .ok_or("ERR increment or decrement would overflow")?;
        h.set(args.bytes(2), new.to_string().into());
        Ok((new, true))
    })
    .await;
    match r {
        Ok(n) => reply::integer(ctx.out, n),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `HINCRBYFLOAT key field increment`: the new value, as Redis prints a
/// `long double` (see `cmd/incrbyfloat.rs`).
pub async fn hincrbyfloat(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let incr = args.get(3);
    if let Err(msg) = check_hash_increment(incr) {
        ctx.error(msg);
        return Flow::Continue;
    }
    let r = modify_hash(ctx, args.get(1), |h| {
        let sum = hash_add(h.get(args.get(2)), incr)?;
        h.set(args.bytes(2), sum.clone().into());
        Ok((sum, true))
    })
    .await;
    match r {
        Ok(sum) => reply::bulk(ctx.out, &sum),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}
