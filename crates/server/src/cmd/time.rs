//! `TIME`: the server's clock as Unix seconds and microseconds, two bulk
//! strings, as Redis answers.

use super::{Args, Ctx, Flow};
use crate::resp::reply;
use std::time::{SystemTime, UNIX_EPOCH};

pub async fn run(_args: &Args<'_>, ctx: &mut Ctx<'_, '_>) -> Flow {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    reply::array(ctx.out, 2);
    reply::bulk(ctx.out, now.as_secs().to_string().as_bytes());
    reply::bulk(ctx.out, now.subsec_micros().to_string().as_bytes());
    Flow::Continue
}
