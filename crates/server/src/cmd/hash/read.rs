//! The read-only hash commands: `HGET`, `HMGET`, `HGETALL` (a map in
//! RESP3), `HEXISTS`, `HLEN`, `HKEYS`, `HVALS`, `HSTRLEN`. An absent key
//! reads as an empty hash; a key of another type answers `WRONGTYPE`.

use super::read_hash;
use crate::cmd::{collection, Args, Ctx, Flow};
use crate::hash::Hash;
use crate::resp::reply;

/// Runs `f` on the hash at argument 1 (empty when absent), or replies the error.
async fn with_hash(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    f: impl FnOnce(&mut Ctx<'_, '_>, &Hash),
) {
    match read_hash(ctx, args.get(1)).await {
        Ok(h) => f(ctx, &h.unwrap_or_default()),
        Err(msg) => ctx.error(&msg),
    }
}

/// Runs `f` on the value of the field at argument 2 (`None` when absent),
/// read from the stored hash without decoding it, or replies the error.
async fn with_value(
    args: &Args<'_>,
    ctx: &mut Ctx<'_, '_>,
    f: impl FnOnce(&mut Ctx<'_, '_>, Option<&[u8]>),
) {
    collection::with_stored::<Hash>(ctx, args.get(1), |ctx, raw| {
        let value = match raw {
            Some(raw) => Hash::find(raw, args.get(2))?,
            None => None,
        };
        f(ctx, value);
        Ok(())
    })
    .await;
}

/// `HGET key field`: the value, or null.
pub async fn hget(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_value(args, ctx, |ctx, v| ctx.bulk_or_null(v)).await;
    Flow::Continue
}

/// `HMGET key field [field ...]`: one value or null per field.
pub async fn hmget(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_hash(args, ctx, |ctx, h| {
        reply::array(ctx.out, args.len() - 2);
        for i in 2..args.len() {
            ctx.bulk_or_null(h.get(args.get(i)));
        }
    })
    .await;
    Flow::Continue
}

/// `HGETALL key`: fields and values in order; a map in RESP3.
pub async fn hgetall(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_hash(args, ctx, |ctx, h| {
        reply::map(ctx.out, h.len(), ctx.client.proto);
        for (f, v) in h.iter() {
            reply::bulk(ctx.out, f);
            reply::bulk(ctx.out, v);
        }
    })
    .await;
    Flow::Continue
}

/// Which half of the pairs `HKEYS`/`HVALS` list.
#[derive(Clone, Copy)]
pub enum Half {
    /// `HKEYS`.
    Fields,
    /// `HVALS`.
    Values,
}

/// `HKEYS key` / `HVALS key`.
pub async fn hkeys(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, half: Half) -> Flow {
    with_hash(args, ctx, |ctx, h| {
        reply::array(ctx.out, h.len());
        for (f, v) in h.iter() {
            reply::bulk(ctx.out, if matches!(half, Half::Fields) { f } else { v });
        }
    })
    .await;
    Flow::Continue
}

/// `HEXISTS key field`: 1 or 0.
pub async fn hexists(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_value(args, ctx, |ctx, v| {
        reply::integer(ctx.out, i64::from(v.is_some()))
    })
    .await;
    Flow::Continue
}

/// `HLEN key`: the number of fields.
pub async fn hlen(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_hash(args, ctx, |ctx, h| reply::integer(ctx.out, h.len() as i64)).await;
    Flow::Continue
}

/// `HSTRLEN key field`: the value's length, 0 when absent.
pub async fn hstrlen(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    with_value(args, ctx, |ctx, v| {
        reply::integer(ctx.out, v.map_or(0, |v| v.len() as i64))
    })
    .await;
    Flow::Continue
}
