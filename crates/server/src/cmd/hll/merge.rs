//! `PFMERGE destkey [sourcekey ...]`: merges the HLLs (the destination
//! included, as Redis 7.0 does; missing keys are empty) into `destkey`,
//! creating it when missing, and answers `OK`.
//!
//! As Redis's `pfmergeCommand`: the registers' maximum is computed first
//! (the first key that is not an HLL answers its error and nothing is
//! written); the destination turns dense when a source is dense,
//! otherwise its registers are raised one by one in the sparse encoding
//! (which may promote it); its cache is marked stale and `pfadd` is
//! raised, even when nothing changed. One `Session::modify_many` over all
//! the keys.

use super::super::{Args, Ctx, Flow};
use crate::hll::{self, Encoding, REGISTERS};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::{Change, Entry};

pub async fn pfmerge(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let max_bytes = super::sparse_max_bytes(ctx);
    // The destination first: it is also the first source.
    let keys = args.bytes_from(1);
    let r = ctx
        .session
        .modify_many(keys, |entries| {
            let mut changes = vec![Change::Keep; entries.len()];
            let mut max = Box::new([0u8; REGISTERS]);
            let mut use_dense = false;
            for e in entries.iter().flatten() {
                match super::check(e) {
                    Ok(encoding) => use_dense |= encoding == Encoding::Dense,
                    Err(msg) => return (changes, Err(msg)),
                }
                if hll::merge_into(&mut max, &e.value).is_err() {
                    return (changes, Err(hll::CORRUPT));
                }
            }
            let dest = entries[0].as_ref();
            let mut v = dest.map_or_else(hll::new_sparse, |e| e.value.to_vec());
            if use_dense && hll::to_dense(&mut v).is_err() {
                return (changes, Err(hll::CORRUPT));
            }
            for (index, &count) in max.iter().enumerate() {
                if count != 0 {
                    // Redis ignores the result here: the destination was
                    // read as a valid source above.
                    let _ = hll::set_register(&mut v, index, count, max_bytes);
                }
            }
            hll::invalidate_cache(&mut v);
            let fp = hint_fingerprint(&v);
            changes[0] = match dest {
                Some(e) => Change::Exact(Entry::with_flags(v, e.expires_at, e.flags)),
                None => Change::Put(Entry::new(v)),
            };
            (changes, Ok(fp))
        })
        .await;
    match r {
        Ok(Ok(fp)) => {
            ctx.notify(class::STRING, "pfadd", args.get(1));
            super::note_raw(ctx, args.get(1), fp);
            reply::ok(ctx.out);
        }
        Ok(Err(msg)) => ctx.error(msg),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
