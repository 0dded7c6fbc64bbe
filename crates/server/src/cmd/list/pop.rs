//! The list commands that remove elements: `LPOP`, `RPOP`, `LMPOP`, and
//! `LMOVE`/`RPOPLPUSH`, which move one element between two lists under
//! both keys' locks.

use super::{pop_end, push_end, End};
use crate::cmd::collection::{self, collection_of, store_patched};
use crate::cmd::{arity_error, engine_error_message, parse_i64, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::list::List;
use crate::notify::class;
use crate::resp::reply;
use bytes::Bytes;
use tiercache_engine::Change;

/// `LPOP`/`RPOP key [count]`: one element (or null), or with a count an
/// array of up to that many (null array for an absent key).
pub async fn pop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, end: End) -> Flow {
    let name = if end == End::Left { "lpop" } else { "rpop" };
    if args.len() > 3 {
        ctx.error(&arity_error(name));
        return Flow::Continue;
    }
    let count = match collection::optional_count(args) {
        Ok(count) => count,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        if l.is_empty() {
            return Ok((None, false));
        }
        let n = count.unwrap_or(1).min(l.len() as u64) as usize;
        let mut popped = Vec::with_capacity(n);
        for _ in 0..n {
            popped.extend(pop_end(l, end)?);
        }
        Ok((Some(popped), n > 0))
    })
    .await;
    collection::notify_change(ctx, class::LIST, name, args.get(1));
    let proto = ctx.proto();
    match (r, count) {
        (Err(msg), _) => ctx.error(&msg),
        (Ok(None), None) => ctx.null(),
        (Ok(None), Some(_)) => reply::null_array(ctx.out, proto),
        (Ok(Some(popped)), None) => reply::bulk(ctx.out, &popped[0]),
        (Ok(Some(popped)), Some(_)) => bulks(ctx, &popped),
    }
    Flow::Continue
}

/// `LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]`: pops from the
/// first non-empty list; replies `[key, [elements]]`, or a null array.
pub async fn lmpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (keys, end, count) = match parse_mpop(args, 1, End::parse) {
        Ok(parsed) => parsed,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    match pop_first(ctx, &keys, end, count, false).await {
        Err(msg) => ctx.error(&msg),
        Ok(None) => {
            let proto = ctx.proto();
            reply::null_array(ctx.out, proto)
        }
        Ok(Some((at, popped))) => {
            propagate_pop(ctx, end, &keys[at], Some(popped.len()));
            reply_mpop(ctx, &keys[at], &popped)
        }
    }
    Flow::Continue
}

/// What a pop from the first non-empty list propagates: `LPOP`/`RPOP`
/// of that key, with how many it popped when `count` is given.
pub fn propagate_pop(ctx: &mut Ctx<'_, '_>, end: End, key: &[u8], count: Option<usize>) {
    let name: &[u8] = if end == End::Left { b"LPOP" } else { b"RPOP" };
    crate::cmd::propagate::propagate_pop(ctx, name, key, count);
}

/// The events of a pop from `end` of `key` just made by [`pop_first`]:
/// `lpop` or `rpop`, then `del` if it emptied the list.
fn notify_pop(ctx: &Ctx<'_, '_>, end: End, key: &[u8]) {
    let event = match end {
        End::Left => "lpop",
        End::Right => "rpop",
    };
    collection::notify_change(ctx, class::LIST, event, key);
}

/// `[key, [elements]]`, `LMPOP`'s reply.
pub fn reply_mpop(ctx: &mut Ctx<'_, '_>, key: &[u8], popped: &[Bytes]) {
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, key);
    bulks(ctx, popped);
}

/// `numkeys key [key ...] WHERE [COUNT count]` from argument `at`
/// (`LMPOP`, `BLMPOP` with `LEFT|RIGHT`, `ZMPOP`, `BZMPOP` with
/// `MIN|MAX`): the keys, the `WHERE` word as `parse_where` reads it, the
/// count; or the error reply.
pub fn parse_mpop<W>(
    args: &Args<'_>,
    at: usize,
    parse_where: impl Fn(&Args<'_>, usize) -> Option<W>,
) -> Result<(Vec<Bytes>, W, u64), &'static str> {
    let numkeys = match parse_i64(args.get(at)) {
        Some(n) if n >= 1 => n as u64,
        _ => return Err("ERR numkeys should be greater than 0"),
    };
    let where_at = numkeys.saturating_add(at as u64 + 1);
    if where_at >= args.len() as u64 {
        return Err(SYNTAX_ERROR);
    }
    let where_at = where_at as usize;
    let end = parse_where(args, where_at).ok_or(SYNTAX_ERROR)?;
    let mut count: Option<u64> = None;
    let mut i = where_at + 1;
    while i < args.len() {
        if count.is_none() && args.is(i, "count") && i + 1 < args.len() {
            match parse_i64(args.get(i + 1)) {
                Some(n) if n >= 1 => count = Some(n as u64),
                _ => return Err("ERR count should be greater than 0"),
            }
            i += 2;
        } else {
            return Err(SYNTAX_ERROR);
        }
    }
    let keys = (at + 1..where_at).map(|i| args.bytes(i)).collect();
    Ok((keys, end, count.unwrap_or(1)))
}

/// Pops up to `count` elements from `end` of the first non-empty list of
/// `keys`, under every key's lock: which key, and what was popped; `None`
/// when every list is empty. A key of another type is an error, or is
/// passed over with `skip_wrong_type` (a blocked client waking up).
pub async fn pop_first(
    ctx: &mut Ctx<'_, '_>,
    keys: &[Bytes],
    end: End,
    count: u64,
    skip_wrong_type: bool,
) -> Result<Option<(usize, Vec<Bytes>)>, String> {
    let r = collection::take_from_first::<List, _>(ctx, keys, skip_wrong_type, |l| {
        let n = count.min(l.len() as u64) as usize;
        let mut popped = Vec::with_capacity(n);
        for _ in 0..n {
            popped.extend(pop_end(l, end)?);
        }
        Ok(popped)
    })
    .await;
    if let Ok(Some((at, _))) = &r {
        notify_pop(ctx, end, &keys[*at]);
    }
    r
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`, and `RPOPLPUSH source
/// destination` (`from`/`to` given): pops from `source`, pushes onto
/// `destination`, replies the element (null when `source` is empty).
pub async fn lmove(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, ends: Option<(End, End)>) -> Flow {
    let (from, to) = match ends {
        Some(ends) => ends,
        None => match parse_ends(args, 3) {
            Some(ends) => ends,
            None => {
                ctx.error(SYNTAX_ERROR);
                return Flow::Continue;
            }
        },
    };
    let r = move_one(ctx, args.get(1), args.get(2), (from, to), false).await;
    reply_moved(ctx, r);
    Flow::Continue
}

/// `LEFT|RIGHT LEFT|RIGHT` at arguments `at` and `at + 1`.
pub fn parse_ends(args: &Args<'_>, at: usize) -> Option<(End, End)> {
    Some((End::parse(args, at)?, End::parse(args, at + 1)?))
}

/// Moves one element from `ends.0` of `src` to `ends.1` of `dst`, under
/// both keys' locks; `None` when `src` is empty (or, with
/// `skip_wrong_type`, not a list).
pub async fn move_one(
    ctx: &mut Ctx<'_, '_>,
    src: &[u8],
    dst: &[u8],
    (from, to): (End, End),
    skip_wrong_type: bool,
) -> Result<Option<Bytes>, String> {
    if src == dst {
        // One list: rotate it (or nothing, for one element at the same end).
        let r = collection::modify::<List, _>(ctx, src, |l| {
            let Some(e) = pop_end(l, from)? else {
                return Ok((None, false));
            };
            push_end(l, to, e.clone())?;
            Ok((Some(e), from != to))
        })
        .await
        .or_else(|msg| if skip_wrong_type { Ok(None) } else { Err(msg) });
        if let Ok(Some(_)) = r {
            notify_move(ctx, src, dst, (from, to), false);
        }
        return r;
    }
    let max = ctx.server.config.limits.max_bulk_len;
    let keys = vec![Bytes::copy_from_slice(src), Bytes::copy_from_slice(dst)];
    let r = ctx
        .session
        .modify_many(keys, |found| {
            let keep = vec![Change::Keep, Change::Keep];
            // Redis checks the destination's type only once the source has
            // an element to move.
            let mut source = match collection_of::<List>(found[0].as_ref()) {
                Ok(Some(l)) => l,
                Ok(None) => return (keep, Ok(None)),
                Err(_) if skip_wrong_type => return (keep, Ok(None)),
                Err(msg) => return (keep, Err(msg)),
            };
            let mut target = match collection_of::<List>(found[1].as_ref()) {
                Ok(l) => l.unwrap_or_default(),
                Err(msg) => return (keep, Err(msg)),
            };
            let e = match pop_end(&mut source, from) {
                Ok(Some(e)) => e,
                Ok(None) => unreachable!("a stored list is not empty"),
                Err(msg) => return (keep, Err(msg)),
            };
            if let Err(msg) = push_end(&mut target, to, e.clone()) {
                return (keep, Err(msg));
            }
            let emptied = source.is_empty();
            let changes = store_patched(found[0].as_ref(), &mut source, max)
                .and_then(|s| Ok(vec![s, store_patched(found[1].as_ref(), &mut target, max)?]));
            match changes {
                Ok(changes) => (changes, Ok(Some((e, emptied)))),
                Err(msg) => (keep, Err(msg)),
            }
        })
        .await;
    let moved = r.map_err(|e| engine_error_message(&e))??;
    Ok(moved.map(|(e, emptied)| {
        notify_move(ctx, src, dst, (from, to), emptied);
        e
    }))
}

/// The events of a move, in Redis's order: the push on `dst`, the pop
/// on `src`, and `del` when that emptied `src`.
fn notify_move(ctx: &Ctx<'_, '_>, src: &[u8], dst: &[u8], (from, to): (End, End), emptied: bool) {
    let push = if to == End::Left { "lpush" } else { "rpush" };
    let pop = if from == End::Left { "lpop" } else { "rpop" };
    ctx.notify(class::LIST, push, dst);
    ctx.notify(class::LIST, pop, src);
    if emptied {
        ctx.notify(class::GENERIC, "del", src);
    }
}

/// The moved element (null when none), or the error.
pub fn reply_moved(ctx: &mut Ctx<'_, '_>, r: Result<Option<Bytes>, String>) {
    match r {
        Ok(e) => ctx.bulk_or_null(e.as_deref()),
        Err(msg) => ctx.error(&msg),
    }
}

/// An array of bulk strings.
pub fn bulks(ctx: &mut Ctx<'_, '_>, items: &[Bytes]) {
    reply::array(ctx.out, items.len());
    for i in items {
        reply::bulk(ctx.out, i);
    }
}
