//! `DBSIZE`: live keys across all namespaces.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match ctx.session.dbsize().await {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
