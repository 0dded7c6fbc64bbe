//! `SET key value [NX|XX] [GET] [EX s|PX ms|EXAT s|PXAT ms|KEEPTTL]`,
//! `SETNX key value`, `SETEX key seconds value`, `PSETEX key ms value`,
//! with Redis 7's option rules and error wording. The option parser and
//! the expire-time checks are shared with `GETEX`.

use super::{invalid_expire, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use bytes::Bytes;
use tiercache_engine::{now_ms, SetCondition, SetExpiry, SetOptions};

/// The four ways to give an expiry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExpireKind {
    /// Seconds from now.
    Ex,
    /// Milliseconds from now.
    Px,
    /// Unix time in seconds.
    ExAt,
    /// Unix time in milliseconds.
    PxAt,
}

/// The unit of `SETEX`/`PSETEX`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Seconds,
    Millis,
}

/// Parsed `SET`/`GETEX` options (Redis's `parseExtendedStringArgumentsOrReply`).
#[derive(Default)]
pub struct StringOptions {
    pub nx: bool,
    pub xx: bool,
    pub get: bool,
    pub keep_ttl: bool,
    pub persist: bool,
    /// The expiry kind and the index of its argument.
    pub expire: Option<(ExpireKind, usize)>,
}

/// Parses options from argument `from` on; `for_set` selects SET's
/// options (NX XX GET KEEPTTL) over GETEX's (PERSIST). `Err` is a syntax
/// error. The same expiry option may repeat (the last wins), as in Redis.
pub fn parse_options(args: &Args<'_>, from: usize, for_set: bool) -> Result<StringOptions, ()> {
    let mut o = StringOptions::default();
    let mut i = from;
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
        if for_set && args.is(i, "nx") && !o.xx {
            o.nx = true;
        } else if for_set && args.is(i, "xx") && !o.nx {
            o.xx = true;
        } else if for_set && args.is(i, "get") {
            o.get = true;
        } else if for_set && args.is(i, "keepttl") && !o.persist && o.expire.is_none() {
            o.keep_ttl = true;
        } else if !for_set && args.is(i, "persist") && o.expire.is_none() && !o.keep_ttl {
            o.persist = true;
        } else if let Some(kind) = kind.filter(|k| {
            !o.keep_ttl
                && !o.persist
                && o.expire.map_or(true, |(prev, _)| prev == *k)
                && i + 1 < args.len()
        }) {
            o.expire = Some((kind, i + 1));
            i += 1;
        } else {
            return Err(());
        }
        i += 1;
    }
    Ok(o)
}

/// The absolute expiry in Unix milliseconds, with Redis's checks
/// (`getExpireMillisecondsOrReply`): the number must be positive and the
/// result must fit in a signed 64-bit millisecond count.
pub fn expiry_ms(raw: &[u8], kind: ExpireKind, cmd: &str) -> Result<u64, String> {
    let n = parse_i64(raw).ok_or_else(|| NOT_AN_INTEGER.to_string())?;
    let seconds = matches!(kind, ExpireKind::Ex | ExpireKind::ExAt);
    if n <= 0 || (seconds && n > i64::MAX / 1000) {
        return Err(invalid_expire(cmd));
    }
    let ms = if seconds { n * 1000 } else { n };
    let at = match kind {
        ExpireKind::Ex | ExpireKind::Px => ms.checked_add(now_ms() as i64),
        ExpireKind::ExAt | ExpireKind::PxAt => Some(ms),
    };
    match at {
        Some(at) if at > 0 => Ok(at as u64),
        _ => Err(invalid_expire(cmd)),
    }
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    // Options are all checked before any number is parsed, so a syntax
    // error wins over a bad number, as in Redis.
    let Ok(o) = parse_options(args, 3, true) else {
        reply::error(ctx.out, SYNTAX_ERROR);
        return Flow::Continue;
    };
    let expiry = match o.expire {
        Some((kind, at)) => match expiry_ms(args.get(at), kind, "set") {
            Ok(ms) => SetExpiry::At(ms),
            Err(msg) => {
                reply::error(ctx.out, &msg);
                return Flow::Continue;
            }
        },
        None if o.keep_ttl => SetExpiry::Keep,
        None => SetExpiry::Default,
    };
    let opts = SetOptions {
        expiry,
        condition: if o.nx {
            SetCondition::IfAbsent
        } else if o.xx {
            SetCondition::IfPresent
        } else {
            SetCondition::Always
        },
        return_old: o.get,
    };
    let (key, value) = args.key_value(1, 2);
    let has_expiry = o.expire.is_some();
    let r = ctx.session.set(key, value, opts).await;
    if r.as_ref().is_ok_and(|outcome| outcome.applied) {
        notify_set(ctx, args.get(1), has_expiry);
        if let SetExpiry::At(at) = expiry {
            propagate_with_pxat(ctx, args.get(1), args.get(2), at);
        }
    }
    match r {
        Ok(outcome) if opts.return_old => {
            ctx.bulk_or_null(outcome.old.as_ref().map(|e| &e.value[..]));
        }
        Ok(outcome) if outcome.applied => reply::ok(ctx.out),
        Ok(_) => ctx.null(),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `SETNX key value`: 1 when set, 0 when the key existed.
pub async fn setnx(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let opts = SetOptions {
        condition: SetCondition::IfAbsent,
        ..Default::default()
    };
    let (key, value) = args.key_value(1, 2);
    match ctx.session.set(key, value, opts).await {
        Ok(outcome) => {
            if outcome.applied {
                notify_set(ctx, args.get(1), false);
            }
            reply::integer(ctx.out, outcome.applied as i64)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// `SETEX key seconds value` / `PSETEX key milliseconds value`.
pub async fn setex(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, unit: Unit) -> Flow {
    let (kind, name) = match unit {
        Unit::Seconds => (ExpireKind::Ex, "setex"),
        Unit::Millis => (ExpireKind::Px, "psetex"),
    };
    let at = match expiry_ms(args.get(2), kind, name) {
        Ok(at) => at,
        Err(msg) => {
            reply::error(ctx.out, &msg);
            return Flow::Continue;
        }
    };
    let opts = SetOptions {
        expiry: SetExpiry::At(at),
        ..Default::default()
    };
    let (key, value) = args.key_value(1, 3);
    match ctx.session.set(key, value, opts).await {
        Ok(_) => {
            notify_set(ctx, args.get(1), true);
            propagate_with_pxat(ctx, args.get(1), args.get(3), at);
            reply::ok(ctx.out)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// A `SET` with an expiry, `SETEX` and `PSETEX` propagate as `SET key
/// value PXAT ms` (Redis 7.0: replicas get absolute times).
fn propagate_with_pxat(ctx: &mut Ctx<'_, '_>, key: &[u8], value: &[u8], at: u64) {
    ctx.propagate_as(&[b"SET", key, value, b"PXAT", at.to_string().as_bytes()]);
}

/// The events of a `SET` that applied: `set`, then `expire` when it gave
/// an expiry (even one already past, as Redis).
pub(crate) fn notify_set(ctx: &Ctx<'_, '_>, key: &[u8], expiry: bool) {
    ctx.notify(class::STRING, "set", key);
    if expiry {
        ctx.notify(class::GENERIC, "expire", key);
    }
}

/// True for `SET key value` without options, from a client that may run it,
/// with a key within the size limit: the requests [`run_plain_batch`] may
/// take together. Anything else goes through [`super::execute`] one by one.
pub fn is_plain(args: &Args<'_>, ctx: &Ctx<'_, '_>) -> bool {
    args.len() == 3
        && args.is(0, "set")
        && ctx.client.authenticated
        && ctx.client.tx.is_none()
        && args.get(1).len() <= ctx.server.config.limits.max_key_len
        // `new` events need each key looked up first (`note_absent_keys`).
        && !ctx.server.keyspace_events.wants(class::NEW)
        // Replicas are fed command by command.
        && !ctx.server.replicas.any()
}

/// Runs consecutive plain `SET key value` requests of one pipelined batch
/// as one engine write (`Session::set_many`): one lock pass, one
/// back-pressure check and one journal append for the run, instead of one
/// of each per request — what a pipelined `SET` load spends most of its
/// non-network time on. The result is the same as running them in order
/// (a key named twice ends with its last value); each request gets its own
/// reply, and an engine error fails every request of the run.
pub async fn run_plain_batch(requests: &[Args<'_>], ctx: &mut Ctx<'_, '_>) {
    let index = super::lookup_index(b"set").expect("SET is in the table");
    ctx.client.info.set_last_command(index);
    let entries: Vec<_> = requests
        .iter()
        .map(|args| {
            let (key, value) = args.key_value(1, 2);
            (key, tiercache_engine::Entry::new(value))
        })
        .collect();
    // Only when someone listens: the keys are kept for the events.
    let keys: Vec<Bytes> = if ctx.server.keyspace_events.wants(class::STRING) {
        entries.iter().map(|(k, _)| k.clone()).collect()
    } else {
        Vec::new()
    };
    let n = requests.len() as u32;
    match ctx.session.set_many(entries).await {
        Ok(()) => {
            for key in &keys {
                ctx.notify(class::STRING, "set", key);
            }
            for _ in requests {
                reply::ok(ctx.out);
            }
            ctx.client.tally.calls(index, n, 0);
        }
        Err(e) => {
            for _ in requests {
                ctx.engine_error(&e);
            }
            ctx.client.tally.calls(index, n, n);
        }
    }
}
