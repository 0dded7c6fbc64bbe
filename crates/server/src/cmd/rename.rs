//! `RENAME key newkey`, `RENAMENX key newkey`, `COPY source destination
//! [DB db] [REPLACE]` and `MOVE key db`. The value moves with its expiry
//! (the destination's own expiry is never inherited), atomically under
//! both keys' locks. Database 0 is the only one: `COPY ... DB n` and
//! `MOVE` answer as Redis does for a database that does not exist, or for
//! the same database.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER, SYNTAX_ERROR};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::MoveOutcome;

/// Redis's `shared.sameobjecterr`.
const SAME_OBJECT: &str = "ERR source and destination objects are the same";
/// Redis's reply for a database index it does not have.
const DB_OUT_OF_RANGE: &str = "ERR DB index is out of range";

pub async fn rename(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, nx: bool) -> Flow {
    let r = ctx.session.rename(args.bytes(1), args.bytes(2), nx).await;
    // Renaming a key to itself changes nothing, and Redis says nothing.
    if matches!(r, Ok(MoveOutcome::Done)) && args.get(1) != args.get(2) {
        ctx.notify(class::GENERIC, "rename_from", args.get(1));
        ctx.notify(class::GENERIC, "rename_to", args.get(2));
    }
    match r {
        Ok(MoveOutcome::NoSource) => reply::error(ctx.out, "ERR no such key"),
        Ok(MoveOutcome::TargetExists) => reply::integer(ctx.out, 0),
        Ok(MoveOutcome::Done) if nx => reply::integer(ctx.out, 1),
        Ok(MoveOutcome::Done) => reply::ok(ctx.out),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn copy(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let mut replace = false;
    let mut i = 3;
    while i < args.len() {
        if args.is(i, "replace") {
            replace = true;
        } else if args.is(i, "db") && i + 1 < args.len() {
            match db_index(args.get(i + 1)) {
                Err(msg) => {
                    reply::error(ctx.out, msg);
                    return Flow::Continue;
                }
                Ok(0) => {}
                Ok(_) => {
                    reply::error(ctx.out, DB_OUT_OF_RANGE);
                    return Flow::Continue;
                }
            }
            i += 1;
        } else {
            reply::error(ctx.out, SYNTAX_ERROR);
            return Flow::Continue;
        }
        i += 1;
    }
    if args.get(1) == args.get(2) {
        reply::error(ctx.out, SAME_OBJECT);
        return Flow::Continue;
    }
    match ctx
        .session
        .copy(args.bytes(1), args.bytes(2), replace)
        .await
    {
        Ok(MoveOutcome::Done) => {
            ctx.notify(class::GENERIC, "copy_to", args.get(2));
            reply::integer(ctx.out, 1)
        }
        Ok(_) => reply::integer(ctx.out, 0),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

pub async fn move_key(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match db_index(args.get(2)) {
        Err(msg) => reply::error(ctx.out, msg),
        Ok(0) => reply::error(ctx.out, SAME_OBJECT),
        Ok(_) => reply::error(ctx.out, DB_OUT_OF_RANGE),
    }
    Flow::Continue
}

/// A database index read as Redis's `getIntFromObjectOrReply` does.
fn db_index(arg: &[u8]) -> Result<i32, &'static str> {
    let n = parse_i64(arg).ok_or(NOT_AN_INTEGER)?;
    i32::try_from(n)
        .map_err(|_| "ERR value is out of range, value must between -2147483648 and 2147483647")
}
