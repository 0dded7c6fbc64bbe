//! The list commands that only read: `LLEN`, `LINDEX`, `LRANGE`, `LPOS`.

use super::corrupt;
use crate::cmd::collection;
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::list::List;
use crate::resp::reply;

/// `LLEN key`: 0 for an absent key.
pub async fn llen(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match collection::read::<List>(ctx, args.get(1)).await {
        Ok(l) => reply::integer(ctx.out, l.map_or(0, |l| l.len() as i64)),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `LINDEX key index`: the element, or null. Redis looks at the key
/// before the index.
pub async fn lindex(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let l = match collection::read::<List>(ctx, args.get(1)).await {
        Ok(Some(l)) => l,
        Ok(None) => {
            ctx.null();
            return Flow::Continue;
        }
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let Some(index) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    match l.position(index).map(|i| l.get(i)).transpose() {
        Ok(e) => ctx.bulk_or_null(e.flatten().as_deref()),
        Err(c) => ctx.error(&corrupt(c)),
    }
    Flow::Continue
}

/// `LRANGE key start stop` (inclusive; negative counts from the tail).
pub async fn lrange(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (Some(start), Some(stop)) = (parse_i64(args.get(2)), parse_i64(args.get(3))) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    match collection::read::<List>(ctx, args.get(1)).await {
        Ok(None) => reply::array(ctx.out, 0),
        Ok(Some(l)) => match l.range(l.span(start, stop)) {
            Ok(items) => {
                reply::array(ctx.out, items.len());
                for e in items {
                    reply::bulk(ctx.out, &e);
                }
            }
            Err(c) => ctx.error(&corrupt(c)),
        },
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len]`: the
/// position of the `rank`th match (from the tail when negative), or with
/// `COUNT` an array of up to that many positions (0: all).
pub async fn lpos(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (mut rank, mut count, mut maxlen): (i64, Option<u64>, u64) = (1, None, 0);
    let mut i = 3;
    while i < args.len() {
        let more = i + 1 < args.len();
        if args.is(i, "rank") && more {
            match parse_i64(args.get(i + 1)) {
                None => return error(ctx, NOT_AN_INTEGER),
                Some(0) => {
                    return error(
                        ctx,
                        "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list",
                    )
                }
                Some(r) => rank = r,
            }
        } else if args.is(i, "count") && more {
            match parse_i64(args.get(i + 1)).filter(|&n| n >= 0) {
                Some(n) => count = Some(n as u64),
                None => return error(ctx, "ERR COUNT can't be negative"),
            }
        } else if args.is(i, "maxlen") && more {
            match parse_i64(args.get(i + 1)).filter(|&n| n >= 0) {
                Some(n) => maxlen = n as u64,
                None => return error(ctx, "ERR MAXLEN can't be negative"),
            }
        } else {
            return error(ctx, SYNTAX_ERROR);
        }
        i += 2;
    }
    let l = match collection::read::<List>(ctx, args.get(1)).await {
        Ok(l) => l.unwrap_or_default(),
        Err(msg) => return error(ctx, &msg),
    };
    let l = match l.to_items() {
        Ok(items) => items,
        Err(c) => return error(ctx, &corrupt(c)),
    };
    let target = args.get(2);
    let len = l.len();
    let scan = if maxlen == 0 {
        len
    } else {
        len.min(maxlen as usize)
    };
    let order: Box<dyn Iterator<Item = usize>> = if rank > 0 {
        Box::new(0..scan)
    } else {
        Box::new((len - scan..len).rev())
    };
    let want = match count {
        None | Some(0) => usize::MAX,
        Some(n) => n.min(usize::MAX as u64) as usize,
    };
    let hits: Vec<i64> = order
        .filter(|&i| l[i] == target)
        // Redis 7.0 takes a rank of i64::MIN (its negation overflows) as
        // the first match from the tail.
        .skip(match rank {
            i64::MIN => 0,
            r => r.unsigned_abs().saturating_sub(1).min(usize::MAX as u64) as usize,
        })
        .take(if count.is_some() { want } else { 1 })
        .map(|i| i as i64)
        .collect();
    match count {
        Some(_) => {
            reply::array(ctx.out, hits.len());
            for h in hits {
                reply::integer(ctx.out, h);
            }
        }
        None => match hits.first() {
            Some(&h) => reply::integer(ctx.out, h),
            None => ctx.null(),
        },
    }
    Flow::Continue
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
