//! `FLUSHALL [ASYNC|SYNC]` and `FLUSHDB [ASYNC|SYNC]` (database 0 is the
//! only one): remove every key from every tier. Both modes are
//! synchronous here: the reply means the keys are gone.

use super::{Args, Ctx, Flow, SYNTAX_ERROR};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 2 || (args.len() == 2 && !args.is(1, "async") && !args.is(1, "sync")) {
        reply::error(ctx.out, SYNTAX_ERROR);
        return Flow::Continue;
    }
    match ctx.session.flush_all().await {
        Ok(()) => {
            // Propagated even when there was nothing to flush, as in Redis.
            ctx.mark_dirty();
            reply::ok(ctx.out)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
