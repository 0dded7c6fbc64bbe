//! The set commands that only read: `SMEMBERS`, `SISMEMBER`,
//! `SMISMEMBER`, `SCARD`, `SRANDMEMBER`, `SSCAN`.

use super::{reply_empty, reply_members};
use crate::cmd::collection;
use crate::cmd::sampling::{distinct, matches, random_below, scan_pattern, valid_cursor};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;
use crate::set::Set;

/// `SMEMBERS key`.
pub async fn smembers(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match collection::read::<Set>(ctx, args.get(1)).await {
        Ok(Some(s)) => reply_members(ctx, s.iter()),
        Ok(None) => reply_empty(ctx),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SISMEMBER key member`: 1 or 0.
pub async fn sismember(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    collection::with_stored::<Set>(ctx, args.get(1), |ctx, raw| {
        let found = match raw {
            Some(raw) => Set::find(raw, args.get(2))?,
            None => false,
        };
        reply::integer(ctx.out, i64::from(found));
        Ok(())
    })
    .await;
    Flow::Continue
}

/// `SMISMEMBER key member [member ...]`: 1 or 0 for each.
pub async fn smismember(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let members: Vec<&[u8]> = (2..args.len()).map(|i| args.get(i)).collect();
    match collection::read::<Set>(ctx, args.get(1)).await {
        Ok(s) => {
            let found = s.unwrap_or_default().contains_each(&members);
            reply::array(ctx.out, found.len());
            for f in found {
                reply::integer(ctx.out, i64::from(f));
            }
        }
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SCARD key`: the number of members (0 when absent).
pub async fn scard(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match collection::read::<Set>(ctx, args.get(1)).await {
        Ok(s) => reply::integer(ctx.out, s.map_or(0, |s| s.len() as i64)),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SRANDMEMBER key [count]`: one random member (or null); with a count
/// up to that many distinct members, or `-count` picks with repetition.
pub async fn srandmember(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 3 {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    let count = if args.len() == 3 {
        match parse_i64(args.get(2)) {
            None => {
                ctx.error(NOT_AN_INTEGER);
                return Flow::Continue;
            }
            Some(i64::MIN) => {
                ctx.error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
                return Flow::Continue;
            }
            Some(n) => Some(n),
        }
    } else {
        None
    };
    let s = match collection::read::<Set>(ctx, args.get(1)).await {
        Ok(s) => s.unwrap_or_default(),
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let len = s.len();
    let Some(count) = count else {
        let m = (len > 0).then(|| s.at(random_below(len)).expect("within the set"));
        ctx.bulk_or_null(m);
        return Flow::Continue;
    };
    let member = |i: usize| s.at(i).expect("picked within the set");
    if len == 0 || count == 0 {
        reply::array(ctx.out, 0);
    } else if count < 0 {
        // Drawn while replying: a huge count must not also cost a list of
        // positions (the reply itself grows as Redis's does).
        let n = count.unsigned_abs();
        reply::array(ctx.out, n as usize);
        for _ in 0..n {
            reply::bulk(ctx.out, member(random_below(len)));
        }
    } else if count as u64 >= len as u64 {
        reply::array(ctx.out, len);
        for m in s.iter() {
            reply::bulk(ctx.out, m);
        }
    } else {
        let picks = distinct(len, count as usize);
        reply::array(ctx.out, picks.len());
        for i in picks {
            reply::bulk(ctx.out, member(i));
        }
    }
    Flow::Continue
}

/// `SSCAN key cursor [MATCH pattern] [COUNT count]`: every (matching)
/// member in one reply with cursor 0, as Redis does for an `intset`, and
/// as `HSCAN` does here.
pub async fn sscan(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if !valid_cursor(args.get(2)) {
        ctx.error("ERR invalid cursor");
        return Flow::Continue;
    }
    let s = match collection::read::<Set>(ctx, args.get(1)).await {
        Ok(s) => s.unwrap_or_default(),
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    // Redis answers an absent key before looking at the options.
    let pattern = match scan_pattern(args, 3) {
        _ if s.is_empty() => None,
        Ok(p) => p,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let hits: Vec<_> = s.iter().filter(|m| matches(pattern, m)).collect();
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, b"0");
    reply::array(ctx.out, hits.len());
    for m in hits {
        reply::bulk(ctx.out, m);
    }
    Flow::Continue
}
