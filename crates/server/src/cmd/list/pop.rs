//! The list commands that remove elements: `LPOP`, `RPOP`, `LMPOP`, and
//! `LMOVE`/`RPOPLPUSH`, which move one element between two lists under
//! both keys' locks.

use super::{pop_end, push_end, End};
use crate::cmd::collection::{self, collection_of, store};
use crate::cmd::{arity_error, parse_i64, Args, Ctx, Flow, SYNTAX_ERROR};
use crate::list::List;
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
    let count = if args.len() == 3 {
        match parse_i64(args.get(2)).filter(|&n| n >= 0) {
            Some(n) => Some(n as u64),
            None => {
                ctx.error("ERR value is out of range, must be positive");
                return Flow::Continue;
            }
        }
    } else {
        None
    };
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        if l.is_empty() {
            return Ok((None, false));
        }
        let n = count.unwrap_or(1).min(l.len() as u64) as usize;
        let popped: Vec<Bytes> = (0..n).filter_map(|_| pop_end(l, end)).collect();
        Ok((Some(popped), n > 0))
    })
    .await;
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
    let numkeys = match parse_i64(args.get(1)) {
        Some(n) if n >= 1 => n as u64,
        _ => {
            ctx.error("ERR numkeys should be greater than 0");
            return Flow::Continue;
        }
    };
    let where_at = numkeys.saturating_add(2);
    if where_at >= args.len() as u64 {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    let where_at = where_at as usize;
    let Some(end) = End::parse(args, where_at) else {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    };
    let mut count: Option<u64> = None;
    let mut i = where_at + 1;
    while i < args.len() {
        if count.is_none() && args.is(i, "count") && i + 1 < args.len() {
            match parse_i64(args.get(i + 1)) {
                Some(n) if n >= 1 => count = Some(n as u64),
                _ => {
                    ctx.error("ERR count should be greater than 0");
                    return Flow::Continue;
                }
            }
            i += 2;
        } else {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    }
    let keys: Vec<Bytes> = (2..where_at).map(|i| args.bytes(i)).collect();
    let count = count.unwrap_or(1);
    let max = ctx.server.config.limits.max_bulk_len;
    let r = ctx
        .session
        .modify_many(keys.clone(), |found| {
            let mut changes = vec![Change::Keep; found.len()];
            for (at, entry) in found.iter().enumerate() {
                let mut l = match collection_of::<List>(entry.as_ref()) {
                    Ok(Some(l)) => l,
                    Ok(None) => continue,
                    Err(msg) => return (changes, Err(msg)),
                };
                let n = count.min(l.len() as u64) as usize;
                let popped: Vec<Bytes> = (0..n).filter_map(|_| pop_end(&mut l, end)).collect();
                return match store(entry.as_ref(), &l, max) {
                    Ok(change) => {
                        changes[at] = change;
                        (changes, Ok(Some((at, popped))))
                    }
                    Err(msg) => (changes, Err(msg)),
                };
            }
            (changes, Ok(None))
        })
        .await;
    match r {
        Err(e) => ctx.engine_error(&e),
        Ok(Err(msg)) => ctx.error(&msg),
        Ok(Ok(None)) => {
            let proto = ctx.proto();
            reply::null_array(ctx.out, proto)
        }
        Ok(Ok(Some((at, popped)))) => {
            reply::array(ctx.out, 2);
            reply::bulk(ctx.out, &keys[at]);
            bulks(ctx, &popped);
        }
    }
    Flow::Continue
}

/// `LMOVE source destination LEFT|RIGHT LEFT|RIGHT`, and `RPOPLPUSH source
/// destination` (`from`/`to` given): pops from `source`, pushes onto
/// `destination`, replies the element (null when `source` is empty).
pub async fn lmove(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, ends: Option<(End, End)>) -> Flow {
    let (from, to) = match ends {
        Some(ends) => ends,
        None => match (End::parse(args, 3), End::parse(args, 4)) {
            (Some(f), Some(t)) => (f, t),
            _ => {
                ctx.error(SYNTAX_ERROR);
                return Flow::Continue;
            }
        },
    };
    let (src, dst) = (args.bytes(1), args.bytes(2));
    if src == dst {
        // One list: rotate it (or nothing, for one element at the same end).
        let r = collection::modify::<List, _>(ctx, &src, |l| {
            let Some(e) = pop_end(l, from) else {
                return Ok((None, false));
            };
            push_end(l, to, e.clone());
            Ok((Some(e), from != to))
        })
        .await;
        reply_moved(ctx, r);
        return Flow::Continue;
    }
    let max = ctx.server.config.limits.max_bulk_len;
    let r = ctx
        .session
        .modify_many(vec![src, dst], |found| {
            let keep = vec![Change::Keep, Change::Keep];
            // Redis checks the destination's type only once the source has
            // an element to move.
            let mut source = match collection_of::<List>(found[0].as_ref()) {
                Ok(Some(l)) => l,
                Ok(None) => return (keep, Ok(None)),
                Err(msg) => return (keep, Err(msg)),
            };
            let mut target = match collection_of::<List>(found[1].as_ref()) {
                Ok(l) => l.unwrap_or_default(),
                Err(msg) => return (keep, Err(msg)),
            };
            let e = pop_end(&mut source, from).expect("a stored list is not empty");
            push_end(&mut target, to, e.clone());
            let changes = store(found[0].as_ref(), &source, max)
                .and_then(|s| Ok(vec![s, store(found[1].as_ref(), &target, max)?]));
            match changes {
                Ok(changes) => (changes, Ok(Some(e))),
                Err(msg) => (keep, Err(msg)),
            }
        })
        .await;
    match r {
        Ok(r) => reply_moved(ctx, r),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

fn reply_moved(ctx: &mut Ctx<'_, '_>, r: Result<Option<Bytes>, String>) {
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
