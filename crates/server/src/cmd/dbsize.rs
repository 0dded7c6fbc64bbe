//! `DBSIZE`: live keys across all namespaces and tiers (write-back data
//! is flushed first so the stores count exactly).

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match ctx.session.key_stats().await {
        Ok(s) => reply::integer(ctx.out, s.keys as i64),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
