//! The sorted set commands that write: `ZADD`, `ZINCRBY`, `ZREM`,
//! `ZPOPMIN`, `ZPOPMAX` and `ZREMRANGEBYRANK`/`SCORE`/`LEX`.

use super::{parse_score, reply_members, Selection, NOT_A_FLOAT};
use crate::cmd::collection::{self, StoredEdit};
use crate::cmd::list::pop::parse_mpop;
use crate::cmd::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::zset::ZSet;
use bytes::Bytes;

/// Redis's reply when an increment makes a score NaN.
const NAN_SCORE: &str = "ERR resulting score is not a number (NaN)";

/// `ZADD`'s options.
#[derive(Clone, Copy, Default)]
struct AddFlags {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

/// `ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]`,
/// and `ZINCRBY key increment member` (`incrby`).
pub async fn zadd(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, incrby: bool) -> Flow {
    let mut f = AddFlags {
        incr: incrby,
        ..AddFlags::default()
    };
    let mut at = 2;
    while !incrby && at < args.len() {
        match () {
            _ if args.is(at, "nx") => f.nx = true,
            _ if args.is(at, "xx") => f.xx = true,
            _ if args.is(at, "gt") => f.gt = true,
            _ if args.is(at, "lt") => f.lt = true,
            _ if args.is(at, "ch") => f.ch = true,
            _ if args.is(at, "incr") => f.incr = true,
            _ => break,
        }
        at += 1;
    }
    let elements = args.len() - at;
    if elements % 2 == 1 || elements == 0 {
        return error(ctx, SYNTAX_ERROR);
    }
    if f.nx && f.xx {
        return error(
            ctx,
            "ERR XX and NX options at the same time are not compatible",
        );
    }
    if ((f.gt || f.lt) && f.nx) || (f.gt && f.lt) {
        return error(
            ctx,
            "ERR GT, LT, and/or NX options at the same time are not compatible",
        );
    }
    if f.incr && elements > 2 {
        return error(
            ctx,
            "ERR INCR option supports a single increment-element pair",
        );
    }
    let mut pairs = Vec::with_capacity(elements / 2);
    for i in (at..args.len()).step_by(2) {
        let Some(score) = parse_score(args.get(i)) else {
            return error(ctx, NOT_A_FLOAT);
        };
        pairs.push((args.bytes(i + 1), score));
    }
    let r = if let [(member, score)] = &pairs[..] {
        add_to_stored(ctx, args.get(1), f, member, *score).await
    } else {
        add_decoded(ctx, args.get(1), f, pairs).await
    };
    let event = if f.incr { "zincr" } else { "zadd" };
    collection::notify_change(ctx, class::ZSET, event, args.get(1));
    let proto = ctx.proto();
    match r {
        Err(msg) => ctx.error(&msg),
        Ok((_, _, processed, last)) if f.incr => match last {
            Some(score) if processed > 0 => reply::double(ctx.out, score, proto),
            _ => ctx.null(),
        },
        Ok((added, updated, _, _)) => {
            let n = if f.ch { added + updated } else { added };
            reply::integer(ctx.out, n as i64)
        }
    }
    Flow::Continue
}

/// What `ZADD` did: members added, updated, processed (not a no-op),
/// and the last score set (for `INCR`).
type Added = (usize, usize, usize, Option<f64>);

/// `ZADD` of one member on the stored sorted set, not decoded
/// ([`ZSet::insert_stored`]): two scans and three copies of a big set,
/// not a decode and an encode.
async fn add_to_stored(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: AddFlags,
    member: &Bytes,
    score: f64,
) -> Result<Added, String> {
    // Without INCR, the score it gets if it gets one.
    let guess = (!f.incr).then_some(score);
    let mut outcome = Outcome::Nop;
    let mut decide = |current| {
        outcome = add_one(f, current, score);
        match outcome {
            Outcome::Added(s) | Outcome::Updated(s) => Some(s),
            _ => None,
        }
    };
    collection::modify_stored::<ZSet, _>(ctx, key, |raw| {
        let edit = match raw {
            Some(raw) => match ZSet::insert_stored(raw, member, guess, decide)? {
                Some((value, patch)) => StoredEdit::Patched(value, patch),
                None => StoredEdit::Keep,
            },
            None => match decide(None) {
                Some(s) => {
                    let mut z = ZSet::default();
                    z.insert(member.clone(), s);
                    StoredEdit::Whole(z.encode())
                }
                None => StoredEdit::Keep,
            },
        };
        Ok((edit, ()))
    })
    .await?;
    match outcome {
        Outcome::Added(s) => Ok((1, 0, 1, Some(s))),
        Outcome::Updated(s) => Ok((0, 1, 1, Some(s))),
        Outcome::Same(s) => Ok((0, 0, 1, Some(s))),
        Outcome::Nop => Ok((0, 0, 0, None)),
        Outcome::Nan => Err(NAN_SCORE.to_string()),
    }
}

/// `ZADD` of several members on the decoded sorted set.
async fn add_decoded(
    ctx: &mut Ctx<'_, '_>,
    key: &[u8],
    f: AddFlags,
    mut pairs: Vec<(Bytes, f64)>,
) -> Result<Added, String> {
    collection::modify::<ZSet, _>(ctx, key, |z| {
        if f.xx && z.is_empty() {
            return Ok(((0, 0, 0, None), false));
        }
        let (mut added, mut updated, mut processed) = (0usize, 0usize, 0usize);
        let mut last = None;
        let mut nan = false;
        if f.incr {
            let (member, incr) = pairs.pop().expect("one pair");
            match add_one(f, z.score(&member), incr) {
                Outcome::Nan => nan = true,
                Outcome::Nop => {}
                outcome => {
                    let score = outcome.score();
                    added += usize::from(matches!(outcome, Outcome::Added(_)));
                    updated += usize::from(matches!(outcome, Outcome::Updated(_)));
                    processed += 1;
                    last = Some(score);
                    z.insert(member, score);
                }
            }
        } else if pairs.len() <= 16 {
            // A few members: a scan and an in-place insert each (a rebuild
            // of a big set for one member costs far more).
            for (member, score) in pairs {
                match add_one(f, z.score(&member), score) {
                    Outcome::Nop | Outcome::Nan => {}
                    outcome => {
                        processed += 1;
                        match outcome {
                            Outcome::Added(s) => {
                                added += 1;
                                z.insert(member, s);
                            }
                            Outcome::Updated(s) => {
                                updated += 1;
                                z.insert(member, s);
                            }
                            _ => {}
                        }
                    }
                }
            }
        } else {
            z.update_many(pairs, |current, score| match add_one(f, current, score) {
                Outcome::Nop | Outcome::Nan => None,
                outcome => {
                    added += usize::from(matches!(outcome, Outcome::Added(_)));
                    updated += usize::from(matches!(outcome, Outcome::Updated(_)));
                    processed += 1;
                    matches!(outcome, Outcome::Added(_) | Outcome::Updated(_))
                        .then(|| outcome.score())
                }
            });
        }
        if nan {
            return Err(NAN_SCORE.to_string());
        }
        Ok(((added, updated, processed, last), added + updated > 0))
    })
    .await
}

/// What `ZADD` does with one member (Redis's `zsetAdd`).
enum Outcome {
    Added(f64),
    Updated(f64),
    /// Processed without a change (same score).
    Same(f64),
    Nop,
    Nan,
}

impl Outcome {
    fn score(&self) -> f64 {
        match self {
            Outcome::Added(s) | Outcome::Updated(s) | Outcome::Same(s) => *s,
            Outcome::Nop | Outcome::Nan => f64::NAN,
        }
    }
}

fn add_one(f: AddFlags, current: Option<f64>, score: f64) -> Outcome {
    match current {
        Some(_) if f.nx => Outcome::Nop,
        Some(cur) => {
            let score = if f.incr { score + cur } else { score };
            if score.is_nan() {
                return Outcome::Nan;
            }
            if (f.lt && score >= cur) || (f.gt && score <= cur) {
                Outcome::Nop
            } else if score != cur {
                Outcome::Updated(score)
            } else {
                Outcome::Same(score)
            }
        }
        None if f.xx => Outcome::Nop,
        None => Outcome::Added(score),
    }
}

/// `ZREM key member [member ...]`: how many were there.
pub async fn zrem(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = collection::modify::<ZSet, _>(ctx, args.get(1), |z| {
        let removed = (2..args.len())
            .filter(|&i| z.remove(args.get(i)).is_some())
            .count();
        Ok((removed, removed > 0))
    })
    .await;
    collection::notify_change(ctx, class::ZSET, "zrem", args.get(1));
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `ZPOPMIN`/`ZPOPMAX key [count]`: the lowest (highest) members with
/// their scores.
pub async fn zpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, max: bool) -> Flow {
    if args.len() > 3 {
        return error(ctx, SYNTAX_ERROR);
    }
    let count = match collection::optional_count(args) {
        Ok(count) => count,
        Err(msg) => return error(ctx, msg),
    };
    let r = collection::modify::<ZSet, _>(ctx, args.get(1), |z| {
        let popped = take_ends(z, max, count.unwrap_or(1));
        let changed = !popped.is_empty();
        Ok((popped, changed))
    })
    .await;
    let event = if max { "zpopmax" } else { "zpopmin" };
    collection::notify_change(ctx, class::ZSET, event, args.get(1));
    match r {
        Err(msg) => ctx.error(&msg),
        // One pop without a count is a flat [member, score], in RESP3 too.
        Ok(popped) if count.is_none() && !popped.is_empty() => {
            let proto = ctx.proto();
            reply::array(ctx.out, 2);
            reply::bulk(ctx.out, &popped[0].0);
            reply::double(ctx.out, popped[0].1, proto);
        }
        Ok(popped) => reply_members(ctx, popped.iter().map(|(m, s)| (&m[..], *s)), true),
    }
    Flow::Continue
}

/// `MIN` or `MAX` (any case): true for `MAX`.
pub fn parse_min_max(args: &Args<'_>, i: usize) -> Option<bool> {
    if args.is(i, "min") {
        Some(false)
    } else if args.is(i, "max") {
        Some(true)
    } else {
        None
    }
}

/// `ZMPOP numkeys key [key ...] MIN|MAX [COUNT count]`: pops from the
/// first non-empty sorted set; `[key, [[member, score], ...]]`, or a null
/// array.
pub async fn zmpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (keys, max, count) = match parse_mpop(args, 1, parse_min_max) {
        Ok(parsed) => parsed,
        Err(msg) => return error(ctx, msg),
    };
    match pop_first(ctx, &keys, max, count, false).await {
        Err(msg) => ctx.error(&msg),
        Ok(None) => {
            let proto = ctx.proto();
            reply::null_array(ctx.out, proto)
        }
        Ok(Some((at, popped))) => {
            propagate_pop(ctx, max, &keys[at], Some(popped.len()));
            reply_mpop(ctx, &keys[at], &popped)
        }
    }
    Flow::Continue
}

/// What a pop from the first non-empty sorted set propagates:
/// `ZPOPMIN`/`ZPOPMAX` of that key, with how many it popped when `count`
/// is given.
pub fn propagate_pop(ctx: &mut Ctx<'_, '_>, max: bool, key: &[u8], count: Option<usize>) {
    let name: &[u8] = if max { b"ZPOPMAX" } else { b"ZPOPMIN" };
    crate::cmd::propagate::propagate_pop(ctx, name, key, count);
}

/// `[key, [[member, score], ...]]`, `ZMPOP`'s reply (nested pairs in
/// RESP2 too).
pub fn reply_mpop(ctx: &mut Ctx<'_, '_>, key: &[u8], popped: &[(Bytes, f64)]) {
    let proto = ctx.proto();
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, key);
    reply::array(ctx.out, popped.len());
    for (m, s) in popped {
        reply::array(ctx.out, 2);
        reply::bulk(ctx.out, m);
        reply::double(ctx.out, *s, proto);
    }
}

/// Pops up to `count` of the lowest (`max`: highest) members of the first
/// non-empty sorted set of `keys`, under every key's lock: which key and
/// what was popped (in pop order); `None` when all are empty. Another
/// type is an error, or passed over with `skip_wrong_type` (a blocked
/// client waking up).
pub async fn pop_first(
    ctx: &mut Ctx<'_, '_>,
    keys: &[Bytes],
    max: bool,
    count: u64,
    skip_wrong_type: bool,
) -> Result<Option<(usize, Vec<(Bytes, f64)>)>, String> {
    let r = collection::take_from_first::<ZSet, _>(ctx, keys, skip_wrong_type, |z| {
        Ok(take_ends(z, max, count))
    })
    .await;
    if let Ok(Some((at, _))) = &r {
        let event = if max { "zpopmax" } else { "zpopmin" };
        collection::notify_change(ctx, class::ZSET, event, &keys[*at]);
    }
    r
}

/// Removes up to `count` of the lowest (`max`: highest) members, in the
/// order popped.
fn take_ends(z: &mut ZSet, max: bool, count: u64) -> Vec<(Bytes, f64)> {
    let n = count.min(z.len() as u64) as usize;
    let len = z.len();
    if max {
        let mut popped = z.remove_ranks(len - n..len);
        popped.reverse();
        popped
    } else {
        z.remove_ranks(0..n)
    }
}

/// Which `ZREMRANGEBY*`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum By {
    /// `ZREMRANGEBYRANK key start stop`.
    Rank,
    /// `ZREMRANGEBYSCORE key min max`.
    Score,
    /// `ZREMRANGEBYLEX key min max`.
    Lex,
}

/// `ZREMRANGEBYRANK`/`SCORE`/`LEX`: how many were removed. The range is
/// checked before the key, as Redis does.
pub async fn zremrange(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, by: By) -> Flow {
    let (a, b) = (args.get(2), args.get(3));
    let selection = match by {
        By::Rank => Selection::ranks(a, b),
        By::Score => Selection::scores(a, b),
        By::Lex => Selection::lex(a, b),
    };
    let selection = match selection {
        Ok(s) => s,
        Err(msg) => return error(ctx, msg),
    };
    let r = collection::modify::<ZSet, _>(ctx, args.get(1), |z| {
        let span = selection.span(z);
        let n = span.len();
        z.remove_ranks(span);
        Ok((n, n > 0))
    })
    .await;
    let event = match by {
        By::Rank => "zremrangebyrank",
        By::Score => "zremrangebyscore",
        By::Lex => "zremrangebylex",
    };
    collection::notify_change(ctx, class::ZSET, event, args.get(1));
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.error(msg);
    Flow::Continue
}
