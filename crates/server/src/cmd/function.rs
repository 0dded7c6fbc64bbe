//! `FUNCTION FLUSH [ASYNC|SYNC]` and `FUNCTION LIST`: this server runs no
//! scripts, so there is never a function library. Flushing the (empty) set
//! of libraries succeeds and listing it is an empty array, as on a Redis 7
//! that has none; that is what tools and test harnesses send when they
//! reset a server (Redis's own test suite does `FUNCTION FLUSH` before
//! every test file run against an external server). Loading or running
//! functions is refused.

use super::{unknown_subcommand, Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.is(1, "flush") {
        if args.len() > 3 {
            reply::error(
                ctx.out,
                &format!(
                    "ERR unknown subcommand or wrong number of arguments for '{}'. Try FUNCTION HELP.",
                    args.text(1)
                ),
            );
        } else if args.len() == 3 && !args.is(2, "async") && !args.is(2, "sync") {
            reply::error(
                ctx.out,
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            );
        } else {
            reply::ok(ctx.out);
        }
    } else if args.is(1, "list") {
        // `LIBRARYNAME pattern` and `WITHCODE` filter or widen an empty list.
        reply::array(ctx.out, 0);
    } else if args.is(1, "help") {
        reply::array(ctx.out, 2);
        reply::simple(ctx.out, "FUNCTION FLUSH [ASYNC|SYNC]");
        reply::simple(ctx.out, "FUNCTION LIST");
    } else if ["load", "delete", "dump", "restore", "stats", "kill"]
        .iter()
        .any(|s| args.is(1, s))
    {
        reply::error(ctx.out, "ERR functions are not supported by this server");
    } else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "function"));
    }
    Flow::Continue
}
