//! `TTL key` / `PTTL key`: remaining time to live; -2 when the key is
//! missing, -1 when it never expires.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use tiercache_engine::now_ms;

/// The reply's unit.
pub enum Unit {
    Seconds,
    Millis,
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit) -> Flow {
    let entry = match ctx.session.get(args.get(1)).await {
        Ok(entry) => entry,
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    let n = match entry.map(|e| e.ttl_ms_at(now_ms())) {
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

/// `EXPIRETIME key` / `PEXPIRETIME key`: the absolute Unix time (seconds,
/// truncated, or milliseconds) at which the key expires; -2 when the key
/// is missing, -1 when it never expires.
pub async fn expiretime(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit) -> Flow {
    let n = match ctx.session.get(args.get(1)).await {
        Ok(None) => -2,
        Ok(Some(e)) => match e.expires_at {
            None => -1,
            Some(at) => {
                let at = at.min(i64::MAX as u64) as i64;
                match unit {
                    Unit::Seconds => at / 1000,
                    Unit::Millis => at,
                }
            }
        },
        Err(e) => {
            ctx.engine_error(&e);
            return Flow::Continue;
        }
    };
    reply::integer(ctx.out, n);
    Flow::Continue
}
