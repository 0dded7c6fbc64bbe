//! What a primary without replicas answers about replication: `ROLE`
//! (`master`, offset 0, no replicas) and `WAIT numreplicas timeout`, which
//! returns 0 at once when no replica is asked for, and otherwise waits
//! out its timeout (0: forever) as Redis does with no replica to
//! acknowledge, without holding anything but its connection (the wait of
//! `cmd/blocking.rs`, on no key).

use super::blocking;
use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::resp::reply;

/// `ROLE`.
pub async fn role(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    reply::array(ctx.out, 3);
    reply::bulk(ctx.out, b"master");
    reply::integer(ctx.out, 0);
    reply::array(ctx.out, 0);
    Flow::Continue
}

/// `WAIT numreplicas timeout` (milliseconds).
pub async fn wait(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(wanted) = parse_i64(args.get(1)) else {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    };
    let timeout = match parse_i64(args.get(2)) {
        None => {
            ctx.error("ERR timeout is not an integer or out of range");
            return Flow::Continue;
        }
        Some(ms) if ms < 0 => {
            ctx.error("ERR timeout is negative");
            return Flow::Continue;
        }
        Some(ms) => (ms > 0).then(|| std::time::Duration::from_millis(ms as u64)),
    };
    // No replica ever acknowledges: done now if none is wanted (or inside
    // MULTI, as Redis answers there), else once the timeout passes.
    if wanted <= 0 || ctx.client.in_exec {
        reply::integer(ctx.out, 0);
        return Flow::Continue;
    }
    match blocking::wait_on_nothing(ctx, timeout) {
        Some(flow) => flow,
        None => {
            reply::integer(ctx.out, 0);
            Flow::Continue
        }
    }
}
