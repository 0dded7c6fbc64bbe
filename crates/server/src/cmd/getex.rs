//! Read-and-modify commands of one key: `GETSET key value`, `GETDEL key`
//! and `GETEX key [EX s|PX ms|EXAT s|PXAT ms|PERSIST]`. Each reads and
//! writes atomically ([`Session::update`](tiercache_engine::Session::update)).

use super::set::{expiry_ms, parse_options};
use super::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::{now_ms, Entry, SetOptions, Update};

/// `GETSET key value`: the old value (or null); the key loses its TTL,
/// as with a plain `SET`.
pub async fn getset(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let opts = SetOptions {
        return_old: true,
        ..Default::default()
    };
    match ctx.session.set(args.bytes(1), args.bytes(2), opts).await {
        Ok(outcome) => {
            ctx.notify(class::STRING, "set", args.get(1));
            ctx.propagate_as(&[b"SET", args.get(1), args.get(2)]);
            ctx.bulk_or_null(outcome.old.as_ref().map(|e| &e.value[..]))
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `GETDEL key`: the value (or null), and the key is gone.
pub async fn getdel(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = super::update_string(ctx.session, args.get(1), |old| {
        (Update::Delete, old.map(|e| e.value.clone()))
    })
    .await;
    match r {
        Ok(v) => {
            if v.is_some() {
                ctx.notify(class::GENERIC, "del", args.get(1));
                ctx.propagate_as(&[b"DEL", args.get(1)]);
            }
            ctx.bulk_or_null(v.as_deref())
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `GETEX key [EX|PX|EXAT|PXAT time | PERSIST]`: the value (or null),
/// with the expiry changed as asked. An `EXAT`/`PXAT` already past deletes
/// the key after answering its value.
pub async fn getex(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Ok(o) = parse_options(args, 2, false) else {
        reply::error(ctx.out, SYNTAX_ERROR);
        return Flow::Continue;
    };
    let at = match o.expire {
        Some((kind, i)) => match expiry_ms(args.get(i), kind, "getex") {
            Ok(at) => Some(at),
            Err(msg) => {
                reply::error(ctx.out, &msg);
                return Flow::Continue;
            }
        },
        None => None,
    };
    let persist = o.persist;
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let Some(e) = old else {
            return (Update::Keep, None);
        };
        let (update, event) = match at {
            Some(at) if at <= now_ms() => (
                Update::SetEntry(Entry::with_flags(e.value.clone(), Some(at), e.flags)),
                Some((class::GENERIC, "del")),
            ),
            Some(at) => (
                Update::SetEntry(Entry::with_flags(e.value.clone(), Some(at), e.flags)),
                Some((class::GENERIC, "expire")),
            ),
            None if persist && e.expires_at.is_some() => (
                Update::SetEntry(Entry::with_flags(e.value.clone(), None, e.flags)),
                Some((class::GENERIC, "persist")),
            ),
            None => (Update::Keep, None),
        };
        (update, Some((e.value.clone(), event)))
    })
    .await;
    match r {
        Ok(found) => {
            if let Some((_, Some((class, event)))) = &found {
                ctx.notify(*class, event, args.get(1));
                // Never propagated as sent (Redis's `getexCommand`).
                let key = args.get(1);
                match (*event, at) {
                    ("expire", Some(at)) => {
                        ctx.propagate_as(&[b"PEXPIREAT", key, at.to_string().as_bytes()])
                    }
                    ("persist", _) => ctx.propagate_as(&[b"PERSIST", key]),
                    _ => ctx.propagate_as(&[b"DEL", key]),
                }
            }
            ctx.bulk_or_null(found.as_ref().map(|(v, _)| &v[..]))
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
