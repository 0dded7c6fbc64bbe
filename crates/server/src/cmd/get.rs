//! `GET key`: the value, or null when absent; `WRONGTYPE` for a hash.

use super::{Args, Ctx, Flow};

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match super::get_string(ctx.session, args.get(1)).await {
        Ok(entry) => ctx.bulk_or_null(entry.as_ref().map(|e| &e.value[..])),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
