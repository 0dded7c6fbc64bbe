//! `XADD`, `XTRIM`, `XDEL`, `XLEN`, `XSETID`.

use super::{corrupt, limits, modify, read, reply_id};
use crate::cmd::collection;
use crate::cmd::{arity_error, parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::stream::{parse_xadd_id, Limits, Sequence, Stream, StreamId, Trim, TrimBy, INVALID_ID};
use tiercache_engine::now_ms;

/// What `XADD` and `XTRIM` parse before the ID.
struct AddArgs {
    trim: Option<Trim>,
    no_mkstream: bool,
    /// The explicit ID (`None` for `*`).
    id: Option<(StreamId, Sequence)>,
    /// Where the ID is (`XADD`'s fields follow it).
    id_at: usize,
}

/// Redis's `streamParseAddOrTrimArgsOrReply`: options from argument 2,
/// up to `XADD`'s ID.
fn parse_add_or_trim(args: &Args<'_>, xadd: bool, limits: Limits) -> Result<AddArgs, String> {
    const BOTH: &str =
        "ERR syntax error, MAXLEN and MINID options at the same time are not compatible";
    let mut by: Option<TrimBy> = None;
    let (mut approx, mut limit, mut limit_given, mut no_mkstream) = (false, 0i64, false, false);
    let mut id = None;
    let mut i = 2;
    while i < args.len() {
        let more = args.len() - 1 - i;
        let opt = args.get(i);
        if xadd && opt == b"*" {
            break;
        }
        let maxlen = args.is(i, "maxlen");
        if (maxlen || args.is(i, "minid")) && more > 0 {
            if by.is_some() {
                return Err(BOTH.into());
            }
            approx = false;
            if more >= 2 && args.get(i + 1) == b"~" {
                approx = true;
                i += 1;
            } else if more >= 2 && args.get(i + 1) == b"=" {
                i += 1;
            }
            by = Some(if maxlen {
                let n = parse_i64(args.get(i + 1)).ok_or(NOT_AN_INTEGER)?;
                if n < 0 {
                    return Err("ERR The MAXLEN argument must be >= 0.".into());
                }
                TrimBy::MaxLen(n as u64)
            } else {
                TrimBy::MinId(StreamId::parse_strict(args.get(i + 1), 0).ok_or(INVALID_ID)?)
            });
            i += 1;
        } else if args.is(i, "limit") && more > 0 {
            limit = parse_i64(args.get(i + 1)).ok_or(NOT_AN_INTEGER)?;
            if limit < 0 {
                return Err("ERR The LIMIT argument must be >= 0.".into());
            }
            limit_given = true;
            i += 1;
        } else if xadd && args.is(i, "nomkstream") {
            no_mkstream = true;
        } else if xadd {
            id = Some(parse_xadd_id(opt).ok_or(INVALID_ID)?);
            break;
        } else {
            return Err(SYNTAX_ERROR.into());
        }
        i += 1;
    }
    if limit != 0 && by.is_none() {
        return Err(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy".into(),
        );
    }
    if !xadd && by.is_none() {
        return Err("ERR syntax error, XTRIM must be called with a trimming strategy".into());
    }
    if limit_given {
        if !approx {
            return Err(
                "ERR syntax error, LIMIT cannot be used without the special ~ option".into(),
            );
        }
    } else if approx {
        // Redis bounds the work of an approximate trim by default.
        limit = limits.max_entries.saturating_mul(100);
        if limit <= 0 || limit > 10_000 {
            limit = 10_000;
        }
    } else {
        limit = 0;
    }
    Ok(AddArgs {
        trim: by.map(|by| Trim {
            by,
            approx,
            limit: limit as u64,
        }),
        no_mkstream,
        id,
        id_at: i,
    })
}

/// `XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]]
/// *|id field value [field value ...]`: the new entry's ID (null with
/// `NOMKSTREAM` and no stream).
pub async fn xadd(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let limits = limits(ctx);
    let parsed = match parse_add_or_trim(args, true, limits) {
        Ok(p) => p,
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    let fields_at = parsed.id_at + 1;
    let pairs = args.len().saturating_sub(fields_at);
    if fields_at > args.len() || pairs < 2 || pairs % 2 == 1 {
        ctx.error(&arity_error("xadd"));
        return Flow::Continue;
    }
    if let Some((id, Sequence::Given)) = parsed.id {
        if id.is_zero() {
            ctx.error("ERR The ID specified in XADD must be greater than 0-0");
            return Flow::Continue;
        }
    }
    let fields = args.bytes_from(fields_at);
    let r = modify(ctx, args.get(1), |s| {
        if s.is_none() {
            if parsed.no_mkstream {
                return Ok((None, false));
            }
            *s = Some(Stream::default());
        }
        let s = s.as_mut().expect("just made");
        let last = s.last_id();
        if last == StreamId::MAX {
            return Err(
                "ERR The stream has exhausted the last possible ID, unable to add more items"
                    .into(),
            );
        }
        const NOT_ABOVE: &str =
            "ERR The ID specified in XADD is equal or smaller than the target stream top item";
        let id = match parsed.id {
            None => {
                let now = now_ms();
                if now > last.ms {
                    StreamId::new(now, 0)
                } else {
                    last.next().expect("below the largest ID")
                }
            }
            Some((id, Sequence::Auto)) if id.ms == last.ms => {
                if last.seq == u64::MAX {
                    return Err(NOT_ABOVE.into());
                }
                StreamId::new(id.ms, last.seq + 1)
            }
            Some((id, _)) => id,
        };
        if id <= last {
            return Err(NOT_ABOVE.into());
        }
        s.append(id, &fields, limits).map_err(corrupt)?;
        let mut trimmed = 0;
        if let Some(t) = parsed.trim {
            trimmed = s.trim(t).map_err(corrupt)?;
        }
        Ok((Some((id, trimmed > 0, exact_trim(parsed.trim, s))), true))
    })
    .await;
    match r {
        Ok(Some((id, trimmed, exact))) => {
            ctx.notify(class::STREAM, "xadd", args.get(1));
            if trimmed {
                ctx.notify(class::STREAM, "xtrim", args.get(1));
            }
            let id_given = matches!(parsed.id, Some((_, Sequence::Given)));
            if !id_given || exact.is_some() {
                // Redis's `xaddCommand`: the ID made here, and a `~` trim
                // as the exact one it came to.
                let id = id.to_string();
                let mut argv: Vec<&[u8]> = vec![b"XADD", args.get(1)];
                if parsed.no_mkstream {
                    argv.push(b"NOMKSTREAM");
                }
                let trim = exact
                    .as_ref()
                    .map(|(by, at)| [by.as_bytes(), b"=", at.as_bytes()]);
                match &trim {
                    Some(t) => argv.extend(t),
                    None => argv.extend((2..parsed.id_at).map(|i| args.get(i))),
                }
                argv.push(id.as_bytes());
                argv.extend((fields_at..args.len()).map(|i| args.get(i)));
                ctx.propagate_as(&argv);
            }
            reply_id(ctx.out, id)
        }
        Ok(None) => ctx.null(),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// An approximate (`~`) trim as the exact one it came to on `s` (Redis's
/// `streamRewriteTrimArgument`): `MAXLEN` the length left, `MINID` the
/// first ID left. `None` for an exact trim or none.
fn exact_trim(trim: Option<Trim>, s: &Stream) -> Option<(&'static str, String)> {
    match trim? {
        Trim { approx: false, .. } => None,
        Trim {
            by: TrimBy::MaxLen(_),
            ..
        } => Some(("MAXLEN", s.len().to_string())),
        Trim {
            by: TrimBy::MinId(_),
            ..
        } => Some(("MINID", s.first_id().to_string())),
    }
}

/// `XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]`: how many
/// entries went.
pub async fn xtrim(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let limits = limits(ctx);
    let trim = match parse_add_or_trim(args, false, limits) {
        Ok(p) => p.trim.expect("XTRIM needs a strategy"),
        Err(msg) => {
            ctx.error(&msg);
            return Flow::Continue;
        }
    };
    // What a `~` trim came to, for replicas.
    let mut exact = None;
    let xtrim_as = &mut exact;
    let r = modify(ctx, args.get(1), |s| match s {
        None => Ok((0, false)),
        Some(s) => {
            let removed = s.trim(trim).map_err(corrupt)?;
            if removed > 0 {
                if let Some((by, at)) = exact_trim(Some(trim), s) {
                    *xtrim_as = Some((by, at));
                }
            }
            Ok((removed, removed > 0))
        }
    })
    .await;
    collection::notify_change(ctx, class::STREAM, "xtrim", args.get(1));
    if let Some((by, at)) = exact {
        ctx.propagate_as(&[b"XTRIM", args.get(1), by.as_bytes(), b"=", at.as_bytes()]);
    }
    reply_count(ctx, r);
    Flow::Continue
}

/// `XDEL key id [id ...]`: how many entries were deleted. Redis looks at
/// the key before the IDs.
pub async fn xdel(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = modify(ctx, args.get(1), |s| {
        let Some(s) = s else {
            return Ok((0, false));
        };
        let ids = (2..args.len())
            .map(|i| StreamId::parse_strict(args.get(i), 0))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| INVALID_ID.to_string())?;
        let mut deleted = 0;
        for id in ids {
            deleted += u64::from(s.delete(id).map_err(corrupt)?);
        }
        Ok((deleted, deleted > 0))
    })
    .await;
    collection::notify_change(ctx, class::STREAM, "xdel", args.get(1));
    reply_count(ctx, r);
    Flow::Continue
}

/// `XLEN key`.
pub async fn xlen(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match read(ctx, args.get(1)).await {
        Ok(s) => reply::integer(ctx.out, s.map_or(0, |s| s.len() as i64)),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID
/// max-deleted-id]`. As in Redis 7.0, the last ID may go below the
/// largest deleted ID (later releases refuse that).
pub async fn xsetid(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match parse_setid(args) {
        Ok((id, added, max_deleted)) => {
            let r = modify(ctx, args.get(1), |s| {
                let Some(s) = s else {
                    return Err("ERR no such key".into());
                };
                if !s.is_empty() {
                    if id < s.last_valid_id() {
                        return Err(
                            "ERR The ID specified in XSETID is smaller than the target stream top item"
                                .into(),
                        );
                    }
                    if added.is_some_and(|n| s.len() > n) {
                        return Err("ERR The entries_added specified in XSETID is smaller than the target stream length".into());
                    }
                }
                s.set_id(id, added, max_deleted.filter(|m| !m.is_zero()));
                Ok(((), true))
            })
            .await;
            match r {
                Ok(()) => {
                    ctx.notify(class::STREAM, "xsetid", args.get(1));
                    reply::ok(ctx.out)
                }
                Err(msg) => ctx.error(&msg),
            }
        }
        Err(msg) => ctx.error(msg),
    }
    Flow::Continue
}

type SetIdArgs = (StreamId, Option<u64>, Option<StreamId>);

fn parse_setid(args: &Args<'_>) -> Result<SetIdArgs, &'static str> {
    let id = StreamId::parse_strict(args.get(2), 0).ok_or(INVALID_ID)?;
    let (mut added, mut max_deleted) = (None, None);
    let mut i = 3;
    while i < args.len() {
        let more = args.len() - 1 - i;
        if args.is(i, "entriesadded") && more > 0 {
            let n = parse_i64(args.get(i + 1)).ok_or(NOT_AN_INTEGER)?;
            if n < 0 {
                return Err("ERR entries_added must be positive");
            }
            added = Some(n as u64);
        } else if args.is(i, "maxdeletedid") && more > 0 {
            let m = StreamId::parse_strict(args.get(i + 1), 0).ok_or(INVALID_ID)?;
            if id < m {
                return Err(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                );
            }
            max_deleted = Some(m);
        } else {
            return Err(SYNTAX_ERROR);
        }
        i += 2;
    }
    Ok((id, added, max_deleted))
}

fn reply_count(ctx: &mut Ctx<'_, '_>, r: Result<u64, String>) {
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
}
