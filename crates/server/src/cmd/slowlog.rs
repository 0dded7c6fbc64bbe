//! `SLOWLOG GET [count] | LEN | RESET | HELP`: the slow log
//! (`crate::slowlog`), as Redis 7.0 answers.

use super::subcommand::subcommand_to_run;
use super::{parse_i64, Args, Ctx, Flow};
use crate::resp::reply;

/// The subcommands and their arities, as Redis 7.0's table has them.
const SUBCOMMANDS: &[(&str, i32)] = &[("get", -2), ("len", 2), ("reset", 2), ("help", 2)];

/// Redis's reply to a count that is not an integer of at least -1.
const COUNT_RANGE: &str = "ERR count should be greater than or equal to -1";

/// Redis 7.0's `SLOWLOG HELP`.
const HELP: &[&str] = &[
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Prints this help.",
];

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let Some(sub) = subcommand_to_run(args, ctx, "slowlog", SUBCOMMANDS, HELP) else {
        return Flow::Continue;
    };
    let log = &ctx.server.slowlog;
    match sub {
        "len" => reply::integer(ctx.out, log.len() as i64),
        "reset" => {
            log.reset();
            reply::ok(ctx.out);
        }
        _ => {
            if args.len() > 3 {
                ctx.error(&super::subcommand::subcommand_syntax(
                    args.get(1),
                    "SLOWLOG",
                ));
                return Flow::Continue;
            }
            let count = if args.len() == 3 {
                match parse_i64(args.get(2)) {
                    None => {
                        ctx.error(COUNT_RANGE);
                        return Flow::Continue;
                    }
                    Some(n) if n < -1 => {
                        ctx.error(COUNT_RANGE);
                        return Flow::Continue;
                    }
                    Some(-1) => None,
                    Some(n) => Some(n as usize),
                }
            } else {
                Some(10)
            };
            let entries = log.newest(count);
            reply::array(ctx.out, entries.len());
            for e in entries {
                reply::array(ctx.out, 6);
                reply::integer(ctx.out, e.id as i64);
                reply::integer(ctx.out, e.time as i64);
                reply::integer(ctx.out, e.duration_us as i64);
                reply::array(ctx.out, e.args.len());
                for a in &e.args {
                    reply::bulk(ctx.out, a);
                }
                reply::bulk(ctx.out, e.addr.as_bytes());
                reply::bulk(ctx.out, &e.name);
            }
        }
    }
    Flow::Continue
}
