//! `HRANDFIELD key [count [WITHVALUES]]` and `HSCAN key cursor [MATCH
//! pattern] [COUNT count]`.
//!
//! `HSCAN` answers every (matching) field in one reply with cursor 0, as
//! Redis does for a listpack-encoded hash, whatever the hash's size: the
//! fields live in one value, so paging would save no work, and a position
//! cursor would skip fields when others are deleted between calls.
//!
//! `HRANDFIELD` follows Redis's cases: a positive count at least the size
//! returns the whole hash in order; a smaller one distinct fields (in hash
//! order, as Redis's listpack sampling); a negative count `-n` picks `n`
//! times with repetition.

use super::read_hash;
use crate::cmd::sampling::{distinct, matches, random_below, scan_pattern, valid_cursor};
use crate::cmd::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::hash::Hash;
use crate::resp::reply;

/// `HRANDFIELD`.
pub async fn hrandfield(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() == 2 {
        match read_hash(ctx, args.get(1)).await {
            Ok(Some(h)) => {
                let (f, _) = h
                    .at(random_below(h.len()))
                    .expect("a stored hash has fields");
                reply::bulk(ctx.out, f);
            }
            Ok(None) => ctx.null(),
            Err(msg) => ctx.error(&msg),
        }
        return Flow::Continue;
    }
    // Redis's order: the count's range (-LONG_MAX..=LONG_MAX), then the
    // syntax, then, with values, half that range (the reply holds 2 × count
    // items).
    let Some(count) = parse_i64(args.get(2)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    if count == i64::MIN {
        ctx.error(
            "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807",
        );
        return Flow::Continue;
    }
    let with_values = match args.len() {
        3 => false,
        4 if args.is(3, "withvalues") => true,
        _ => {
            ctx.error(SYNTAX_ERROR);
            return Flow::Continue;
        }
    };
    if with_values && count.unsigned_abs() > (i64::MAX / 2) as u64 {
        ctx.error("ERR value is out of range");
        return Flow::Continue;
    }
    let h = match read_hash(ctx, args.get(1)).await {
        Ok(h) => h.unwrap_or_default(),
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let len = h.len();
    if len == 0 || count == 0 {
        reply_pairs(ctx, &h, 0, std::iter::empty(), with_values);
    } else if count < 0 {
        // Drawn while replying: a huge count must not also cost a list of
        // positions (the reply itself grows as Redis's does).
        let n = count.unsigned_abs();
        let picks = (0..n).map(|_| random_below(len));
        reply_pairs(ctx, &h, n, picks, with_values);
    } else if count as u64 >= len as u64 {
        reply_pairs(ctx, &h, len as u64, 0..len, with_values);
    } else {
        let picks = distinct(len, count as usize);
        reply_pairs(ctx, &h, picks.len() as u64, picks.into_iter(), with_values);
    }
    Flow::Continue
}

/// Replies the `n` fields at `picks` (with their values: pairs in RESP3,
/// a flat list in RESP2).
fn reply_pairs(
    ctx: &mut Ctx<'_, '_>,
    h: &Hash,
    n: u64,
    picks: impl Iterator<Item = usize>,
    with_values: bool,
) {
    let proto = ctx.client.proto;
    let flat = with_values && proto == crate::resp::Proto::Resp2;
    let items = if flat { n * 2 } else { n };
    reply::array(ctx.out, items as usize);
    for i in picks {
        let (f, v) = h.at(i).expect("picked within the hash");
        if with_values && !flat {
            reply::array(ctx.out, 2);
        }
        reply::bulk(ctx.out, f);
        if with_values {
            reply::bulk(ctx.out, v);
        }
    }
}

/// `HSCAN`.
pub async fn hscan(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if !valid_cursor(args.get(2)) {
        ctx.error("ERR invalid cursor");
        return Flow::Continue;
    }
    let h = match read_hash(ctx, args.get(1)).await {
        Ok(Some(h)) => h,
        // Redis answers an absent key before looking at the options.
        Ok(None) => {
            reply::array(ctx.out, 2);
            reply::bulk(ctx.out, b"0");
            reply::array(ctx.out, 0);
            return Flow::Continue;
        }
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let pattern = match scan_pattern(args, 3) {
        Ok(p) => p,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let hits: Vec<_> = h.iter().filter(|(f, _)| matches(pattern, f)).collect();
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, b"0");
    reply::array(ctx.out, hits.len() * 2);
    for (f, v) in hits {
        reply::bulk(ctx.out, f);
        reply::bulk(ctx.out, v);
    }
    Flow::Continue
}
