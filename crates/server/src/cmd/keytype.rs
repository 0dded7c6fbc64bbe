//! `TYPE key`: `string` for an existing key (every value is a string
//! today), `none` otherwise.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match ctx.session.get(args.get(1)).await {
        Ok(Some(_)) => reply::simple(ctx.out, "string"),
        Ok(None) => reply::simple(ctx.out, "none"),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
