//! `DUMP key` and `RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME
//! seconds] [FREQ frequency]` (and `RESTORE-ASKING`, the same command as
//! Redis's `MIGRATE` sends it to a cluster node): a value serialized in
//! Redis's RDB format ([`crate::rdb`]), so keys move between tiercache
//! and Redis with either one's tools.
//!
//! `RESTORE` checks what Redis checks, in Redis's order and wording:
//! options, then `BUSYKEY` for a key that exists without `REPLACE`, the
//! TTL, the payload's version and CRC, its contents. The check and the
//! write are one `Session::modify`, under the key's lock. `IDLETIME` and
//! `FREQ` are validated and then have no effect: the memory tier's
//! eviction keeps no per-key idle time or counter that a client sets.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::rdb;
use crate::resp::reply;
use bytes::Bytes;
use tiercache_engine::{now_ms, Change, Entry};

/// Redis's `shared.busykeyerr`.
const BUSYKEY: &str = "BUSYKEY Target key name already exists.";

pub async fn dump(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match ctx.session.get(args.get(1)).await {
        Ok(Some(e)) => match rdb::dump(e.kind, &e.value) {
            Ok(payload) => reply::bulk(ctx.out, &payload),
            Err(msg) => ctx.error(&msg),
        },
        Ok(None) => ctx.null(),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn restore(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (replace, absttl) = match options(args) {
        Ok(flags) => flags,
        Err(msg) => {
            reply::error(ctx.out, msg);
            return Flow::Continue;
        }
    };
    // Worked out before the key is looked at; reported after `BUSYKEY`,
    // as Redis reports them.
    let now = now_ms();
    let expires_at = match parse_i64(args.get(2)) {
        None => Err(NOT_AN_INTEGER.to_string()),
        Some(ttl) if ttl < 0 => Err("ERR Invalid TTL value, must be >= 0".to_string()),
        Some(0) => Ok(None),
        Some(ttl) if absttl => Ok(Some(ttl as u64)),
        Some(ttl) => Ok(Some(now.saturating_add(ttl as u64))),
    };
    let at = expires_at.as_ref().ok().copied().flatten();
    let max = ctx.server.config.limits.max_bulk_len;
    let value = expires_at.and_then(|at| {
        rdb::restore(args.get(3), max)
            .map(|(kind, value)| Entry::with_kind(value, at, 0, kind))
            .map_err(|e| e.to_string())
    });
    let key = Bytes::copy_from_slice(args.get(1));
    let outcome = ctx
        .session
        .modify(key, |old| {
            if old.is_some() && !replace {
                return (Change::Keep, Err(BUSYKEY.to_string()));
            }
            match value {
                Err(msg) => (Change::Keep, Err(msg)),
                // Already expired: the key is gone (deleted with REPLACE).
                Ok(entry) if entry.is_expired_at(now) => match old {
                    Some(_) => (Change::Delete, Ok(Some("del"))),
                    None => (Change::Keep, Ok(None)),
                },
                Ok(entry) => (Change::Exact(entry), Ok(Some("restore"))),
            }
        })
        .await;
    match outcome {
        Ok(m) => match m.result {
            Ok(event) => {
                if let Some(event) = event {
                    ctx.notify(class::GENERIC, event, args.get(1));
                    propagate_restore(args, ctx, event, at.filter(|_| !absttl));
                }
                reply::ok(ctx.out)
            }
            Err(msg) => ctx.error(&msg),
        },
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// A `RESTORE` that deleted its key propagates as `DEL`; one with a
/// relative TTL, with the absolute time and `ABSTTL` appended (Redis's
/// `restoreCommand`).
/// `relative_at` is the absolute time of a relative TTL.
fn propagate_restore(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    event: &str,
    relative_at: Option<u64>,
) {
    if event == "del" {
        ctx.propagate_as(&[b"DEL", args.get(1)]);
        return;
    }
    let Some(at) = relative_at else {
        return;
    };
    let at = at.to_string();
    let mut argv: Vec<&[u8]> = (0..args.len()).map(|i| args.get(i)).collect();
    argv[2] = at.as_bytes();
    argv.push(b"ABSTTL");
    ctx.propagate_as(&argv);
}

/// `REPLACE` and `ABSTTL`; `IDLETIME` and `FREQ` checked as Redis checks
/// them (either, not both: the second is a syntax error).
fn options(args: &Args<'_>) -> Result<(bool, bool), &'static str> {
    let (mut replace, mut absttl) = (false, false);
    let (mut idle, mut freq) = (false, false);
    let mut j = 4;
    while j < args.len() {
        let more = j + 1 < args.len();
        if args.is(j, "replace") {
            replace = true;
        } else if args.is(j, "absttl") {
            absttl = true;
        } else if args.is(j, "idletime") && more && !freq {
            let n = parse_i64(args.get(j + 1)).ok_or(NOT_AN_INTEGER)?;
            if n < 0 {
                return Err("ERR Invalid IDLETIME value, must be >= 0");
            }
            idle = true;
            j += 1;
        } else if args.is(j, "freq") && more && !idle {
            let n = parse_i64(args.get(j + 1)).ok_or(NOT_AN_INTEGER)?;
            if !(0..=255).contains(&n) {
                return Err("ERR Invalid FREQ value, must be >= 0 and <= 255");
            }
            freq = true;
            j += 1;
        } else {
            return Err(SYNTAX_ERROR);
        }
        j += 1;
    }
    Ok((replace, absttl))
}
