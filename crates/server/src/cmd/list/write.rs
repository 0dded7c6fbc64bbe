//! The list commands that add or change elements in place: `LPUSH`,
//! `RPUSH`, `LPUSHX`, `RPUSHX`, `LINSERT`, `LSET`, `LREM`, `LTRIM`.

use super::{corrupt, push_end, End};
use crate::cmd::collection::{self, collection_of};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::list::List;
use crate::notify::class;
use crate::resp::reply;

/// `LPUSH`/`RPUSH key element [element ...]` (each element in turn at that
/// end); with `only_existing` (`LPUSHX`/`RPUSHX`) an absent key stays
/// absent. Replies the new length (0 for an absent key with `X`).
pub async fn push(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, end: End, only_existing: bool) -> Flow {
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        if only_existing && l.is_empty() {
            return Ok((0, false));
        }
        for i in 2..args.len() {
            push_end(l, end, args.bytes(i))?;
        }
        Ok((l.len(), true))
    })
    .await;
    let event = match end {
        End::Left => "lpush",
        End::Right => "rpush",
    };
    collection::notify_change(ctx, class::LIST, event, args.get(1));
    reply_len(ctx, r);
    Flow::Continue
}

/// `LINSERT key BEFORE|AFTER pivot element`: the new length, -1 when the
/// pivot is not there, 0 for an absent key.
pub async fn linsert(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let after = if args.is(2, "after") {
        true
    } else if args.is(2, "before") {
        false
    } else {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    };
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        if l.is_empty() {
            return Ok((0, false));
        }
        let items = l.items_mut().map_err(corrupt)?;
        let Some(at) = items.iter().position(|e| e == args.get(3)) else {
            return Ok((-1, false));
        };
        items.insert(at + usize::from(after), args.bytes(4));
        Ok((items.len() as i64, true))
    })
    .await;
    collection::notify_change(ctx, class::LIST, "linsert", args.get(1));
    match r {
        Ok(n) => reply::integer(ctx.out, n),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `LSET key index element`. Redis looks at the key before the index.
pub async fn lset(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let key = args.get(1);
    let found = match ctx.session.get(key).await {
        Ok(e) => e,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    match collection_of::<List>(found.as_ref()) {
        Ok(None) => {
            ctx.error("ERR no such key");
            return Flow::Continue;
        }
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
        Ok(Some(_)) => {}
    }
    let Some(index) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let r = collection::modify::<List, _>(ctx, key, |l| {
        if l.is_empty() {
            return Err("ERR no such key".to_string());
        }
        let Some(i) = l.position(index) else {
            return Err("ERR index out of range".to_string());
        };
        l.items_mut().map_err(corrupt)?[i] = args.bytes(3);
        Ok(((), true))
    })
    .await;
    collection::notify_change(ctx, class::LIST, "lset", key);
    match r {
        Ok(()) => reply::ok(ctx.out),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `LREM key count element`: removes up to `count` matches from the head
/// (from the tail when negative, all when 0); replies how many.
pub async fn lrem(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(count) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        let l = l.items_mut().map_err(corrupt)?;
        let target = args.get(3);
        let limit = if count == 0 {
            u64::MAX
        } else {
            count.unsigned_abs()
        };
        let matches: Vec<usize> = if count < 0 {
            let mut m: Vec<usize> = (0..l.len())
                .rev()
                .filter(|&i| l[i] == target)
                .take(limit.min(usize::MAX as u64) as usize)
                .collect();
            m.reverse();
            m
        } else {
            (0..l.len())
                .filter(|&i| l[i] == target)
                .take(limit.min(usize::MAX as u64) as usize)
                .collect()
        };
        if matches.is_empty() {
            return Ok((0, false));
        }
        let mut next = matches.iter().peekable();
        let mut i = 0;
        l.retain(|_| {
            let drop = next.peek() == Some(&&i);
            if drop {
                next.next();
            }
            i += 1;
            !drop
        });
        Ok((matches.len(), true))
    })
    .await;
    collection::notify_change(ctx, class::LIST, "lrem", args.get(1));
    reply_len(ctx, r);
    Flow::Continue
}

/// `LTRIM key start stop`: keeps that range (inclusive, negative from the
/// tail); a range that misses the list deletes it.
pub async fn ltrim(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (Some(start), Some(stop)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let r = collection::modify::<List, _>(ctx, args.get(1), |l| {
        let existed = !l.is_empty();
        let keep = l.span(start, stop);
        if keep.len() == l.len() {
            return Ok((existed, false));
        }
        let l = l.items_mut().map_err(corrupt)?;
        l.truncate(keep.end);
        l.drain(..keep.start);
        Ok((existed, true))
    })
    .await;
    match r {
        Ok(existed) => {
            // Redis raises `ltrim` on any list, trimmed or not.
            if ctx.client.last_change == collection::LastChange::Unchanged && existed {
                ctx.notify(class::LIST, "ltrim", args.get(1));
            }
            collection::notify_change(ctx, class::LIST, "ltrim", args.get(1));
            reply::ok(ctx.out)
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

fn reply_len(ctx: &mut Ctx<'_, '_>, r: Result<usize, String>) {
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
}
