//! `PING [message]`: `+PONG`, or the message as a bulk string. A RESP2
//! subscriber gets `["pong", message]` instead (an empty message without
//! one), as in Redis, since its replies are read as pushes.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() > 2 {
        reply::error(ctx.out, "ERR wrong number of arguments for 'ping' command");
    } else if ctx.client.in_subscriber_context() {
        reply::array(ctx.out, 2);
        reply::bulk(ctx.out, b"pong");
        reply::bulk(ctx.out, if args.len() == 2 { args.get(1) } else { b"" });
    } else if args.len() == 2 {
        reply::bulk(ctx.out, args.get(1));
    } else {
        reply::simple(ctx.out, "PONG");
    }
    Flow::Continue
}
