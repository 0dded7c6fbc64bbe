//! `EXPIRE key seconds [NX|XX|GT|LT]` and `PEXPIRE key ms [...]`: 1 when
//! the expiry was set, 0 when the key is missing or the condition failed.
//! A time already past deletes the key (and still answers 1).

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::resp::reply;
use tiercache_engine::now_ms;

/// The unit of the time argument.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

#[derive(Default)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit) -> Flow {
    let name = if unit == Unit::Seconds {
        "expire"
    } else {
        "pexpire"
    };
    let Some(n) = parse_i64(args.get(2)) else {
        reply::error(ctx.out, NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let mut c = Conditions::default();
    for i in 3..args.len() {
        match args.get(i).to_ascii_lowercase().as_slice() {
            b"nx" => c.nx = true,
            b"xx" => c.xx = true,
            b"gt" => c.gt = true,
            b"lt" => c.lt = true,
            other => {
                reply::error(
                    ctx.out,
                    &format!("ERR Unsupported option {}", String::from_utf8_lossy(other)),
                );
                return Flow::Continue;
            }
        }
    }
    if c.nx && (c.xx || c.gt || c.lt) {
        reply::error(
            ctx.out,
            "ERR NX and XX, GT or LT options at the same time are not compatible",
        );
        return Flow::Continue;
    }
    if c.gt && c.lt {
        reply::error(
            ctx.out,
            "ERR GT and LT options at the same time are not compatible",
        );
        return Flow::Continue;
    }
    let now = now_ms() as i64;
    let ms = match unit {
        Unit::Seconds => n.checked_mul(1000),
        Unit::Millis => Some(n),
    };
    let Some(at) = ms.and_then(|ms| ms.checked_add(now)) else {
        reply::error(
            ctx.out,
            &format!("ERR invalid expire time in '{name}' command"),
        );
        return Flow::Continue;
    };
    // A time at or before now deletes the key; the engine does that for any
    // expiry in the past, so clamp negative times to 0.
    let at = at.max(0) as u64;
    if c.nx || c.xx || c.gt || c.lt {
        // The conditions need the current expiry. Within one connection this
        // is consistent; a concurrent writer between the read and the write
        // can win the race (Redis runs the two atomically).
        let current = match ctx.session.get(args.get(1)).await {
            Ok(Some(e)) => e.expires_at,
            Ok(None) => {
                reply::integer(ctx.out, 0);
                return Flow::Continue;
            }
            Err(e) => {
                ctx.engine_error(&e);
                return Flow::Continue;
            }
        };
        // No expiry counts as an infinite one, as in Redis.
        let allowed = match current {
            None => !c.xx && !c.gt,
            Some(cur) => !(c.nx || (c.gt && at <= cur) || (c.lt && at >= cur)),
        };
        if !allowed {
            reply::integer(ctx.out, 0);
            return Flow::Continue;
        }
    }
    match ctx.session.expire(args.get(1), Some(at)).await {
        Ok(existed) => reply::integer(ctx.out, existed as i64),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
