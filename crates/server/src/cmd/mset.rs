//! `MSET key value [key value ...]` and `MSETNX ...`: one batched engine
//! write. Like Redis, the keys lose any previous expiry; `MSETNX` writes
//! nothing (and answers 0) when any of the keys exists.

use super::{arity_error, Args, Ctx, Flow};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::Entry;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, nx: bool) -> Flow {
    if args.len() % 2 == 0 {
        reply::error(ctx.out, &arity_error(if nx { "msetnx" } else { "mset" }));
        return Flow::Continue;
    }
    let entries = (1..args.len())
        .step_by(2)
        .map(|i| {
            let (key, value) = args.key_value(i, i + 1);
            (key, Entry::new(value))
        })
        .collect();
    if nx {
        match ctx.session.set_many_if_absent(entries).await {
            Ok(done) => {
                if done {
                    notify_sets(args, ctx);
                }
                reply::integer(ctx.out, done as i64)
            }
            Err(e) => ctx.engine_error(&e),
        }
    } else {
        match ctx.session.set_many(entries).await {
            Ok(()) => {
                notify_sets(args, ctx);
                reply::ok(ctx.out)
            }
            Err(e) => ctx.engine_error(&e),
        }
    }
    Flow::Continue
}

/// A `set` event per key named, in order (a key named twice gets two).
fn notify_sets(args: &Args<'_>, ctx: &Ctx<'_, '_>) {
    for i in (1..args.len()).step_by(2) {
        ctx.notify(class::STRING, "set", args.get(i));
    }
}
