//! `PFADD key [element ...]`: adds the elements to the HLL at `key`,
//! creating it (sparse) when missing. Answers 1 when the key was created
//! or a register changed, else 0; only then is the value written, with
//! its cached cardinality marked stale, and `pfadd` raised.
//!
//! As in Redis, elements are added one by one to the value: if a broken
//! sparse value fails half way (`INVALIDOBJ`), the registers the elements
//! before already raised stay raised.

use super::super::{rewrite_string, update_string, Args, Ctx, Flow};
use crate::hll::{self, Encoding};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::Update;

pub async fn pfadd(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let max_bytes = super::sparse_max_bytes(ctx);
    let r = update_string(ctx.session, args.get(1), |old| {
        let (mut v, mut updated) = match old {
            None => (hll::new_sparse(), true),
            Some(e) => match hll::encoding_of(&e.value) {
                // Most adds to a big HLL change nothing: the stored
                // bytes say so without a copy.
                Some(Encoding::Dense)
                    if !(2..args.len()).any(|i| hll::dense_add_changes(&e.value, args.get(i))) =>
                {
                    return (Update::Keep, Ok((false, None)));
                }
                Some(_) => (e.value.to_vec(), false),
                None => return (Update::Keep, Err(hll::NOT_HLL)),
            },
        };
        let mut failed = false;
        for i in 2..args.len() {
            match hll::add(&mut v, args.get(i), max_bytes) {
                Ok(changed) => updated |= changed,
                Err(hll::Corrupt) => {
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            // What the elements before changed stays (Redis changed the
            // value in place); nothing is announced.
            let changed = old.is_some_and(|e| e.value[..] != v[..]);
            let update = if changed {
                rewrite_string(old, v)
            } else {
                Update::Keep
            };
            return (update, Err(hll::CORRUPT));
        }
        if !updated {
            return (Update::Keep, Ok((false, None)));
        }
        hll::invalidate_cache(&mut v);
        let fp = hint_fingerprint(&v);
        (rewrite_string(old, v), Ok((true, fp)))
    })
    .await;
    match r {
        Ok(Ok((updated, fp))) => {
            if updated {
                ctx.notify(class::STRING, "pfadd", args.get(1));
                super::note_raw(ctx, args.get(1), fp);
            }
            reply::integer(ctx.out, updated as i64);
        }
        Ok(Err(msg)) => ctx.error(msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
