//! `PING [message]`: `+PONG`, or the message as a bulk string.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match args.len() {
        1 => reply::simple(ctx.out, "PONG"),
        2 => reply::bulk(ctx.out, args.get(1)),
        _ => reply::error(ctx.out, "ERR wrong number of arguments for 'ping' command"),
    }
    Flow::Continue
}
