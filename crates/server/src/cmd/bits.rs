//! `SETBIT key offset value` (the bit's old value; the string grows with
//! zero bytes as needed and keeps its expiry) and `GETBIT key offset` (0
//! past the end or for a missing key). Bit 0 is the most significant bit
//! of the first byte, as in Redis.

use super::{parse_i64, Args, Ctx, Flow};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::Update;

pub(super) const BAD_OFFSET: &str = "ERR bit offset is not an integer or out of range";
const BAD_BIT: &str = "ERR bit is not an integer or out of range";

/// Redis's `getBitOffsetFromArgument`: a non-negative integer whose byte
/// fits in the bulk length limit.
fn offset(arg: &[u8], max_bulk_len: usize) -> Option<u64> {
    let n = parse_i64(arg)?;
    (n >= 0 && ((n as u64) >> 3) < max_bulk_len as u64).then_some(n as u64)
}

pub async fn setbit(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(bit) = offset(args.get(2), ctx.server.config.limits.max_bulk_len) else {
        reply::error(ctx.out, BAD_OFFSET);
        return Flow::Continue;
    };
    let on = match parse_i64(args.get(3)) {
        Some(v @ (0 | 1)) => v == 1,
        _ => {
            reply::error(ctx.out, BAD_BIT);
            return Flow::Continue;
        }
    };
    let byte = (bit >> 3) as usize;
    let mask = 1u8 << (7 - (bit & 7));
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let old_bit = old
            .and_then(|e| e.value.get(byte))
            .is_some_and(|b| b & mask != 0);
        let grows = old.map_or(true, |e| e.value.len() <= byte);
        if old_bit == on && !grows {
            return (Update::Keep, (old_bit, None));
        }
        let mut v = old.map_or_else(Vec::new, |e| e.value.to_vec());
        if v.len() <= byte {
            v.resize(byte + 1, 0);
        }
        if on {
            v[byte] |= mask;
        } else {
            v[byte] &= !mask;
        }
        // A string changed in place is `raw` in Redis.
        let fp = hint_fingerprint(&v);
        let update = super::rewrite_string(old, v);
        (update, (old_bit, fp))
    })
    .await;
    match r {
        Ok((old_bit, fp)) => {
            ctx.notify(class::STRING, "setbit", args.get(1));
            if let Some(fp) = fp {
                ctx.server.encodings.note(args.get(1), fp, "raw");
            }
            reply::integer(ctx.out, old_bit as i64);
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn getbit(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(bit) = offset(args.get(2), ctx.server.config.limits.max_bulk_len) else {
        reply::error(ctx.out, BAD_OFFSET);
        return Flow::Continue;
    };
    match super::get_string(ctx.session, args.get(1)).await {
        Ok(e) => {
            let set = e
                .and_then(|e| e.value.get((bit >> 3) as usize).copied())
                .is_some_and(|b| b & (1 << (7 - (bit & 7))) != 0);
            reply::integer(ctx.out, set as i64);
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
