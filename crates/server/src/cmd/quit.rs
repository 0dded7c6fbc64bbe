//! `QUIT`: `+OK`, then the connection closes once the reply is sent.

use super::{Args, Ctx, Flow};
use crate::resp::reply;

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    reply::ok(ctx.out);
    Flow::Close
}
