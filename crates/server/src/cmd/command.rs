//! `COMMAND`, `COMMAND COUNT`, `COMMAND INFO [name ...]`, `COMMAND LIST`,
//! `COMMAND DOCS [name ...]`, `COMMAND GETKEYS command [arg ...]`: enough
//! for `redis-cli`, client libraries that introspect the server at start,
//! and cluster clients that ask where a request's keys are.

use super::{
    arity_error, docs, getkeys, lookup, unknown_subcommand, Args, CommandSpec, Ctx, Flow, COMMANDS,
};
use crate::resp::{reply, Proto};
use bytes::BytesMut;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let p = ctx.proto();
    if args.len() == 1 {
        reply::array(ctx.out, COMMANDS.len());
        for spec in COMMANDS {
            info(ctx.out, spec, p);
        }
    } else if args.is(1, "count") {
        if args.len() != 2 {
            reply::error(ctx.out, &arity_error("command|count"));
        } else {
            reply::integer(ctx.out, COMMANDS.len() as i64);
        }
    } else if args.is(1, "list") {
        reply::array(ctx.out, COMMANDS.len());
        for spec in COMMANDS {
            reply::bulk(ctx.out, spec.name.as_bytes());
        }
    } else if args.is(1, "info") {
        if args.len() == 2 {
            reply::array(ctx.out, COMMANDS.len());
            for spec in COMMANDS {
                info(ctx.out, spec, p);
            }
        } else {
            reply::array(ctx.out, args.len() - 2);
            for i in 2..args.len() {
                match lookup(args.get(i)) {
                    Some(spec) => info(ctx.out, spec, p),
                    None => reply::null(ctx.out, p),
                }
            }
        }
    } else if args.is(1, "docs") {
        // Name → documentation map (Redis 7's, see `docs.rs`); unknown
        // names are left out, as in Redis.
        let specs: Vec<&CommandSpec> = if args.len() == 2 {
            COMMANDS.iter().collect()
        } else {
            (2..args.len())
                .filter_map(|i| lookup(args.get(i)))
                .collect()
        };
        reply::map(ctx.out, specs.len(), p);
        for spec in specs {
            reply::bulk(ctx.out, spec.name.as_bytes());
            match docs::lookup(spec.name) {
                Some(doc) => docs::encode(ctx.out, doc, p),
                None => reply::map(ctx.out, 0, p),
            }
        }
    } else if args.is(1, "getkeys") {
        get_keys(args, ctx);
    } else {
        reply::error(ctx.out, &unknown_subcommand(args.get(1), "command"));
    }
    Flow::Continue
}

/// `COMMAND GETKEYS`, with Redis's checks in Redis's order.
fn get_keys(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    if args.len() < 4 {
        reply::error(ctx.out, &arity_error("command|getkeys"));
        return;
    }
    let argv = getkeys::argv(args);
    let Some(spec) = lookup(argv[0]) else {
        reply::error(ctx.out, "ERR Invalid command specified");
        return;
    };
    let n = argv.len() as i32;
    let has_keys = spec.first_key != 0 || spec.flags.contains(&"movablekeys");
    if has_keys && ((spec.arity > 0 && n != spec.arity) || n < -spec.arity) {
        reply::error(
            ctx.out,
            "ERR Invalid number of arguments specified for command",
        );
        return;
    }
    match getkeys::key_positions(spec, &argv) {
        Ok(positions) => {
            reply::array(ctx.out, positions.len());
            for i in positions {
                reply::bulk(ctx.out, argv[i]);
            }
        }
        Err(msg) => reply::error(ctx.out, msg),
    }
}

/// Redis 7's ten-field command info; the last four (ACL categories, tips,
/// key specs, subcommands) are empty.
fn info(out: &mut BytesMut, spec: &CommandSpec, p: Proto) {
    reply::array(out, 10);
    reply::bulk(out, spec.name.as_bytes());
    reply::integer(out, spec.arity as i64);
    reply::set(out, spec.flags.len(), p);
    for flag in spec.flags {
        reply::simple(out, flag);
    }
    reply::integer(out, spec.first_key as i64);
    reply::integer(out, spec.last_key as i64);
    reply::integer(out, spec.step as i64);
    reply::set(out, 0, p);
    reply::set(out, 0, p);
    reply::array(out, 0);
    reply::array(out, 0);
}
