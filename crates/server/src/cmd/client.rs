//! `CLIENT ID | SETNAME name | GETNAME | SETINFO attr value`: what client
//! libraries send when they connect.

use super::{unknown_subcommand, Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let arity_error = |ctx: &mut Ctx<'_, '_>, sub: &str| {
        reply::error(
            ctx.out,
            &format!("ERR wrong number of arguments for 'client|{sub}' command"),
        );
    };
    if args.is(1, "id") {
        if args.len() != 2 {
            arity_error(ctx, "id");
        } else {
            reply::integer(ctx.out, ctx.client.id as i64);
        }
    } else if args.is(1, "getname") {
        if args.len() != 2 {
            arity_error(ctx, "getname");
        } else {
            reply::bulk_or_null(ctx.out, ctx.client.name.as_deref());
        }
    } else if args.is(1, "setname") {
        if args.len() != 3 {
            arity_error(ctx, "setname");
            return Flow::Continue;
        }
        let name = args.get(2);
        // Redis refuses names that would break `CLIENT LIST` output.
        if name.iter().any(|&b| !(b'!'..=b'~').contains(&b)) {
            reply::error(
                ctx.out,
                "ERR Client names cannot contain spaces, newlines or special characters.",
            );
            return Flow::Continue;
        }
        ctx.client.name = if name.is_empty() {
            None
        } else {
            Some(name.to_vec())
        };
        reply::ok(ctx.out);
    } else if args.is(1, "setinfo") {
        if args.len() != 4 {
            arity_error(ctx, "setinfo");
        } else {
            reply::ok(ctx.out);
        }
    } else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "client"));
    }
    Flow::Continue
}
