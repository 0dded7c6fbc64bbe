//! The set commands that write: `SADD`, `SREM`, `SMOVE`, `SPOP`.

use super::{reply_empty, reply_members};
use crate::cmd::collection::{self, collection_of, store, StoredEdit};
use crate::cmd::sampling::{distinct, random_below};
use crate::cmd::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use crate::set::Set;
use bytes::Bytes;
use tiercache_engine::Change;

/// `SADD key member [member ...]`: how many are new.
pub async fn sadd(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = if args.len() == 3 {
        add_one(args, ctx).await
    } else {
        collection::modify::<Set, _>(ctx, args.get(1), |s| {
            let added = s.add_many((2..args.len()).map(|i| args.bytes(i)));
            Ok((added, added > 0))
        })
        .await
    };
    collection::notify_change(ctx, class::SET, "sadd", args.get(1));
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SADD key member` on the stored set, not decoded: a member already
/// there costs a scan, a new one two copies ([`Set::add_stored`]).
async fn add_one(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Result<usize, String> {
    collection::modify_stored::<Set, _>(ctx, args.get(1), |raw| match raw {
        Some(raw) => Ok(match Set::add_stored(raw, args.get(2))? {
            Some((value, patch)) => (StoredEdit::Patched(value, patch), 1),
            None => (StoredEdit::Keep, 0),
        }),
        None => Ok((
            StoredEdit::Whole(Set::from_members([args.bytes(2)]).encode()),
            1,
        )),
    })
    .await
}

/// `SREM key member [member ...]`: how many were there.
pub async fn srem(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let members: Vec<&[u8]> = (2..args.len()).map(|i| args.get(i)).collect();
    let r = collection::modify::<Set, _>(ctx, args.get(1), |s| {
        let removed = s.remove_many(&members);
        Ok((removed, removed > 0))
    })
    .await;
    collection::notify_change(ctx, class::SET, "srem", args.get(1));
    match r {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(msg) => ctx.error(&msg),
    }
    Flow::Continue
}

/// `SMOVE source destination member`: 1 when moved, 0 when `member` is
/// not in `source`. Both keys' types are checked first, as Redis does.
pub async fn smove(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let (src, dst) = (args.bytes(1), args.bytes(2));
    let member = args.get(3);
    let max_len = ctx.server.config.limits.max_bulk_len;
    let same = src == dst;
    let r = ctx
        .session
        .modify_many(vec![src, dst], |found| {
            let keep = vec![Change::Keep, Change::Keep];
            let Some(source) = &found[0] else {
                return (keep, Ok((0, None)));
            };
            let mut from = match collection_of::<Set>(Some(source)) {
                Ok(s) => s.unwrap_or_default(),
                Err(msg) => return (keep, Err(msg)),
            };
            let mut to = match collection_of::<Set>(found[1].as_ref()) {
                Ok(s) => s.unwrap_or_default(),
                Err(msg) => return (keep, Err(msg)),
            };
            if same {
                return (keep, Ok((i64::from(from.contains(member)), None)));
            }
            if from.remove_many(&[member]) == 0 {
                return (keep, Ok((0, None)));
            }
            // A member already in the destination leaves it untouched (no
            // write, so no WATCH of it sees a change), as in Redis.
            let added = to.add_many([Bytes::copy_from_slice(member)]) > 0;
            let changes = store(found[0].as_ref(), &from, max_len).and_then(|a| {
                let b = if added {
                    store(found[1].as_ref(), &to, max_len)?
                } else {
                    Change::Keep
                };
                Ok(vec![a, b])
            });
            let events = (from.is_empty(), added);
            match changes {
                Ok(changes) => (changes, Ok((1, Some(events)))),
                Err(msg) => (keep, Err(msg)),
            }
        })
        .await;
    // Redis's order: `srem` on the source, `del` if it emptied, `sadd` on
    // the destination if the member was new there.
    if let Ok(Ok((_, Some((emptied, added))))) = &r {
        ctx.notify(class::SET, "srem", args.get(1));
        if *emptied {
            ctx.notify(class::GENERIC, "del", args.get(1));
        }
        if *added {
            ctx.notify(class::SET, "sadd", args.get(2));
        }
    }
    match r {
        Ok(Ok((n, _))) => reply::integer(ctx.out, n),
        Ok(Err(msg)) => ctx.error(&msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// What `SPOP` propagates (Redis's `spopCommand` and
/// `spopWithCountCommand`): its picks are random, so replicas get the
/// members as one `SREM` each, or `DEL` when a count took them all.
fn propagate_spop(ctx: &mut Ctx<'_, '_>, key: &[u8], popped: &[Bytes], took_all: bool) {
    if took_all {
        ctx.propagate_as(&[b"DEL", key]);
        return;
    }
    for m in popped {
        ctx.propagate_as(&[b"SREM", key, m]);
    }
}

/// `SPOP key [count]`: removes and replies one random member (or null),
/// or with a count a set of up to that many.
pub async fn spop(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 3 {
        ctx.error(SYNTAX_ERROR);
        return Flow::Continue;
    }
    let count = match collection::optional_count(args) {
        Ok(count) => count,
        Err(msg) => {
            ctx.error(msg);
            return Flow::Continue;
        }
    };
    let r = collection::modify::<Set, _>(ctx, args.get(1), |s| {
        let n = count.unwrap_or(1).min(s.len() as u64) as usize;
        if n == 0 {
            return Ok(((Vec::new(), false), false));
        }
        let all = n == s.len();
        let popped: Vec<Bytes> = if all {
            let all = s.iter_bytes().collect();
            s.retain(|_| false);
            all
        } else if n == 1 {
            vec![s.take(random_below(s.len()))]
        } else {
            // One pass, not one removal per pick: a large count must not
            // cost its square.
            let mut picked = vec![false; s.len()];
            for i in distinct(s.len(), n) {
                picked[i] = true;
            }
            let popped = s
                .iter_bytes()
                .zip(&picked)
                .filter(|(_, &p)| p)
                .map(|(m, _)| m)
                .collect();
            let mut at = 0;
            s.retain(|_| {
                at += 1;
                !picked[at - 1]
            });
            popped
        };
        Ok(((popped, all), true))
    })
    .await;
    collection::notify_change(ctx, class::SET, "spop", args.get(1));
    if let Ok((popped, all)) = &r {
        propagate_spop(ctx, args.get(1), popped, *all && count.is_some());
    }
    let r = r.map(|(popped, _)| popped);
    match (r, count) {
        (Err(msg), _) => ctx.error(&msg),
        (Ok(popped), None) => ctx.bulk_or_null(popped.first().map(|m| &m[..])),
        (Ok(popped), Some(_)) if popped.is_empty() => reply_empty(ctx),
        (Ok(popped), Some(_)) => reply_members(ctx, popped.iter().map(|m| &m[..])),
    }
    Flow::Continue
}
