//! `DEL key [key ...]`: how many of the keys existed.

use super::{Args, Ctx, Flow};
use crate::notify::class;
use crate::resp::reply;

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let keys = args.bytes_from(1);
    match ctx.session.delete_keys(&keys).await {
        Ok(deleted) => {
            for key in &deleted {
                ctx.notify(class::GENERIC, "del", key);
            }
            reply::integer(ctx.out, deleted.len() as i64)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
