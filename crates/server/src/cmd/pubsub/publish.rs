//! `PUBLISH channel message` and `SPUBLISH shardchannel message`: the
//! number of subscriptions the message reached (a client subscribed to the
//! channel and to a matching pattern counts twice, as in Redis).

use crate::cmd::{Args, Ctx, Flow};
use crate::resp::reply;

/// `PUBLISH` (`shard` false) or `SPUBLISH`.
pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, shard: bool) -> Flow {
    let receivers = ctx.server.pubsub.publish(args.get(1), args.get(2), shard);
    reply::integer(ctx.out, receivers as i64);
    // Replicas get every message, for their own subscribers (Redis's
    // `forceCommandPropagation`).
    ctx.mark_dirty();
    Flow::Continue
}
