//! `COMMAND`, `COMMAND COUNT`, `COMMAND INFO name...`, `COMMAND LIST`,
//! `COMMAND DOCS`: enough for `redis-cli` and client libraries that
//! introspect the server at start.

use super::{lookup, unknown_subcommand, Args, CommandSpec, Ctx, Flow, COMMANDS};
use crate::resp::reply;
use bytes::BytesMut;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.len() == 1 {
        reply::array(ctx.out, COMMANDS.len());
        for spec in COMMANDS {
            info(ctx.out, spec);
        }
    } else if args.is(1, "count") {
        reply::integer(ctx.out, COMMANDS.len() as i64);
    } else if args.is(1, "list") {
        reply::array(ctx.out, COMMANDS.len());
        for spec in COMMANDS {
            reply::bulk(ctx.out, spec.name.as_bytes());
        }
    } else if args.is(1, "info") {
        reply::array(ctx.out, args.len() - 2);
        for i in 2..args.len() {
            match lookup(args.get(i)) {
                Some(spec) => info(ctx.out, spec),
                None => reply::null_array(ctx.out),
            }
        }
    } else if args.is(1, "docs") {
        // Documentation is optional for clients; an empty map means "none".
        reply::array(ctx.out, 0);
    } else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "command"));
    }
    Flow::Continue
}

/// Redis 7's ten-field command info; the last four (ACL categories, tips,
/// key specs, subcommands) are empty.
fn info(out: &mut BytesMut, spec: &CommandSpec) {
    reply::array(out, 10);
    reply::bulk(out, spec.name.as_bytes());
    reply::integer(out, spec.arity as i64);
    reply::array(out, spec.flags.len());
    for flag in spec.flags {
        reply::simple(out, flag);
    }
    reply::integer(out, spec.first_key as i64);
    reply::integer(out, spec.last_key as i64);
    reply::integer(out, spec.step as i64);
    for _ in 0..4 {
        reply::array(out, 0);
    }
}
