//! `APPEND key value` (the new length; creates the key, keeps its expiry)
//! and `STRLEN key` (0 when absent).

use super::{Args, Ctx, Flow, TOO_BIG};
use crate::notify::class;
use crate::resp::reply;
use crate::state::hint_fingerprint;
use tiercache_engine::Update;

pub async fn append(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let suffix = args.get(2);
    let max = ctx.server.config.limits.max_bulk_len;
    let r = super::update_string(ctx.session, args.get(1), |old| {
        let len = old.map_or(0, |e| e.value.len()) + suffix.len();
        if len > max {
            return (Update::Keep, Err(()));
        }
        let mut v = Vec::with_capacity(len);
        if let Some(e) = old {
            v.extend_from_slice(&e.value);
        }
        v.extend_from_slice(suffix);
        // Appending to an existing string makes it `raw` in Redis.
        let fp = old.and_then(|_| hint_fingerprint(&v));
        let update = super::rewrite_string(old, v);
        (update, Ok((len, fp)))
    })
    .await;
    match r {
        Ok(Ok((len, fp))) => {
            ctx.notify(class::STRING, "append", args.get(1));
            if let Some(fp) = fp {
                ctx.server.encodings.note(args.get(1), fp, "raw");
            }
            reply::integer(ctx.out, len as i64);
        }
        Ok(Err(())) => reply::error(ctx.out, TOO_BIG),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn strlen(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match super::get_string(ctx.session, args.get(1)).await {
        Ok(e) => reply::integer(ctx.out, e.map_or(0, |e| e.value.len() as i64)),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
