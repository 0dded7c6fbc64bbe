//! `RESET`: back to a fresh connection's state — no transaction, nothing
//! watched, no subscriptions, RESP2, no name, unauthenticated when a password is required —
//! and `+RESET`.

use super::{Args, Ctx, Flow};
use crate::resp::{reply, Proto};
use std::sync::atomic::Ordering;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    ctx.client.end_transaction();
    super::pubsub::leave(ctx.client, &ctx.server.pubsub);
    super::monitor::stop(ctx.client, ctx.server);
    ctx.client.release_mailbox(ctx.out);
    ctx.client.set_proto(Proto::Resp2);
    ctx.client.authenticated = !ctx.server.auth_required();
    ctx.client.info.with_names(|n| n.name = None);
    ctx.client.info.no_evict.store(false, Ordering::Relaxed);
    ctx.client.replies = crate::state::ReplyMode::On;
    reply::simple(ctx.out, "RESET");
    Flow::Continue
}
