//! `ECHO message`.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    reply::bulk(ctx.out, args.get(1));
    Flow::Continue
}
