//! `PERSIST key`: 1 when the key had an expiry and lost it, else 0.

use super::{Args, Ctx, Flow};
use crate::notify::class;
use crate::resp::reply;
use tiercache_engine::{Entry, Update};

pub async fn run(args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let r = ctx
        .session
        .update(args.get(1), |old| match old {
            Some(e) if e.expires_at.is_some() => (
                Update::SetEntry(Entry::with_kind(e.value.clone(), None, e.flags, e.kind)),
                1,
            ),
            _ => (Update::Keep, 0),
        })
        .await;
    match r {
        Ok(n) => {
            if n == 1 {
                ctx.notify(class::GENERIC, "persist", args.get(1));
            }
            reply::integer(ctx.out, n)
        }
        Err(e) => ctx.engine_error(&e),
    }
    Flow::Continue
}
