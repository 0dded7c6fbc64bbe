//! `LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]`: the
//! longest common subsequence of two strings (a missing key is an empty
//! string), its length, or the matching ranges, computed and walked back
//! exactly as Redis 7's `lcsCommand` does so that ties and ranges come out
//! the same. The dynamic-programming table is bounded by the bulk length
//! limit instead of being allocated whatever its size.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;
use bytes::Bytes;
use tiercache_engine::ValueKind;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = [args.bytes(1), args.bytes(2)];
    let found = match ctx.session.get_many(&keys).await {
        Ok(f) => f,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    if found.iter().flatten().any(|e| e.kind != ValueKind::String) {
        // Redis's own wording here, not WRONGTYPE.
        ctx.error("ERR The specified keys must contain string values");
        return Flow::Continue;
    }
    let [a, b]: [Bytes; 2] = found
        .into_iter()
        .map(|e| e.map(|e| e.value).unwrap_or_default())
        .collect::<Vec<_>>()
        .try_into()
        .expect("two keys");
    let (mut getlen, mut getidx, mut withmatchlen) = (false, false, false);
    let mut minmatchlen: u64 = 0;
    let mut j = 3;
    while j < args.len() {
        if args.is(j, "idx") {
            getidx = true;
        } else if args.is(j, "len") {
            getlen = true;
        } else if args.is(j, "withmatchlen") {
            withmatchlen = true;
        } else if args.is(j, "minmatchlen") && j + 1 < args.len() {
            let Some(n) = parse_i64(args.get(j + 1)) else {
                reply::error(ctx.out, NOT_AN_INTEGER);
                return Flow::Continue;
            };
            minmatchlen = n.max(0) as u64;
            j += 1;
        } else {
            reply::error(ctx.out, SYNTAX_ERROR);
            return Flow::Continue;
        }
        j += 1;
    }
    if getidx && getlen {
        reply::error(
            ctx.out,
            "ERR If you want both the length and indexes, please just use IDX.",
        );
        return Flow::Continue;
    }
    let cells = (a.len() as u64 + 1).saturating_mul(b.len() as u64 + 1);
    if cells.saturating_mul(4) > ctx.server.config.limits.max_bulk_len as u64 {
        reply::error(
            ctx.out,
            "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
        );
        return Flow::Continue;
    }
    let (alen, blen) = (a.len(), b.len());
    let w = blen + 1;
    let mut dp = vec![0u32; cells as usize];
    for i in 1..=alen {
        for j in 1..=blen {
            dp[i * w + j] = if a[i - 1] == b[j - 1] {
                dp[(i - 1) * w + j - 1] + 1
            } else {
                dp[(i - 1) * w + j].max(dp[i * w + j - 1])
            };
        }
    }
    let total = dp[alen * w + blen];
    let p = ctx.proto();
    if getlen && !getidx {
        reply::integer(ctx.out, total as i64);
        return Flow::Continue;
    }
    // Walk back from the end, as Redis does, collecting the string and
    // the ranges (in the order Redis emits them).
    let mut result = vec![0u8; total as usize];
    let mut idx = total as usize;
    let mut ranges: Vec<[u64; 5]> = Vec::new();
    let unset = alen as u64;
    let (mut a_start, mut a_end, mut b_start, mut b_end) = (unset, 0u64, 0u64, 0u64);
    let (mut i, mut j) = (alen, blen);
    while i > 0 && j > 0 {
        let mut emit = false;
        if a[i - 1] == b[j - 1] {
            result[idx - 1] = a[i - 1];
            if a_start == unset {
                a_start = i as u64 - 1;
                a_end = i as u64 - 1;
                b_start = j as u64 - 1;
                b_end = j as u64 - 1;
            } else if a_start == i as u64 && b_start == j as u64 {
                a_start -= 1;
                b_start -= 1;
            } else {
                emit = true;
            }
            if a_start == 0 || b_start == 0 {
                emit = true;
            }
            idx -= 1;
            i -= 1;
            j -= 1;
        } else {
            if dp[(i - 1) * w + j] > dp[i * w + j - 1] {
                i -= 1;
            } else {
                j -= 1;
            }
            if a_start != unset {
                emit = true;
            }
        }
        if emit {
            let match_len = a_end.wrapping_sub(a_start).wrapping_add(1);
            if minmatchlen == 0 || match_len >= minmatchlen {
                ranges.push([a_start, a_end, b_start, b_end, match_len]);
            }
            a_start = unset;
        }
    }
    if getidx {
        reply::map(ctx.out, 2, p);
        reply::bulk(ctx.out, b"matches");
        reply::array(ctx.out, ranges.len());
        for r in &ranges {
            reply::array(ctx.out, 2 + withmatchlen as usize);
            reply::array(ctx.out, 2);
            reply::integer(ctx.out, r[0] as i64);
            reply::integer(ctx.out, r[1] as i64);
            reply::array(ctx.out, 2);
            reply::integer(ctx.out, r[2] as i64);
            reply::integer(ctx.out, r[3] as i64);
            if withmatchlen {
                reply::integer(ctx.out, r[4] as i64);
            }
        }
        reply::bulk(ctx.out, b"len");
        reply::integer(ctx.out, total as i64);
    } else {
        reply::bulk(ctx.out, &result);
    }
    Flow::Continue
}
