//! `LOLWUT [VERSION version]`: Redis's version banner, as Redis 7.0
//! answers for any version but 5 and 6 (whose generated art is not
//! reproduced: those versions get the banner too).

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, REDIS_VERSION};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() >= 3 && args.is(1, "version") && parse_i64(args.get(2)).is_none() {
        ctx.error(NOT_AN_INTEGER);
        return Flow::Continue;
    }
    let banner = format!("Redis ver. {REDIS_VERSION}\n");
    let proto = ctx.proto();
    reply::verbatim(ctx.out, banner.as_bytes(), proto);
    Flow::Continue
}
