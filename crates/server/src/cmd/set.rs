//! `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`, with
//! Redis 7's option rules and error wording.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::resp::reply;
use tiercache_engine::{now_ms, SetCondition, SetExpiry, SetOptions};

/// The four ways to give an expiry.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ExpireKind {
    Ex,
    Px,
    ExAt,
    PxAt,
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let mut opts = SetOptions::default();
    let mut keep_ttl = false;
    let mut expire: Option<(ExpireKind, usize)> = None;
    // Options are all checked before any number is parsed, so a syntax
    // error wins over a bad number, as in Redis.
    let mut i = 3;
    while i < args.len() {
        let kind = [
            ("ex", ExpireKind::Ex),
            ("px", ExpireKind::Px),
            ("exat", ExpireKind::ExAt),
            ("pxat", ExpireKind::PxAt),
        ]
        .into_iter()
        .find(|(w, _)| args.is(i, w))
        .map(|(_, k)| k);
        if args.is(i, "nx") && opts.condition != SetCondition::IfPresent {
            opts.condition = SetCondition::IfAbsent;
        } else if args.is(i, "xx") && opts.condition != SetCondition::IfAbsent {
            opts.condition = SetCondition::IfPresent;
        } else if args.is(i, "get") {
            opts.return_old = true;
        } else if args.is(i, "keepttl") && expire.is_none() {
            keep_ttl = true;
        } else if let Some(kind) = kind.filter(|k| {
            !keep_ttl && expire.map_or(true, |(prev, _)| prev == *k) && i + 1 < args.len()
        }) {
            expire = Some((kind, i + 1));
            i += 1;
        } else {
            reply::error(ctx.out, SYNTAX_ERROR);
            return Flow::Continue;
        }
        i += 1;
    }
    opts.expiry = match expire {
        Some((kind, at)) => match expiry_ms(args.get(at), kind) {
            Ok(ms) => SetExpiry::At(ms),
            Err(msg) => {
                reply::error(ctx.out, msg);
                return Flow::Continue;
            }
        },
        None if keep_ttl => SetExpiry::Keep,
        None => SetExpiry::Default,
    };
    match ctx.session.set(args.bytes(1), args.bytes(2), opts).await {
        Ok(outcome) if opts.return_old => {
            reply::bulk_or_null(ctx.out, outcome.old.as_ref().map(|e| &e.value[..]));
        }
        Ok(outcome) if outcome.applied => reply::ok(ctx.out),
        Ok(_) => reply::null(ctx.out),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// The absolute expiry in Unix milliseconds, with Redis's checks: the
/// number must be positive and the result must fit in a signed 64-bit
/// millisecond count.
fn expiry_ms(raw: &[u8], kind: ExpireKind) -> Result<u64, &'static str> {
    const INVALID: &str = "ERR invalid expire time in 'set' command";
    let n = parse_i64(raw).ok_or(NOT_AN_INTEGER)?;
    if n <= 0 {
        return Err(INVALID);
    }
    let ms = match kind {
        ExpireKind::Ex | ExpireKind::ExAt => n.checked_mul(1000).ok_or(INVALID)?,
        ExpireKind::Px | ExpireKind::PxAt => n,
    };
    let at = match kind {
        ExpireKind::Ex | ExpireKind::Px => ms.checked_add(now_ms() as i64).ok_or(INVALID)?,
        ExpireKind::ExAt | ExpireKind::PxAt => ms,
    };
    Ok(at as u64)
}
