//! The `ZRANGE` family: `ZRANGE key start stop [BYSCORE|BYLEX] [REV]
//! [LIMIT offset count] [WITHSCORES]` and the older forms it subsumes
//! (`ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`,
//! `ZREVRANGEBYLEX`), all through Redis 7.0's one parser
//! (`zrangeGenericCommand`): same options, same checks, same order.

use super::{reply_members, Selection};
use crate::cmd::collection;
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::zset::ZSet;

/// How a range is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RangeBy {
    /// Not fixed by the command (`ZRANGE`: options decide; rank by default).
    Auto,
    /// Ranks.
    Rank,
    /// Scores.
    Score,
    /// Members, lexicographically.
    Lex,
}

/// Which `ZRANGE` form: how its range is given, and whether it is
/// reversed (`None`: `ZRANGE`, whose `REV` option decides).
pub async fn zrange(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    by: RangeBy,
    rev: Option<bool>,
) -> Flow {
    let (mut by, mut rev_opt) = (by, rev);
    let mut with_scores = false;
    let (mut offset, mut limit): (i64, i64) = (0, -1);
    let mut i = 4;
    while i < args.len() {
        let left = args.len() - i - 1;
        if args.is(i, "withscores") {
            with_scores = true;
        } else if args.is(i, "limit") && left >= 2 {
            match (parse_i64(args.get(i + 1)), parse_i64(args.get(i + 2))) {
                (Some(o), Some(l)) => (offset, limit) = (o, l),
                _ => return error(ctx, NOT_AN_INTEGER),
            }
            i += 2;
        } else if rev_opt.is_none() && args.is(i, "rev") {
            rev_opt = Some(true);
        } else if by == RangeBy::Auto && args.is(i, "bylex") {
            by = RangeBy::Lex;
        } else if by == RangeBy::Auto && args.is(i, "byscore") {
            by = RangeBy::Score;
        } else {
            return error(ctx, SYNTAX_ERROR);
        }
        i += 1;
    }
    let rev = rev_opt.unwrap_or(false);
    if by == RangeBy::Auto {
        by = RangeBy::Rank;
    }
    if limit != -1 && by == RangeBy::Rank {
        return error(
            ctx,
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        );
    }
    if with_scores && by == RangeBy::Lex {
        return error(
            ctx,
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        );
    }
    // A reversed score or lex range is given as max, min.
    let (a, b) = if rev && by != RangeBy::Rank {
        (args.get(3), args.get(2))
    } else {
        (args.get(2), args.get(3))
    };
    let selection = match by {
        RangeBy::Score => Selection::scores(a, b),
        RangeBy::Lex => Selection::lex(a, b),
        _ => Selection::ranks(a, b),
    };
    let selection = match selection {
        Ok(s) => s,
        Err(msg) => return error(ctx, msg),
    };
    let z = match collection::read::<ZSet>(ctx, args.get(1)).await {
        Ok(z) => z.unwrap_or_default(),
        Err(msg) => return error(ctx, &msg),
    };
    let span = match selection {
        // Reversed ranks count from the highest score.
        Selection::Rank(..) if rev => {
            let span = selection.span(&z);
            z.len() - span.end..z.len() - span.start
        }
        _ => selection.span(&z),
    };
    let picked: Vec<_> = {
        let items = span.map(|r| z.at(r).expect("within the set"));
        let items: Box<dyn Iterator<Item = _>> = if rev {
            Box::new(items.rev())
        } else {
            Box::new(items)
        };
        // Redis skips `offset` in range (none when negative) and takes
        // `limit` (all when negative); a rank range ignores both.
        if by == RangeBy::Rank {
            items.collect()
        } else if offset < 0 {
            Vec::new()
        } else {
            let take = usize::try_from(limit).unwrap_or(usize::MAX);
            items.skip(offset as usize).take(take).collect()
        }
    };
    reply_members(ctx, picked.into_iter(), with_scores);
    Flow::Continue
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
