//! `MEMORY USAGE key [SAMPLES count]` and `MEMORY HELP`.
//!
//! `USAGE` answers the bytes the memory tier charges for the key (key,
//! value and per-entry overhead, [`MemoryTier::charge`]): the figure the
//! eviction budget counts, as Redis's is what its allocator holds. A value
//! is one buffer here, so `SAMPLES` is checked as Redis checks it and then
//! has nothing to sample. `DOCTOR`, `STATS`, `MALLOC-STATS` and `PURGE`
//! describe Redis's allocator and are not offered.

use super::{
    arity_error, parse_i64, unknown_subcommand, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR,
};
use crate::resp::reply;
use tiercache_engine::MemoryTier;

/// Redis's `MEMORY HELP` text for the subcommands offered here.
const HELP: &[&str] = &[
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "USAGE <key> [SAMPLES <count>]",
    "    Return memory in bytes used by <key> and its value. Nested values are",
    "    sampled up to <count> times (default: 5, 0 means sample all).",
    "HELP",
    "    Prints this help.",
];

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    if args.is(1, "usage") {
        if args.len() < 3 {
            ctx.error(&arity_error("memory|usage"));
        } else {
            usage(args, ctx).await;
        }
    } else if args.is(1, "help") {
        if args.len() != 2 {
            ctx.error(&arity_error("memory|help"));
        } else {
            reply::array(ctx.out, HELP.len());
            for line in HELP {
                reply::simple(ctx.out, line);
            }
        }
    } else {
        ctx.error(&unknown_subcommand(args.get(1), "memory"));
    }
    Flow::Continue
}

async fn usage(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) {
    // Redis's option loop: `SAMPLES n` (any number of times), n >= 0.
    let mut i = 3;
    while i < args.len() {
        if !(args.is(i, "samples") && i + 1 < args.len()) {
            return ctx.error(SYNTAX_ERROR);
        }
        match parse_i64(args.get(i + 1)) {
            None => return ctx.error(NOT_AN_INTEGER),
            Some(n) if n < 0 => return ctx.error(SYNTAX_ERROR),
            Some(_) => {}
        }
        i += 2;
    }
    match ctx.session.get(args.get(2)).await {
        Ok(Some(e)) => reply::integer(ctx.out, MemoryTier::charge(args.get(2), &e) as i64),
        Ok(None) => ctx.null(),
        Err(e) => ctx.engine_error(&e),
    }
}
