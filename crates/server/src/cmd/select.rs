//! `SELECT index` and `SWAPDB index1 index2`: only database 0 exists.

use super::{parse_i64, Args, Ctx, Flow, NOT_AN_INTEGER};
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match parse_i64(args.get(1)) {
        None => reply::error(ctx.out, NOT_AN_INTEGER),
        Some(0) => reply::ok(ctx.out),
        Some(_) => reply::error(ctx.out, "ERR DB index is out of range"),
    }
    Flow::Continue
}

/// `SWAPDB index1 index2`: swapping database 0 with itself is all there is
/// to do.
pub async fn swapdb(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let index = |i: usize| parse_i64(args.get(i)).filter(|n| i32::try_from(*n).is_ok());
    match (index(1), index(2)) {
        (None, _) => reply::error(ctx.out, "ERR invalid first DB index"),
        (_, None) => reply::error(ctx.out, "ERR invalid second DB index"),
        (Some(0), Some(0)) => reply::ok(ctx.out),
        _ => reply::error(ctx.out, "ERR DB index is out of range"),
    }
    Flow::Continue
}
