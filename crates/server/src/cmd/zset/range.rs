//! The `ZRANGE` family: `ZRANGE key start stop [BYSCORE|BYLEX] [REV]
//! [LIMIT offset count] [WITHSCORES]` and the older forms it subsumes
//! (`ZREVRANGE`, `ZRANGEBYSCORE`, `ZREVRANGEBYSCORE`, `ZRANGEBYLEX`,
//! `ZREVRANGEBYLEX`) and `ZRANGESTORE`, all through Redis 7.0's one parser
//! (`zrangeGenericCommand`): same options, same checks, same order.

use super::{reply_members, Selection};
use crate::cmd::collection::{self, collection_of, store};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::zset::ZSet;
use bytes::Bytes;
use tiercache_engine::Change;

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
/// `store` is `ZRANGESTORE dst src min max ...`: the range is written to
/// `dst` (replacing it; deleted when empty), and the reply is its size.
pub async fn zrange(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    by: RangeBy,
    rev: Option<bool>,
    store: bool,
) -> Flow {
    let (mut by, mut rev_opt) = (by, rev);
    let mut with_scores = false;
    let (mut offset, mut limit): (i64, i64) = (0, -1);
    // The source key, then min and max, then the options.
    let key_at = if store { 2 } else { 1 };
    let mut i = key_at + 3;
    while i < args.len() {
        let left = args.len() - i - 1;
        if !store && args.is(i, "withscores") {
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
        (args.get(key_at + 2), args.get(key_at + 1))
    } else {
        (args.get(key_at + 1), args.get(key_at + 2))
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
    let pick = Pick {
        selection,
        by,
        rev,
        offset,
        limit,
    };
    if store {
        return store_range(args, ctx, &pick).await;
    }
    let z = match collection::read::<ZSet>(ctx, args.get(1)).await {
        Ok(z) => z.unwrap_or_default(),
        Err(msg) => return error(ctx, &msg),
    };
    let picked = pick.from(&z);
    reply_members(ctx, picked.into_iter(), with_scores);
    Flow::Continue
}

/// A parsed range request.
struct Pick {
    selection: Selection,
    by: RangeBy,
    rev: bool,
    offset: i64,
    limit: i64,
}

impl Pick {
    /// The members selected, in reply order.
    fn from<'z>(&self, z: &'z ZSet) -> Vec<(&'z [u8], f64)> {
        let span = match self.selection {
            // Reversed ranks count from the highest score.
            Selection::Rank(..) if self.rev => {
                let span = self.selection.span(z);
                z.len() - span.end..z.len() - span.start
            }
            _ => self.selection.span(z),
        };
        let items = span.map(|r| z.at(r).expect("within the set"));
        let items: Box<dyn Iterator<Item = _>> = if self.rev {
            Box::new(items.rev())
        } else {
            Box::new(items)
        };
        // Redis skips `offset` in range (none when negative) and takes
        // `limit` (all when negative); a rank range ignores both.
        if self.by == RangeBy::Rank {
            items.collect()
        } else if self.offset < 0 {
            Vec::new()
        } else {
            let take = usize::try_from(self.limit).unwrap_or(usize::MAX);
            items.skip(self.offset as usize).take(take).collect()
        }
    }
}

/// `ZRANGESTORE`'s write: under both keys' locks.
async fn store_range(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, pick: &Pick) -> Flow {
    let max = ctx.server.config.limits.max_bulk_len;
    let keys = vec![args.bytes(2), args.bytes(1)];
    let r = ctx
        .session
        .modify_many(keys, |found| {
            let mut changes = vec![Change::Keep, Change::Keep];
            let z = match collection_of::<ZSet>(found[0].as_ref()) {
                Ok(z) => z.unwrap_or_default(),
                Err(msg) => return (changes, Err(msg)),
            };
            let mut out = ZSet::default();
            out.update_many(
                pick.from(&z)
                    .into_iter()
                    .map(|(m, s)| (Bytes::copy_from_slice(m), s)),
                |_, s| Some(s),
            );
            match store(None, &out, max) {
                Ok(Change::Keep) => changes[1] = Change::Delete,
                Ok(change) => changes[1] = change,
                Err(msg) => return (changes, Err(msg)),
            }
            (changes, Ok((out.len(), found[1].is_some())))
        })
        .await;
    match r {
        Ok(Ok((n, existed))) => {
            let dst = args.get(1);
            collection::notify_stored(ctx, class::ZSET, "zrangestore", dst, n > 0, existed);
            reply::integer(ctx.out, n as i64)
        }
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
