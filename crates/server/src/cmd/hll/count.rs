//! `PFCOUNT key [key ...]`: the estimated cardinality of one HLL, or of
//! the union of several (missing keys count as empty).
//!
//! With one key the cached cardinality answers when valid; otherwise it
//! is computed and written back into the value (one `Session::update`,
//! expiry kept, no keyspace event), as Redis does. With several keys the
//! registers are merged into a scratch array and nothing is written.

use super::super::{rewrite_string, update_string, Args, Ctx, Flow};
use crate::hll::{self, REGISTERS};
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::{Change, Update};

pub async fn pfcount(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 2 {
        return union(args, ctx).await;
    }
    let r = update_string(ctx.session, args.get(1), |old| {
        let Some(e) = old else {
            return (Update::Keep, Ok((0, None, false)));
        };
        if hll::encoding_of(&e.value).is_none() {
            return (Update::Keep, Err(hll::NOT_HLL));
        }
        if let Some(card) = hll::cached_card(&e.value) {
            return (Update::Keep, Ok((card, None, false)));
        }
        match hll::count(&e.value) {
            Ok(card) => {
                let mut v = e.value.to_vec();
                hll::set_cached_card(&mut v, card);
                let fp = hint_fingerprint(&v);
                (rewrite_string(old, v), Ok((card, fp, true)))
            }
            Err(hll::Corrupt) => (Update::Keep, Err(hll::CORRUPT)),
        }
    })
    .await;
    match r {
        Ok(Ok((card, fp, cached))) => {
            super::note_raw(ctx, args.get(1), fp);
            // The cache written back: replicas get the `PFCOUNT` (Redis's
            // `may_replicate`), so their bytes stay the same.
            if cached {
                ctx.mark_dirty();
            }
            reply::integer(ctx.out, card as i64);
        }
        Ok(Err(msg)) => ctx.error(msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// The union's cardinality, read under every key's lock.
async fn union(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = args.bytes_from(1);
    let r = ctx
        .session
        .modify_many(keys, |entries| {
            let keep = vec![Change::Keep; entries.len()];
            let mut max = Box::new([0u8; REGISTERS]);
            for e in entries.iter().flatten() {
                if let Err(msg) = super::check(e) {
                    return (keep, Err(msg));
                }
                if hll::merge_into(&mut max, &e.value).is_err() {
                    return (keep, Err(hll::CORRUPT));
                }
            }
            (keep, Ok(hll::count_raw(&max)))
        })
        .await;
    match r {
        Ok(Ok(card)) => reply::integer(ctx.out, card as i64),
        Ok(Err(msg)) => ctx.error(msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
