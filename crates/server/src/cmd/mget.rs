//! `MGET key [key ...]`: one batched engine read, one slot per key; a key
//! holding a hash answers null, as in Redis.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use tiercache_engine::ValueKind;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = args.bytes_from(1);
    match ctx.session.get_many(&keys).await {
        Ok(entries) => {
            reply::array(ctx.out, entries.len());
            for entry in &entries {
                let string = entry.as_ref().filter(|e| e.kind == ValueKind::String);
                ctx.bulk_or_null(string.map(|e| &e.value[..]));
            }
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
