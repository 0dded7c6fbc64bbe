//! `INCR key`, `DECR key`, `INCRBY key delta`, `DECRBY key delta`: one
//! file because they are one engine call with different deltas.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::notify::class;
use crate::resp::reply;

/// Where the delta comes from.
pub enum Delta {
    /// A fixed delta (`INCR` = 1, `DECR` = -1).
    One(i64),
    /// Argument 2, negated for `DECRBY`.
    Arg { negate: bool },
}

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>, delta: Delta) -> Flow {
    let delta = match delta {
        Delta::One(d) => d,
        Delta::Arg { negate } => match parse_i64(args.get(2)) {
            None => {
                reply::error(ctx.out, NOT_AN_INTEGER);
                return Flow::Continue;
            }
            Some(d) if !negate => d,
            Some(d) => match d.checked_neg() {
                Some(d) => d,
                None => {
                    reply::error(ctx.out, "ERR decrement would overflow");
                    return Flow::Continue;
                }
            },
        },
    };
    match ctx.session.incr_by(args.bytes(1), delta).await {
        Ok(n) => {
            ctx.notify(class::STRING, "incrby", args.get(1));
            reply::integer(ctx.out, n)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
