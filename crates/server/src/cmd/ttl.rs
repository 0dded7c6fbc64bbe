//! `TTL key` / `PTTL key`: remaining time to live; `EXPIRETIME key` /
//! `PEXPIRETIME key` (Redis 7): the absolute Unix time the key expires at.
//! -2 when the key is missing, -1 when it never expires.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use tiercache_engine::now_ms;

/// The reply's unit.
pub enum Unit {
    Seconds,
    Millis,
}

/// `absolute`: the expiry time (`*EXPIRETIME`) instead of the time left.
pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit, absolute: bool) -> Flow {
    let entry = match ctx.session.get(args.get(1)).await {
        Ok(entry) => entry,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    let now = now_ms();
    let n = match entry.map(|e| {
        if absolute {
            e.expires_at
        } else {
            e.ttl_ms_at(now)
        }
    }) {
        None => -2,
        Some(None) => -1,
        Some(Some(ms)) => {
            let ms = ms.min(i64::MAX as u64) as i64;
            match unit {
                // Redis rounds to the nearest second.
                Unit::Seconds => ms.saturating_add(500) / 1000,
                Unit::Millis => ms,
            }
        }
    };
    reply::integer(ctx.out, n);
    Flow::Continue
}
