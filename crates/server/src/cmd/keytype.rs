//! `TYPE key`: `string`, `hash`, `list`, `set`, `zset` or `stream` for an existing key (its
//! [`ValueKind`]), `none` otherwise.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use tiercache_engine::ValueKind;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    match ctx.session.get(args.get(1)).await {
        Ok(Some(e)) => reply::simple(ctx.out, type_name(e.kind)),
        Ok(None) => reply::simple(ctx.out, "none"),
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}

/// The name Redis gives a value's type (`TYPE`, `SCAN ... TYPE`).
pub fn type_name(kind: ValueKind) -> &'static str {
    match kind {
        ValueKind::String => "string",
        ValueKind::Hash => "hash",
        ValueKind::List => "list",
        ValueKind::Set => "set",
        ValueKind::ZSet => "zset",
        ValueKind::Stream => "stream",
    }
}
