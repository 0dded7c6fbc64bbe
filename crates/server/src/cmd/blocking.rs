//! The blocking commands: `BLPOP`, `BRPOP`, `BLMOVE`, `BRPOPLPUSH`,
//! `BLMPOP`, `BZPOPMIN`, `BZPOPMAX`, `BZMPOP`; and the wait that `XREAD`
//! and `XREADGROUP` with `BLOCK` share (`start`, `finish`).
//!
//! Each first does what its non-blocking form does. When there is nothing
//! to pop, it returns [`Flow::Block`] without a reply: the connection
//! commits and sends the replies before it, keeps the rest of the batch as
//! parsed, and waits until a key the command waits on is written, its
//! timeout passes, the client goes, or the server stops. Then it runs the
//! command again: served, it replies; timed out, it replies null; woken
//! for nothing (another client took the element), it blocks again, with
//! its first deadline.
//!
//! The wait is an engine [`Watch`] made by
//! [`Engine::waiter`](tiercache_engine::Engine::waiter), registered on the
//! keys before the command first looks at them, so a write between the
//! look and the wait wakes it. Every write of a key wakes its waiters,
//! whatever wrote it (a push, `RENAME`, `EXEC`, memcached). Woken clients
//! race for the element; Redis serves them first come, first served.
//!
//! Inside `EXEC` a blocking command never blocks: with nothing to pop it
//! answers as a timeout, as Redis does. A key of another type is an error
//! on the first try, and passed over when waking up (Redis leaves such a
//! client blocked).

use super::list::pop::{move_one, parse_ends, parse_mpop, pop_first, reply_moved, reply_mpop};
use super::list::End;
use super::zset::write::{parse_min_max, pop_first as zpop_first, reply_mpop as zset_reply_mpop};
use super::{Args, Ctx, Flow};
use crate::resp::reply;
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tiercache_engine::Watch;
use tokio::sync::Notify;
use tokio::time::Instant;

/// A connection's wait in a blocking command.
pub struct Blocked {
    /// Registered on the command's keys; wakes `wake` on a write.
    _watch: Watch,
    /// What the connection waits on.
    pub wake: Arc<Notify>,
    /// When the command times out (`None`: never).
    pub deadline: Option<Instant>,
    /// Set by the connection when the deadline passed (or `CLIENT UNBLOCK
    /// id TIMEOUT` asked it to act so).
    pub timed_out: bool,
    /// Set by the connection on `CLIENT UNBLOCK id ERROR`.
    pub unblocked: bool,
    /// The IDs a blocked `XREAD` resolved on its first run (`$` is the
    /// last ID *then*), which its later runs read after.
    pub stream_ids: Vec<crate::stream::StreamId>,
}

impl std::fmt::Debug for Blocked {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blocked")
            .field("deadline", &self.deadline)
            .field("timed_out", &self.timed_out)
            .field("unblocked", &self.unblocked)
            .finish()
    }
}

/// A timeout argument in seconds (a float, 0 for none), as Redis 7.0
/// reads it: milliseconds as a C cast to `long long`, which on x86 makes
/// anything out of its range (`inf` too) the most negative number, so
/// "negative".
pub(super) fn parse_timeout(arg: &[u8]) -> Result<Option<Duration>, &'static str> {
    let secs = std::str::from_utf8(arg)
        .ok()
        .filter(|t| !t.is_empty() && !t.starts_with(|c: char| c.is_ascii_whitespace()))
        .and_then(|t| t.parse::<f64>().ok())
        .filter(|s| !s.is_nan())
        .ok_or("ERR timeout is not a float or out of range")?;
    let ms = secs * 1000.0;
    if !(-9.223_372_036_854_775e18..9.223_372_036_854_775e18).contains(&ms) || ms <= -1.0 {
        return Err("ERR timeout is negative");
    }
    let ms = ms as i64;
    // The deadline must fit Redis's millisecond clock.
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    if ms > i64::MAX - now {
        return Err("ERR timeout is out of range");
    }
    Ok((ms > 0).then(|| Duration::from_millis(ms as u64)))
}

/// Starts (or resumes) a blocking command on `keys`: `Some(retry)` to
/// look at them (`retry` when woken by a write), or `None` when the
/// command already answered (its timeout passed: a null array; or
/// `CLIENT UNBLOCK ... ERROR`). A first start registers the wait before the
/// command looks at the keys (inside `EXEC`, which never blocks, it does
/// not).
pub(super) fn start<'k>(
    ctx: &mut Ctx<'_, '_>,
    keys: impl IntoIterator<Item = &'k [u8]>,
    timeout: Option<Duration>,
) -> Option<bool> {
    if let Some(b) = ctx.client.blocked.take() {
        if b.unblocked {
            ctx.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
            return None;
        }
        if b.timed_out {
            null_array(ctx);
            return None;
        }
        ctx.client.blocked = Some(b);
        return Some(true);
    }
    if !ctx.client.in_exec {
        let wake = Arc::new(Notify::new());
        let mut watch = ctx.engine.waiter(wake.clone());
        for k in keys {
            watch.listen(k);
        }
        ctx.client.blocked = Some(Box::new(Blocked {
            _watch: watch,
            wake,
            deadline: timeout.map(|t| Instant::now() + t),
            timed_out: false,
            unblocked: false,
            stream_ids: Vec::new(),
        }));
    }
    Some(false)
}

/// The wait of a command that waits on no key, only for its timeout
/// (`WAIT` with no replica to acknowledge): `Some(Flow::Block)` to wait
/// (again: nothing but `CLIENT UNBLOCK` wakes it early), `Some(Flow::Continue)`
/// when it answered (`CLIENT UNBLOCK ... ERROR`), `None` when the timeout
/// passed (or `CLIENT UNBLOCK ... TIMEOUT`): the caller answers.
pub(super) fn wait_on_nothing(ctx: &mut Ctx<'_, '_>, timeout: Option<Duration>) -> Option<Flow> {
    if let Some(b) = ctx.client.blocked.take() {
        if b.unblocked {
            ctx.error("UNBLOCKED client unblocked via CLIENT UNBLOCK");
            return Some(Flow::Continue);
        }
        if b.timed_out {
            return None;
        }
        ctx.client.blocked = Some(b);
        return Some(Flow::Block);
    }
    let wake = Arc::new(Notify::new());
    ctx.client.blocked = Some(Box::new(Blocked {
        _watch: ctx.engine.waiter(wake.clone()),
        wake,
        deadline: timeout.map(|t| Instant::now() + t),
        timed_out: false,
        unblocked: false,
        stream_ids: Vec::new(),
    }));
    Some(Flow::Block)
}

/// Ends a look at the keys: an error, nothing to pop (block, or inside
/// `EXEC` answer with `none`), or what was popped (`reply` answers it).
pub(super) fn finish<T>(
    ctx: &mut Ctx<'_, '_>,
    looked: Result<Option<T>, String>,
    none: impl FnOnce(&mut Ctx<'_, '_>),
    reply: impl FnOnce(&mut Ctx<'_, '_>, T),
) -> Flow {
    match looked {
        Err(msg) => error(ctx, &msg),
        Ok(None) if ctx.client.blocked.is_some() => Flow::Block,
        Ok(None) => {
            none(ctx);
            Flow::Continue
        }
        Ok(Some(popped)) => {
            ctx.client.blocked = None;
            reply(ctx, popped);
            Flow::Continue
        }
    }
}

pub(super) fn null_array(ctx: &mut Ctx<'_, '_>) {
    let proto = ctx.proto();
    reply::null_array(ctx.out, proto);
}

fn error(ctx: &mut Ctx<'_, '_>, msg: &str) -> Flow {
    ctx.client.blocked = None;
    ctx.error(msg);
    Flow::Continue
}

/// `BLPOP`/`BRPOP key [key ...] timeout`: `[key, element]`.
pub async fn bpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, end: End) -> Flow {
    let timeout = match parse_timeout(args.get(args.len() - 1)) {
        Ok(t) => t,
        Err(msg) => return error(ctx, msg),
    };
    let keys: Vec<Bytes> = (1..args.len() - 1).map(|i| args.bytes(i)).collect();
    let Some(retry) = start(ctx, keys.iter().map(|k| &k[..]), timeout) else {
        return Flow::Continue;
    };
    let looked = pop_first(ctx, &keys, end, 1, retry).await;
    finish(ctx, looked, null_array, |ctx, (at, popped)| {
        super::list::pop::propagate_pop(ctx, end, &keys[at], None);
        reply::array(ctx.out, 2);
        reply::bulk(ctx.out, &keys[at]);
        reply::bulk(ctx.out, &popped[0]);
    })
}

/// `BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout` and
/// `BRPOPLPUSH source destination timeout` (`ends` given): the element.
pub async fn blmove(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, ends: Option<(End, End)>) -> Flow {
    let rpoplpush = ends.is_some();
    let ends = match ends.or_else(|| parse_ends(args, 3)) {
        Some(ends) => ends,
        None => return error(ctx, super::SYNTAX_ERROR),
    };
    let timeout = match parse_timeout(args.get(args.len() - 1)) {
        Ok(t) => t,
        Err(msg) => return error(ctx, msg),
    };
    let Some(retry) = start(ctx, [args.get(1)], timeout) else {
        return Flow::Continue;
    };
    let looked = move_one(ctx, args.get(1), args.get(2), ends, retry).await;
    // A timeout is a null array here too, but inside EXEC a null, as in
    // Redis.
    finish(
        ctx,
        looked,
        |ctx| ctx.null(),
        |ctx, e| {
            // As the move it came to (Redis's `blmoveGenericCommand`).
            if rpoplpush {
                ctx.propagate_as(&[b"RPOPLPUSH", args.get(1), args.get(2)]);
            } else {
                let argv: Vec<&[u8]> = (1..5).map(|i| args.get(i)).collect();
                ctx.propagate_as(&[&[&b"LMOVE"[..]][..], &argv].concat());
            }
            reply_moved(ctx, Ok(Some(e)))
        },
    )
}

/// `BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT count]`.
pub async fn blmpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let timeout = match parse_timeout(args.get(1)) {
        Ok(t) => t,
        Err(msg) => return error(ctx, msg),
    };
    let (keys, end, count) = match parse_mpop(args, 2, End::parse) {
        Ok(parsed) => parsed,
        Err(msg) => return error(ctx, msg),
    };
    let Some(retry) = start(ctx, keys.iter().map(|k| &k[..]), timeout) else {
        return Flow::Continue;
    };
    let looked = pop_first(ctx, &keys, end, count, retry).await;
    finish(ctx, looked, null_array, |ctx, (at, popped)| {
        super::list::pop::propagate_pop(ctx, end, &keys[at], Some(popped.len()));
        reply_mpop(ctx, &keys[at], &popped)
    })
}

/// `BZPOPMIN`/`BZPOPMAX key [key ...] timeout`: `[key, member, score]`.
pub async fn bzpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, max: bool) -> Flow {
    let timeout = match parse_timeout(args.get(args.len() - 1)) {
        Ok(t) => t,
        Err(msg) => return error(ctx, msg),
    };
    let keys: Vec<Bytes> = (1..args.len() - 1).map(|i| args.bytes(i)).collect();
    let Some(retry) = start(ctx, keys.iter().map(|k| &k[..]), timeout) else {
        return Flow::Continue;
    };
    let looked = zpop_first(ctx, &keys, max, 1, retry).await;
    finish(ctx, looked, null_array, |ctx, (at, popped)| {
        super::zset::write::propagate_pop(ctx, max, &keys[at], None);
        let proto = ctx.proto();
        let (member, score) = &popped[0];
        reply::array(ctx.out, 3);
        reply::bulk(ctx.out, &keys[at]);
        reply::bulk(ctx.out, member);
        reply::double(ctx.out, *score, proto);
    })
}

/// `BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT count]`.
pub async fn bzmpop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let timeout = match parse_timeout(args.get(1)) {
        Ok(t) => t,
        Err(msg) => return error(ctx, msg),
    };
    let (keys, max, count) = match parse_mpop(args, 2, parse_min_max) {
        Ok(parsed) => parsed,
        Err(msg) => return error(ctx, msg),
    };
    let Some(retry) = start(ctx, keys.iter().map(|k| &k[..]), timeout) else {
        return Flow::Continue;
    };
    let looked = zpop_first(ctx, &keys, max, count, retry).await;
    finish(ctx, looked, null_array, |ctx, (at, popped)| {
        super::zset::write::propagate_pop(ctx, max, &keys[at], Some(popped.len()));
        zset_reply_mpop(ctx, &keys[at], &popped)
    })
}

#[cfg(test)]
mod tests {
    use super::parse_timeout;
    use std::time::Duration;

    #[test]
    fn timeouts_parse_as_redis_reads_them() {
        assert_eq!(parse_timeout(b"0"), Ok(None));
        assert_eq!(parse_timeout(b"1.5"), Ok(Some(Duration::from_millis(1500))));
        assert_eq!(parse_timeout(b"0.0001"), Ok(None));
        assert_eq!(parse_timeout(b"-1"), Err("ERR timeout is negative"));
        assert_eq!(
            parse_timeout(b"abc"),
            Err("ERR timeout is not a float or out of range")
        );
        assert_eq!(parse_timeout(b"inf"), Err("ERR timeout is negative"));
        assert_eq!(parse_timeout(b"1e300"), Err("ERR timeout is negative"));
        assert_eq!(
            parse_timeout(b"9223372036854770"),
            Err("ERR timeout is out of range")
        );
        assert_eq!(parse_timeout(b"-0.0005"), Ok(None));
    }
}
