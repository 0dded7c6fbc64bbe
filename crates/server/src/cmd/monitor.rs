//! `MONITOR`: `+OK`, then a line for every command the server runs
//! ([`crate::monitor`]). As in Redis, a second `MONITOR` on the same
//! connection answers nothing, and `EXEC` refuses to run it; `RESET`
//! or closing the connection ends it.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use std::sync::atomic::Ordering;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if ctx.client.in_exec {
        ctx.error("ERR MONITOR isn't allowed for DENY BLOCKING client");
        return Flow::Continue;
    }
    if ctx.client.info.monitoring.swap(true, Ordering::Relaxed) {
        return Flow::Continue;
    }
    let mailbox = ctx.client.mailbox();
    ctx.server.monitors.add(ctx.client.id, mailbox);
    reply::ok(ctx.out);
    Flow::Continue
}

/// Ends monitor mode, if on (`RESET`, a closed connection).
pub fn stop(client: &mut crate::state::ClientState, server: &crate::state::ServerState) {
    if client.info.monitoring.swap(false, Ordering::Relaxed) {
        server.monitors.remove(client.id);
    }
}
