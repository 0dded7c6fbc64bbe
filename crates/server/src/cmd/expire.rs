//! `EXPIRE key seconds [NX|XX|GT|LT]`, `PEXPIRE key ms [...]`,
//! `EXPIREAT key unix-seconds [...]`, `PEXPIREAT key unix-ms [...]`: 1 when
//! the expiry was set, 0 when the key is missing or the condition failed.
//! A time already past deletes the key (and still answers 1). The check
//! and the write are one atomic engine update, as in Redis.

use super::{invalid_expire, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::{now_ms, Entry, Update};

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

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit, absolute: bool) -> Flow {
    let name = match (unit, absolute) {
        (Unit::Seconds, false) => "expire",
        (Unit::Millis, false) => "pexpire",
        (Unit::Seconds, true) => "expireat",
        (Unit::Millis, true) => "pexpireat",
    };
    // Redis checks the options first, then the number.
    let mut c = Conditions::default();
    for i in 3..args.len() {
        if args.is(i, "nx") {
            c.nx = true;
        } else if args.is(i, "xx") {
            c.xx = true;
        } else if args.is(i, "gt") {
            c.gt = true;
        } else if args.is(i, "lt") {
            c.lt = true;
        } else {
            reply::error(ctx.out, &format!("ERR Unsupported option {}", args.text(i)));
            return Flow::Continue;
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
    let Some(n) = parse_i64(args.get(2)) else {
        reply::error(ctx.out, NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let base = if absolute { 0 } else { now_ms() as i64 };
    let when = match unit {
        Unit::Seconds if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&n) => None,
        Unit::Seconds => Some(n * 1000),
        Unit::Millis => Some(n),
    };
    // Negative results are fine (the key is deleted); only overflow is not.
    let Some(when) = when.and_then(|ms| {
        if ms > i64::MAX - base {
            None
        } else {
            Some(ms + base)
        }
    }) else {
        reply::error(ctx.out, &invalid_expire(name));
        return Flow::Continue;
    };
    let r = ctx
        .session
        .update(args.get(1), |old| {
            let Some(e) = old else {
                return (Update::Keep, 0);
            };
            // No expiry counts as an infinite one, as in Redis.
            let current = e.expires_at.map(|t| t.min(i64::MAX as u64) as i64);
            let allowed = match current {
                None => !c.xx && !c.gt,
                Some(cur) => !(c.nx || (c.gt && when <= cur) || (c.lt && when >= cur)),
            };
            if !allowed {
                return (Update::Keep, 0);
            }
            // A time at or before now deletes the key.
            let at = when.max(0) as u64;
            (
                Update::SetEntry(Entry::with_kind(e.value.clone(), Some(at), e.flags, e.kind)),
                1,
            )
        })
        .await;
    match r {
        Ok(n) => {
            if n == 1 {
                // A time already past deleted the key.
                let event = if when <= now_ms() as i64 {
                    "del"
                } else {
                    "expire"
                };
                ctx.notify(class::GENERIC, event, args.get(1));
                // As `PEXPIREAT` with the absolute time (options kept),
                // or `DEL`.
                if event == "del" {
                    ctx.propagate_as(&[b"DEL", args.get(1)]);
                } else {
                    let at = when.to_string();
                    let mut argv: Vec<&[u8]> = vec![b"PEXPIREAT", args.get(1), at.as_bytes()];
                    argv.extend((3..args.len()).map(|i| args.get(i)));
                    ctx.propagate_as(&argv);
                }
            }
            reply::integer(ctx.out, n)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
