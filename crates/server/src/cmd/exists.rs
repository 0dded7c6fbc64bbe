//! `EXISTS key [key ...]`: how many of the keys exist (repeats count again).

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = args.bytes_from(1);
    match ctx.session.exists_many(&keys).await {
        Ok(n) => reply::integer(ctx.out, n as i64),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
