//! The sorted set commands that only read: `ZSCORE`, `ZMSCORE`, `ZCARD`,
//! `ZRANK`, `ZREVRANK`, `ZCOUNT`, `ZLEXCOUNT`, `ZRANDMEMBER`, `ZSCAN`.

use super::{reply_members, Selection};
use crate::cmd::collection;
use crate::cmd::sampling::{distinct, matches, random_below, scan_pattern, valid_cursor};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;
use crate::zset::ZSet;

/// Reads the sorted set at argument 1 (empty when absent), or replies the
/// error and returns `None`.
async fn read_or_reply(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Option<ZSet> {
    match collection::read::<ZSet>(ctx, args.get(1)).await {
        Ok(z) => Some(z.unwrap_or_default()),
        Err(msg) => {
            ctx.error(&msg);
            None
        }
    }
}

/// `ZSCORE key member`: the score, or null.
pub async fn zscore(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    collection::with_stored::<ZSet>(ctx, args.get(1), |ctx, raw| {
        let score = match raw {
            Some(raw) => ZSet::find_score(raw, args.get(2))?,
            None => None,
        };
        match score {
            Some(s) => reply::double(ctx.out, s, ctx.proto()),
            None => ctx.null(),
        }
        Ok(())
    })
    .await;
    Flow::Continue
}

/// `ZMSCORE key member [member ...]`: a score or null for each.
pub async fn zmscore(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if let Some(z) = read_or_reply(args, ctx).await {
        let proto = ctx.proto();
        reply::array(ctx.out, args.len() - 2);
        for i in 2..args.len() {
            match z.score(args.get(i)) {
                Some(s) => reply::double(ctx.out, s, proto),
                None => ctx.null(),
            }
        }
    }
    Flow::Continue
}

/// `ZCARD key`.
pub async fn zcard(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if let Some(z) = read_or_reply(args, ctx).await {
        reply::integer(ctx.out, z.len() as i64);
    }
    Flow::Continue
}

/// `ZRANK`/`ZREVRANK key member`: the rank, or null.
pub async fn zrank(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, rev: bool) -> Flow {
    if let Some(z) = read_or_reply(args, ctx).await {
        match z.rank(args.get(2)) {
            Some(r) if rev => reply::integer(ctx.out, (z.len() - 1 - r) as i64),
            Some(r) => reply::integer(ctx.out, r as i64),
            None => ctx.null(),
        }
    }
    Flow::Continue
}

/// `ZCOUNT key min max` (`lex`: `ZLEXCOUNT`): members in the range. The
/// range is checked before the key.
pub async fn zcount(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, lex: bool) -> Flow {
    let (a, b) = (args.get(2), args.get(3));
    let selection = if lex {
        Selection::lex(a, b)
    } else {
        Selection::scores(a, b)
    };
    let selection = match selection {
        Ok(s) => s,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    if let Some(z) = read_or_reply(args, ctx).await {
        reply::integer(ctx.out, selection.span(&z).len() as i64);
    }
    Flow::Continue
}

/// `ZRANDMEMBER key [count [WITHSCORES]]`: as `HRANDFIELD`.
pub async fn zrandmember(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() == 2 {
        if let Some(z) = read_or_reply(args, ctx).await {
            let m = (!z.is_empty()).then(|| z.at(random_below(z.len())).expect("within").0);
            ctx.bulk_or_null(m);
        }
        return Flow::Continue;
    }
    let Some(count) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    if count == i64::MIN {
        ctx.error("ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807");
        return Flow::Continue;
    }
    let with_scores = match args.len() {
        3 => false,
        4 if args.is(3, "withscores") => true,
        _ => {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    };
    if with_scores && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        ctx.error("ERR value is out of range");
        return Flow::Continue;
    }
    let Some(z) = read_or_reply(args, ctx).await else {
        return Flow::Continue;
    };
    let len = z.len();
    let at = |i: usize| z.at(i).expect("picked within the set");
    if len == 0 || count == 0 {
        reply_members(ctx, std::iter::empty(), with_scores);
    } else if count < 0 {
        let picks: Vec<_> = (0..count.unsigned_abs())
            .map(|_| at(random_below(len)))
            .collect();
        reply_members(ctx, picks.into_iter(), with_scores);
    } else if count as u64 >= len as u64 {
        // The whole set, highest score first, as Redis lists it.
        reply_members(ctx, z.iter().rev(), with_scores);
    } else {
        let picks: Vec<_> = distinct(len, count as usize).into_iter().map(at).collect();
        reply_members(ctx, picks.into_iter(), with_scores);
    }
    Flow::Continue
}

/// `ZSCAN key cursor [MATCH pattern] [COUNT count]`: every (matching)
/// member and its score in one reply with cursor 0, as `HSCAN`.
pub async fn zscan(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if !valid_cursor(args.get(2)) {
        ctx.error("ERR invalid cursor");
        return Flow::Continue;
    }
    let Some(z) = read_or_reply(args, ctx).await else {
        return Flow::Continue;
    };
    // Redis answers an absent key before looking at the options.
    let pattern = match scan_pattern(args, 3) {
        _ if z.is_empty() => None,
        Ok(p) => p,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let hits: Vec<_> = z.iter().filter(|(m, _)| matches(pattern, m)).collect();
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, b"0");
    reply::array(ctx.out, hits.len() * 2);
    for (m, s) in hits {
        reply::bulk(ctx.out, m);
        // ZSCAN's scores are the listpack's strings, in RESP3 too.
        reply::bulk(ctx.out, reply::format_d2string(s).as_bytes());
    }
    Flow::Continue
}
