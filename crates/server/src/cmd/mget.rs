//! `MGET key [key ...]`: one batched engine read, one slot per key.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = args.bytes_from(1);
    match ctx.session.get_many(&keys).await {
        Ok(entries) => {
            reply::array(ctx.out, entries.len());
            for entry in &entries {
                ctx.bulk_or_null(entry.as_ref().map(|e| &e.value[..]));
            }
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
