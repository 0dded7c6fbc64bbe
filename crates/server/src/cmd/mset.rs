//! `MSET key value [key value ...]`: one batched engine write. Like Redis,
//! the keys lose any previous expiry.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use tiercache_engine::Entry;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() % 2 == 0 {
        reply::error(ctx.out, "ERR wrong number of arguments for 'mset' command");
        return Flow::Continue;
    }
    let entries = (1..args.len())
        .step_by(2)
        .map(|i| (args.bytes(i), Entry::new(args.bytes(i + 1))))
        .collect();
    match ctx.session.set_many(entries).await {
        Ok(()) => reply::ok(ctx.out),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
