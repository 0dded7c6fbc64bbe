//! `SELECT index`: only database 0 exists.

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
