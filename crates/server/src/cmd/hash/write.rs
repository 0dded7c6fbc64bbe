//! The hash commands that write: `HSET`/`HMSET`, `HSETNX`, `HDEL`,
//! `HINCRBY`, `HINCRBYFLOAT`. Each is one read-modify-write of the key:
//! a write of one field (`HSET` of one pair, `HSETNX`, the increments) on
//! the stored bytes (`update_field`, `set_one`), others on the decoded
//! hash (`modify_hash`). Arguments are checked first, in Redis's order
//! (arity, then the increment, then the key's type).

use super::modify_hash;
use crate::cmd::collection::{self, StoredEdit};
use crate::cmd::incrbyfloat::{check_hash_increment, hash_add};
use crate::cmd::{arity_error, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::hash::Hash;
use crate::notify::class;
use crate::resp::reply;
use bytes::Bytes;

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
    if r.is_ok() {
        collection::notify_change(ctx, class::HASH, "hset", args.get(1));
    }
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

/// A write of the field at argument 2 of the hash at argument 1, decided
/// from its value, on the stored hash (not decoded, one scan;
/// [`Hash::locate`], [`Hash::set_located`]): `decide` gets the value (`None` when absent) and
/// returns the new one (`None` to leave the hash alone) and the answer,
/// or an error reply.
async fn update_field<T>(
    ctx: &mut Ctx<'_, '_>,
    args: &Args<'_>,
    decide: impl FnOnce(Option<&[u8]>) -> Result<(Option<Bytes>, T), String>,
) -> Result<T, String> {
    let field = args.get(2);
    collection::modify_stored::<Hash, _>(ctx, args.get(1), |raw| {
        let found = match raw {
            Some(raw) => Hash::locate(raw, field)?,
            None => None,
        };
        let current = raw
            .zip(found.as_ref())
            .map(|(raw, v)| &raw[v.bytes.clone()]);
        // An error reply is an answer that leaves the hash alone.
        let (new, answer) = match decide(current) {
            Ok((Some(new), answer)) => (new, answer),
            Ok((None, answer)) => return Ok((StoredEdit::Keep, Ok(answer))),
            Err(msg) => return Ok((StoredEdit::Keep, Err(msg))),
        };
        let edit = match raw {
            Some(raw) => {
                let s = Hash::set_located(raw, found.as_ref(), field, &new)?;
                StoredEdit::Patched(s.value, s.patch)
            }
            None => {
                let mut h = Hash::default();
                h.set(args.bytes(2), new);
                StoredEdit::Whole(h.encode())
            }
        };
        Ok((edit, Ok(answer)))
    })
    .await
    .and_then(|answer| answer)
}

/// `HSETNX key field value`: 1 when the field was set, 0 when it existed.
pub async fn hsetnx(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = update_field(ctx, args, |current| {
        Ok(match current {
            Some(_) => (None, 0),
            None => (Some(args.bytes(3)), 1),
        })
    })
    .await;
    if r.is_ok() {
        collection::notify_change(ctx, class::HASH, "hset", args.get(1));
    }
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
    if r.is_ok() {
        collection::notify_change(ctx, class::HASH, "hdel", args.get(1));
    }
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
    let r = update_field(ctx, args, |current| {
        let current = match current {
            None => 0,
            Some(v) => parse_i64(v).ok_or("ERR hash value is not an integer")?,
        };
        let new = current
            .checked_add(incr)
            .ok_or("ERR increment or decrement would overflow")?;
        Ok((Some(new.to_string().into()), new))
    })
    .await;
    if r.is_ok() {
        collection::notify_change(ctx, class::HASH, "hincrby", args.get(1));
    }
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
    let r = update_field(ctx, args, |current| {
        let sum = hash_add(current, incr)?;
        Ok((Some(sum.clone().into()), sum))
    })
    .await;
    if r.is_ok() {
        collection::notify_change(ctx, class::HASH, "hincrbyfloat", args.get(1));
    }
    match r {
        Ok(sum) => reply::bulk(ctx.out, &sum),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}
